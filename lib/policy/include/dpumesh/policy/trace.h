// SPDX-License-Identifier: BSD-3-Clause
// Trace ids of the L7 policy: x-request-id (a UUID v4) and a W3C traceparent for requests
// that carry neither, from one set of random bits the caller draws (no EAL here).
//
//   unsigned need = policy::trace_missing(view);
//   if (need) {
//           policy::trace_ids ids{rte_rand(), rte_rand(), rte_rand() | 1};
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
