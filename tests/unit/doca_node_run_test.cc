// SPDX-License-Identifier: BSD-3-Clause
// The real node (lib/node + lib/sidecar) on --dpa-backend doca against the FAKES: the node
// builds the DOCA backend, the DPU and node memory and the comch pod channel itself; FAKE
// DPA threads (doca_dev_fakes.h's scheduler) run the real kernels on the DOCA device mapping
// over exactly what the node wrote; two pods register through libdpumesh's doca_link over
// the FAKE comch; Case 3 requests and responses pass the real sidecar byte-exact at 0 B ..
// 1 MiB; a pod unregisters (the DPA's quiescence before its import goes) and its service
// answers 503 from the Arm's own hbufs; the node stops in order (the kernels finish before
// any memory is freed) and leaves no DOCA object or DPA allocation behind. Then the same
// through libdpumesh's C API (dpumesh_open on "doca:<PCI>"), pods sleeping on dpumesh_fd().
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "doca_dev_fakes.h"
#include "doca_fakes.h"
#include "doca_test_pod.h"
#include "dpumesh/config/config.h"
#include "dpumesh/host/dpumesh.h"
#include "dpumesh/node/node.h"
#include "dpumesh/wire/l7.h"
#include "eal_env.h"
#include "internal/doca_side.h"

extern "C" void dpumesh_dpa_tx_entry(uint64_t arg);
extern "C" void dpumesh_dpa_rx_entry(uint64_t arg);
extern "C" uint64_t dpumesh_dpa_notify_rpc(uint64_t notification);

using namespace dpumesh;
using namespace std::chrono_literals;
namespace fk = dpumesh::doca_fake;
namespace fdev = dpumesh::doca_dev_fake;
using test::fill;
using test::pod;

namespace {

constexpr uint32_t mib = 1u << 20;

std::string config_json(unsigned threads)
{
	return R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.9.0.1",
            "control_socket": "/tmp/doca4-run.sock" },
  "lcores": { "idle": "adaptive", "stages": { "sidecar": 1 } },
  "pools": { "tx_header": { "slots": 8, "slot_size": 512 }, "tx_body": { "slots": 4, "slot_size": 1048576 },
             "rx_header": { "slots": 8, "slot_size": 512 }, "rx_body": { "slots": 4, "slot_size": 1048576 },
             "sq_depth": 16 },
  "services": [ { "name": "echo", "max_pods": 2 }, { "name": "client", "max_pods": 2 } ],
  "dpa": { "backend": "doca", "threads": )" +
	       std::to_string(threads) + R"(, "device": "0000:03:00.0", "host_device": "0000:3b:00.0" }
})";
}

doca_dpa_func_t *as_func(uint64_t (*f)(uint64_t))
{
	return reinterpret_cast<doca_dpa_func_t *>(reinterpret_cast<void (*)(void)>(f));
}

node::options doca_options()
{
	node::options o;
	o.doca.app = reinterpret_cast<doca_dpa_app *>(0x2);
	o.doca.tx = &dpumesh_dpa_tx_entry;
	o.doca.rx = &dpumesh_dpa_rx_entry;
	o.doca.notify_rpc = as_func(&dpumesh_dpa_notify_rpc);
	return o;
}

/* The FAKE DPA threads over the node's runtime: every kernel, its argument block and state.
 * Both kernels run as DOCA threads do, only on a notification or a completion: the RX kernel
 * on the Arm's wake_rx, the TX kernel's or its own; the TX kernel on its own while it has
 * work, and once parked on the Arm's notify when a pod rang the pair's TX doorbell (or the
 * Arm took a pod in). A pod that posts to a parked kernel without ringing is never seen. */
std::unique_ptr<fdev::scheduler> dpa_threads(node::instance &n)
{
	doca::dpa_runtime &rt = n.doca()->runtime();
	std::vector<fdev::kernel> ks;
	for (unsigned k = 0; k < rt.nb_kernels(); k++)
		ks.push_back({k % 2 == 0 ? &dpumesh_dpa_tx_entry : &dpumesh_dpa_rx_entry, rt.args_ptr(k),
			      reinterpret_cast<void *>(rt.local_ptr(k)), rt.args(k).notification});
	return std::make_unique<fdev::scheduler>(std::move(ks));
}

/* A pod joins: REGISTER over the FAKE comch, the node's control loop admits it */
void join(node::instance &n, pod &p)
{
	auto l = host::doca_link::start({"0000:03:00.1"}, p.mem, p.len, p.reg);
	ASSERT_TRUE(l) << l.error().message();
	for (int i = 0; i < 1000; i++) {
		n.poll_control();
		auto r = (*l)->registered();
		ASSERT_TRUE(r) << r.error().message();
		if (*r)
			break;
		std::this_thread::sleep_for(1ms);
	}
	ASSERT_TRUE((*l)->registered().value()) << "not registered";
	p.link = std::move(*l);
}

