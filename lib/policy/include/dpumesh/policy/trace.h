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

#include "dpumesh/wire/l7.h"

namespace dpumesh::policy {

/** Bits of trace_missing(). */
enum trace_field : unsigned {
	trace_request_id = 1u << 0,  /**< x-request-id */
	trace_traceparent = 1u << 1, /**< traceparent */
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
	trace_ids next() noexcept;

private:
	static constexpr uint64_t step = 0x9e3779b97f4a7c15ull;
	static uint64_t mix(uint64_t z) noexcept;
	uint64_t _state;
};

/** The trace fields a request header lacks (trace_field bits). */
unsigned trace_missing(const wire::l7_view &v) noexcept;

/** x-request-id text: UUID 8-4-4-4-12, version 4, variant 1 (36 characters). */
void format_request_id(const trace_ids &ids, char out[36]) noexcept;
/** traceparent text: 00-<32 hex trace id>-<16 hex span id>-01 (55 characters). */
void format_traceparent(const trace_ids &ids, char out[55]) noexcept;

struct trace_result {
	uint32_t len = 0;       /**< the header's length now (unchanged when no_room) */
	unsigned added = 0;     /**< trace_field bits written */
	bool no_room = false;   /**< the fields did not fit: the header was left as it was */
};

/**
 * Appends the `need` fields to a header that l7_decode() accepted (`len` bytes of a buffer
 * of `cap`), in place.
 */
trace_result add_trace(uint8_t *hdr, uint32_t len, uint32_t cap, unsigned need,
		       const trace_ids &ids) noexcept;

} // namespace dpumesh::policy
