// SPDX-License-Identifier: BSD-3-Clause
// Strict allocation-free JSON validation (RFC 8259) and string/number decoding for JWTs.
#include "internal/json_scan.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace dpumesh::policy::json {

namespace detail {

namespace {

inline int hex(char c) noexcept
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* \uXXXX at s[i] (the 'u'); *cp gets the code unit. */
bool hex4(std::string_view s, size_t i, uint32_t *cp) noexcept
{
	if (i + 4 >= s.size())
		return false;
	uint32_t v = 0;
	for (size_t k = 1; k <= 4; k++) {
		int h = hex(s[i + k]);
		if (h < 0)
			return false;
		v = (v << 4) | static_cast<uint32_t>(h);
	}
	*cp = v;
	return true;
}

/* One UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates, <= U+10FFFF). */
size_t utf8_len(std::string_view s, size_t i) noexcept
{
	auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
	uint8_t c = b(0);
	if (c < 0x80)
		return 1;
	size_t n;
	uint8_t lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (i + n > s.size())
		return 0;
	if (b(1) < lo || b(1) > hi)
		return 0;
	for (size_t k = 2; k < n; k++)
		if (b(k) < 0x80 || b(k) > 0xbf)
			return 0;
	return n;
}

bool parse_string(std::string_view s, size_t i, size_t *end) noexcept
{
	i++; /* '"' */
	while (i < s.size()) {
		char c = s[i];
		if (c == '"') {
			*end = i + 1;
			return true;
		}
		if (static_cast<uint8_t>(c) < 0x20)
			return false;
		if (c == '\\') {
			if (i + 1 >= s.size())
				return false;
			char e = s[i + 1];
			if (e == 'u') {
				uint32_t cp;
				if (!hex4(s, i + 1, &cp) || cp == 0)
					return false; /* NUL would cut claim values short */
				i += 6;
				if (cp >= 0xdc00 && cp <= 0xdfff)
					return false; /* a lone low surrogate */
				if (cp >= 0xd800 && cp <= 0xdbff) {
					uint32_t lo;
					if (i + 1 >= s.size() || s[i] != '\\' || s[i + 1] != 'u' ||
					    !hex4(s, i + 1, &lo) || lo < 0xdc00 || lo > 0xdfff)
						return false;
					i += 6;
				}
				continue;
			}
			if (!std::strchr("\"\\/bfnrt", e) || e == '\0')
				return false;
			i += 2;
			continue;
		}
		size_t n = utf8_len(s, i);
		if (n == 0)
			return false;
		i += n;
	}
	return false;
}

bool parse_number(std::string_view s, size_t i, size_t *end) noexcept
{
	auto digit = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
	if (i < s.size() && s[i] == '-')
		i++;
	if (!digit(i))
		return false;
	if (s[i] == '0')
		i++;
	else
		while (digit(i))
			i++;
	if (i < s.size() && s[i] == '.') {
		i++;
		if (!digit(i))
			return false;
		while (digit(i))
			i++;
	}
	if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < s.size() && (s[i] == '+' || s[i] == '-'))
			i++;
		if (!digit(i))
			return false;
		while (digit(i))
			i++;
	}
	*end = i;
	return true;
}

bool literal(std::string_view s, size_t i, std::string_view word, size_t *end) noexcept
{
	if (s.substr(i, word.size()) != word)
		return false;
	*end = i + word.size();
	return true;
}

} // namespace

bool parse_value(std::string_view s, size_t i, unsigned depth, value *v, size_t *end) noexcept
{
	if (i >= s.size())
		return false;
	const size_t start = i;
	bool ok;
	switch (s[i]) {
	case '"':
		v->type = kind::string;
		ok = parse_string(s, i, end);
		break;
	case 't':
		v->type = kind::true_;
		ok = literal(s, i, "true", end);
		break;
	case 'f':
		v->type = kind::false_;
		ok = literal(s, i, "false", end);
		break;
	case 'n':
		v->type = kind::null;
		ok = literal(s, i, "null", end);
		break;
	case '{':
	case '[': {
		const bool obj = s[i] == '{';
		const char close = obj ? '}' : ']';
		v->type = obj ? kind::object : kind::array;
		if (depth >= max_depth)
			return false;
		i = skip_ws(s, i + 1);
		if (i < s.size() && s[i] == close) {
			*end = i + 1;
			ok = true;
			break;
		}
		for (;;) {
			value x;
			size_t e;
			if (obj) {
				if (i >= s.size() || s[i] != '"' || !parse_string(s, i, &e))
					return false;
				i = skip_ws(s, e);
				if (i >= s.size() || s[i] != ':')
					return false;
				i = skip_ws(s, i + 1);
			}
			if (!parse_value(s, i, depth + 1, &x, &e))
				return false;
			i = skip_ws(s, e);
			if (i >= s.size())
				return false;
			if (s[i] == ',') {
				i = skip_ws(s, i + 1);
				continue;
			}
			if (s[i] != close)
				return false;
			*end = i + 1;
			break;
		}
		ok = true;
		break;
	}
	default:
		v->type = kind::number;
		ok = parse_number(s, i, end);
		break;
	}
	if (ok)
		v->raw = s.substr(start, *end - start);
	return ok;
}

} // namespace detail

