// SPDX-License-Identifier: BSD-3-Clause
// The comch control channel (Arm server, host client), the Arm's pod channel and
// libdpumesh's DOCA path, against link-time FAKES of the DOCA calls (doca_fakes.cc; no DOCA
// here): creation order, teardown in reverse, every call failing once leaving nothing
// half-made with an error naming it, export before import, REGISTER/REGISTERED and the
// doorbell through the progress engine's fd.
#include "dpumesh/host/doca_link.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "doca_fakes.h"
#include "dpumesh/doca/comch.h"
#include "dpumesh/doca/pod_channel.h"
#include "dpumesh/doca/pod_doorbell.h"
#include "dpumesh/podchan/channel.h"

using namespace dpumesh;
namespace fk = dpumesh::doca_fake;

namespace {

const std::string arm_pci = "0000:03:00.0";
const std::string host_pf = "0000:3b:00.0"; /* the fake's representor (the Arm's view) */
const std::string host_dev = "0000:03:00.1"; /* the same PF as the host opens it (FAKE) */

bool readable(int fd)
{
	pollfd p = {fd, POLLIN, 0};
	return ::poll(&p, 1, 0) == 1;
}

void expect_nothing_left(const std::string &ctx)
{
	EXPECT_EQ(fk::fake().live_objects, 0) << ctx;
	EXPECT_EQ(fk::fake().started, 0) << ctx;
	EXPECT_TRUE(fk::fake().misuse.empty()) << ctx << ": " << fk::fake().misuse.front();
}

std::vector<std::string> calls_since(size_t from)
{
	const auto &c = fk::fake().calls;
	return std::vector<std::string>(c.begin() + static_cast<long>(std::min(from, c.size())), c.end());
}

/* a pod's memory: 4 KiB-aligned, region and TX SQs (comch_pod_memory_size) */
struct pod_memory {
	size_t len;
	uint8_t *p;
	explicit pod_memory(const dpumesh_ctrl_register &r)
		: len(doca::comch_pod_memory_size(r)), p(static_cast<uint8_t *>(std::aligned_alloc(4096, len)))
	{
		std::memset(p, 0, len);
	}
	~pod_memory() { std::free(p); }
};

std::unique_ptr<doca::device> open_dev()
{
	auto d = doca::device::open(arm_pci);
	EXPECT_TRUE(d) << d.error().message();
	return d ? std::move(*d) : nullptr;
}

const std::vector<std::string> server_creation = {
	"doca_devinfo_rep_create_list",
	"doca_devinfo_rep_is_equal_pci_addr",
	"doca_dev_rep_open",
	"doca_devinfo_rep_destroy_list",
	"doca_comch_cap_get_max_msg_size",
	"doca_pe_create",
	"doca_comch_server_create",
	"doca_comch_server_task_send_set_conf",
	"doca_comch_server_event_msg_recv_register",
	"doca_comch_server_event_connection_status_changed_register",
	"doca_ctx_set_user_data",
	"doca_pe_connect_ctx",
	"doca_pe_get_notification_handle",
	"doca_ctx_start",
};
const std::vector<std::string> server_teardown = {"doca_ctx_stop", "doca_comch_server_destroy",
						  "doca_pe_destroy", "doca_dev_rep_close"};
const std::vector<std::string> client_creation = {
	"doca_comch_cap_get_max_msg_size",
	"doca_pe_create",
	"doca_comch_client_create",
	"doca_comch_client_task_send_set_conf",
	"doca_comch_client_event_msg_recv_register",
	"doca_ctx_set_user_data",
	"doca_pe_connect_ctx",
	"doca_pe_get_notification_handle",
	"doca_ctx_start",
	"doca_comch_client_get_connection",
};
const std::vector<std::string> client_teardown = {"doca_ctx_stop", "doca_comch_client_destroy",
						  "doca_pe_destroy"};

TEST(DocaComch, ServerCreationOrderAndTeardownInReverse)
{
	fk::reset();
	auto dev = open_dev();
	const size_t base = fk::fake().calls.size();
	auto s = doca::comch_server::create(dev->get(), host_pf, "dpumesh", {});
	ASSERT_TRUE(s) << s.error().message();
	EXPECT_EQ(calls_since(base), server_creation);
	EXPECT_GE((*s)->fd(), 0);
	EXPECT_EQ((*s)->max_msg(), fk::fake().max_msg);
	const size_t made = fk::fake().calls.size();
	s->reset();
	EXPECT_EQ(calls_since(made), server_teardown);
	dev.reset();
	expect_nothing_left("server teardown");
}

TEST(DocaComch, ServerRefusesAHostPfWithoutRepresentor)
{
	fk::reset();
	auto dev = open_dev();
	auto s = doca::comch_server::create(dev->get(), "0000:5e:00.0", "dpumesh", {});
	ASSERT_FALSE(s);
	EXPECT_NE(s.error().message().find("no representor of host PF 0000:5e:00.0 (1 representors"),
		  std::string::npos)
		<< s.error().message();
	dev.reset();
	expect_nothing_left("no representor");
}

TEST(DocaComch, EveryServerCallFailingOnceLeavesNothing)
{
	for (size_t i = 0; i < server_creation.size(); i++) {
		fk::reset();
		auto dev = open_dev();
		fk::fake().fail_index = static_cast<long>(fk::fake().calls.size() + i);
		auto s = doca::comch_server::create(dev->get(), host_pf, "dpumesh", {});
		const std::string ctx = "server call " + std::to_string(i) + " (" + server_creation[i] + ") failing";
		if (server_creation[i] == "doca_devinfo_rep_destroy_list") {
			EXPECT_TRUE(s) << ctx; /* a failed list release is not the server's failure */
		} else {
			ASSERT_FALSE(s) << ctx;
			EXPECT_NE(s.error().message().find(server_creation[i]), std::string::npos)
				<< ctx << ": " << s.error().message();
			EXPECT_NE(s.error().message().find("comch server dpumesh"), std::string::npos)
				<< ctx << ": " << s.error().message();
			EXPECT_NE(s.error().message().find("failure injected"), std::string::npos) << ctx;
		}
		s = errorf("gone");
		dev.reset();
		expect_nothing_left(ctx);
	}
}

TEST(DocaComch, ClientConnectsInOrderAndTearsDownInReverse)
{
	fk::reset();
	auto dev = open_dev();
	auto s = doca::comch_server::create(dev->get(), host_pf, "dpumesh", {});
	ASSERT_TRUE(s) << s.error().message();
	const size_t base = fk::fake().calls.size();
	auto c = doca::comch_client::create(dev->get(), "dpumesh", {});
	ASSERT_TRUE(c) << c.error().message();
	EXPECT_EQ(calls_since(base), client_creation);
	const size_t made = fk::fake().calls.size();
	c->reset();
	EXPECT_EQ(calls_since(made), client_teardown);
	s->reset();
	dev.reset();
	expect_nothing_left("client teardown");
}

TEST(DocaComch, ClientWithoutServerIsRefusedClearly)
{
	fk::reset();
	auto dev = open_dev();
	auto c = doca::comch_client::create(dev->get(), "dpumesh", {});
	ASSERT_FALSE(c);
	EXPECT_NE(c.error().message().find("comch client of dpumesh: doca_ctx_start failed"), std::string::npos)
		<< c.error().message();
	dev.reset();
	expect_nothing_left("no server");
}

TEST(DocaComch, EveryClientCallFailingOnceLeavesNothing)
{
	for (size_t i = 0; i < client_creation.size(); i++) {
		fk::reset();
		auto dev = open_dev();
		unsigned ups = 0, downs = 0;
		doca::comch_handlers sh;
		sh.on_connection = [&](doca_comch_connection *, bool up) { (up ? ups : downs)++; };
		auto s = doca::comch_server::create(dev->get(), host_pf, "dpumesh", sh);
		ASSERT_TRUE(s);
		const int live = fk::fake().live_objects, started = fk::fake().started;
		fk::fake().fail_index = static_cast<long>(fk::fake().calls.size() + i);
		auto c = doca::comch_client::create(dev->get(), "dpumesh", {});
		const std::string ctx = "client call " + std::to_string(i) + " (" + client_creation[i] + ") failing";
		ASSERT_FALSE(c) << ctx;
		EXPECT_NE(c.error().message().find(client_creation[i]), std::string::npos)
			<< ctx << ": " << c.error().message();
		EXPECT_NE(c.error().message().find("comch client of dpumesh"), std::string::npos)
			<< ctx << ": " << c.error().message();
		EXPECT_EQ(fk::fake().live_objects, live) << ctx;
		EXPECT_EQ(fk::fake().started, started) << ctx;
		(*s)->progress();
		EXPECT_EQ(ups, downs) << ctx << ": a connection the failed client made is gone again";
		s->reset();
		dev.reset();
		expect_nothing_left(ctx);
	}
}

TEST(DocaComch, MessagesBothWaysWakeTheProgressEnginesFd)
{
	fk::reset();
	auto dev = open_dev();
	std::vector<std::string> at_server, at_client;
	doca::comch_server *srv = nullptr;
	doca::comch_handlers sh;
	sh.on_message = [&](doca_comch_connection *conn, std::span<const uint8_t> m) {
		at_server.emplace_back(m.begin(), m.end());
		const std::string r = "re:" + at_server.back();
		ASSERT_TRUE(srv->send(conn, std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(r.data()), r.size())));
	};
	auto s = doca::comch_server::create(dev->get(), host_pf, "dpumesh", sh);
	ASSERT_TRUE(s);
	srv = s->get();
	doca::comch_handlers ch;
	ch.on_message = [&](doca_comch_connection *, std::span<const uint8_t> m) { at_client.emplace_back(m.begin(), m.end()); };
	auto c = doca::comch_client::create(dev->get(), "dpumesh", ch);
	ASSERT_TRUE(c) << c.error().message();
	srv->progress(); /* the connection event */

