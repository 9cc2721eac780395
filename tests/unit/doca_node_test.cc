// SPDX-License-Identifier: BSD-3-Clause
// The node's DOCA data path end to end against FAKES (no DOCA, no DPA here): the backend
// (device, runtime with the kernels' local storage), the DPU memory and the node memory
// written with the FAKE host calls (doca_fakes.cc; DPA memory is host memory), two pods
// registered over the FAKE comch by libdpumesh's DOCA path (export, REGISTER, import, pod
// blocks and table entries), then the real kernels on the DOCA device mapping run by the
// FAKE device calls (doca_dev_fakes.cc) on exactly what the Arm wrote: Case 3 requests and
// responses byte-exact at 0 B .. the largest body slot, TX completions, doorbells for
// sleepers, hbufs back to the Arm. The Arm's routing step (lib/sidecar) is played by the test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "doca_dev_fakes.h"
#include "doca_fakes.h"
#include "doca_test_pod.h"
#include "dpa_doca.h"
#include "dpumesh/doca/node_memory.h"
#include "dpumesh/doca/pod_channel.h"
#include "dpumesh/host/doca_link.h"
#include "dpumesh/podchan/channel.h"

extern "C" void dpumesh_dpa_tx_entry(uint64_t arg);
extern "C" void dpumesh_dpa_rx_entry(uint64_t arg);
extern "C" uint64_t dpumesh_dpa_notify_rpc(uint64_t notification);

using namespace dpumesh;
namespace fk = dpumesh::doca_fake;
namespace fdev = dpumesh::doca_dev_fake;

namespace {

doca_dpa_app *const app = reinterpret_cast<doca_dpa_app *>(0x2);
using test::fill;
using test::pod;

/* The node: backend, DPU memory, node memory, pod channel; its kernels run by the FAKES */
struct node {
	std::unique_ptr<doca::dpa_backend> backend;
	std::unique_ptr<doca::dpu_memory> dpu;
	std::unique_ptr<doca::node_memory> nm;
	std::unique_ptr<doca::pod_channel_server> chan;
	uint32_t next_pod = 0;

