// SPDX-License-Identifier: BSD-3-Clause
// A plain reference decoder of the L7 header (docs/wire.md): every check of l7_decode(), in
// its order, a byte at a time, as the decoder was written before it read words (track
// dec12). l7_test and l7_fuzz compare the two: the same error for every input, the same
// view for every header both accept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dpumesh/wire/l7.h"

namespace dpumesh::wire::reference {

inline uint16_t ref_get16(const uint8_t *p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

inline bool ref_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c != 0 && std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) !=
				  std::string_view::npos);
}

inline bool ref_name(std::string_view n)
{
	if (n.empty())
		return false;
	for (char ch : n) {
		const auto c = static_cast<unsigned char>(ch);
		if (!ref_tchar(c) || (c >= 'A' && c <= 'Z'))
			return false;
	}
	return true;
}

inline bool ref_value(std::string_view v)
{
	if (v.size() > l7_max_value)
		return false;
	for (char c : v)
		if (c == '\0' || c == '\r' || c == '\n')
			return false;
	return true;
}

inline bool ref_method(std::string_view m)
{
	if (m.empty() || m.size() > 32)
		return false;
	for (char c : m)
		if (!ref_tchar(static_cast<unsigned char>(c)))
			return false;
	return true;
}

inline l7_error decode(const uint8_t *buf, size_t len, l7_view *out)
{
	if (len < l7_fixed_size)
		return l7_error::truncated;
	if (buf[0] != l7_magic0 || buf[1] != l7_magic1)
		return l7_error::bad_magic;
	if (buf[2] != l7_version)
		return l7_error::bad_version;
	if (buf[3] != 1 && buf[3] != 2)
		return l7_error::bad_kind;
	const uint16_t hlen = ref_get16(buf + 4);
	if (hlen > len)
		return l7_error::truncated;
	if (hlen != len || hlen < l7_fixed_size)
		return l7_error::bad_length;
	const bool is_req = buf[3] == 1;
	const uint16_t nb = ref_get16(buf + 6), status = ref_get16(buf + 8),
		       flags = ref_get16(buf + 10);
	const uint32_t deadline = uint32_t(ref_get16(buf + 12)) << 16 | ref_get16(buf + 14);
	if (nb > l7_max_fields)
		return l7_error::too_many_fields;
	if (flags & ~l7_flag_known)
		return l7_error::bad_flags;
	if (is_req ? status != 0 : (status < 100 || status > 599))
		return l7_error::bad_status;
	if (!is_req && deadline != 0)
		return l7_error::bad_deadline;
	l7_view v{};
	const uint8_t *p = buf + l7_fixed_size, *end = buf + hlen, *fields = nullptr;
	unsigned seen = 0;
	for (unsigned i = 0; i < nb; i++) {
		if (end - p < 4 || p[1] != 0)
			return l7_error::bad_field;
		const uint8_t nl = p[0];
		const uint16_t vl = ref_get16(p + 2);
		if (static_cast<size_t>(end - p - 4) < size_t(nl) + vl)
			return l7_error::bad_field;
		const std::string_view name(reinterpret_cast<const char *>(p + 4), nl);
		const std::string_view value(reinterpret_cast<const char *>(p + 4 + nl), vl);
		if (!ref_value(value))
			return l7_error::bad_value;
		if (!name.empty() && name[0] == ':') {
			if (fields)
				return l7_error::pseudo_after_field;
			unsigned bit;
			std::string_view *slot;
			if (name == ":service" && is_req)
				bit = 1, slot = &v.service;
			else if (name == ":method" && is_req)
				bit = 2, slot = &v.method;
			else if (name == ":path" && is_req)
				bit = 4, slot = &v.path;
			else if (name == ":reason" && !is_req)
				bit = 8, slot = &v.reason;
			else if (name == ":hop" && !is_req)
				bit = 16, slot = &v.hop;
			else
				return l7_error::unknown_pseudo;
			if (seen & bit)
				return l7_error::duplicate_pseudo;
			seen |= bit;
			*slot = value;
		} else {
			if (!ref_name(name))
				return l7_error::bad_name;
			if (!fields)
				fields = p;
			v.nb_fields++;
			if (name == "x-request-id")
				v.trace |= l7_trace_request_id;
			if (name == "traceparent")
				v.trace |= l7_trace_traceparent;
			if (name == "authorization" && !v.authorization.data())
				v.authorization = value;
		}
		p += 4 + nl + vl;
	}
	if (p != end)
		return l7_error::bad_length;
	if (is_req) {
		if ((seen & 7) != 7 || v.service.empty())
			return l7_error::missing_pseudo;
		if (v.path.empty() || v.path[0] != '/')
			return l7_error::bad_path;
		if (!ref_method(v.method))
			return l7_error::bad_method;
	}
	v.kind = is_req ? l7_kind::request : l7_kind::response;
	v.status = status;
	v.flags = flags;
	v.deadline_ms = deadline;
	v.fields = fields ? fields : end;
	v.end = end;
	*out = v;
	return l7_error::ok;
}

/* Whether two views of the same buffer are the same, field by field. */
inline bool same_view(const l7_view &a, const l7_view &b)
{
	const auto same = [](std::string_view x, std::string_view y) {
		return x.size() == y.size() && (x.empty() || x.data() == y.data());
	};
	return a.kind == b.kind && a.trace == b.trace && a.status == b.status &&
	       a.flags == b.flags && a.deadline_ms == b.deadline_ms && same(a.service, b.service) &&
	       same(a.method, b.method) && same(a.path, b.path) && same(a.reason, b.reason) &&
	       same(a.hop, b.hop) && a.authorization.size() == b.authorization.size() &&
	       a.authorization.data() == b.authorization.data() && a.fields == b.fields &&
	       a.end == b.end &&
	       a.nb_fields == b.nb_fields;
}

} // namespace dpumesh::wire::reference