	/* armed and idle: the fd stays quiet */
	ASSERT_TRUE(srv->arm());
	EXPECT_FALSE(readable(srv->fd()));
	const std::string hello = "hello";
	ASSERT_TRUE((*c)->send(std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(hello.data()), hello.size())));
	EXPECT_TRUE(readable(srv->fd()));
	ASSERT_TRUE(srv->clear());
	EXPECT_FALSE(readable(srv->fd()));
	EXPECT_EQ(srv->progress(), 2u); /* the message, then its reply's send completion */
	EXPECT_EQ(at_server, std::vector<std::string>{"hello"});

	ASSERT_TRUE((*c)->arm());
	EXPECT_TRUE(readable((*c)->fd())); /* the reply and the send completion wait */
	ASSERT_TRUE((*c)->clear());
	(*c)->progress();
	EXPECT_EQ(at_client, std::vector<std::string>{"re:hello"});
	EXPECT_EQ((*c)->sent(), 1u);
	srv->progress();
	EXPECT_EQ(srv->sent(), 1u);
	EXPECT_EQ(srv->received(), 1u);

	/* too big or empty: refused before DOCA sees it */
	std::vector<uint8_t> big(fk::fake().max_msg + 1, 1);
	auto st = (*c)->send(big);
	ASSERT_FALSE(st);
	EXPECT_NE(st.message().find("4081 bytes (1..4080)"), std::string::npos) << st.message();
	EXPECT_FALSE((*c)->send({}));

	/* a send task that DOCA refuses is freed and named */
	fk::fake().fail_index = static_cast<long>(fk::fake().calls.size()) + 1; /* doca_task_submit */
	st = (*c)->send(std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(hello.data()), hello.size()));
	ASSERT_FALSE(st);
	EXPECT_NE(st.message().find("doca_task_submit"), std::string::npos) << st.message();
	EXPECT_EQ((*c)->send_errors(), 1u);
	c->reset();
	s->reset();
	dev.reset();
	expect_nothing_left("messages");
}

