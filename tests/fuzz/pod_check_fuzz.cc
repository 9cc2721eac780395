// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the security core's checks (dpumesh/podlayout/pod_check.h, shared by the
// pod registry and the DOCA device mapping) on arbitrary descriptors a pod may write, over
// a geometry the input also picks. Whatever the pod wrote: an accepted TX descriptor's
// header (and body) is one whole slot of the pod's own TX pools, an accepted refill is a
// slot start of its RX pool with the current generation, and a refusal's report carries a
// defined status; never a crash.
#include <cstdlib>
#include <cstring>

#include "dpumesh/podlayout/pod_check.h"

namespace {

bool whole_slot(uint64_t base, const dpumesh_pool_geometry &p, uint64_t addr, uint64_t len)
{
	if (addr < base)
		return false;
	const uint64_t off = addr - base;
	return off < uint64_t(p.slots) * p.slot_size && off % p.slot_size == 0 && len <= p.slot_size;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sw_descriptor d;
	uint32_t raw[9];
	uint64_t base;
	uint32_t generation;
	uint8_t mode;
	if (size < sizeof(d) + sizeof(raw) + sizeof(base) + sizeof(generation) + 1)
		return 0;
	std::memcpy(&d, data, sizeof(d));
	data += sizeof(d);
	std::memcpy(raw, data, sizeof(raw));
	data += sizeof(raw);
	std::memcpy(&base, data, sizeof(base));
	data += sizeof(base);
	std::memcpy(&generation, data, sizeof(generation));
	mode = data[sizeof(generation)];
	/* a geometry registration accepts, built from the input */
	dpumesh_geometry g = {};
	dpumesh_pool_geometry *pools[4] = {&g.tx_header, &g.tx_body, &g.rx_header, &g.rx_body};
	for (int i = 0; i < 4; i++) {
		pools[i]->slots = 1 + raw[2 * i] % 1024;
		pools[i]->slot_size = 64 * (1 + raw[2 * i + 1] % 256);
	}
	g.sq_depth = 16u << (raw[8] % 8);
	dpumesh_pod_layout l;
	if (dpumesh_pod_layout_compute(&g, &l) != DPUMESH_LAYOUT_OK)
		std::abort(); /* every geometry above is valid */
	base &= ~uint64_t(DPUMESH_LAYOUT_ALIGN - 1);
	if (base > UINT64_MAX - l.total_size)
		return 0; /* no region can sit there */
	/* mode bit 0/1: the addresses as given, or offsets into the region (near slots) */
	if (mode & 1)
		d.header_buf_addr = base + d.header_buf_addr % l.total_size;
	if (mode & 2)
		d.body_buf_addr = base + d.body_buf_addr % l.total_size;
	if (mode & 4) /* slot starts, so the length checks are reached */
		d.header_buf_addr = base + l.tx_header_off +
				    uint64_t(d.req_id % g.tx_header.slots) * g.tx_header.slot_size;

	int why = dpumesh_tx_check_flags(&d);
	if (why == DPUMESH_TX_ACCEPT)
		why = dpumesh_tx_check_slot(base + l.tx_header_off, &g.tx_header, d.header_buf_addr,
					    d.header_len, 0);
	if (why == DPUMESH_TX_ACCEPT && d.body_len != 0)
		why = dpumesh_tx_check_slot(base + l.tx_body_off, &g.tx_body, d.body_buf_addr,
					    d.body_len, 1);
	if (why == DPUMESH_TX_ACCEPT) {
		const uint32_t op = d.flags & DPUMESH_OP_MASK;
		if (op != DPUMESH_OP_REQUEST && op != DPUMESH_OP_RESPONSE)
			std::abort();
		if (d.header_len == 0 ||
		    !whole_slot(base + l.tx_header_off, g.tx_header, d.header_buf_addr, d.header_len))
			std::abort();
		if ((d.body_len == 0) != (d.body_buf_addr == 0))
			std::abort();
		if (d.body_len && !whole_slot(base + l.tx_body_off, g.tx_body, d.body_buf_addr, d.body_len))
			std::abort();
	} else {
		if (why < 0 || why >= DPUMESH_TX_ACCEPT)
			std::abort();
		sw_descriptor r;
		dpumesh_tx_done_report(&d, dpumesh_tx_refusal_flags(why), &r);
		const uint32_t st = dpumesh_flags_status(r.flags);
		if (st != DPUMESH_STATUS_BAD_DESCRIPTOR && st != DPUMESH_STATUS_TOO_LARGE &&
		    st != DPUMESH_STATUS_BAD_ADDRESS)
			std::abort();
		if (r.dst.pod_id != 0 || r.req_id != d.req_id || r.header_buf_addr != d.header_buf_addr)
			std::abort();
	}

	for (int body = 0; body < 2; body++) {
		const dpumesh_pool_geometry &pool = body ? g.rx_body : g.rx_header;
		const uint64_t pool_base = base + (body ? l.rx_body_off : l.rx_header_off);
		uint64_t addr = 0;
		const int r = dpumesh_refill_check(&d, generation, pool_base, &pool, body, &addr);
		if (r == DPUMESH_REFILL_ACCEPT &&
		    (d.step_id != generation || d.flags != 0 || !whole_slot(pool_base, pool, addr, pool.slot_size)))
			std::abort();
		if (r < 0 || r > DPUMESH_REFILL_ACCEPT)
			std::abort();
	}
	return 0;
}
