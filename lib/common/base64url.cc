// SPDX-License-Identifier: BSD-3-Clause
// base64url decoding (canonical and lenient) and encoding.
#include "dpumesh/common/base64url.h"

#include <array>

namespace dpumesh {

namespace {

constexpr std::string_view url_alphabet =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Character -> 6-bit value, -1 if not in the form's alphabet. */
constexpr std::array<int8_t, 256> make_table(bool standard_too)
{
	std::array<int8_t, 256> t{};
	for (auto &x : t)
		x = -1;
	for (size_t i = 0; i < url_alphabet.size(); i++)
		t[static_cast<uint8_t>(url_alphabet[i])] = static_cast<int8_t>(i);
	if (standard_too) {
		t[static_cast<uint8_t>('+')] = 62;
		t[static_cast<uint8_t>('/')] = 63;
	}
	return t;
}
constexpr auto canonical_table = make_table(false);
constexpr auto lenient_table = make_table(true);

} // namespace

ptrdiff_t base64url_decode(std::string_view in, uint8_t *out, size_t cap,
			   base64url_form form) noexcept
{
	const bool canonical = form == base64url_form::canonical;
	const auto &t = canonical ? canonical_table : lenient_table;
	if (!canonical) /* padding, at the very end only ('=' elsewhere is not in the table) */
		for (int k = 0; k < 2 && !in.empty() && in.back() == '='; k++)
			in.remove_suffix(1);
	const size_t n = in.size();
	const size_t rem = n % 4;
	if (rem == 1)
		return -1;
	const size_t len = n / 4 * 3 + (rem == 0 ? 0 : rem - 1);
	if (len > cap)
		return -1;
	const auto *s = reinterpret_cast<const uint8_t *>(in.data());
	size_t o = 0, i = 0;
	for (; i + 4 <= n; i += 4) {
		int a = t[s[i]], b = t[s[i + 1]], c = t[s[i + 2]], d = t[s[i + 3]];
		if ((a | b | c | d) < 0)
			return -1;
		uint32_t v = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6) | uint32_t(d);
		out[o++] = static_cast<uint8_t>(v >> 16);
		out[o++] = static_cast<uint8_t>(v >> 8);
		out[o++] = static_cast<uint8_t>(v);
	}
	if (rem >= 2) {
		int a = t[s[i]], b = t[s[i + 1]];
		int c = rem == 3 ? t[s[i + 2]] : 0;
		if ((a | b | c) < 0)
			return -1;
		uint32_t v = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6);
		/* canonical: the bits past the last whole byte are zero */
		if (canonical && ((rem == 2 && (v & 0xffff)) || (rem == 3 && (v & 0xff))))
			return -1;
		out[o++] = static_cast<uint8_t>(v >> 16);
		if (rem == 3)
			out[o++] = static_cast<uint8_t>(v >> 8);
	}
	return static_cast<ptrdiff_t>(o);
}

std::optional<std::string> base64url_decode(std::string_view in, base64url_form form)
{
	std::string out(in.size() / 4 * 3 + 3, '\0');
	ptrdiff_t n = base64url_decode(in, reinterpret_cast<uint8_t *>(out.data()), out.size(), form);
	if (n < 0)
		return std::nullopt;
	out.resize(static_cast<size_t>(n));
	return out;
}

std::string base64url_encode(std::string_view in)
{
	std::string out;
	out.reserve((in.size() + 2) / 3 * 4);
	const auto *s = reinterpret_cast<const uint8_t *>(in.data());
	size_t i = 0;
	for (; i + 3 <= in.size(); i += 3) {
		uint32_t v = (uint32_t(s[i]) << 16) | (uint32_t(s[i + 1]) << 8) | s[i + 2];
		out += url_alphabet[(v >> 18) & 63];
		out += url_alphabet[(v >> 12) & 63];
		out += url_alphabet[(v >> 6) & 63];
		out += url_alphabet[v & 63];
	}
	size_t rem = in.size() - i;
	if (rem) {
		uint32_t v = uint32_t(s[i]) << 16;
		if (rem == 2)
			v |= uint32_t(s[i + 1]) << 8;
		out += url_alphabet[(v >> 18) & 63];
		out += url_alphabet[(v >> 12) & 63];
		if (rem == 2)
			out += url_alphabet[(v >> 6) & 63];
	}
	return out;
}

} // namespace dpumesh