/* What one pod took from its RX SQ within a few seconds (the node's lcore and the FAKE
 * DPA threads run meanwhile) */
std::vector<sw_descriptor> wait_rx(node::instance &n, pod &p, size_t want)
{
	std::vector<sw_descriptor> got;
	for (int i = 0; i < 10000 && got.size() < want; i++) {
		n.poll_control();
		for (const sw_descriptor &d : p.take_rx())
			got.push_back(d);
		if (got.size() < want)
			std::this_thread::sleep_for(1ms);
	}
	return got;
}

/* A message on a pod's TX SQ: an L7 header written with `hdr`, a patterned body */
template <typename Fn>
void post(pod &p, uint32_t slot, uint32_t op, uint32_t req_id, uint32_t step, uint32_t blen, uint8_t seed,
	  Fn &&hdr)
{
	wire::l7_writer w(p.at(p.tx_header(slot)), p.reg.geometry.tx_header.slot_size);
	hdr(w);
	const size_t hlen = w.finish();
	ASSERT_FALSE(w.failed());
	sw_descriptor d{};
	d.header_buf_addr = p.tx_header(slot);
	d.header_len = static_cast<uint32_t>(hlen);
	if (blen) {
		d.body_buf_addr = p.tx_body(slot);
		d.body_len = blen;
		fill(p.at(d.body_buf_addr), blen, seed);
	}
	d.req_id = req_id;
	d.step_id = step;
	d.flags = op | DPUMESH_CASE_LOCAL;
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&p.tx, &d, 1), 1u);
	p.ring_tx_if_parked();
}

/* Splits what a pod got into its messages and its TX completions */
void split(const std::vector<sw_descriptor> &in, std::vector<sw_descriptor> *msgs, std::vector<sw_descriptor> *done)
{
	for (const sw_descriptor &d : in)
		((d.flags & DPUMESH_OP_MASK) == DPUMESH_OP_TX_DONE ? done : msgs)->push_back(d);
}

wire::l7_view decode(const pod &p, const sw_descriptor &d)
{
	wire::l7_view v;
	EXPECT_EQ(wire::l7_decode(p.at(d.header_buf_addr), d.header_len, &v), wire::l7_error::ok);
	return v;
}

class doca_node_run : public ::testing::Test {
protected:
	void SetUp() override
	{
		fk::reset();
		fdev::reset();
		/* what the hardware does with an mmap's DPA handle: windows and copies onto it */
		fk::fake().on_dpa_handle = [](uint32_t h, void *addr, size_t len) {
			fdev::add_mmap(h, reinterpret_cast<uint64_t>(addr), addr, len);
		};
		/* what the hardware does with a sync event's DPA handle: the add reaches the event
		 * the pod waits on (its wait task completes on the pod's progress engine) */
		fdev::set_sync_event_hook([](uint64_t h, uint64_t v) { fk::dpa_sync_event_add(h, v); });
	}
	void TearDown() override
	{
		std::lock_guard<std::recursive_mutex> lk(fk::fake_mutex());
		EXPECT_EQ(fk::fake().live_objects, 0);
		EXPECT_EQ(fk::fake().started, 0);
		EXPECT_EQ(fk::fake().allocations, 0);
		EXPECT_TRUE(fk::fake().misuse.empty()) << fk::fake().misuse.front();
	}
};