	void up()
	{
		fk::reset();
		fdev::reset();
		/* what the hardware does with an mmap's DPA handle: windows and copies onto it */
		fk::fake().on_dpa_handle = [](uint32_t h, void *addr, size_t len) {
			fdev::add_mmap(h, reinterpret_cast<uint64_t>(addr), addr, len);
		};
		auto b = doca::dpa_backend::create({"0000:03:00.0", 1, {}}, app, &dpumesh_dpa_tx_entry,
						   &dpumesh_dpa_rx_entry,
						   reinterpret_cast<doca_dpa_func_t *>(
							   reinterpret_cast<void (*)(void)>(&dpumesh_dpa_notify_rpc)));
		ASSERT_TRUE(b) << b.error().message();
		backend = std::move(*b);
		auto d = doca::dpu_memory::create(backend->dev().get(), 4 << 20);
		ASSERT_TRUE(d) << d.error().message();
		dpu = std::move(*d);
		doca::node_memory_options o;
		o.ring_slots = 64;
		o.hbuf_size = 512;
		o.hbufs = 16;
		auto m = doca::node_memory::create(backend->runtime(), *dpu, o);
		ASSERT_TRUE(m) << m.error().message();
		nm = std::move(*m);
		doca::pod_channel_hooks h;
		h.admit = [this](const doca::comch_register_view &v, doca_dpa_dev_mmap_t mkey) {
			doca::pod_placement p;
			p.pod_id = next_pod++;
			p.generation = 3 + p.pod_id;
			p.nb_workers = v.reg.nb_workers;
			p.mkey = mkey;
			p.base = v.base;
			p.doorbell = 0x7000 + p.pod_id;
			p.geometry = v.reg.geometry;
			if (status st = nm->register_pod(p); !st)
				return doca::pod_admission{DPUMESH_CTRL_ERR_INTERNAL, 0, 0, st.message(), {}};
			return doca::pod_admission{DPUMESH_CTRL_OK, p.pod_id, p.generation, {}, {}};
		};
		auto c = doca::pod_channel_server::create(backend->dev().get(), "0000:3b:00.0", "dpumesh", h);
		ASSERT_TRUE(c) << c.error().message();
		chan = std::move(*c);
	}
	void join(pod &p)
	{
		auto l = host::doca_link::start({"0000:03:00.1"}, p.mem, p.len, p.reg);
		ASSERT_TRUE(l) << l.error().message();
		for (int i = 0; i < 8; i++) {
			chan->endpoint().progress();
			auto r = (*l)->registered();
			ASSERT_TRUE(r) << r.error().message();
			if (*r)
				break;
		}
		p.link = std::move(*l);
	}
	/* one activation of kernel k, as DOCA enters it: its argument block, its local storage */
	void run(unsigned k)
	{
		fdev::set_local_storage(reinterpret_cast<void *>(backend->runtime().local_ptr(k)));
		(k % 2 == 0 ? dpumesh_dpa_tx_entry : dpumesh_dpa_rx_entry)(backend->runtime().args_ptr(k));
	}
	const dpa_doca_pod *block(uint32_t pod_id) const
	{
		return reinterpret_cast<const dpa_doca_pod *>(nm->pods_ptr()) + pod_id;
	}
	uint64_t counter(const pod &p, uint32_t c) const { return block(p.link->pod_id())->counters[c].v; }
};

/* from posts a message on its TX SQ; the TX kernel takes it; the "Arm" routes it to `to` */
void send(node &n, pod &from, pod &to, uint32_t op, uint32_t hlen, uint32_t blen, uint32_t req)
{
	sw_descriptor d{};
	d.header_buf_addr = from.tx_header(req % 8);
	d.header_len = hlen;
	if (blen) {
		d.body_buf_addr = from.tx_body(req % 8);
		d.body_len = blen;
	}
	d.req_id = req;
	d.step_id = 1;
	d.flags = op | DPUMESH_CASE_LOCAL;
	fill(from.at(d.header_buf_addr), hlen, static_cast<uint8_t>(req));
	if (blen)
		fill(from.at(d.body_buf_addr), blen, static_cast<uint8_t>(req * 7));
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&from.tx, &d, 1), 1u);
	for (int i = 0; i < 3; i++)
		n.run(0);
	sw_descriptor h;
	ASSERT_EQ(dpumesh_sq_dequeue_burst(&n.nm->sidecar_tx(0), &h, 1), 1u);
	EXPECT_EQ(h.dst.pod_id, from.handle()); /* identity from the SQ it came on */
	EXPECT_EQ(std::memcmp(reinterpret_cast<const uint8_t *>(h.header_buf_addr), from.at(d.header_buf_addr), hlen), 0);
	h.dst.pod_id = to.handle();
	h.flags = op | DPUMESH_CASE_LOCAL;
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&n.nm->commands(0), &h, 1), 1u);
	for (int i = 0; i < 3; i++)
		n.run(1);
}

void expect_delivered(pod &from, pod &to, uint32_t op, uint32_t hlen, uint32_t blen, uint32_t req)
{
	auto got = to.take_rx();
	ASSERT_EQ(got.size(), 1u) << "req " << req;
	EXPECT_EQ(got[0].flags & DPUMESH_OP_MASK, op);
	EXPECT_EQ(got[0].req_id, req);
	EXPECT_EQ(got[0].header_len, hlen);
	EXPECT_EQ(got[0].body_len, blen);
	EXPECT_EQ(std::memcmp(to.at(got[0].header_buf_addr), from.at(from.tx_header(req % 8)), hlen), 0) << req;
	if (blen) {
		EXPECT_EQ(std::memcmp(to.at(got[0].body_buf_addr), from.at(from.tx_body(req % 8)), blen), 0) << req;
	}
	auto done = from.take_rx();
	ASSERT_EQ(done.size(), 1u) << "TX_DONE for req " << req;
	EXPECT_EQ(done[0].flags & DPUMESH_OP_MASK, uint32_t{DPUMESH_OP_TX_DONE});
	EXPECT_EQ(done[0].req_id, req);
}

