// SPDX-License-Identifier: BSD-3-Clause
// The DOCA device mapping (dpa_kernels/doca/dpa_dev_doca.c) with the real kernels, compiled
// for the host against FAKES of the doca_dpa_dev_* calls (doca_dev_fakes.cc; no DOCA here):
// pods' rings and the Arm's queues reached only through windows, the security core's
// refusals counted and reported as the pod registry reports them (pod_check.h), deliveries
// with their bytes, TX completions through the owner pair's inbox, doorbells for sleepers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iterator>
#include <cstring>
#include <memory>
#include <vector>

#include "doca_dev_fakes.h"
#include "doca_test_sq.h"
#include "dpa_doca.h"
#include "dpumesh/podlayout/pod_check.h"
#include "dpumesh/ring/sq.h"

extern "C" void dpumesh_dpa_tx_entry(uint64_t arg);
extern "C" void dpumesh_dpa_rx_entry(uint64_t arg);

namespace {

namespace fk = dpumesh::doca_dev_fake;

constexpr uint32_t dpu_mmap = 7;
constexpr uint32_t hbuf_size = 512;
constexpr uint32_t depth = 16;

/* 4096-aligned zeroed memory */
struct block {
	void *p = nullptr;
	size_t len = 0;
	explicit block(size_t n) : len((n + 4095) / 4096 * 4096)
	{
		p = std::aligned_alloc(4096, len);
		std::memset(p, 0, len);
	}
	~block() { std::free(p); }
	uint8_t *bytes() const { return static_cast<uint8_t *>(p); }
	uint64_t addr() const { return reinterpret_cast<uint64_t>(p); }
};

dpumesh_geometry small_geometry()
{
	dpumesh_geometry g = {};
	g.tx_header = {8, 256};
	g.tx_body = {8, 4096};
	g.rx_header = {8, 256};
	g.rx_body = {8, 4096};
	g.sq_depth = depth;
	return g;
}

struct world;

/* A pod: its region at a pod address that is not the local one (the mapping must name
 * memory by (mmap, the pod's address)), its TX SQs in another mmap. */
struct pod {
	uint32_t id = 0, generation = 0, handle = 0;
	uint32_t mmap = 0, txsq_mmap = 0;
	uint64_t base = 0; /* the pod's address of its region */
	dpumesh_geometry g = small_geometry();
	dpumesh_pod_layout l = {};
	std::unique_ptr<block> region, txsq;
	dpumesh_sq tx = {}, rx = {}, refill_h = {}, refill_b = {};

	uint8_t *local(uint64_t pod_addr) const { return region->bytes() + (pod_addr - base); }
	uint64_t tx_header_slot(uint32_t i) const { return base + l.tx_header_off + i * g.tx_header.slot_size; }
	uint64_t tx_body_slot(uint32_t i) const { return base + l.tx_body_off + i * g.tx_body.slot_size; }
	uint64_t rx_header_slot(uint32_t i) const { return base + l.rx_header_off + i * g.rx_header.slot_size; }
	uint64_t rx_body_slot(uint32_t i) const { return base + l.rx_body_off + i * g.rx_body.slot_size; }
	uint64_t epoch = 0;
	bool sleeping = false;
	void set_asleep(bool asleep)
	{
		auto *c = reinterpret_cast<dpumesh_pod_ctrl *>(region->bytes() + l.ctrl_off);
		__atomic_store_n(&c->rx_wait, dpumesh::test::rx_wait_word(&epoch, &sleeping, asleep), __ATOMIC_RELEASE);
	}
	void refill(bool body, uint64_t addr, uint32_t gen)
	{
		sw_descriptor d = {};
		(body ? d.body_buf_addr : d.header_buf_addr) = addr;
		d.step_id = gen;
		ASSERT_EQ(dpumesh_sq_enqueue_burst(body ? &refill_b : &refill_h, &d, 1), 1u);
	}
	std::vector<sw_descriptor> take_rx() { return dpumesh::test::take_all(rx); }
};

struct world {
	static constexpr uint32_t max_pairs = 2;
	uint32_t nb_pairs;
	std::unique_ptr<pod_registry_entry[]> table{new pod_registry_entry[DPUMESH_MAX_PODS]()};
	std::unique_ptr<dpa_doca_pod[]> pods{new dpa_doca_pod[DPUMESH_MAX_PODS]()};
	std::unique_ptr<dpa_doca_inbox[]> inbox{new dpa_doca_inbox[max_pairs]()};
	dpa_doca_node node = {};
	/* the DPU mmap: the Arm's memory the DPA reaches through windows (identity addresses) */
	block dpu{1 << 20};
	size_t dpu_used = 0;
	struct pair_side {
		std::unique_ptr<dpa_dev> tx{new dpa_dev()}, rx{new dpa_dev()};
		std::unique_ptr<dpa_tx_state> ts{new dpa_tx_state()};
		std::unique_ptr<dpa_rx_state> rs{new dpa_rx_state()};
		dpumesh_sq sidecar_tx = {}, commands = {}, notes = {}, hbuf_free = {}, back_tx = {}, back_rx = {};
	} pair[max_pairs];
	std::vector<std::unique_ptr<pod>> pod_list;
	uint32_t next_mmap = 0x100;