TEST_F(doca_node_run, Case3ThroughTheRealNodeByteExactThenUnregisterAndOrderlyStop)
{
	auto cfg = config::load_string(config_json(1), "doca_node_run");
	ASSERT_TRUE(cfg) << cfg.error().message();
	/* declared in this order so that a failed assertion unwinds safely: the links close and
	 * the node stops while the FAKE DPA threads run, the threads stop, the node frees its
	 * memory, and only then the pods' memory goes */
	pod client(test::pod_reg("client", mib, 4, 512)), echo(test::pod_reg("echo", mib, 4, 512));
	auto made = node::create(*cfg, doca_options());
	ASSERT_TRUE(made) << made.error().message();
	std::unique_ptr<node::instance> n = std::move(*made);
	EXPECT_EQ(n->emulator(), nullptr);
	EXPECT_EQ(n->pod_socket(), nullptr);
	ASSERT_NE(n->doca(), nullptr);
	ASSERT_TRUE(n->start()) << "start";
	auto dpa = dpa_threads(*n);
	struct stop_first {
		std::unique_ptr<node::instance> &n;
		pod &a, &b;
		~stop_first()
		{
			a.link.reset();
			b.link.reset();
			if (n)
				n->stop();
		}
	} unwind{n, client, echo};

	join(*n, client);
	join(*n, echo);
	ASSERT_TRUE(client.link && echo.link);
	EXPECT_EQ(n->registry().nb_pods(), 2u);
	EXPECT_EQ(n->doca()->nb_pods(), 2u);
	EXPECT_EQ(n->doca()->memory().membership(), 2u);
	{
		/* refused by the registry (register_remote): the reason reaches the pod */
		pod stranger(test::pod_reg("nosuch", 8192, 2, 512));
		auto l = host::doca_link::start({"0000:03:00.1"}, stranger.mem, stranger.len, stranger.reg);
		ASSERT_TRUE(l) << l.error().message();
		std::string why;
		for (int i = 0; i < 1000 && why.empty(); i++) {
			n->poll_control();
			auto r = (*l)->registered();
			if (!r)
				why = r.error().message();
			else
				std::this_thread::sleep_for(1ms);
		}
		EXPECT_NE(why.find("unknown service \"nosuch\""), std::string::npos) << why;
		EXPECT_EQ(n->registry().nb_pods(), 2u);
		EXPECT_EQ(n->doca()->memory().membership(), 2u);
	}

	const uint32_t sizes[] = {0, 1, 127, 4096, 8192, 65535, 256 * 1024, mib - 1, mib};
	uint32_t req = 10;
	for (uint32_t blen : sizes) {
		const uint32_t slot = req % 4;
		client.refill(slot);
		echo.refill(slot);
		post(client, slot, DPUMESH_OP_REQUEST, req, 1, blen, static_cast<uint8_t>(req),
		     [](wire::l7_writer &w) { w.request("echo", "POST", "/run", 0, 0); });
		if (HasFatalFailure())
			return;
		/* the request at echo (the sidecar's token in req_id), the client's TX done */
		std::vector<sw_descriptor> in, done;
		split(wait_rx(*n, echo, 1), &in, &done);
		ASSERT_EQ(in.size(), 1u) << blen << " B: the request did not arrive";
		EXPECT_EQ(in[0].flags & DPUMESH_OP_MASK, uint32_t{DPUMESH_OP_REQUEST});
		ASSERT_EQ(in[0].body_len, blen);
		if (blen) {
			EXPECT_EQ(std::memcmp(echo.at(in[0].body_buf_addr), client.at(client.tx_body(slot)), blen), 0)
				<< blen << " B request body";
		}
		const wire::l7_view rv = decode(echo, in[0]);
		EXPECT_EQ(rv.service, "echo");
		EXPECT_EQ(rv.path, "/run");
		/* echo answers with the body it got, from its own TX slot */
		if (blen)
			std::memcpy(echo.at(echo.tx_body(slot)), echo.at(in[0].body_buf_addr), blen);
		const uint32_t token = in[0].req_id, step = in[0].step_id;
		{
			wire::l7_writer w(echo.at(echo.tx_header(slot)), 512);
			w.response(200);
			sw_descriptor d{};
			d.header_buf_addr = echo.tx_header(slot);
			d.header_len = static_cast<uint32_t>(w.finish());
			d.body_buf_addr = blen ? echo.tx_body(slot) : 0;
			d.body_len = blen;
			d.req_id = token;
			d.step_id = step;
			d.flags = DPUMESH_OP_RESPONSE | DPUMESH_CASE_LOCAL;
			ASSERT_EQ(dpumesh_sq_enqueue_burst(&echo.tx, &d, 1), 1u);
			echo.ring_tx_if_parked();
		}
		std::vector<sw_descriptor> back, client_done;
		auto got = wait_rx(*n, client, 2);
		split(got, &back, &client_done);
		ASSERT_EQ(back.size(), 1u) << blen << " B: the response did not arrive";
		EXPECT_EQ(back[0].flags & DPUMESH_OP_MASK, uint32_t{DPUMESH_OP_RESPONSE});
		EXPECT_EQ(back[0].req_id, req) << "the client's own req_id restored";
		ASSERT_EQ(back[0].body_len, blen);
		if (blen) {
			EXPECT_EQ(std::memcmp(client.at(back[0].body_buf_addr), client.at(client.tx_body(slot)), blen), 0)
				<< blen << " B response body";
		}
		EXPECT_EQ(decode(client, back[0]).status, 200);
		ASSERT_EQ(client_done.size(), 1u) << "the client's TX completed";
		EXPECT_EQ(client_done[0].req_id, req);
		EXPECT_GT(client.tx_rings + echo.tx_rings, 0u) << "the TX kernel parked: posts rang it";
		split(wait_rx(*n, echo, 1), &in, &done);
		EXPECT_EQ(done.size(), 1u) << "echo's TX completed";
		req++;
	}
	EXPECT_EQ(n->sidecar().stats().forwarded.get(), std::size(sizes));
	EXPECT_EQ(n->sidecar().stats().answered.get(), std::size(sizes));

	{
		const fdev::record r = fdev::rec_copy();
		EXPECT_EQ(r.bad_windows, 0u);
		EXPECT_EQ(r.bad_copies, 0u);
	}
	EXPECT_EQ(n->doca()->wake_errors(), 0u);

	/* echo leaves: out of the DPA's tables and the registry, the DPA threads quiescent,
	 * then its import released; a request to echo is answered 503 from the Arm's hbufs */
	echo.link.reset();
	for (int i = 0; i < 2000 && n->registry().nb_pods() != 1; i++) {
		n->poll_control();
		std::this_thread::sleep_for(1ms);
	}
	ASSERT_EQ(n->registry().nb_pods(), 1u);
	EXPECT_EQ(n->doca()->nb_pods(), 1u);
	EXPECT_EQ(n->doca()->gone_errors(), 0u) << "the DPA threads seen quiescent before the import went";
	EXPECT_EQ(n->doca()->memory().membership(), 3u);
	client.refill(0);
	post(client, 0, DPUMESH_OP_REQUEST, 99, 1, 10, 9, [](wire::l7_writer &w) { w.request("echo", "GET", "/", 0, 0); });
	std::vector<sw_descriptor> err, err_done;
	split(wait_rx(*n, client, 2), &err, &err_done);
	ASSERT_EQ(err.size(), 1u) << "an answer for a service with no pod";
	EXPECT_EQ(err[0].req_id, 99u);
	EXPECT_EQ(decode(client, err[0]).status, 503);
	EXPECT_EQ(n->sidecar().stats().no_live_pod.get(), 1u);

	/* orderly stop: the pods out, the lcores, then the kernels finish cooperatively and
	 * report before the node frees what they ran on */
	client.link.reset();
	n->stop();
	EXPECT_TRUE(dpa->all_finished()) << "every FAKE DPA thread called doca_dpa_dev_thread_finish";
	EXPECT_EQ(n->registry().nb_pods(), 0u);
	dpa->stop();
	const uint64_t acts = dpa->activations();
	EXPECT_GT(acts, 0u);
	n.reset(); /* node memory, DPU memory, runtime, device: no DPA thread runs any more */
}