/* ---- the pod channel and libdpumesh's DOCA path ---- */

dpumesh_ctrl_register pod_reg(const char *service)
{
	dpumesh_ctrl_register r{};
	r.hdr = podchan::make_hdr(DPUMESH_CTRL_REGISTER, sizeof(r));
	std::snprintf(r.service, sizeof(r.service), "%s", service);
	r.nb_workers = 2;
	r.geometry = {{16, 1024}, {16, 4096}, {16, 1024}, {16, 4096}, 16, 0};
	return r;
}

struct arm_side {
	std::unique_ptr<doca::device> dev;
	std::unique_ptr<doca::pod_channel_server> srv;
	std::vector<std::pair<std::string, uint32_t>> admitted; /* service, mkey */
	std::vector<uint32_t> gone;
	std::vector<uint64_t> bells; /* each admitted pod's doorbell DPA handle */
	uint32_t refuse = DPUMESH_CTRL_OK;
	doca_dpa *dpa = nullptr; /* with one, pods' doorbells are imported */
	std::span<const uint8_t> tx_bell; /* given to admitted pods (TX_BELL) */

	void up()
	{
		if (!dev)
			dev = open_dev();
		doca::pod_channel_hooks h;
		h.admit = [this](const doca::comch_register_view &v, doca_dpa_dev_mmap_t mkey) {
			if (refuse != DPUMESH_CTRL_OK)
				return doca::pod_admission{refuse, 0, 0, "unknown service", {}};
			admitted.emplace_back(v.reg.service, mkey);
			bells.push_back(v.doorbell);
			return doca::pod_admission{DPUMESH_CTRL_OK, static_cast<uint32_t>(6 + admitted.size()), 1, {},
						   tx_bell};
		};
		h.gone = [this](uint32_t id) { gone.push_back(id); };
		auto s = doca::pod_channel_server::create(dev->get(), host_pf, "dpumesh", h, dpa);
		ASSERT_TRUE(s) << s.error().message();
		srv = std::move(*s);
	}
	void down()
	{
		srv.reset();
		dev.reset();
	}
};