	explicit world(uint32_t pairs = 1) : nb_pairs(pairs)
	{
		fk::reset();
		fk::add_mmap(dpu_mmap, dpu.addr(), dpu.p, dpu.len);
		node.nb_pairs = nb_pairs;
		node.pods = reinterpret_cast<uint64_t>(pods.get());
		for (uint32_t p = 0; p < max_pairs; p++) {
			node.rx_notify[p] = 0x900 + p;
			node.inbox[p] = reinterpret_cast<uint64_t>(&inbox[p]);
			for (uint32_t i = 0; i < DPA_DOCA_INBOX; i++)
				inbox[p].mail[i].seq = i;
		}
		for (uint32_t p = 0; p < nb_pairs; p++)
			setup_pair(p);
	}
	~world() { fk::reset(); }

	uint8_t *dpu_alloc(size_t n)
	{
		uint8_t *m = dpu.bytes() + dpu_used;
		dpu_used += (n + 63) / 64 * 64;
		EXPECT_LE(dpu_used, dpu.len);
		return m;
	}
	dpa_doca_ring ring_in_dpu(dpumesh_sq *arm)
	{
		uint8_t *m = dpu_alloc(depth * sizeof(sw_descriptor));
		dpumesh_sq_init(arm, m, depth);
		return {reinterpret_cast<uint64_t>(m), dpu_mmap, depth - 1, 0, 0};
	}
	void setup_thread(dpa_dev *d, uint32_t p, uint32_t role)
	{
		d->completion = 0x500 + p * 2 + role;
		d->notification = role == DPA_DOCA_RX ? node.rx_notify[p] : 0x800 + p;
		d->table = reinterpret_cast<uint64_t>(table.get());
		d->dpu_mmap = dpu_mmap;
		d->node = reinterpret_cast<uint64_t>(&node);
		d->pair = p;
		d->role = role;
		d->hbuf_size = hbuf_size;
	}
	void setup_pair(uint32_t p)
	{
		pair_side &s = pair[p];
		setup_thread(s.tx.get(), p, DPA_DOCA_TX);
		setup_thread(s.rx.get(), p, DPA_DOCA_RX);
		s.tx->sidecar = ring_in_dpu(&s.sidecar_tx);
		s.tx->hbuf_free = ring_in_dpu(&s.hbuf_free);
		s.tx->back = ring_in_dpu(&s.back_tx);
		s.rx->sidecar = ring_in_dpu(&s.commands);
		s.rx->notify = ring_in_dpu(&s.notes);
		s.rx->back = ring_in_dpu(&s.back_rx);
		for (uint32_t i = 0; i < 8; i++) {
			sw_descriptor h = {};
			h.header_buf_addr = reinterpret_cast<uint64_t>(dpu_alloc(hbuf_size));
			EXPECT_EQ(dpumesh_sq_enqueue_burst(&s.hbuf_free, &h, 1), 1u);
		}
	}