TEST(DocaNode, Case3RequestsAndResponsesByteExactOnWhatTheArmWrote)
{
	node n;
	n.up();
	pod client("client"), echo("echo");
	n.join(client);
	n.join(echo);
	ASSERT_TRUE(client.link && echo.link);
	EXPECT_EQ(n.chan->nb_pods(), 2u);
	EXPECT_EQ(n.nm->membership(), 2u);
	EXPECT_NE(client.link->mkey(), echo.link->mkey());
	/* the pod blocks as the Arm wrote them: the mkey the import gave, the pods' own addresses */
	EXPECT_EQ(n.block(echo.link->pod_id())->mmap, echo.link->mkey());
	EXPECT_EQ(n.block(echo.link->pod_id())->base, reinterpret_cast<uint64_t>(echo.mem));
	EXPECT_EQ(n.block(echo.link->pod_id())->generation, echo.link->generation());

	/* a registered pod's block is the DPA's: writing it again is refused */
	doca::pod_placement again;
	again.pod_id = echo.link->pod_id();
	again.generation = 9;
	again.nb_workers = 1;
	again.mkey = echo.link->mkey();
	again.geometry = echo.reg.geometry;
	auto st = n.nm->register_pod(again);
	ASSERT_FALSE(st);
	EXPECT_NE(st.message().find("is registered"), std::string::npos) << st.message();

	/* the Arm's doorbell to the DPA threads: the notify RPC runs on the DPA (here: the
	 * device code against the FAKES) and notifies each kernel's own notification */
	ASSERT_TRUE(n.nm->start_threads());
	ASSERT_TRUE(n.nm->wake_rx(0));
	const doca::dpa_runtime &rt = n.backend->runtime();
	EXPECT_EQ(fdev::rec().notified, (std::vector<uint64_t>{rt.args(0).notification, rt.args(1).notification,
								rt.args(1).notification}));
	fk::fake().fail_index = static_cast<long>(fk::fake().calls.size());
	auto wf = n.nm->wake_rx(0);
	ASSERT_FALSE(wf);
	EXPECT_NE(wf.message().find("DPA kernel rx0: doca_dpa_rpc(notify) failed"), std::string::npos) << wf.message();
	fk::fake().fail_index = -1;

	const uint32_t sizes[] = {0, 1, 127, 128, 4096, 8191, 8192};
	uint32_t req = 1;
	for (uint32_t blen : sizes) {
		const uint32_t hlen = 40 + blen % 200;
		echo.refill(req % 8);
		client.refill(req % 8);
		echo.asleep(true);
		client.asleep(false);
		const uint64_t rung = fdev::rec().sync_events[0x7000 + echo.link->pod_id()];
		send(n, client, echo, DPUMESH_OP_REQUEST, hlen, blen, req);
		expect_delivered(client, echo, DPUMESH_OP_REQUEST, hlen, blen, req);
		EXPECT_EQ(fdev::rec().sync_events[0x7000 + echo.link->pod_id()], rung + 1) << "the sleeper is rung";
		/* the answer, back the same way */
		echo.asleep(false);
		client.asleep(true);
		send(n, echo, client, DPUMESH_OP_RESPONSE, hlen / 2 + 1, blen, req + 100);
		expect_delivered(echo, client, DPUMESH_OP_RESPONSE, hlen / 2 + 1, blen, req + 100);
		/* the hbufs come back to the Arm's free list (the two delivered, and any the TX
		 * kernel took ahead and did not use): 16 hbufs carry the 14 messages only so */
		EXPECT_GE(n.nm->reclaim(0), 2u);
		req++;
	}
	EXPECT_EQ(n.counter(echo, DPA_DOCA_RX_DELIVERED), std::size(sizes));
	EXPECT_EQ(n.counter(client, DPA_DOCA_RX_DELIVERED), std::size(sizes));
	EXPECT_EQ(fdev::rec().bad_windows, 0u);
	EXPECT_EQ(fdev::rec().bad_copies, 0u);
	EXPECT_EQ(fdev::rec().unflushed, 0u);

	/* Case 2: a network body in three pieces of DPU memory, its header in an Arm hbuf */
	{
		const uint32_t lens[] = {100, 3000, 7};
		std::vector<doca::body_piece> pieces;
		std::vector<uint8_t> want;
		for (uint32_t len : lens) {
			uint8_t *m = n.dpu->carve(len);
			ASSERT_NE(m, nullptr);
			fill(m, len, static_cast<uint8_t>(len));
			want.insert(want.end(), m, m + len);
			pieces.push_back({reinterpret_cast<uint64_t>(m), len});
		}
		std::vector<uint64_t> released;
		n.nm->set_body_release([&](uint64_t cookie) { released.push_back(cookie); });
		auto body = n.nm->make_body(pieces, 42);
		ASSERT_TRUE(body) << body.error().message();
		auto hdr = n.nm->take_hbuf();
		ASSERT_TRUE(hdr) << hdr.error().message();
		fill(reinterpret_cast<uint8_t *>(*hdr), 60, 5);
		echo.refill(3);
		sw_descriptor cmd{};
		cmd.header_buf_addr = *hdr;
		cmd.header_len = 60;
		cmd.body_buf_addr = *body;
		cmd.body_len = static_cast<uint32_t>(want.size());
		cmd.req_id = 555;
		cmd.dst.pod_id = echo.handle();
		cmd.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_INGRESS;
		ASSERT_EQ(dpumesh_sq_enqueue_burst(&n.nm->commands(0), &cmd, 1), 1u);
		for (int i = 0; i < 3; i++)
			n.run(1);
		auto got = echo.take_rx();
		ASSERT_EQ(got.size(), 1u);
		EXPECT_EQ(got[0].req_id, 555u);
		ASSERT_EQ(got[0].body_len, want.size());
		EXPECT_EQ(std::memcmp(echo.at(got[0].body_buf_addr), want.data(), want.size()), 0);
		EXPECT_EQ(std::memcmp(echo.at(got[0].header_buf_addr), reinterpret_cast<uint8_t *>(*hdr), 60), 0);
		EXPECT_EQ(n.nm->reclaim(0), 2u); /* the body and the Arm's hbuf */
		EXPECT_EQ(released, std::vector<uint64_t>{42});
		EXPECT_EQ(n.nm->bodies_back(), 1u);
		EXPECT_EQ(n.nm->bad_back(), 0u);
		/* refused: a piece outside the DPU memory, too many pieces */
		const doca::body_piece outside[] = {{reinterpret_cast<uint64_t>(echo.mem), 10}};
		EXPECT_FALSE(n.nm->make_body(outside, 1));
		std::vector<doca::body_piece> many(DPA_DOCA_BODY_PIECES + 1, pieces[0]);
		EXPECT_FALSE(n.nm->make_body(many, 1));
	}

	/* a pod that leaves: its entry inactive, a message for its old handle is DEST_GONE; the
	 * Arm knows when every DPA thread has let go (the quiescence report) */
	const uint32_t gone_handle = echo.handle();
	ASSERT_TRUE(n.nm->unregister_pod(echo.link->pod_id(), echo.link->generation()));
	const uint32_t m = n.nm->membership();
	auto q = n.nm->quiescent(m);
	ASSERT_TRUE(q) << q.error().message();
	EXPECT_FALSE(*q) << "no activation began after the change yet";
	n.run(0);
	EXPECT_FALSE(n.nm->quiescent(m).value()) << "the RX kernel has not run since";
	client.refill(1);
	sw_descriptor d{};
	d.header_buf_addr = client.tx_header(1);
	d.header_len = 32;
	d.req_id = 999;
	d.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL;
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&client.tx, &d, 1), 1u);
	for (int i = 0; i < 3; i++)
		n.run(0);
	sw_descriptor h;
	ASSERT_EQ(dpumesh_sq_dequeue_burst(&n.nm->sidecar_tx(0), &h, 1), 1u);
	h.dst.pod_id = gone_handle;
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&n.nm->commands(0), &h, 1), 1u);
	for (int i = 0; i < 3; i++)
		n.run(1);
	EXPECT_TRUE(echo.take_rx().empty());
	EXPECT_TRUE(n.nm->quiescent(m).value());
	EXPECT_FALSE(n.nm->quiescent(m + 1).value());
	sw_descriptor note;
	ASSERT_EQ(dpumesh_sq_dequeue_burst(&n.nm->notes(0), &note, 1), 1u) << "handed back to the Arm";
	EXPECT_EQ(dpumesh_flags_status(note.flags), uint32_t{DPUMESH_STATUS_DEST_GONE});

	/* drain, then stop: both kernels finish cooperatively */
	ASSERT_TRUE(n.nm->set_drain(true));
	ASSERT_TRUE(n.backend->runtime().request_stop());
	const uint64_t finishes = fdev::rec().finishes;
	n.run(0);
	n.run(1);
	EXPECT_EQ(fdev::rec().finishes, finishes + 2);

	echo.link.reset();
	client.link.reset();
	n.chan->endpoint().progress();
	EXPECT_EQ(n.chan->nb_pods(), 0u);
	n.chan.reset();
	n.nm.reset();
	n.dpu.reset();
	n.backend.reset();
	EXPECT_EQ(fk::fake().live_objects, 0);
	EXPECT_EQ(fk::fake().started, 0);
	EXPECT_EQ(fk::fake().allocations, 0);
	EXPECT_TRUE(fk::fake().misuse.empty()) << fk::fake().misuse.front();
}