/* the host's link and the Arm's server in one thread: run both until the link has its answer */
result<bool> converse(arm_side &arm, host::doca_link &l)
{
	for (int i = 0; i < 8; i++) {
		arm.srv->endpoint().progress();
		auto r = l.registered();
		if (!r || *r)
			return r;
	}
	return false;
}

TEST(DocaPodLink, PodMemoryExportedThenRegisteredOverComchThenRung)
{
	fk::reset();
	arm_side arm;
	arm.up();
	pod_memory mem(pod_reg("echo"));
	auto l = host::doca_link::start({host_dev}, mem.p, mem.len, pod_reg("echo"));
	ASSERT_TRUE(l) << l.error().message();
	auto done = converse(arm, **l);
	ASSERT_TRUE(done) << done.error().message();
	ASSERT_TRUE(*done);
	/* the host exported before the Arm imported, from the descriptor sent over comch */
	const auto &c = fk::fake().calls;
	auto exp = std::find(c.begin(), c.end(), "doca_mmap_export_pci");
	auto send = std::find(exp, c.end(), "doca_comch_client_task_send_alloc_init");
	auto imp = std::find(c.begin(), c.end(), "doca_mmap_create_from_export");
	ASSERT_NE(imp, c.end());
	EXPECT_LT(exp, send);
	EXPECT_LT(send, imp);
	ASSERT_EQ(arm.admitted.size(), 1u);
	EXPECT_EQ(arm.admitted[0].first, "echo");
	EXPECT_NE(arm.admitted[0].second, 0u);
	EXPECT_EQ((*l)->mkey(), arm.admitted[0].second);
	EXPECT_EQ((*l)->pod_id(), 7u);
	EXPECT_EQ((*l)->generation(), 1u);
	EXPECT_EQ(arm.srv->nb_pods(), 1u);

	/* the doorbell: the pod sleeps on its fd, the node rings, the fd wakes it */
	ASSERT_TRUE((*l)->prepare_wait());
	EXPECT_FALSE(readable((*l)->fd()));
	ASSERT_TRUE(arm.srv->ring(7));
	EXPECT_TRUE(readable((*l)->fd()));
	EXPECT_EQ((*l)->progress(), 1u);
	EXPECT_EQ((*l)->doorbells(), 1u);
	ASSERT_TRUE((*l)->prepare_wait());
	EXPECT_FALSE(readable((*l)->fd())) << "cleared, nothing new";
	ASSERT_TRUE(arm.srv->ring(7));
	ASSERT_TRUE(arm.srv->ring(7));
	EXPECT_EQ((*l)->progress(), 2u);
	EXPECT_FALSE(arm.srv->ring(3)) << "no such pod";
	EXPECT_EQ((*l)->bad_messages(), 0u);

	/* closing: UNREGISTER, the Arm drops the import and tells the node */
	const int live_with_pod = fk::fake().live_objects;
	l->reset();
	arm.srv->endpoint().progress();
	EXPECT_EQ(arm.gone, std::vector<uint32_t>{7});
	EXPECT_EQ(arm.srv->nb_pods(), 0u);
	EXPECT_LT(fk::fake().live_objects, live_with_pod);
	arm.down();
	expect_nothing_left("pod link");
}