	/* registers a pod as the Arm would: its block whole, then the table entry active */
	pod &add_pod(uint32_t id, uint32_t generation)
	{
		auto p = std::make_unique<pod>();
		p->id = id;
		p->generation = generation;
		p->handle = dpumesh_pod_handle(id, generation);
		EXPECT_EQ(dpumesh_pod_layout_compute(&p->g, &p->l), DPUMESH_LAYOUT_OK);
		p->region = std::make_unique<block>(p->l.total_size);
		p->txsq = std::make_unique<block>(dpumesh_tx_region_size(depth, 1));
		p->mmap = next_mmap++;
		p->txsq_mmap = next_mmap++;
		p->base = 0x100000000000ull * (id + 1);
		fk::add_mmap(p->mmap, p->base, p->region->p, p->l.total_size);
		const uint64_t txsq_base = 0x0f0000000000ull * (id + 1);
		fk::add_mmap(p->txsq_mmap, txsq_base, p->txsq->p, p->txsq->len);
		dpumesh_sq_init(&p->tx, p->txsq->p, depth);
		dpumesh_sq_init(&p->rx, p->region->bytes() + p->l.rx_sq_off, depth);
		dpumesh_sq_init(&p->refill_h, p->region->bytes() + p->l.rx_header_refill_off, depth);
		dpumesh_sq_init(&p->refill_b, p->region->bytes() + p->l.rx_body_refill_off, depth);

		dpa_doca_pod &b = pods[id];
		std::memset(&b, 0, sizeof(b));
		b.generation = generation;
		b.nb_workers = 1;
		b.mmap = p->mmap;
		b.base = p->base;
		b.doorbell = 0x7000 + id;
		b.geometry = p->g;
		b.layout = p->l;
		b.tx_sq[0] = {txsq_base, p->txsq_mmap, depth - 1, 0, 0};
		b.rx_sq = {p->base + p->l.rx_sq_off, p->mmap, depth - 1, 0, 0};
		b.refill_header = {p->base + p->l.rx_header_refill_off, p->mmap, depth - 1, 0, 0};
		b.refill_body = {p->base + p->l.rx_body_refill_off, p->mmap, depth - 1, 0, 0};
		table[id].rx_header_mkey = table[id].rx_body_mkey = p->mmap;
		table[id].generation = generation;
		__atomic_store_n(&table[id].is_active, 1u, __ATOMIC_RELEASE);
		node.membership++;
		pod_list.push_back(std::move(p));
		return *pod_list.back();
	}

