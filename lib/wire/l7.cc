// SPDX-License-Identifier: BSD-3-Clause
// Encoder and validating zero-copy decoder of the mesh L7 header (docs/wire.md).
#include "dpumesh/wire/l7.h"

#include <array>
#include <cstring>

namespace dpumesh::wire {

namespace {

inline uint16_t get16(const uint8_t *p) noexcept
{
	return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
inline uint32_t get32(const uint8_t *p) noexcept
{
	return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}
inline void put16(uint8_t *p, uint16_t v) noexcept
{
	p[0] = static_cast<uint8_t>(v >> 8);
	p[1] = static_cast<uint8_t>(v);
}
inline void put32(uint8_t *p, uint32_t v) noexcept
{
	put16(p, static_cast<uint16_t>(v >> 16));
	put16(p + 2, static_cast<uint16_t>(v));
}

/** Character classes, one table lookup per byte: RFC 9110 tchar, and tchar that is not an
 *  upper-case letter (field names are lower case). */
enum : uint8_t { cc_tchar = 1, cc_name = 2 };

constexpr std::array<uint8_t, 256> make_classes() noexcept
{
	std::array<uint8_t, 256> t{};
	for (unsigned c = 0; c < 256; c++) {
		bool tchar = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			     (c >= 'A' && c <= 'Z');
		for (char x : std::string_view("!#$%&'*+-.^_`|~"))
			tchar |= c == static_cast<uint8_t>(x);
		t[c] = static_cast<uint8_t>((tchar ? cc_tchar : 0) |
					    (tchar && !(c >= 'A' && c <= 'Z') ? cc_name : 0));
	}
	return t;
}
constexpr std::array<uint8_t, 256> char_class = make_classes();

inline bool is_tchar(uint8_t c) noexcept { return char_class[c] & cc_tchar; }

bool valid_name(std::string_view n) noexcept
{
	if (n.empty())
		return false;
	uint8_t all = cc_name;
	for (char ch : n)
		all &= char_class[static_cast<uint8_t>(ch)];
	return all != 0;
}

/* a byte of x is zero: exact as a yes/no answer (the classic SWAR test) */
inline uint64_t zero_byte(uint64_t x) noexcept
{
	return (x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull;
}

/* NUL, CR or LF among the 8 bytes of w */
inline bool bad_word(uint64_t w) noexcept
{
	return (zero_byte(w) | zero_byte(w ^ 0x0d0d0d0d0d0d0d0dull) |
		zero_byte(w ^ 0x0a0a0a0a0a0a0a0aull)) != 0;
}

bool valid_value(std::string_view v) noexcept
{
	if (v.size() > l7_max_value)
		return false;
	const char *p = v.data();
	const size_t n = v.size();
	if (n < 8) { /* the bytes below 0x0e that are CR, LF or NUL, or-ed together */
		uint32_t bad = 0;
		for (size_t i = 0; i < n; i++) {
			const auto c = static_cast<uint8_t>(p[i]);
			bad |= c < 14 ? (0x2401u >> c) & 1 : 0;
		}
		return bad == 0;
	}
	/* eight bytes a step (values are trace ids, tokens, paths: tens of bytes); the last
	 * word overlaps the one before (read again, not copied to a padded buffer: byte stores
	 * then a word load stall on store forwarding) */
	bool bad = false;
	uint64_t w;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		std::memcpy(&w, p + i, 8);
		bad |= bad_word(w);
	}
	std::memcpy(&w, p + n - 8, 8);
	return !(bad | bad_word(w));
}

bool valid_method(std::string_view m) noexcept
{
	if (m.empty() || m.size() > 32)
		return false;
	for (char ch : m)
		if (!is_tchar(static_cast<uint8_t>(ch)))
			return false;
	return true;
}

/* Whether a regular field's name is one of the trace fields (l7_trace bits): noted while
 * the fields are walked (looking for them again afterwards, two finds, was 1% of the
 * forward path) */
inline unsigned trace_field(std::string_view n) noexcept
{
	using namespace std::string_view_literals;
	if (n.size() == 12 && n == "x-request-id"sv)
		return l7_trace_request_id;
	if (n.size() == 11 && n == "traceparent"sv)
		return l7_trace_traceparent;
	return 0;
}

enum pseudo : unsigned { ps_service = 1, ps_method = 2, ps_path = 4, ps_reason = 8, ps_hop = 16 };

} // namespace

const char *l7_error_name(l7_error e) noexcept
{
	switch (e) {
#define DPUMESH_L7_ERROR_NAME(n, d)                                                      \
	case l7_error::n: return #n;
		DPUMESH_FOREACH_L7_ERROR(DPUMESH_L7_ERROR_NAME)
#undef DPUMESH_L7_ERROR_NAME
	case l7_error::count: break;
	}
	return "?";
}

namespace {

/* The fixed part's length, magic, version and kind, as the decoder and the peek check it. */
l7_error check_fixed(const uint8_t *buf, size_t len, bool requests_only) noexcept
{
	if (len < l7_fixed_size)
		return l7_error::truncated;
	if (buf[0] != l7_magic0 || buf[1] != l7_magic1)
		return l7_error::bad_magic;
	if (buf[2] != l7_version)
		return l7_error::bad_version;
	if (buf[3] != static_cast<uint8_t>(l7_kind::request) &&
	    (requests_only || buf[3] != static_cast<uint8_t>(l7_kind::response)))
		return l7_error::bad_kind;
	return l7_error::ok;
}

} // namespace

/* Decoded into *out in place, a store per field: a view made on the stack was cleared with
 * a `rep stos` and copied out with 16-byte loads behind its narrow stores (a store-forwarding
 * stall): 30% of this function's samples in the forward profile. The pseudo-fields go
 * straight to their slots; the loop's own state stays in locals (stores through `out` may
 * alias `buf` for the compiler, so nothing the loop reads again lives there). On an error
 * *out is left half written. */
l7_error l7_decode(const uint8_t *buf, size_t len, l7_view *out) noexcept
{
	if (l7_error e = check_fixed(buf, len, false); e != l7_error::ok)
		return e;
	uint16_t hlen = get16(buf + 4);
	if (hlen > len)
		return l7_error::truncated;
	if (hlen != len || hlen < l7_fixed_size)
		return l7_error::bad_length;
	const auto kind = static_cast<l7_kind>(buf[3]);
	const bool is_req = kind == l7_kind::request;
	const uint16_t nb = get16(buf + 6);
	const uint16_t status = get16(buf + 8);
	const uint16_t flags = get16(buf + 10);
	const uint32_t deadline_ms = get32(buf + 12);
	if (nb > l7_max_fields)
		return l7_error::too_many_fields;
	if (flags & ~l7_flag_known)
		return l7_error::bad_flags;
	if (is_req ? status != 0 : (status < 100 || status > 599))
		return l7_error::bad_status;
	if (!is_req && deadline_ms != 0)
		return l7_error::bad_deadline;

	const uint8_t *p = buf + l7_fixed_size;
	const uint8_t *end = buf + hlen;
	const uint8_t *fields = nullptr;
	uint16_t nb_fields = 0;
	unsigned seen = 0, trace = 0;
	for (uint16_t i = 0; i < nb; i++) {
		if (end - p < 4 || p[1] != 0)
			return l7_error::bad_field;
		uint8_t nl = p[0];
		uint16_t vl = get16(p + 2);
		if (static_cast<size_t>(end - p - 4) < size_t(nl) + vl)
			return l7_error::bad_field;
		std::string_view name(reinterpret_cast<const char *>(p + 4), nl);
		std::string_view value(reinterpret_cast<const char *>(p + 4 + nl), vl);
		if (!valid_value(value))
			return l7_error::bad_value;
		if (!name.empty() && name[0] == ':') {
			if (fields)
				return l7_error::pseudo_after_field;
			unsigned bit;
			std::string_view *slot;
			if (name == ":service" && is_req)
				bit = ps_service, slot = &out->service;
			else if (name == ":method" && is_req)
				bit = ps_method, slot = &out->method;
			else if (name == ":path" && is_req)
				bit = ps_path, slot = &out->path;
			else if (name == ":reason" && !is_req)
				bit = ps_reason, slot = &out->reason;
			else if (name == ":hop" && !is_req)
				bit = ps_hop, slot = &out->hop;
			else
				return l7_error::unknown_pseudo;
			if (seen & bit)
				return l7_error::duplicate_pseudo;
			seen |= bit;
			*slot = value;
		} else {
			if (!valid_name(name))
				return l7_error::bad_name;
			if (!fields)
				fields = p;
			nb_fields++;
			trace |= trace_field(name);
		}
		p += 4 + nl + vl;
	}
	if (p != end)
		return l7_error::bad_length;
	if (is_req) {
		if ((seen & (ps_service | ps_method | ps_path)) != (ps_service | ps_method | ps_path))
			return l7_error::missing_pseudo;
		if (out->service.empty())
			return l7_error::missing_pseudo;
		if (out->path.empty() || out->path[0] != '/')
			return l7_error::bad_path;
		if (!valid_method(out->method))
			return l7_error::bad_method;
		/* one assignment each: `a = b = {}` reads b back (16 bytes behind two 8-byte
		 * stores: a store-forwarding stall) */
		out->reason = {};
		out->hop = {};
	} else {
		if (!(seen & ps_reason))
			out->reason = {};
		if (!(seen & ps_hop))
			out->hop = {};
		out->service = {};
		out->method = {};
		out->path = {};
	}
	out->kind = kind;
	out->trace = static_cast<uint8_t>(trace);
	out->status = status;
	out->flags = flags;
	out->deadline_ms = deadline_ms;
	out->fields = fields ? fields : end;
	out->end = end;
	out->nb_fields = nb_fields;
	return l7_error::ok;
}

l7_error l7_peek_service(const uint8_t *buf, size_t len, std::string_view *service) noexcept
{
	if (l7_error e = check_fixed(buf, len, true); e != l7_error::ok)
		return e;
	if (get16(buf + 4) != len)
		return l7_error::bad_length;
	if (get16(buf + 8) != 0)
		return l7_error::bad_status;
	const uint16_t nb = get16(buf + 6);
	if (nb > l7_max_fields)
		return l7_error::too_many_fields;
	const uint8_t *p = buf + l7_fixed_size;
	const uint8_t *end = buf + len;
	for (uint16_t i = 0; i < nb; i++) {
		if (end - p < 4 || p[1] != 0)
			return l7_error::bad_field;
		const uint8_t nl = p[0];
		const uint16_t vl = get16(p + 2);
		if (static_cast<size_t>(end - p - 4) < size_t(nl) + vl)
			return l7_error::bad_field;
		std::string_view name(reinterpret_cast<const char *>(p + 4), nl);
		if (name.empty() || name[0] != ':')
			break; /* the pseudo-fields are over */
		if (name == ":service") {
			if (vl == 0)
				return l7_error::missing_pseudo;
			*service = std::string_view(reinterpret_cast<const char *>(p + 4 + nl), vl);
			return l7_error::ok;
		}
		p += 4 + nl + vl;
	}
	return l7_error::missing_pseudo;
}

bool l7_view::find(std::string_view name, std::string_view *value) const noexcept
{
	const uint8_t *p = fields;
	for (uint16_t i = 0; i < nb_fields; i++) {
		uint8_t nl = p[0];
		uint16_t vl = get16(p + 2);
		if (std::string_view(reinterpret_cast<const char *>(p + 4), nl) == name) {
			*value = std::string_view(reinterpret_cast<const char *>(p + 4 + nl), vl);
			return true;
		}
		p += 4 + nl + vl;
	}
	return false;
}

void l7_writer::put(std::string_view name, std::string_view value) noexcept
{
	if (!_failed && !valid_value(value)) {
		_failed = true;
		return;
	}
	if (uint8_t *p = append(name, value.size()); p && !value.empty())
		std::memcpy(p, value.data(), value.size());
}

void l7_writer::begin(l7_kind kind, uint16_t status, uint16_t flags, uint32_t deadline_ms) noexcept
{
	_started = true;
	std::memset(_buf, 0, l7_fixed_size);
	_buf[0] = l7_magic0;
	_buf[1] = l7_magic1;
	_buf[2] = l7_version;
	_buf[3] = static_cast<uint8_t>(kind);
	put16(_buf + 8, status);
	put16(_buf + 10, flags);
	put32(_buf + 12, deadline_ms);
	_len = l7_fixed_size;
}

void l7_writer::request(std::string_view service, std::string_view method,
			std::string_view path, uint32_t deadline_ms, uint16_t flags) noexcept
{
	if (_started || _cap < l7_fixed_size || !valid_method(method) || path.empty() ||
	    path[0] != '/' || (flags & ~l7_flag_known)) {
		_failed = true;
		return;
	}
	begin(l7_kind::request, 0, flags, deadline_ms);
	put(":service", service);
	put(":method", method);
	put(":path", path);
}

void l7_writer::response(uint16_t status, uint16_t flags, std::string_view reason,
			 std::string_view hop) noexcept
{
	if (_started || _cap < l7_fixed_size || status < 100 || status > 599 ||
	    (flags & ~l7_flag_known)) {
		_failed = true;
		return;
	}
	begin(l7_kind::response, status, flags, 0);
	if (!reason.empty())
		put(":reason", reason);
	if (!hop.empty())
		put(":hop", hop);
}

void l7_writer::field(std::string_view name, std::string_view value) noexcept
{
	if (!_started || !valid_name(name)) {
		_failed = true;
		return;
	}
	put(name, value);
}

} // namespace dpumesh::wire