TEST_F(doca_node_run, RefusedWithAClearErrorWhereTheDocaNodeDoesNotReachYet)
{
	auto cfg = config::load_string(config_json(1), "doca_node_run");
	ASSERT_TRUE(cfg) << cfg.error().message();
	/* no DPA program given */
	auto r = node::create(*cfg, {});
	ASSERT_FALSE(r);
	EXPECT_NE(r.error().message().find("no DPA program"), std::string::npos) << r.error().message();
	/* a host PF with no representor on this Arm: the comch server names it */
	config::node_config bad = *cfg;
	bad.dpa.host_device = "0000:99:00.0";
	r = node::create(bad, doca_options());
	ASSERT_FALSE(r);
	EXPECT_NE(r.error().message().find("0000:99:00.0"), std::string::npos) << r.error().message();
	/* two workers: one consumer of the Arm's hbufs */
	bad = *cfg;
	bad.lcores.workers = 2;
	r = node::create(bad, doca_options());
	ASSERT_FALSE(r);
	EXPECT_NE(r.error().message().find("one worker lcore"), std::string::npos) << r.error().message();
	/* each DOCA call of the node's creation failing once: a clear error naming it, nothing
	 * left (a node never started has no kernel that ran: nothing to wait for) */
	std::vector<std::string> seq;
	{
		const size_t base = fk::fake().calls.size();
		auto ok = node::create(*cfg, doca_options());
		ASSERT_TRUE(ok) << ok.error().message();
		seq.assign(fk::fake().calls.begin() + static_cast<long>(base), fk::fake().calls.end());
	}
	ASSERT_GT(seq.size(), 20u);
	size_t tried = 0;
	for (size_t i = 0; i < seq.size(); i++) {
		/* a call that releases (a device list destroyed after the lookup) is no creation
		 * step: nothing is undone for it */
		if (seq[i].find("destroy") != std::string::npos || seq[i].find("_stop") != std::string::npos)
			continue;
		tried++;
		fk::fake().fail_index = static_cast<long>(fk::fake().calls.size() + i);
		auto f = node::create(*cfg, doca_options());
		fk::fake().fail_index = -1;
		ASSERT_FALSE(f) << "call " << i << " (" << seq[i] << ") failing";
		EXPECT_NE(f.error().message().find(seq[i]), std::string::npos)
			<< "call " << i << " (" << seq[i] << "): " << f.error().message();
		EXPECT_NE(f.error().message().find("DPA on DOCA"), std::string::npos) << f.error().message();
		EXPECT_EQ(fk::fake().live_objects, 0) << seq[i];
		EXPECT_EQ(fk::fake().allocations, 0) << seq[i];
	}
	EXPECT_GT(tried, 20u);
}