	void run_tx(uint32_t p = 0)
	{
		fk::set_local_storage(pair[p].ts.get());
		dpumesh_dpa_tx_entry(reinterpret_cast<uint64_t>(pair[p].tx.get()));
	}
	void run_rx(uint32_t p = 0)
	{
		fk::set_local_storage(pair[p].rs.get());
		dpumesh_dpa_rx_entry(reinterpret_cast<uint64_t>(pair[p].rx.get()));
	}
	uint64_t counter(const pod &p, uint32_t c) const { return pods[p.id].counters[c].v; }
};

/* A request the pod posts: header in TX header slot 1, body (if any) in TX body slot 2. */
sw_descriptor request(const pod &p, uint32_t header_len, uint32_t body_len, uint64_t req_id)
{
	sw_descriptor d = {};
	d.header_buf_addr = p.tx_header_slot(1);
	d.header_len = header_len;
	if (body_len) {
		d.body_buf_addr = p.tx_body_slot(2);
		d.body_len = body_len;
	}
	d.req_id = req_id;
	d.step_id = 3;
	d.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL;
	return d;
}

void fill(uint8_t *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = static_cast<uint8_t>(seed + i * 7);
}

std::vector<sw_descriptor> drain(dpumesh_sq *sq)
{
	std::vector<sw_descriptor> v;
	sw_descriptor d;
	while (dpumesh_sq_dequeue_burst(sq, &d, 1) == 1)
		v.push_back(d);
	return v;
}

TEST(DocaDevMapping, TxKernelCopiesTheHeaderIntoAnHbufAndPostsItToTheArm)
{
	world w;
	pod &a = w.add_pod(3, 5);
	sw_descriptor d = request(a, 200, 1000, 42);
	fill(a.local(d.header_buf_addr), 200, 1);
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&a.tx, &d, 1), 1u);
	for (int i = 0; i < 3; i++)
		w.run_tx();
	auto out = drain(&w.pair[0].sidecar_tx);
	ASSERT_EQ(out.size(), 1u);
	EXPECT_EQ(out[0].dst.pod_id, a.handle);
	EXPECT_EQ(out[0].body_buf_addr, d.body_buf_addr); /* the body stays with the pod */
	EXPECT_EQ(out[0].body_len, 1000u);
	EXPECT_EQ(out[0].req_id, 42u);
	const uint8_t *hdr = reinterpret_cast<const uint8_t *>(out[0].header_buf_addr);
	EXPECT_EQ(std::memcmp(hdr, a.local(d.header_buf_addr), 200), 0);
	const auto *meta = reinterpret_cast<const dpa_hbuf_meta *>(out[0].header_buf_addr - DPA_HBUF_META_SIZE);
	EXPECT_EQ(meta->src, a.handle);
	EXPECT_EQ(meta->orig.req_id, 42u);
	EXPECT_EQ(w.counter(a, DPA_DOCA_TX_TAKEN), 1u);
	EXPECT_TRUE(a.take_rx().empty());
	EXPECT_EQ(fk::rec().bad_windows, 0u);
	EXPECT_EQ(fk::rec().bad_copies, 0u);
	EXPECT_EQ(fk::rec().unflushed, 0u);
	EXPECT_EQ(fk::rec().reschedules, 3u);
}

struct refusal_case {
	const char *name;
	uint32_t reason;
	uint32_t status;
	void (*mutate)(const pod &, sw_descriptor &);
};