bool validate(std::string_view in, value *out) noexcept
{
	size_t i = detail::skip_ws(in, 0), end;
	if (!detail::parse_value(in, i, 0, out, &end))
		return false;
	return detail::skip_ws(in, end) == in.size();
}

ptrdiff_t unescape(std::string_view raw, char *out, size_t cap) noexcept
{
	size_t o = 0;
	auto put = [&](uint32_t c) {
		char b[4];
		size_t n;
		if (c < 0x80) {
			b[0] = static_cast<char>(c);
			n = 1;
		} else if (c < 0x800) {
			b[0] = static_cast<char>(0xc0 | (c >> 6));
			b[1] = static_cast<char>(0x80 | (c & 0x3f));
			n = 2;
		} else if (c < 0x10000) {
			b[0] = static_cast<char>(0xe0 | (c >> 12));
			b[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3f));
			b[2] = static_cast<char>(0x80 | (c & 0x3f));
			n = 3;
		} else {
			b[0] = static_cast<char>(0xf0 | (c >> 18));
			b[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3f));
			b[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3f));
			b[3] = static_cast<char>(0x80 | (c & 0x3f));
			n = 4;
		}
		if (o + n > cap)
			return false;
		std::memcpy(out + o, b, n);
		o += n;
		return true;
	};
	auto hex4 = [&](size_t i) {
		uint32_t v = 0;
		for (size_t k = 0; k < 4; k++) {
			char c = raw[i + k];
			v = (v << 4) | static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
		}
		return v;
	};
	for (size_t i = 1; i + 1 < raw.size();) {
		char c = raw[i];
		if (c != '\\') {
			if (o >= cap)
				return -1;
			out[o++] = c;
			i++;
			continue;
		}
		char e = raw[i + 1];
		uint32_t cp;
		switch (e) {
		case 'b': cp = '\b'; break;
		case 'f': cp = '\f'; break;
		case 'n': cp = '\n'; break;
		case 'r': cp = '\r'; break;
		case 't': cp = '\t'; break;
		case 'u':
			cp = hex4(i + 2);
			if (cp >= 0xd800 && cp <= 0xdbff) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (hex4(i + 8) - 0xdc00);
				i += 6;
			}
			i += 4;
			break;
		default: cp = static_cast<uint8_t>(e); break;
		}
		i += 2;
		if (!put(cp))
			return -1;
	}
	return static_cast<ptrdiff_t>(o);
}

bool to_seconds(std::string_view raw, int64_t *out) noexcept
{
	if (raw.find_first_of(".eE") == std::string_view::npos) {
		int64_t v;
		auto r = std::from_chars(raw.data(), raw.data() + raw.size(), v);
		if (r.ec == std::errc() && r.ptr == raw.data() + raw.size()) {
			*out = v;
			return true;
		}
		if (r.ec != std::errc::result_out_of_range)
			return false;
		*out = raw[0] == '-' ? INT64_MIN : INT64_MAX;
		return true;
	}
	double d;
	auto r = std::from_chars(raw.data(), raw.data() + raw.size(), d);
	if (r.ptr != raw.data() + raw.size())
		return false;
	if (r.ec == std::errc::result_out_of_range) {
		/* overflow: saturate by sign; underflow: a tiny number is 0 or -1 */
		bool neg = raw[0] == '-';
		bool big = raw.find_first_of("eE") != std::string_view::npos &&
			   raw[raw.find_first_of("eE") + 1] != '-';
		*out = big ? (neg ? INT64_MIN : INT64_MAX) : (neg ? -1 : 0);
		return true;
	}
	if (r.ec != std::errc())
		return false;
	d = std::floor(d);
	if (d >= 9.2e18)
		*out = INT64_MAX;
	else if (d <= -9.2e18)
		*out = INT64_MIN;
	else
		*out = static_cast<int64_t>(d);
	return true;
}

} // namespace dpumesh::policy::json