/* ---- libdpumesh's C API on the DOCA node ---- */

/* A DOCA node from the test's config (nullptr and a failure when it cannot be made) */
std::unique_ptr<node::instance> doca_node()
{
	auto cfg = config::load_string(config_json(1), "doca_node_run");
	if (!cfg) {
		ADD_FAILURE() << cfg.error().message();
		return nullptr;
	}
	auto made = node::create(*cfg, doca_options());
	if (!made) {
		ADD_FAILURE() << made.error().message();
		return nullptr;
	}
	return std::move(*made);
}

constexpr const char *pod_path = "doca:0000:03:00.1"; /* the BlueField PF as the host sees it */

dpumesh_options capi_options(const char *service, dpumesh_callbacks cb, void *user)
{
	dpumesh_options o{};
	o.socket_path = pod_path;
	o.service = service;
	o.nb_workers = 1;
	o.geometry = {{8, 512}, {4, mib}, {8, 512}, {4, mib}, test::depth, 0};
	o.callbacks = cb;
	o.user = user;
	return o;
}

/* dpumesh_open blocks until REGISTERED: the node's control loop runs meanwhile */
int open_capi(node::instance &n, const dpumesh_options &o, dpumesh_t **h, std::string *why)
{
	char err[256] = {};
	int rc = 0;
	std::atomic<bool> done{false};
	std::thread t([&] {
		rc = dpumesh_open(&o, h, err, sizeof(err));
		done.store(true);
	});
	while (!done.load()) {
		n.poll_control();
		std::this_thread::sleep_for(1ms);
	}
	t.join();
	*why = err;
	return rc;
}

/* dpumesh_close waits for UNREGISTERED (the node's quiescence): the control loop runs */
void close_capi(node::instance *n, dpumesh_t *h)
{
	if (h == nullptr)
		return;
	std::atomic<bool> done{false};
	std::thread t([&] {
		dpumesh_close(h);
		done.store(true);
	});
	while (!done.load()) {
		if (n)
			n->poll_control();
		std::this_thread::sleep_for(1ms);
	}
	t.join();
}

/* echo: every request answered 200 with its own body, from the progress thread */
void echo_request(dpumesh_t *h, dpumesh_msg *m, void *)
{
	(void)dpumesh_send_response(h, 0, m, 200, nullptr, 0, m->body, m->body_len);
	dpumesh_msg_release(h, m);
}

struct client_state {
	int responses = 0, tx_done = 0;
	uint32_t req_id = 0;
	uint16_t status = 0;
	std::vector<uint8_t> body;
};

void client_response(dpumesh_t *h, dpumesh_msg *m, void *user)
{
	auto *c = static_cast<client_state *>(user);
	c->responses++;
	c->req_id = m->req_id;
	c->status = m->http_status;
	c->body.assign(static_cast<const uint8_t *>(m->body), static_cast<const uint8_t *>(m->body) + m->body_len);
	dpumesh_msg_release(h, m);
}

void client_tx_done(dpumesh_t *, uint32_t, uint32_t, uint32_t, void *user)
{
	static_cast<client_state *>(user)->tx_done++;
}