TEST(DocaDevMapping, RefusalsAreCountedByReasonAndReportedToThePodAsTheRegistryDoes)
{
	const refusal_case cases[] = {
		{"reserved bits", DPUMESH_TX_REFUSED_reserved_bits, DPUMESH_STATUS_BAD_DESCRIPTOR,
		 [](const pod &, sw_descriptor &d) { d.flags |= 1u << 12; }},
		{"bad op", DPUMESH_TX_REFUSED_bad_op, DPUMESH_STATUS_BAD_DESCRIPTOR,
		 [](const pod &, sw_descriptor &d) { d.flags = DPUMESH_OP_TX_DONE | DPUMESH_CASE_LOCAL; }},
		{"bad case", DPUMESH_TX_REFUSED_bad_case, DPUMESH_STATUS_BAD_DESCRIPTOR,
		 [](const pod &, sw_descriptor &d) { d.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_INGRESS; }},
		{"no header", DPUMESH_TX_REFUSED_no_header, DPUMESH_STATUS_BAD_DESCRIPTOR,
		 [](const pod &, sw_descriptor &d) { d.header_len = 0; }},
		{"body mismatch", DPUMESH_TX_REFUSED_body_mismatch, DPUMESH_STATUS_BAD_DESCRIPTOR,
		 [](const pod &, sw_descriptor &d) { d.body_len = 0; }},
		{"header too long", DPUMESH_TX_REFUSED_header_too_long, DPUMESH_STATUS_TOO_LARGE,
		 [](const pod &, sw_descriptor &d) { d.header_len = 257; }},
		{"body too long", DPUMESH_TX_REFUSED_body_too_long, DPUMESH_STATUS_TOO_LARGE,
		 [](const pod &, sw_descriptor &d) { d.body_len = 4097; }},
		{"header outside", DPUMESH_TX_REFUSED_header_outside, DPUMESH_STATUS_BAD_ADDRESS,
		 [](const pod &p, sw_descriptor &d) { d.header_buf_addr = p.rx_header_slot(0); }},
		{"header unaligned", DPUMESH_TX_REFUSED_header_unaligned, DPUMESH_STATUS_BAD_ADDRESS,
		 [](const pod &, sw_descriptor &d) { d.header_buf_addr += 64; }},
		{"body outside", DPUMESH_TX_REFUSED_body_outside, DPUMESH_STATUS_BAD_ADDRESS,
		 [](const pod &p, sw_descriptor &d) { d.body_buf_addr = p.base - 4096; }},
		{"body unaligned", DPUMESH_TX_REFUSED_body_unaligned, DPUMESH_STATUS_BAD_ADDRESS,
		 [](const pod &, sw_descriptor &d) { d.body_buf_addr += 8; }},
	};
	static_assert(std::size(cases) == DPUMESH_TX_ACCEPT, "one case per reason");
	world w;
	pod &a = w.add_pod(0, 9);
	uint64_t id = 100;
	for (const refusal_case &c : cases) {
		sw_descriptor d = request(a, 100, 100, id++);
		c.mutate(a, d);
		ASSERT_EQ(dpumesh_sq_enqueue_burst(&a.tx, &d, 1), 1u) << c.name;
	}
	sw_descriptor good = request(a, 100, 100, id++);
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&a.tx, &good, 1), 1u);
	w.run_tx();
	w.run_tx();
	/* reports go through the pair's inbox: its RX kernel is the RX SQ's one producer */
	EXPECT_TRUE(a.take_rx().empty());
	size_t woken = 0;
	for (uint64_t h : fk::rec().notified)
		woken += h == w.node.rx_notify[0];
	EXPECT_GE(woken, 1u);
	w.run_rx();
	auto rep = a.take_rx();
	ASSERT_EQ(rep.size(), std::size(cases));
	for (size_t i = 0; i < rep.size(); i++) {
		const refusal_case &c = cases[i];
		EXPECT_EQ(rep[i].req_id, 100 + i) << c.name;
		EXPECT_EQ(rep[i].flags & DPUMESH_OP_MASK, DPUMESH_OP_TX_DONE | DPUMESH_OP_ERROR) << c.name;
		EXPECT_EQ(dpumesh_flags_status(rep[i].flags), c.status) << c.name;
		EXPECT_EQ(rep[i].dst.pod_id, 0u) << c.name;
		EXPECT_EQ(w.counter(a, DPA_DOCA_TX_REFUSED + c.reason), 1u) << c.name;
	}
	EXPECT_EQ(w.counter(a, DPA_DOCA_TX_DONE_POSTED), std::size(cases));
	EXPECT_EQ(w.counter(a, DPA_DOCA_TX_TAKEN), 1u); /* the good one */
	EXPECT_EQ(drain(&w.pair[0].sidecar_tx).size(), 1u);
}

/* A's request through the TX kernel, routed by the "Arm" to B on pair p's command ring. */
sw_descriptor route(world &w, pod &a, pod &b, uint32_t header_len, uint32_t body_len,
		    uint32_t tx_pair, uint32_t rx_pair)
{
	sw_descriptor d = request(a, header_len, body_len, 77);
	fill(a.local(d.header_buf_addr), header_len, 3);
	if (body_len)
		fill(a.local(d.body_buf_addr), body_len, 9);
	EXPECT_EQ(dpumesh_sq_enqueue_burst(&a.tx, &d, 1), 1u);
	w.run_tx(tx_pair);
	w.run_tx(tx_pair);
	auto hdr = drain(&w.pair[tx_pair].sidecar_tx);
	EXPECT_EQ(hdr.size(), 1u);
	if (hdr.empty())
		return {};
	sw_descriptor cmd = hdr[0];
	cmd.dst.pod_id = b.handle;
	cmd.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL;
	EXPECT_EQ(dpumesh_sq_enqueue_burst(&w.pair[rx_pair].commands, &cmd, 1), 1u);
	return d;
}

