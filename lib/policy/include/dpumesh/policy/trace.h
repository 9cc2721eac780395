// SPDX-License-Identifier: BSD-3-Clause
// Trace ids of the L7 policy: x-request-id (a UUID v4) and a W3C traceparent for requests
// that carry neither, from one set of random bits the caller draws (no EAL here): a
// trace_rng per data-path thread, seeded once from a real random source, or its own bits.
//
//   policy::trace_rng rng(rte_rand());      // at start
//   unsigned need = policy::trace_missing(view);
//   if (need) {
//           policy::trace_ids ids = rng.next();
//           policy::trace_result r = policy::add_trace(hdr, len, cap, need, ids);
//           if (r.no_room) count; else len = r.len;
//   }
#pragma once

#include <cstdint>

#include "dpumesh/common/csum.h"
#include "dpumesh/wire/l7.h"

namespace dpumesh::policy {

/** Bits of trace_missing(). */
enum trace_field : unsigned {
	trace_request_id = wire::l7_trace_request_id,   /**< x-request-id */
	trace_traceparent = wire::l7_trace_traceparent, /**< traceparent */
};

/** 128 random bits (the trace id, shared by both fields) and a 64-bit span id (non-zero). */
struct trace_ids {
	uint64_t hi = 0, lo = 0, span = 1;
};

/**
 * Trace ids for one request: splitmix64 over a counter started at a random seed. Ids must
 * be unique and unguessable enough to not collide across nodes, not secret: a counter
 * through a 64-bit bijective mixer never repeats a value before 2^64 draws and costs a few
 * multiplies (rte_rand() three times a request was ~4% of the forwarding path).
 */
class trace_rng {
public:
	explicit trace_rng(uint64_t seed = 0) noexcept : _state(seed) {}
	/** Inline: three mixes, independent of each other (called out of line, each mix was
	 *  1.3% of the forwarding path). */
	trace_ids next() noexcept
	{
		trace_ids ids;
		ids.hi = mix(_state + step);
		ids.lo = mix(_state + 2 * step);
		ids.span = mix(_state + 3 * step) | 1;
		_state += 3 * step;
		return ids;
	}

private:
	static constexpr uint64_t step = 0x9e3779b97f4a7c15ull;
	static uint64_t mix(uint64_t z) noexcept
	{
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		return z ^ (z >> 31);
	}
	uint64_t _state;
};

/** The trace fields a request header lacks (trace_field bits), as l7_decode() noted them. */
inline unsigned trace_missing(const wire::l7_view &v) noexcept
{
	return ~unsigned(v.trace) & (trace_request_id | trace_traceparent);
}

/** x-request-id text: UUID 8-4-4-4-12, version 4, variant 1 (36 characters).
 *  @return what the text sums to as a UDP checksum adds it (csum_bytes(out, 36), made from
 *          the registers the digits were made in: no load of what was just stored) */
uint32_t format_request_id(const trace_ids &ids, char out[36]) noexcept;
/** traceparent text: 00-<32 hex trace id>-<16 hex span id>-01 (55 characters).
 *  @return csum_bytes(out, 55), as format_request_id() */
uint32_t format_traceparent(const trace_ids &ids, char out[55]) noexcept;
/** The same texts without vector instructions: what CPUs without SSSE3 (a BlueField's Arm
 *  cores) run, compiled everywhere so that tests hold it to the other form. */
uint32_t format_request_id_portable(const trace_ids &ids, char out[36]) noexcept;
uint32_t format_traceparent_portable(const trace_ids &ids, char out[55]) noexcept;

struct trace_result {
	uint32_t len = 0;       /**< the header's length now (unchanged when no_room) */
	unsigned added = 0;     /**< trace_field bits written */
	bool no_room = false;   /**< the fields did not fit: the header was left as it was */
	/** The fields added, summed as a UDP checksum adds them from the first one's offset
	 *  (csum_bytes() of the added bytes, unfolded; 0 when none): with l7_sum_grown() the
	 *  header's new sum without reading it again. */
	uint64_t added_sum = 0;
};

/** The sum of a field the mesh adds, but its value's: its length word and its name. */
template <size_t N> constexpr uint32_t mesh_field_sum(const char (&name)[N], uint16_t len) noexcept
{
	const char head[4] = {static_cast<char>(N - 1), 0, static_cast<char>(len >> 8),
			      static_cast<char>(len & 0xff)};
	return csum_bytes(head, 4) + csum_bytes(name, N - 1);
}

/**
 * Appends the `need` fields to a header that l7_decode() accepted (`len` bytes of a buffer
 * of `cap`), in place. Inline: its result came back through the stack, the flag's byte
 * store read back as a word (a store-forwarding stall, 1.2% of the forwarding path).
 */
inline trace_result add_trace(uint8_t *hdr, uint32_t len, uint32_t cap, unsigned need,
			      const trace_ids &ids) noexcept
{
	trace_result r;
	r.len = len;
	if (!need)
		return r;
	/* formatted in place, as fields the mesh made: names are tokens and the ids hex
	 * digits and dashes, nothing to validate or copy */
	wire::l7_writer w = wire::l7_writer::extend(hdr, len, cap);
	/* each field's sum from its parts: the name's (a constant) and the value's, which the
	 * formatter made from its registers; both fields have even lengths (52, 70) */
	uint64_t sum = 0;
	if (need & trace_request_id)
		if (char *id = w.mesh_field("x-request-id", 36)) /* the value at 16: even */
			sum += mesh_field_sum("x-request-id", 36) + format_request_id(ids, id);
	if (need & trace_traceparent)
		if (char *tp = w.mesh_field("traceparent", 55)) /* at 15: odd, weighed by 256 */
			sum += mesh_field_sum("traceparent", 55) +
			       (uint64_t(format_traceparent(ids, tp)) << 8);
	const size_t n = w.finish();
	if (n == 0) { /* no room: the header is left as it was */
		r.no_room = true;
		return r;
	}
	r.len = static_cast<uint32_t>(n);
	r.added = need;
	r.added_sum = sum;
	return r;
}

} // namespace dpumesh::policy