TEST(DocaNode, EveryNodeMemoryCallFailingOnceLeavesNothing)
{
	node n;
	n.up();
	ASSERT_TRUE(n.nm);
	n.chan.reset();
	n.nm.reset();
	/* the sequence of a clean create */
	size_t base = fk::fake().calls.size();
	auto ok = doca::node_memory::create(n.backend->runtime(), *n.dpu, {});
	ASSERT_TRUE(ok) << ok.error().message();
	const std::vector<std::string> seq(fk::fake().calls.begin() + static_cast<long>(base), fk::fake().calls.end());
	ok = errorf("gone");
	ASSERT_GE(seq.size(), 8u);
	const int allocations = fk::fake().allocations;
	for (size_t i = 0; i < seq.size(); i++) {
		/* a fresh DPU memory each round: carving is not undone (it is the node's for life) */
		auto d = doca::dpu_memory::create(n.backend->dev().get(), 2 << 20);
		ASSERT_TRUE(d);
		fk::fake().fail_index = static_cast<long>(fk::fake().calls.size() + i);
		auto m = doca::node_memory::create(n.backend->runtime(), **d, {});
		const std::string ctx = "call " + std::to_string(i) + " (" + seq[i] + ") failing";
		ASSERT_FALSE(m) << ctx;
		EXPECT_NE(m.error().message().find(seq[i]), std::string::npos) << ctx << ": " << m.error().message();
		EXPECT_NE(m.error().message().find("DOCA node memory"), std::string::npos) << ctx;
		EXPECT_EQ(fk::fake().allocations, allocations) << ctx;
		fk::fake().fail_index = -1;
	}
	/* and the DPU memory's own sequence */
	base = fk::fake().calls.size();
	auto d = doca::dpu_memory::create(n.backend->dev().get(), 1 << 20);
	ASSERT_TRUE(d);
	EXPECT_EQ(std::vector<std::string>(fk::fake().calls.begin() + static_cast<long>(base), fk::fake().calls.end()),
		  (std::vector<std::string>{"doca_mmap_create", "doca_mmap_set_memrange", "doca_mmap_add_dev",
					    "doca_mmap_set_permissions", "doca_mmap_start",
					    "doca_mmap_dev_get_dpa_handle"}));
	const int live = fk::fake().live_objects;
	d = errorf("gone");
	EXPECT_EQ(fk::fake().live_objects, live - 1);
	for (long i = 0; i < 6; i++) {
		fk::fake().fail_index = static_cast<long>(fk::fake().calls.size()) + i;
		auto x = doca::dpu_memory::create(n.backend->dev().get(), 1 << 20);
		ASSERT_FALSE(x) << i;
		EXPECT_NE(x.error().message().find("DPU memory: doca_mmap"), std::string::npos) << x.error().message();
		EXPECT_EQ(fk::fake().live_objects, live - 1) << i;
		fk::fake().fail_index = -1;
	}
	/* invalid options are refused before any call */
	base = fk::fake().calls.size();
	doca::node_memory_options bad;
	bad.pairs = 2; /* the runtime has one pair */
	auto b = doca::node_memory::create(n.backend->runtime(), *n.dpu, bad);
	ASSERT_FALSE(b);
	EXPECT_NE(b.error().message().find("2 pairs for 2 kernels"), std::string::npos) << b.error().message();
	EXPECT_EQ(fk::fake().calls.size(), base);
	n.dpu.reset();
	n.backend.reset();
	EXPECT_EQ(fk::fake().live_objects, 0);
	EXPECT_EQ(fk::fake().allocations, 0);
	EXPECT_TRUE(fk::fake().misuse.empty()) << fk::fake().misuse.front();
}

} // namespace