TEST(DocaDevMapping, RxKernelDeliversBytesCompletesTheSenderAndRingsOnlySleepers)
{
	world w;
	pod &a = w.add_pod(0, 4);
	pod &b = w.add_pod(1, 6);
	b.refill(false, b.rx_header_slot(0), b.generation - 1); /* stale: discarded, counted */
	b.refill(false, b.rx_header_slot(3), b.generation);
	b.refill(true, b.rx_body_slot(5), b.generation);
	b.set_asleep(true);
	a.set_asleep(false);
	const sw_descriptor sent = route(w, a, b, 180, 3000, 0, 0);
	for (int i = 0; i < 3; i++)
		w.run_rx();
	auto got = b.take_rx();
	ASSERT_EQ(got.size(), 1u);
	EXPECT_EQ(got[0].header_buf_addr, b.rx_header_slot(3));
	EXPECT_EQ(got[0].body_buf_addr, b.rx_body_slot(5));
	EXPECT_EQ(got[0].header_len, 180u);
	EXPECT_EQ(got[0].body_len, 3000u);
	EXPECT_EQ(got[0].req_id, 77u);
	EXPECT_EQ(std::memcmp(b.local(got[0].header_buf_addr), a.local(sent.header_buf_addr), 180), 0);
	EXPECT_EQ(std::memcmp(b.local(got[0].body_buf_addr), a.local(sent.body_buf_addr), 3000), 0);
	auto done = a.take_rx();
	ASSERT_EQ(done.size(), 1u);
	EXPECT_EQ(done[0].flags, DPUMESH_OP_TX_DONE | DPUMESH_CASE_LOCAL);
	EXPECT_EQ(done[0].req_id, 77u);
	EXPECT_EQ(done[0].body_buf_addr, sent.body_buf_addr);
	EXPECT_EQ(w.counter(b, DPA_DOCA_REFILL_REFUSED + uint32_t{DPUMESH_REFILL_REFUSED_stale_generation}), 1u);
	EXPECT_EQ(w.counter(b, DPA_DOCA_RX_DELIVERED), 1u);
	EXPECT_EQ(w.counter(a, DPA_DOCA_TX_DONE_POSTED), 1u);
	/* B sleeps: rung once; A is awake: no doorbell */
	EXPECT_EQ(fk::rec().sync_events[0x7001], 1u);
	EXPECT_EQ(fk::rec().sync_events.count(0x7000), 0u);
	EXPECT_EQ(w.counter(b, DPA_DOCA_DOORBELLS), 1u);
	EXPECT_EQ(w.counter(a, DPA_DOCA_DOORBELLS_SUPPRESSED), 1u);
	/* the hbuf went back to the Arm */
	auto back = drain(&w.pair[0].back_rx);
	ASSERT_EQ(back.size(), 1u);
	EXPECT_EQ(back[0].flags, DPA_DOCA_BACK_HBUF);
	EXPECT_EQ(fk::rec().bad_windows, 0u);
	EXPECT_EQ(fk::rec().bad_copies, 0u);
}

TEST(DocaDevMapping, CompletionForAPodOfAnotherPairGoesThroughThatPairsInbox)
{
	world w(2);
	pod &a = w.add_pod(1, 2); /* owned by pair 1 */
	pod &b = w.add_pod(0, 2); /* owned by pair 0 */
	b.refill(false, b.rx_header_slot(0), b.generation);
	const sw_descriptor sent = route(w, a, b, 64, 0, 1, 0);
	for (int i = 0; i < 3; i++)
		w.run_rx(0);
	ASSERT_EQ(b.take_rx().size(), 1u);
	EXPECT_TRUE(a.take_rx().empty()); /* pair 0 never writes A's RX SQ */
	size_t woken = 0;
	for (uint64_t h : fk::rec().notified)
		woken += h == w.node.rx_notify[1];
	EXPECT_EQ(woken, 1u);
	EXPECT_EQ(w.pair[0].rx->stats[DPA_DOCA_ST_REMOTE_COMPLETIONS].v, 1u);
	w.run_rx(1);
	auto done = a.take_rx();
	ASSERT_EQ(done.size(), 1u);
	EXPECT_EQ(done[0].req_id, sent.req_id);
	EXPECT_EQ(done[0].flags & DPUMESH_OP_ERROR, 0u);
}

