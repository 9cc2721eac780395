// SPDX-License-Identifier: BSD-3-Clause
// The SPSC descriptor queue, single process: ownership bit, wrap-around, full/empty, bursts.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "dpumesh/ring/sq.h"

extern "C" {
int dpumesh_c_sq_init(struct dpumesh_sq *sq, void *mem, uint32_t nb_slots);
uint32_t dpumesh_c_sq_enqueue(struct dpumesh_sq *sq, const struct sw_descriptor *src, uint32_t n);
uint32_t dpumesh_c_sq_dequeue(struct dpumesh_sq *sq, struct sw_descriptor *dst, uint32_t n);
}

namespace {

sw_descriptor make_desc(uint32_t seq)
{
	sw_descriptor d{};
	d.header_buf_addr = 0x1000'0000'0000ull + seq * 64ull;
	d.header_len = 100 + seq % 7;
	d.body_buf_addr = ~static_cast<uint64_t>(seq);
	d.body_len = seq * 3;
	d.req_id = seq;
	d.step_id = seq ^ 0x5a5a5a5au;
	for (unsigned i = 0; i < sizeof(d.dst.external.ip); i++)
		d.dst.external.ip[i] = static_cast<uint8_t>(seq + i);
	d.dst.external.port = static_cast<uint16_t>(seq * 13);
	d.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL;
	d.valid = 0;
	return d;
}

void expect_same_fields(const sw_descriptor &a, const sw_descriptor &b)
{
	EXPECT_EQ(a.header_buf_addr, b.header_buf_addr);
	EXPECT_EQ(a.header_len, b.header_len);
	EXPECT_EQ(a.body_buf_addr, b.body_buf_addr);
	EXPECT_EQ(a.body_len, b.body_len);
	EXPECT_EQ(a.req_id, b.req_id);
	EXPECT_EQ(a.step_id, b.step_id);
	EXPECT_EQ(0, std::memcmp(a.dst.external.ip, b.dst.external.ip, sizeof(a.dst.external.ip)));
	EXPECT_EQ(a.dst.external.port, b.dst.external.port);
	EXPECT_EQ(a.flags, b.flags);
}

/* A ring's memory, zeroed and aligned for sw_descriptor. */
struct ring_mem {
	explicit ring_mem(uint32_t n) : slots(n) {}
	std::vector<sw_descriptor> slots;
	void *data() { return slots.data(); }
};

} // namespace

TEST(Sq, InitRejectsNonPowerOfTwoAndBadMemory)
{
	ring_mem mem(64);
	dpumesh_sq sq;
	for (uint32_t bad : {0u, 3u, 6u, 12u, 100u, 0x80000001u, 0xffffffffu}) {
		EXPECT_EQ(dpumesh_sq_init(&sq, mem.data(), bad), DPUMESH_SQ_ERR_SIZE) << bad;
		EXPECT_EQ(dpumesh_sq_size(&sq), 0u);
		sw_descriptor d = make_desc(1);
		EXPECT_EQ(dpumesh_sq_enqueue_burst(&sq, &d, 1), 0u);
		EXPECT_EQ(dpumesh_sq_dequeue_burst(&sq, &d, 1), 0u);
	}
	EXPECT_EQ(dpumesh_sq_init(&sq, nullptr, 64), DPUMESH_SQ_ERR_ALIGN);
	EXPECT_EQ(dpumesh_sq_init(&sq, static_cast<char *>(mem.data()) + 4, 16),
		  DPUMESH_SQ_ERR_ALIGN);
	for (uint32_t good : {1u, 2u, 64u}) {
		EXPECT_EQ(dpumesh_sq_init(&sq, mem.data(), good), DPUMESH_SQ_OK) << good;
		EXPECT_EQ(dpumesh_sq_size(&sq), good);
	}
	EXPECT_EQ(dpumesh_c_sq_init(&sq, mem.data(), 48), DPUMESH_SQ_ERR_SIZE);
}