TEST_F(doca_node_run, CApiPodsRunCase3OnTheDocaNodeAndSleepOnTheirFd)
{
	std::unique_ptr<node::instance> n = doca_node();
	ASSERT_TRUE(n);
	ASSERT_TRUE(n->start()) << "start";
	auto dpa = dpa_threads(*n);
	client_state cs;
	dpumesh_t *client = nullptr, *echo = nullptr;
	std::atomic<bool> echo_run{true};
	std::thread echo_loop;
	/* a failed assertion unwinds safely: echo's loop ends, the pods close, the node stops
	 * while the FAKE DPA threads run */
	struct close_first {
		std::unique_ptr<node::instance> &n;
		dpumesh_t *&a, *&b;
		std::atomic<bool> &run;
		std::thread &loop;
		~close_first()
		{
			run.store(false);
			if (loop.joinable())
				loop.join();
			close_capi(n.get(), a);
			close_capi(n.get(), b);
			if (n)
				n->stop();
		}
	} unwind{n, client, echo, echo_run, echo_loop};

	std::string why;
	/* no poll timer: what wakes a sleeping pod is a doorbell (the DPA's sync event, the
	 * Arm's DOORBELL, its own eventfd), nothing else */
	::setenv("DPUMESH_DOCA_POLL_US", "0", 1);
	dpumesh_callbacks ecb{};
	ecb.on_request = &echo_request;
	ASSERT_EQ(open_capi(*n, capi_options("echo", ecb, nullptr), &echo, &why), 0) << why;
	dpumesh_callbacks ccb{};
	ccb.on_response = &client_response;
	ccb.on_tx_done = &client_tx_done;
	ASSERT_EQ(open_capi(*n, capi_options("client", ccb, &cs), &client, &why), 0) << why;
	::unsetenv("DPUMESH_DOCA_POLL_US");
	/* each pod's doorbell reached the DPA's tables as its own sync event handle */
	const uint64_t echo_bell = n->doca()->doorbell(dpumesh_pod_id(echo));
	const uint64_t client_bell = n->doca()->doorbell(dpumesh_pod_id(client));
	EXPECT_NE(echo_bell, 0u);
	EXPECT_NE(client_bell, 0u);
	EXPECT_NE(echo_bell, client_bell);
	EXPECT_EQ(n->registry().nb_pods(), 2u);
	EXPECT_EQ(n->doca()->nb_pods(), 2u);
	EXPECT_NE(dpumesh_pod_id(client), dpumesh_pod_id(echo));
	/* the node's refusal reaches the C API with its errno and reason */
	{
		dpumesh_t *x = nullptr;
		EXPECT_EQ(open_capi(*n, capi_options("nosuch", {}, nullptr), &x, &why), -ESRCH) << why;
		EXPECT_EQ(x, nullptr);
		EXPECT_NE(why.find("unknown service \"nosuch\""), std::string::npos) << why;
	}
	/* both pods sleep with no short timeout: what wakes them is the DPA's doorbell (without
	 * it the first request waits out echo's 10 s sleep and the test fails) */
	echo_loop = std::thread([&] {
		while (echo_run.load())
			(void)dpumesh_wait(echo, 10000);
	});

	/* Case 3 byte-exact through the C API both ways */
	const uint32_t sizes[] = {0, 1, 127, 4096, 65535, 256 * 1024, mib - 1, mib};
	uint32_t req = 100;
	std::vector<uint8_t> body;
	for (uint32_t blen : sizes) {
		body.resize(blen);
		fill(body.data(), blen, static_cast<uint8_t>(req));
		dpumesh_request r{};
		r.service = "echo";
		r.method = "POST";
		r.path = "/capi";
		r.body = body.data();
		r.body_len = blen;
		r.req_id = req;
		const int before = cs.responses;
		const auto t0 = std::chrono::steady_clock::now();
		ASSERT_EQ(dpumesh_send_request(client, 0, &r), 0) << blen << " B";
		while (cs.responses == before && std::chrono::steady_clock::now() - t0 < 5s) {
			n->poll_control();
			ASSERT_GE(dpumesh_wait(client, 10000), 0);
		}
		ASSERT_EQ(cs.responses, before + 1) << blen << " B: no response within 5 s (a lost wake-up)";
		EXPECT_EQ(cs.req_id, req) << "the client's own req_id";
		EXPECT_EQ(cs.status, 200);
		ASSERT_EQ(cs.body.size(), blen);
		EXPECT_TRUE(std::equal(body.begin(), body.end(), cs.body.begin())) << blen << " B: body differs";
		req++;
	}
	for (const auto t0 = std::chrono::steady_clock::now();
	     cs.tx_done < static_cast<int>(std::size(sizes)) && std::chrono::steady_clock::now() - t0 < 5s;)
		(void)dpumesh_wait(client, 100);
	EXPECT_EQ(cs.tx_done, static_cast<int>(std::size(sizes))) << "every request's TX completed";
	EXPECT_EQ(n->sidecar().stats().forwarded.get(), std::size(sizes));
	EXPECT_EQ(n->sidecar().stats().answered.get(), std::size(sizes));

	/* the doorbells: both sleepers were rung, each at most once per RX kernel activation,
	 * and at most once per descriptor posted to it (a request or response, a TX completion) */
	{
		const fdev::record r = fdev::rec_copy();
		const uint64_t echo_rings = r.sync_events.count(echo_bell) ? r.sync_events.at(echo_bell) : 0;
		const uint64_t client_rings = r.sync_events.count(client_bell) ? r.sync_events.at(client_bell) : 0;
		std::printf("doorbells: echo %llu, client %llu for %zu round trips; %llu DPA activations\n",
			    static_cast<unsigned long long>(echo_rings), static_cast<unsigned long long>(client_rings),
			    std::size(sizes), static_cast<unsigned long long>(dpa->activations()));
		EXPECT_GT(echo_rings, 0u);
		EXPECT_GT(client_rings, 0u);
		EXPECT_LE(echo_rings, 2 * std::size(sizes));
		EXPECT_LE(client_rings, 2 * std::size(sizes));
		EXPECT_EQ(r.double_rings, 0u) << "a pod rung twice in one activation";
	}

	/* the other way: the TX kernels park idle pods and sleep; a post to a parked kernel
	 * rings the pair's TX doorbell (a sync event add; at most once per parked epoch per
	 * worker, so never more than the posts), which the Arm forwards. Idle, the DPA threads
	 * do not run at all (a polled TX kernel runs every scheduler round, ~50 000 a second) */
	{
		uint64_t adds = 0;
		{
			std::lock_guard<std::recursive_mutex> lk(fk::fake_mutex());
			adds = fk::fake().se_adds;
		}
		std::printf("TX doorbells: %llu rung by the pods, %llu forwarded by the Arm, for %zu posts\n",
			    static_cast<unsigned long long>(adds),
			    static_cast<unsigned long long>(n->doca()->tx_rings()), 2 * std::size(sizes));
		EXPECT_GT(adds, 0u);
		EXPECT_LE(adds, 2 * std::size(sizes));
		EXPECT_GT(n->doca()->tx_rings(), 0u);
		EXPECT_LE(n->doca()->tx_rings(), adds);
		std::this_thread::sleep_for(50ms); /* the last activations end */
		const uint64_t a0 = dpa->activations();
		std::this_thread::sleep_for(200ms);
		EXPECT_LE(dpa->activations() - a0, 4u) << "the DPA threads ran while nothing happened";
	}

	/* none while the flag is clear: the client works without sleeping (dpumesh_progress
	 * only, after its last dpumesh_wait disarmed it) while echo still sleeps */
	{
		dpumesh_stats before{};
		dpumesh_get_stats(client, &before);
		const fdev::record r0 = fdev::rec_copy();
		for (int i = 0; i < 4; i++) {
			dpumesh_request r{};
			r.service = "echo";
			r.method = "GET";
			r.path = "/busy";
			r.req_id = req++;
			const int had = cs.responses;
			ASSERT_EQ(dpumesh_send_request(client, 0, &r), 0);
			for (const auto t0 = std::chrono::steady_clock::now();
			     (cs.responses == had || cs.tx_done < cs.responses) && std::chrono::steady_clock::now() - t0 < 5s;) {
				n->poll_control();
				ASSERT_GE(dpumesh_progress(client), 0);
			}
			ASSERT_EQ(cs.responses, had + 1) << "busy client: no response within 5 s";
		}
		const fdev::record r1 = fdev::rec_copy();
		dpumesh_stats after{};
		dpumesh_get_stats(client, &after);
		EXPECT_EQ(after.sleeps, before.sleeps) << "the client never slept in this phase";
		EXPECT_EQ(r1.sync_events.at(client_bell), r0.sync_events.at(client_bell))
			<< "an awake pod was rung";
		EXPECT_GT(r1.sync_events.at(echo_bell), r0.sync_events.at(echo_bell)) << "the sleeper was not rung";
		EXPECT_EQ(r1.double_rings, 0u);
	}

	/* the wait path: a pod without the poll timer asleep in dpumesh_wait (its epoll set
	 * holds the comch progress engine's fd) wakes on the node's DOORBELL, not on its 10 s
	 * timeout */
	{
		dpumesh_t *quiet = nullptr;
		::setenv("DPUMESH_DOCA_POLL_US", "0", 1);
		const int rc = open_capi(*n, capi_options("client", {}, nullptr), &quiet, &why);
		::unsetenv("DPUMESH_DOCA_POLL_US");
		ASSERT_EQ(rc, 0) << why;
		std::atomic<bool> returned{false};
		const auto t0 = std::chrono::steady_clock::now();
		std::thread sleeper([&] {
			(void)dpumesh_wait(quiet, 10000);
			returned.store(true);
		});
		std::this_thread::sleep_for(100ms);
		EXPECT_FALSE(returned.load()) << "nothing to wake it yet";
		ASSERT_TRUE(n->doca()->ring_pod(dpumesh_pod_id(quiet)));
		for (int i = 0; i < 5000 && !returned.load(); i++) {
			n->poll_control();
			std::this_thread::sleep_for(1ms);
		}
		sleeper.join();
		const auto waited = std::chrono::steady_clock::now() - t0;
		EXPECT_LT(waited, 5s) << "the DOORBELL did not wake the sleeping pod";
		close_capi(n.get(), quiet);
		/* a bad poll period is a clear error */
		::setenv("DPUMESH_DOCA_POLL_US", "fast", 1);
		EXPECT_EQ(open_capi(*n, capi_options("client", {}, nullptr), &quiet, &why), -EINVAL);
		::unsetenv("DPUMESH_DOCA_POLL_US");
		EXPECT_NE(why.find("DPUMESH_DOCA_POLL_US"), std::string::npos) << why;
	}
	dpumesh_stats st{};
	dpumesh_get_stats(client, &st);
	EXPECT_GT(st.sleeps, 0u);
	EXPECT_EQ(st.bad_rx, 0u);

	/* echo leaves through dpumesh_close: UNREGISTER over comch, out of the node (its loop,
	 * asleep for up to 10 s, is woken by the Arm's DOORBELL to see that it must end) */
	echo_run.store(false);
	ASSERT_TRUE(n->doca()->ring_pod(dpumesh_pod_id(echo)));
	echo_loop.join();
	n->poll_control(); /* the DOORBELL's send completion */
	close_capi(n.get(), echo);
	echo = nullptr;
	EXPECT_EQ(n->registry().nb_pods(), 1u) << "out of the node once dpumesh_close returned";
	close_capi(n.get(), client);
	client = nullptr;
	EXPECT_EQ(n->registry().nb_pods(), 0u);
	EXPECT_EQ(n->doca()->gone_errors(), 0u) << "the DPA threads seen quiescent before each import went";
	n->stop();
	EXPECT_TRUE(dpa->all_finished());
	dpa->stop();
	n.reset();
}