TEST(DocaDevMapping, FailuresGoBackToTheArmWithTheirStatus)
{
	world w;
	pod &a = w.add_pod(0, 4);
	pod &b = w.add_pod(1, 6);
	/* B posts only refills it may not: another pod's address, an unaligned one */
	b.refill(false, a.rx_header_slot(0), b.generation);
	b.refill(false, b.rx_header_slot(1) + 64, b.generation);
	route(w, a, b, 100, 0, 0, 0);
	/* and a command for a registration that is gone */
	sw_descriptor hdr = request(a, 100, 0, 88);
	fill(a.local(hdr.header_buf_addr), 100, 5);
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&a.tx, &hdr, 1), 1u);
	w.run_tx();
	w.run_tx();
	auto h = drain(&w.pair[0].sidecar_tx);
	ASSERT_EQ(h.size(), 1u);
	h[0].dst.pod_id = dpumesh_pod_handle(b.id, b.generation + 1);
	h[0].flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL;
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&w.pair[0].commands, &h[0], 1), 1u);
	w.run_rx();
	auto notes = drain(&w.pair[0].notes);
	ASSERT_EQ(notes.size(), 2u);
	EXPECT_EQ(dpumesh_flags_status(notes[0].flags), DPUMESH_STATUS_DEST_FULL);
	EXPECT_EQ(dpumesh_flags_status(notes[1].flags), DPUMESH_STATUS_DEST_GONE);
	EXPECT_NE(notes[1].flags & DPUMESH_OP_ERROR, 0u);
	EXPECT_EQ(w.counter(b, DPA_DOCA_REFILL_REFUSED + uint32_t{DPUMESH_REFILL_REFUSED_outside}), 1u);
	EXPECT_EQ(w.counter(b, DPA_DOCA_REFILL_REFUSED + uint32_t{DPUMESH_REFILL_REFUSED_unaligned}), 1u);
	EXPECT_EQ(w.counter(b, DPA_DOCA_RX_NO_SLOT), 1u);
	EXPECT_TRUE(b.take_rx().empty());
	EXPECT_TRUE(a.take_rx().empty()); /* the Arm decides what the sender hears */
}

TEST(DocaDevMapping, DrainTakesNoNewWorkAndStopFinishesOnceIdle)
{
	world w;
	pod &a = w.add_pod(0, 4);
	sw_descriptor d = request(a, 100, 0, 1);
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&a.tx, &d, 1), 1u);
	w.node.drain = 1;
	w.run_tx();
	EXPECT_EQ(w.counter(a, DPA_DOCA_TX_TAKEN), 0u);
	w.node.drain = 0;
	w.run_tx();
	EXPECT_EQ(w.counter(a, DPA_DOCA_TX_TAKEN), 1u);
	w.run_tx(); /* the copy completed: posted to the Arm */
	EXPECT_EQ(drain(&w.pair[0].sidecar_tx).size(), 1u);
	w.pair[0].tx->stop = 1;
	w.pair[0].rx->stop = 1;
	w.run_tx();
	w.run_rx();
	EXPECT_EQ(fk::rec().finishes, 2u);
}

TEST(DocaDevMapping, AGoneSenderIsNeverReadAndAStaleTableEntryStopsItsSqs)
{
	world w;
	pod &a = w.add_pod(0, 4);
	sw_descriptor d = request(a, 100, 0, 1);
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&a.tx, &d, 1), 1u);
	__atomic_store_n(&w.table[0].is_active, 0u, __ATOMIC_RELEASE); /* unregistration began */
	w.run_tx();
	EXPECT_EQ(w.counter(a, DPA_DOCA_TX_TAKEN), 0u);
	EXPECT_EQ(fk::rec().bad_windows, 0u);
}

} // namespace
