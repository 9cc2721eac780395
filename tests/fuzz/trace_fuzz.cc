// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: trace ids added in place to a header from the network (lib/policy's
// add_trace, as the sidecar does). Input: the L7 header (its last byte also sets the spare
// room; the ids are a hash of it all, so every digit pattern comes up). Whatever the decoder
// accepts must, after add_trace, still decode, keep every field it had, and carry both trace
// fields with the ids' exact text (formatted in place, unvalidated: lib/wire's mesh_field);
// or be left byte for byte as it was when there is no room.
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "dpumesh/policy/trace.h"
#include "dpumesh/wire/l7.h"

using namespace dpumesh;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const size_t room = (size_t(data[size - 1]) * 7 + size) % 512;
	const size_t len = size;
	/* exactly len + room bytes, so ASan sees writes past the buffer */
	std::vector<uint8_t> buf(len + room);
	std::memcpy(buf.data(), data, len);
	wire::l7_view v;
	if (wire::l7_decode(buf.data(), len, &v) != wire::l7_error::ok)
		return 0;
	std::vector<std::pair<std::string, std::string>> before;
	v.for_each([&](std::string_view n, std::string_view x) {
		before.emplace_back(std::string(n), std::string(x));
	});
	const std::vector<uint8_t> orig(buf.begin(), buf.begin() + len);
	const unsigned need = policy::trace_missing(v);
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the input */
	for (size_t k = 0; k < size; k++)
		h = (h ^ data[k]) * 0x100000001b3ull;
	const policy::trace_ids ids{h, h * 0x9e3779b97f4a7c15ull, (h >> 7) | 1};
	policy::trace_result r = policy::add_trace(buf.data(), static_cast<uint32_t>(len),
						   static_cast<uint32_t>(buf.size()), need, ids);
	if (r.no_room) {
		if (r.len != len || std::memcmp(buf.data(), orig.data(), len) != 0)
			std::abort();
		return 0;
	}
	wire::l7_view after;
	if (wire::l7_decode(buf.data(), r.len, &after) != wire::l7_error::ok)
		std::abort();
	if (policy::trace_missing(after) != 0 || r.added != need)
		std::abort();
	char id[36], tp[55];
	policy::format_request_id(ids, id);
	policy::format_traceparent(ids, tp);
	std::string_view got;
	if ((need & policy::trace_request_id) &&
	    (!after.find("x-request-id", &got) || got != std::string_view(id, sizeof(id))))
		std::abort();
	if ((need & policy::trace_traceparent) &&
	    (!after.find("traceparent", &got) || got != std::string_view(tp, sizeof(tp))))
		std::abort();
	size_t i = 0;
	after.for_each([&](std::string_view n, std::string_view x) {
		if (i < before.size() && (before[i].first != n || before[i].second != x))
			std::abort();
		i++;
	});
	if (i != before.size() + __builtin_popcount(need))
		std::abort();
	return 0;
}