TEST_F(doca_node_run, CApiOpenOnDocaFailsClearlyAtEveryStep)
{
	std::unique_ptr<node::instance> n = doca_node();
	ASSERT_TRUE(n);
	dpumesh_t *h = nullptr;
	char err[256] = {};
	/* no device named, and a device that is not there */
	dpumesh_options o = capi_options("echo", {}, nullptr);
	o.socket_path = "doca:";
	EXPECT_EQ(dpumesh_open(&o, &h, err, sizeof(err)), -EINVAL);
	EXPECT_NE(std::string(err).find("names no device"), std::string::npos) << err;
	o.socket_path = "doca:0000:99:00.0";
	EXPECT_EQ(dpumesh_open(&o, &h, err, sizeof(err)), -EIO);
	EXPECT_NE(std::string(err).find("0000:99:00.0"), std::string::npos) << err;
	EXPECT_EQ(h, nullptr);

	/* the link's DOCA calls in dpumesh_open, up to REGISTER sent (what doca_link::start
	 * makes), each failing once: an error naming the call, nothing left */
	const dpumesh_ctrl_register reg = test::pod_reg("echo", mib, 4, 512);
	pod mem(reg);
	const int live = fk::fake().live_objects;
	const size_t base = fk::fake().calls.size();
	std::vector<std::string> seq;
	{
		auto l = host::doca_link::start({"0000:03:00.1"}, mem.mem, mem.len, reg);
		ASSERT_TRUE(l) << l.error().message();
		seq.assign(fk::fake().calls.begin() + static_cast<long>(base), fk::fake().calls.end());
	}
	ASSERT_GT(seq.size(), 20u);
	EXPECT_EQ(seq.back(), "doca_task_submit");
	n->poll_control();
	o = capi_options("echo", {}, nullptr);
	o.geometry = reg.geometry;
	size_t tried = 0;
	for (size_t i = 0; i < seq.size(); i++) {
		if (seq[i].find("destroy") != std::string::npos)
			continue; /* a device list released after the lookup: nothing to undo */
		tried++;
		std::lock_guard<std::recursive_mutex> lk(fk::fake_mutex());
		fk::fake().fail_index = static_cast<long>(fk::fake().calls.size() + i);
		const int rc = dpumesh_open(&o, &h, err, sizeof(err));
		fk::fake().fail_index = -1;
		const std::string ctx = "call " + std::to_string(i) + " (" + seq[i] + ") failing";
		EXPECT_EQ(rc, -EIO) << ctx << ": " << err;
		EXPECT_EQ(h, nullptr) << ctx;
		EXPECT_NE(std::string(err).find(seq[i]), std::string::npos) << ctx << ": " << err;
		EXPECT_NE(std::string(err).find("DOCA pod link"), std::string::npos) << ctx << ": " << err;
		EXPECT_EQ(fk::fake().live_objects, live) << ctx;
	}
	EXPECT_GT(tried, 15u);
	for (int i = 0; i < 50; i++)
		n->poll_control();
	EXPECT_EQ(n->registry().nb_pods(), 0u);
	n->stop();
	n.reset();
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("doca4-run", {}, 256));
	return RUN_ALL_TESTS();
}
