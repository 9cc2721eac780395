// SPDX-License-Identifier: BSD-3-Clause
// A pod process's side on the DOCA path for tests against the FAKES: its memory (region,
// then its TX SQs after it, as docs/doca.md places them), registered through libdpumesh's
// doca_link, with its rings driven by hand (the test plays the pod's event loop).
#pragma once

#include <gtest/gtest.h>

#include "doca_test_sq.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "dpumesh/abi/abi.h"
#include "dpumesh/doca/pod_msg.h"
#include "dpumesh/host/doca_link.h"
#include "dpumesh/podchan/channel.h"
#include "dpumesh/podlayout/pod_layout.h"
#include "dpumesh/ring/sq.h"

namespace dpumesh::test {

constexpr uint32_t depth = 16;

/** 8 slots of 256 B headers and 8 KiB bodies each way unless told otherwise. */
inline dpumesh_ctrl_register pod_reg(const char *service, uint32_t body_slot = 8192, uint32_t slots = 8,
				     uint32_t header_slot = 256)
{
	dpumesh_ctrl_register r{};
	r.hdr = podchan::make_hdr(DPUMESH_CTRL_REGISTER, sizeof(r));
	std::snprintf(r.service, sizeof(r.service), "%s", service);
	r.nb_workers = 1;
	r.geometry = {{slots, header_slot}, {slots, body_slot}, {slots, header_slot}, {slots, body_slot}, depth, 0};
	return r;
}

/* A pod process's side: its memory (region + TX SQs), registered through doca_link */
struct pod {
	dpumesh_ctrl_register reg;
	dpumesh_pod_layout l{};
	size_t len = 0;
	uint8_t *mem = nullptr;
	std::unique_ptr<host::doca_link> link;
	dpumesh_sq tx{}, rx{}, refill_h{}, refill_b{};

	explicit pod(const char *service) : pod(pod_reg(service)) {}
	explicit pod(const dpumesh_ctrl_register &r) : reg(r)
	{
		EXPECT_EQ(dpumesh_pod_layout_compute(&reg.geometry, &l), DPUMESH_LAYOUT_OK);
		len = doca::comch_pod_memory_size(reg);
		mem = static_cast<uint8_t *>(std::aligned_alloc(4096, len));
		std::memset(mem, 0, len);
		const uint64_t tx_off = (l.total_size + 4095) / 4096 * 4096 + dpumesh_tx_sq_offset(depth, 0);
		dpumesh_sq_init(&tx, mem + tx_off, depth);
		dpumesh_sq_init(&rx, mem + l.rx_sq_off, depth);
		dpumesh_sq_init(&refill_h, mem + l.rx_header_refill_off, depth);
		dpumesh_sq_init(&refill_b, mem + l.rx_body_refill_off, depth);
	}
	~pod()
	{
		link.reset();
		std::free(mem);
	}
	uint32_t handle() const { return dpumesh_pod_handle(link->pod_id(), link->generation()); }
	uint64_t addr(uint64_t off) const { return reinterpret_cast<uint64_t>(mem) + off; }
	uint64_t tx_header(uint32_t i) const { return addr(l.tx_header_off + i * reg.geometry.tx_header.slot_size); }
	uint64_t tx_body(uint32_t i) const { return addr(l.tx_body_off + i * reg.geometry.tx_body.slot_size); }
	uint64_t rx_header(uint32_t i) const { return addr(l.rx_header_off + i * reg.geometry.rx_header.slot_size); }
	uint64_t rx_body(uint32_t i) const { return addr(l.rx_body_off + i * reg.geometry.rx_body.slot_size); }
	uint8_t *at(uint64_t a) const { return reinterpret_cast<uint8_t *>(a); }
	void refill(uint32_t slot)
	{
		sw_descriptor h{}, b{};
		h.header_buf_addr = rx_header(slot);
		h.step_id = link->generation();
		b.body_buf_addr = rx_body(slot);
		b.step_id = link->generation();
		ASSERT_EQ(dpumesh_sq_enqueue_burst(&refill_h, &h, 1), 1u);
		ASSERT_EQ(dpumesh_sq_enqueue_burst(&refill_b, &b, 1), 1u);
	}
	/* the need-wakeup word as libdpumesh builds it (doca_test_sq.h) */
	uint64_t epoch = 0;
	bool sleeping = false;
	void asleep(bool yes)
	{
		__atomic_store_n(&reinterpret_cast<dpumesh_pod_ctrl *>(mem + l.ctrl_off)->rx_wait,
				 rx_wait_word(&epoch, &sleeping, yes), __ATOMIC_RELEASE);
	}
	std::vector<sw_descriptor> take_rx() { return take_all(rx); }
	/* after a post, as libdpumesh's ring_tx_if_parked: the node's TX doorbell when the DPA
	 * parked us (odd tx_wait) and we have not rung for that epoch; the rings made */
	uint64_t tx_rung = 0, tx_rings = 0;
	void ring_tx_if_parked()
	{
		std::atomic_thread_fence(std::memory_order_seq_cst);
		const uint64_t e = __atomic_load_n(&reinterpret_cast<dpumesh_pod_ctrl *>(mem + l.ctrl_off)->tx_wait,
						   __ATOMIC_RELAXED);
		if ((e & 1) == 0 || e == tx_rung)
			return;
		tx_rung = e;
		if (link->ring_tx(0))
			tx_rings++;
	}
};

inline void fill(uint8_t *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = static_cast<uint8_t>(seed + i * 13 + (i >> 8));
}

} // namespace dpumesh::test