TEST(DocaPodLink, TheDpasDoorbellIsASyncEventThePodWaitsOnInItsEngine)
{
	fk::reset();
	arm_side arm;
	arm.dev = open_dev();
	ASSERT_EQ(doca_dpa_create(arm.dev->get(), &arm.dpa), DOCA_SUCCESS);
	arm.up();
	pod_memory mem(pod_reg("echo"));
	auto l = host::doca_link::start({host_dev}, mem.p, mem.len, pod_reg("echo"));
	ASSERT_TRUE(l) << l.error().message();
	auto done = converse(arm, **l);
	ASSERT_TRUE(done && *done);
	/* the pod's event went to the Arm in REGISTER; the Arm's import has a DPA handle */
	const auto &c = fk::fake().calls;
	auto exp = std::find(c.begin(), c.end(), "doca_sync_event_export_to_remote_pci");
	auto imp = std::find(c.begin(), c.end(), "doca_sync_event_create_from_export");
	ASSERT_NE(imp, c.end());
	EXPECT_LT(exp, imp);
	ASSERT_EQ(arm.bells.size(), 1u);
	const uint64_t bell = arm.bells[0];
	EXPECT_NE(bell, 0u);
	EXPECT_EQ(arm.srv->doorbell(7), bell);
	EXPECT_EQ(arm.srv->doorbell(3), 0u) << "no such pod";

	/* asleep: the DPA's add wakes the fd; the wait completes once and is put back */
	ASSERT_TRUE((*l)->prepare_wait());
	EXPECT_FALSE(readable((*l)->fd()));
	fk::dpa_sync_event_add(bell, 1);
	EXPECT_TRUE(readable((*l)->fd()));
	(void)(*l)->progress();
	EXPECT_EQ((*l)->dpa_rings(), 1u);
	EXPECT_EQ((*l)->doorbells(), 0u) << "not the Arm's DOORBELL message";
	ASSERT_TRUE((*l)->prepare_wait());
	EXPECT_FALSE(readable((*l)->fd())) << "nothing new";
	/* two adds before the pod runs: one wake-up; then the next wait is on the new value */
	fk::dpa_sync_event_add(bell, 1);
	fk::dpa_sync_event_add(bell, 1);
	EXPECT_TRUE(readable((*l)->fd()));
	(void)(*l)->progress();
	EXPECT_EQ((*l)->dpa_rings(), 2u);
	ASSERT_TRUE((*l)->prepare_wait());
	EXPECT_FALSE(readable((*l)->fd()));
	/* an add while the pod is awake (not armed) is there when it next sleeps */
	(void)(*l)->progress();
	fk::dpa_sync_event_add(bell, 1);
	ASSERT_TRUE((*l)->prepare_wait());
	EXPECT_TRUE(readable((*l)->fd())) << "a ring before the sleep is not lost";
	(void)(*l)->progress();
	EXPECT_EQ((*l)->dpa_rings(), 3u);

	/* closing: the Arm releases the import with the pod; its handle then names nothing */
	l->reset();
	arm.srv->endpoint().progress();
	EXPECT_EQ(arm.gone, std::vector<uint32_t>{7});
	EXPECT_TRUE(fk::fake().misuse.empty()) << fk::fake().misuse.front();
	fk::dpa_sync_event_add(bell, 1);
	ASSERT_EQ(fk::fake().misuse.size(), 1u) << "an add to a released doorbell is caught";
	fk::fake().misuse.clear();

	/* the Arm's import of a doorbell failing (each call): the pod is refused, named */
	for (const char *call : {"doca_sync_event_create_from_export", "doca_sync_event_get_dpa_handle"}) {
		const size_t bells_before = arm.bells.size();
		auto x = host::doca_link::start({host_dev}, mem.p, mem.len, pod_reg("echo"));
		ASSERT_TRUE(x) << x.error().message();
		/* the Arm's next recorded calls: the memory's import (2), then the doorbell's */
		fk::fake().fail_index = static_cast<long>(fk::fake().calls.size()) + 2 +
					(std::string(call) == "doca_sync_event_get_dpa_handle" ? 1 : 0);
		auto r = converse(arm, **x);
		fk::fake().fail_index = -1;
		ASSERT_FALSE(r) << call;
		EXPECT_NE(r.error().message().find("doorbell"), std::string::npos) << r.error().message();
		EXPECT_NE(r.error().message().find(call), std::string::npos) << r.error().message();
		EXPECT_EQ(arm.bells.size(), bells_before) << "refused before admission";
		EXPECT_EQ(arm.srv->nb_pods(), 0u);
	}
	arm.down();
	ASSERT_EQ(doca_dpa_destroy(arm.dpa), DOCA_SUCCESS);
	expect_nothing_left("pod doorbell");
}

