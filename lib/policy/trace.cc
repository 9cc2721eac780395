// SPDX-License-Identifier: BSD-3-Clause
// Trace ids of the L7 policy: x-request-id and traceparent text, added to a header in place.
#include "dpumesh/policy/trace.h"

#include <cstring>
#include <string_view>

namespace dpumesh::policy {

namespace {

/* lowercase hex by hand: no printf machinery on the data path */
void put_hex(char *out, uint64_t x, unsigned digits) noexcept
{
	static constexpr char hex[] = "0123456789abcdef";
	for (unsigned i = 0; i < digits; i++)
		out[i] = hex[(x >> (4 * (digits - 1 - i))) & 0xf];
}

} // namespace

unsigned trace_missing(const wire::l7_view &v) noexcept
{
	std::string_view have;
	unsigned need = 0;
	if (!v.find("x-request-id", &have))
		need |= trace_request_id;
	if (!v.find("traceparent", &have))
		need |= trace_traceparent;
	return need;
}

void format_request_id(const trace_ids &ids, char out[36]) noexcept
{
	put_hex(out, ids.hi >> 32, 8);
	out[8] = '-';
	put_hex(out + 9, (ids.hi >> 16) & 0xffff, 4);
	out[13] = '-';
	put_hex(out + 14, 0x4000 | (ids.hi & 0xfff), 4);
	out[18] = '-';
	put_hex(out + 19, 0x8000 | ((ids.lo >> 48) & 0x3fff), 4);
	out[23] = '-';
	put_hex(out + 24, ids.lo & 0xffffffffffffULL, 12);
}

void format_traceparent(const trace_ids &ids, char out[55]) noexcept
{
	std::memcpy(out, "00-", 3);
	put_hex(out + 3, ids.hi, 16);
	put_hex(out + 19, ids.lo, 16);
	out[35] = '-';
	put_hex(out + 36, ids.span, 16);
	std::memcpy(out + 52, "-01", 3);
}

trace_result add_trace(uint8_t *hdr, uint32_t len, uint32_t cap, unsigned need,
		       const trace_ids &ids) noexcept
{
	trace_result r;
	r.len = len;
	if (!need)
		return r;
	wire::l7_writer w = wire::l7_writer::extend(hdr, len, cap);
	if (need & trace_request_id) {
		char id[36];
		format_request_id(ids, id);
		w.field("x-request-id", std::string_view(id, sizeof(id)));
	}
	if (need & trace_traceparent) {
		char tp[55];
		format_traceparent(ids, tp);
		w.field("traceparent", std::string_view(tp, sizeof(tp)));
	}
	size_t n = w.finish();
	if (n == 0) { /* no room: the header is left as it was */
		r.no_room = true;
		return r;
	}
	r.len = static_cast<uint32_t>(n);
	r.added = need;
	return r;
}

} // namespace dpumesh::policy
