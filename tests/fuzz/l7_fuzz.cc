// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the L7 header decoder. Whatever it accepts must re-encode with the
// writer and decode again to the same fields (round trip); nothing may crash or read past
// the buffer (ASan). Port RX's l7_peek_service() runs on the same bytes: it must find the
// service of every request the decoder accepts. The plain reference decoder
// (tests/unit/l7_reference.h) runs on them too: the same error, the same view.
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "dpumesh/wire/l7.h"
#include "../unit/l7_reference.h"

using namespace dpumesh::wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a private copy, so ASan sees reads past the end of exactly `size` bytes */
	std::vector<uint8_t> in(data, data + size);
	std::string_view peeked;
	const l7_error peek = l7_peek_service(in.data(), in.size(), &peeked);
	if (peek == l7_error::ok &&
	    (peeked.empty() || peeked.data() < reinterpret_cast<const char *>(in.data()) ||
	     peeked.data() + peeked.size() > reinterpret_cast<const char *>(in.data() + in.size())))
		std::abort(); /* a view outside the buffer */
	l7_view v, ref;
	const l7_error err = l7_decode(in.data(), in.size(), &v);
	if (err != reference::decode(in.data(), in.size(), &ref))
		std::abort(); /* the word-at-a-time decoder and the plain one disagree */
	if (err != l7_error::ok)
		return 0;
	if (!reference::same_view(v, ref))
		std::abort();
	if (v.kind == l7_kind::request && (peek != l7_error::ok || peeked != v.service))
		std::abort(); /* port RX would misread a request the sidecar accepts */
	std::vector<uint8_t> out(l7_max_size);
	l7_writer w(out.data(), out.size());
	if (v.kind == l7_kind::request)
		w.request(v.service, v.method, v.path, v.deadline_ms, v.flags);
	else
		w.response(v.status, v.flags, v.reason, v.hop);
	std::vector<std::pair<std::string, std::string>> fields;
	v.for_each([&](std::string_view n, std::string_view x) {
		fields.emplace_back(std::string(n), std::string(x));
		w.field(n, x);
	});
	size_t n = w.finish();
	if (n == 0)
		std::abort(); /* the writer refused what the decoder accepted */
	l7_view v2;
	if (l7_decode(out.data(), n, &v2) != l7_error::ok)
		std::abort();
	if (v2.service != v.service || v2.method != v.method || v2.path != v.path ||
	    v2.status != v.status || v2.reason != v.reason || v2.hop != v.hop ||
	    v2.nb_fields != v.nb_fields || v2.deadline_ms != v.deadline_ms || v2.flags != v.flags)
		std::abort();
	size_t i = 0;
	v2.for_each([&](std::string_view n2, std::string_view x2) {
		if (fields[i].first != n2 || fields[i].second != x2)
			std::abort();
		i++;
	});
	return 0;
}