TEST(DocaPodLink, TheNodesTxDoorbellReachesEveryWorkerAndCountsTheirRings)
{
	fk::reset();
	arm_side arm;
	arm.dev = open_dev();
	auto bell = doca::tx_bell::create(arm.dev->get());
	ASSERT_TRUE(bell) << bell.error().message();
	arm.tx_bell = (*bell)->descriptor();
	arm.up();
	pod_memory mem(pod_reg("echo"));
	auto l = host::doca_link::start({host_dev}, mem.p, mem.len, pod_reg("echo"));
	ASSERT_TRUE(l) << l.error().message();
	auto done = converse(arm, **l);
	ASSERT_TRUE(done && *done) << (done ? "" : done.error().message());
	EXPECT_TRUE((*l)->has_tx_bell());
	EXPECT_EQ((*l)->bad_messages(), 0u) << "TX_BELL is a message the link knows";
	/* each of the pod's 2 workers rings through its own import; the Arm reads the sum */
	uint64_t v = 0;
	ASSERT_TRUE((*bell)->value(&v));
	EXPECT_EQ(v, 0u);
	EXPECT_TRUE((*l)->ring_tx(0));
	EXPECT_TRUE((*l)->ring_tx(1));
	EXPECT_TRUE((*l)->ring_tx(1));
	EXPECT_FALSE((*l)->ring_tx(2)) << "no such worker";
	ASSERT_TRUE((*bell)->value(&v));
	EXPECT_EQ(v, 3u);
	EXPECT_EQ((*l)->tx_ring_errors(), 0u);
	l->reset();
	arm.srv->endpoint().progress();

	/* a TX doorbell export that does not import: the registration fails, named */
	{
		auto x = host::doca_link::start({host_dev}, mem.p, mem.len, pod_reg("echo"));
		ASSERT_TRUE(x);
		/* the pod's next recorded call after REGISTERED is its first import */
		arm.srv->endpoint().progress();
		fk::fake().fail_index = static_cast<long>(fk::fake().calls.size());
		auto r = (*x)->registered();
		fk::fake().fail_index = -1;
		ASSERT_FALSE(r);
		EXPECT_NE(r.error().message().find("TX doorbell: doca_sync_event_create_from_export"), std::string::npos)
			<< r.error().message();
		EXPECT_FALSE((*x)->has_tx_bell());
		x->reset();
		arm.srv->endpoint().progress();
	}
	arm.down();
	bell->reset();
	expect_nothing_left("TX doorbell");
}