TEST(Sq, FullAndEmpty)
{
	constexpr uint32_t n = 8;
	ring_mem mem(n);
	dpumesh_sq prod, cons;
	ASSERT_EQ(dpumesh_sq_init(&prod, mem.data(), n), DPUMESH_SQ_OK);
	ASSERT_EQ(dpumesh_sq_init(&cons, mem.data(), n), DPUMESH_SQ_OK);

	sw_descriptor out[2 * n];
	EXPECT_EQ(dpumesh_sq_dequeue_burst(&cons, out, n), 0u) << "empty ring";

	sw_descriptor in[2 * n];
	for (uint32_t i = 0; i < 2 * n; i++)
		in[i] = make_desc(i);
	/* More than the ring holds: capped at the ring size, never posted twice to a slot. */
	EXPECT_EQ(dpumesh_sq_enqueue_burst(&prod, in, 2 * n), n);
	EXPECT_EQ(dpumesh_sq_enqueue_burst(&prod, in, 1), 0u) << "full ring";
	for (uint32_t i = 0; i < n; i++)
		EXPECT_EQ(mem.slots[i].valid, DPUMESH_DESC_VALID);

	EXPECT_EQ(dpumesh_sq_dequeue_burst(&cons, out, 2 * n), n);
	for (uint32_t i = 0; i < n; i++) {
		expect_same_fields(out[i], in[i]);
		EXPECT_EQ(out[i].valid, DPUMESH_DESC_VALID);
		EXPECT_EQ(mem.slots[i].valid, 0u) << "slot handed back";
	}
	EXPECT_EQ(dpumesh_sq_dequeue_burst(&cons, out, 1), 0u) << "empty again";
}

TEST(Sq, WrapAroundKeepsOrder)
{
	constexpr uint32_t n = 16;
	ring_mem mem(n);
	dpumesh_sq prod, cons;
	ASSERT_EQ(dpumesh_sq_init(&prod, mem.data(), n), DPUMESH_SQ_OK);
	ASSERT_EQ(dpumesh_sq_init(&cons, mem.data(), n), DPUMESH_SQ_OK);

	uint32_t next_in = 0, next_out = 0;
	/* Odd burst sizes so that bursts straddle the end of the ring many times. */
	for (int round = 0; round < 200; round++) {
		sw_descriptor in[7], out[5];
		uint32_t want = 1 + round % 7;
		for (uint32_t i = 0; i < want; i++)
			in[i] = make_desc(next_in + i);
		next_in += dpumesh_sq_enqueue_burst(&prod, in, want);
		uint32_t got = dpumesh_sq_dequeue_burst(&cons, out, 1 + round % 5);
		for (uint32_t i = 0; i < got; i++) {
			expect_same_fields(out[i], make_desc(next_out));
			next_out++;
		}
		ASSERT_LE(next_in - next_out, n);
	}
	EXPECT_GT(next_out, 4 * n) << "wrapped several times";
	/* The handle's position runs past the ring size; slots are pos & mask. */
	EXPECT_EQ(prod.pos, next_in);
	EXPECT_EQ(cons.pos, next_out);
}

TEST(Sq, PartialBurstStopsAtFirstSlotStillOwnedByConsumer)
{
	constexpr uint32_t n = 8;
	ring_mem mem(n);
	dpumesh_sq prod, cons;
	ASSERT_EQ(dpumesh_sq_init(&prod, mem.data(), n), DPUMESH_SQ_OK);
	ASSERT_EQ(dpumesh_sq_init(&cons, mem.data(), n), DPUMESH_SQ_OK);

	sw_descriptor in[n], out[n];
	for (uint32_t i = 0; i < n; i++)
		in[i] = make_desc(i);
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&prod, in, 6), 6u);
	ASSERT_EQ(dpumesh_sq_dequeue_burst(&cons, out, 3), 3u);
	/* Slots 6, 7 free, 0..2 handed back, 3..5 still the consumer's: 5 fit, not 8. */
	EXPECT_EQ(dpumesh_sq_enqueue_burst(&prod, in, n), 5u);
	for (uint32_t s : {0u, 1u, 2u, 6u, 7u})
		EXPECT_EQ(mem.slots[s].valid, DPUMESH_DESC_VALID) << s;

	/* A slot the consumer has not handed back stops the producer even if later ones are free. */
	ASSERT_EQ(dpumesh_sq_dequeue_burst(&cons, out, n), n);
	mem.slots[4].valid = DPUMESH_DESC_VALID; /* pretend slot 4 is still held */
	EXPECT_EQ(dpumesh_sq_enqueue_burst(&prod, in, n), 1u) << "only slot 3";

	/* Consumer stops at the first slot not owned by it, even if later ones are. */
	ring_mem mem2(n);
	dpumesh_sq p2, c2;
	ASSERT_EQ(dpumesh_sq_init(&p2, mem2.data(), n), DPUMESH_SQ_OK);
	ASSERT_EQ(dpumesh_sq_init(&c2, mem2.data(), n), DPUMESH_SQ_OK);
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&p2, in, 4), 4u);
	mem2.slots[2].valid = 0;
	EXPECT_EQ(dpumesh_sq_dequeue_burst(&c2, out, n), 2u);
	/* A value other than DPUMESH_DESC_VALID does not hand the slot to the consumer. */
	mem2.slots[2].valid = 7;
	EXPECT_EQ(dpumesh_sq_dequeue_burst(&c2, out, n), 0u);
}