TEST(DocaPodLink, BlockingOpenTimesOutWhenTheNodeNeverAnswers)
{
	fk::reset();
	arm_side arm;
	arm.up();
	pod_memory mem(pod_reg("echo"));
	host::doca_link_options o{host_dev};
	o.timeout_ms = 50;
	auto l = host::doca_link::open(o, mem.p, mem.len, pod_reg("echo")); /* nobody progresses the Arm */
	ASSERT_FALSE(l);
	EXPECT_NE(l.error().message().find("no REGISTERED within 50 ms"), std::string::npos) << l.error().message();
	arm.down();
	expect_nothing_left("timeout");
}

TEST(DocaPodLink, TheNodesRefusalReachesThePodWithItsReason)
{
	fk::reset();
	arm_side arm;
	arm.up();
	arm.refuse = DPUMESH_CTRL_ERR_SERVICE;
	pod_memory mem(pod_reg("nosuch"));
	auto l = host::doca_link::start({host_dev}, mem.p, mem.len, pod_reg("nosuch"));
	ASSERT_TRUE(l);
	auto r = converse(arm, **l);
	ASSERT_FALSE(r);
	EXPECT_NE(r.error().message().find("registration refused (unknown service): unknown service"), std::string::npos)
		<< r.error().message();
	EXPECT_EQ(arm.srv->nb_pods(), 0u);
	EXPECT_EQ(arm.srv->refused(), 1u);
	l->reset();
	arm.srv->endpoint().progress();
	EXPECT_TRUE(arm.gone.empty());
	arm.down();
	expect_nothing_left("refused");
}

/* A hostile pod on the channel: every malformed message gets exactly one answer, an error */
TEST(DocaPodLink, MalformedMessagesAreAnsweredOnceAndCounted)
{
	fk::reset();
	arm_side arm;
	arm.up();
	std::vector<dpumesh_ctrl_registered> answers;
	doca::comch_handlers ch;
	ch.on_message = [&](doca_comch_connection *, std::span<const uint8_t> m) {
		ASSERT_EQ(m.size(), sizeof(dpumesh_ctrl_registered));
		dpumesh_ctrl_registered r;
		std::memcpy(&r, m.data(), sizeof(r));
		answers.push_back(r);
	};
	auto c = doca::comch_client::create(arm.dev->get(), "dpumesh", ch);
	ASSERT_TRUE(c);
	const uint8_t desc[16] = {9, 9, 9}; /* never exported */
	std::vector<std::pair<std::string, std::vector<uint8_t>>> cases;
	const uint64_t need = doca::comch_pod_memory_size(pod_reg("echo"));
	const std::vector<uint8_t> good = doca::make_register(pod_reg("echo"), 0x7f0000000000ull, need, desc);
	cases.push_back({"shorter than its", {1, 2, 3}});
	auto mutate = [&](const char *why, auto f) {
		std::vector<uint8_t> m = good;
		f(m);
		cases.push_back({why, m});
	};
	mutate("bad magic", [](auto &m) { m[0] ^= 1; });
	mutate("header says", [](auto &m) { m.push_back(0); });
	mutate("desc_len", [](auto &m) { m[128] = 15; });
	mutate("reserved words", [](auto &m) { m[12] = 1; });
	mutate("bell_len 1", [](auto &m) { m[132] = 1; });
	mutate("doorbell export of", [](auto &m) { m[133] = 0xff; });
	mutate("invalid service name", [](auto &m) { m[16] = 'A'; });
	mutate("nb_workers", [](auto &m) { m[16 + 64] = 0; });
	mutate("invalid geometry", [](auto &m) { m[16 + 72 + 32] = 24; });
	mutate("not 4 KiB-aligned", [](auto &m) { m[136] = 8; });
	mutate("needs", [](auto &m) {
		uint64_t len;
		std::memcpy(&len, &m[144], sizeof(len));
		len -= 1;
		std::memcpy(&m[144], &len, sizeof(len));
	});
	cases.push_back({"doca_mmap_create_from_export", good});
	for (const auto &[why, m] : cases)
		ASSERT_TRUE((*c)->send(m)) << why;
	for (int i = 0; i < 4; i++) {
		arm.srv->endpoint().progress();
		(*c)->progress();
	}
	ASSERT_EQ(answers.size(), cases.size());
	for (size_t i = 0; i < cases.size(); i++) {
		const bool region = i + 1 == cases.size();
		EXPECT_EQ(answers[i].result, region ? DPUMESH_CTRL_ERR_NO_REGION : DPUMESH_CTRL_ERR_MESSAGE) << cases[i].first;
		EXPECT_NE(std::string(answers[i].error).find(cases[i].first), std::string::npos)
			<< cases[i].first << ": " << answers[i].error;
	}
	EXPECT_EQ(arm.srv->refused(), cases.size());
	EXPECT_TRUE(arm.admitted.empty());
	c->reset();
	arm.down();
	expect_nothing_left("malformed");
}

TEST(DocaPodLink, EveryHostCallFailingOnceLeavesNothing)
{
	/* the sequence, from a clean run */
	fk::reset();
	arm_side arm;
	arm.up();
	pod_memory mem(pod_reg("echo"));
	size_t base = fk::fake().calls.size();
	auto ok = host::doca_link::start({host_dev}, mem.p, mem.len, pod_reg("echo"));
	ASSERT_TRUE(ok);
	const std::vector<std::string> seq = calls_since(base);
	ok = errorf("gone");
	arm.down();
	ASSERT_GT(seq.size(), 20u);
	EXPECT_EQ(seq.front(), "doca_devinfo_create_list");
	EXPECT_EQ(seq.back(), "doca_task_submit");

	for (size_t i = 0; i < seq.size(); i++) {
		fk::reset();
		arm_side a;
		a.up();
		const int live = fk::fake().live_objects;
		fk::fake().fail_index = static_cast<long>(fk::fake().calls.size() + i);
		auto l = host::doca_link::start({host_dev}, mem.p, mem.len, pod_reg("echo"));
		const std::string ctx = "host call " + std::to_string(i) + " (" + seq[i] + ") failing";
		if (seq[i] == "doca_devinfo_destroy_list") {
			EXPECT_TRUE(l) << ctx;
		} else {
			ASSERT_FALSE(l) << ctx;
			EXPECT_NE(l.error().message().find(seq[i]), std::string::npos)
				<< ctx << ": " << l.error().message();
			EXPECT_NE(l.error().message().find("DOCA pod link"), std::string::npos)
				<< ctx << ": " << l.error().message();
			EXPECT_EQ(fk::fake().live_objects, live) << ctx;
		}
		l = errorf("gone");
		a.srv->endpoint().progress();
		EXPECT_EQ(a.srv->nb_pods(), 0u) << ctx;
		a.down();
		expect_nothing_left(ctx);
	}
}

} // namespace