TEST(Sq, SourceValidFieldIsIgnored)
{
	constexpr uint32_t n = 4;
	ring_mem mem(n);
	dpumesh_sq prod, cons;
	ASSERT_EQ(dpumesh_sq_init(&prod, mem.data(), n), DPUMESH_SQ_OK);
	ASSERT_EQ(dpumesh_sq_init(&cons, mem.data(), n), DPUMESH_SQ_OK);

	sw_descriptor in[3] = {make_desc(1), make_desc(2), make_desc(3)};
	in[0].valid = 0;
	in[1].valid = 0xdeadbeef;
	in[2].valid = DPUMESH_DESC_VALID;
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&prod, in, 3), 3u);
	for (uint32_t i = 0; i < 3; i++)
		EXPECT_EQ(mem.slots[i].valid, DPUMESH_DESC_VALID) << i;
	EXPECT_EQ(mem.slots[3].valid, 0u);

	sw_descriptor out[n];
	std::memset(out, 0xff, sizeof(out));
	ASSERT_EQ(dpumesh_sq_dequeue_burst(&cons, out, n), 3u);
	for (uint32_t i = 0; i < 3; i++) {
		expect_same_fields(out[i], in[i]);
		EXPECT_EQ(out[i].valid, DPUMESH_DESC_VALID);
	}
}

TEST(Sq, ConsumerCopyIsImmuneToLaterSlotWrites)
{
	/* No double fetch: once dequeued, rewriting the slot cannot change the copy. */
	constexpr uint32_t n = 2;
	ring_mem mem(n);
	dpumesh_sq prod, cons;
	ASSERT_EQ(dpumesh_sq_init(&prod, mem.data(), n), DPUMESH_SQ_OK);
	ASSERT_EQ(dpumesh_sq_init(&cons, mem.data(), n), DPUMESH_SQ_OK);
	sw_descriptor in = make_desc(42), out;
	ASSERT_EQ(dpumesh_sq_enqueue_burst(&prod, &in, 1), 1u);
	ASSERT_EQ(dpumesh_sq_dequeue_burst(&cons, &out, 1), 1u);
	mem.slots[0].body_len = 0xffffffffu;
	mem.slots[0].body_buf_addr = 0;
	expect_same_fields(out, in);
}

TEST(Sq, CompiledAsCInteroperatesWithCxx)
{
	constexpr uint32_t n = 32;
	ring_mem mem(n);
	dpumesh_sq prod, cons;
	ASSERT_EQ(dpumesh_c_sq_init(&prod, mem.data(), n), DPUMESH_SQ_OK);
	ASSERT_EQ(dpumesh_sq_init(&cons, mem.data(), n), DPUMESH_SQ_OK);
	sw_descriptor in[20], out[20];
	for (uint32_t i = 0; i < 20; i++)
		in[i] = make_desc(100 + i);
	ASSERT_EQ(dpumesh_c_sq_enqueue(&prod, in, 20), 20u);
	ASSERT_EQ(dpumesh_sq_dequeue_burst(&cons, out, 10), 10u);
	ASSERT_EQ(dpumesh_c_sq_dequeue(&cons, out + 10, 20), 10u);
	for (uint32_t i = 0; i < 20; i++)
		expect_same_fields(out[i], in[i]);
}
