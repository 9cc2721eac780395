// SPDX-License-Identifier: BSD-3-Clause
// Encoder and validating zero-copy decoder of the mesh L7 header (docs/wire.md).
#include "dpumesh/wire/l7.h"

#include <array>
#include <bit>
#include <cstring>

#include "dpumesh/common/copy.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dpumesh::wire {

namespace {

inline uint16_t get16(const uint8_t *p) noexcept
{
	return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
/* two bytes as they lie, for a compare with bytes made the same way */
inline uint16_t load16(const uint8_t *p) noexcept
{
	uint16_t w;
	std::memcpy(&w, p, 2);
	return w;
}
inline void put16(uint8_t *p, uint16_t v) noexcept
{
	p[0] = static_cast<uint8_t>(v >> 8);
	p[1] = static_cast<uint8_t>(v);
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

/* out of line: inline, its vectorised loop took the decoder's registers (its loop state went
 * to the stack) */
[[gnu::noinline]] bool valid_name(std::string_view n) noexcept
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

constexpr uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;

/* The bytes of w below 14 (NUL, CR and LF are), their top bits: non-zero exactly when w
 * has one (the bits above a true one may be set too). Three instructions where bad_word()
 * takes a dozen; the exact test runs only on the rare word that has such a byte (a tab). */
inline uint64_t below14(uint64_t w) noexcept
{
	return (w - 14 * ones) & ~w;
}

/* A name's bytes as memcpy loads them (a constant to compare a loaded word with) */
template <size_t N>
constexpr uint64_t word_of(const char (&s)[N], size_t from = 0) noexcept
{
	constexpr size_t n = N - 1 < 8 ? N - 1 : 8;
	uint64_t w = 0;
	for (size_t i = 0; i < n && from + i < N - 1; i++) {
		const uint64_t b = static_cast<uint8_t>(s[from + i]);
		w |= std::endian::native == std::endian::little ? b << (8 * i)
								 : b << (8 * (n - 1 - i));
	}
	return w;
}
template <size_t N>
constexpr uint32_t word4_of(const char (&s)[N], size_t from = 0) noexcept
{
	uint32_t w = 0;
	for (size_t i = 0; i < 4; i++) {
		const uint32_t b = static_cast<uint8_t>(s[from + i]);
		w |= std::endian::native == std::endian::little ? b << (8 * i) : b << (8 * (3 - i));
	}
	return w;
}

/* the pseudo-fields' names as words (made at compile time: word_of() at run time built the
 * string on the stack) */
constexpr uint64_t k_service = word_of(":service");
constexpr uint32_t k_method[2] = {word4_of(":method"), word4_of(":method", 3)};
constexpr uint32_t k_reason[2] = {word4_of(":reason"), word4_of(":reason", 3)};
constexpr uint32_t k_path = word4_of(":path");
constexpr uint32_t k_hop = word4_of(":hop");

/* Values longer than a word (values are trace ids, tokens, paths: tens to hundreds of
 * bytes): first whether any byte is below 14 (NUL, CR and LF are; a tab is too, rarely),
 * sixteen bytes a step where the CPU has SSE2 (min(b, 13) == b: a JWT's ~200 bytes were
 * ~125 instructions eight at a time), else eight; the last step overlaps the one before
 * (read again, not copied to a padded buffer: byte stores then a word load stall on store
 * forwarding). Only a value with such a byte gets the exact test (valid_long_value()). */
[[gnu::always_inline]] inline bool none_below14(const uint8_t *p, size_t n) noexcept
{
#if defined(__SSE2__)
	if (n >= 16) {
		/* the bytes' least, lane by lane (one pminub a 16 bytes), tested once at the
		 * end: a min, compare and or a step were ~96 instructions for a JWT's ~180
		 * bytes */
		const auto at = [p](size_t i) noexcept {
			return _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + i));
		};
		__m128i least = at(n - 16);
		size_t i = 0;
		for (; i + 32 < n; i += 32) /* two a step: the loop's own add and branch halved */
			least = _mm_min_epu8(least, _mm_min_epu8(at(i), at(i + 16)));
		if (i + 16 < n)
			least = _mm_min_epu8(least, at(i));
		const __m128i thirteen = _mm_set1_epi8(13);
		return _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(least, thirteen), least)) == 0;
	}
#endif
	uint64_t low = below14(load64(p + n - 8));
	for (size_t i = 0; i + 8 < n; i += 8)
		low |= below14(load64(p + i));
	return (low & highs) == 0;
}

[[gnu::noinline]] bool valid_long_value(const uint8_t *p, size_t n) noexcept
{
	if (n > l7_max_value)
		return false;
	if (none_below14(p, n))
		return true;
	bool bad = bad_word(load64(p + n - 8));
	for (size_t i = 0; i + 8 < n; i += 8)
		bad |= bad_word(load64(p + i));
	return !bad;
}

/* A value: at most l7_max_value bytes, none of them CR, LF or NUL. Up to 8 bytes (the
 * pseudo-fields' usual values) inline, in one word. */
inline bool valid_value(const uint8_t *p, size_t n) noexcept
{
	if (n > 8)
		return valid_long_value(p, n);
	if (n == 0)
		return true;
	const uint64_t w = short_word(p, n);
	return (below14(w) & highs) == 0 || !bad_word(w);
}

/* The bytes of a word (as memcpy loads it) that are its first n in memory (First) or its
 * last n, n 0..8 */
template <bool First>
constexpr std::array<uint64_t, 9> byte_masks() noexcept
{
	std::array<uint64_t, 9> t{};
	const bool low = First == (std::endian::native == std::endian::little);
	for (unsigned n = 1; n <= 8; n++) {
		const uint64_t bytes = n == 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * n)) - 1;
		t[n] = low ? bytes : bytes << (64 - 8 * n);
	}
	return t;
}
constexpr std::array<uint64_t, 9> first_bytes = byte_masks<true>();
/* their bytes' top bits: below14()'s flags of those bytes kept with one `and` (a mask of
 * bytes, then one of top bits, was 2 instructions a value more) */
template <bool First>
constexpr std::array<uint64_t, 9> high_masks() noexcept
{
	std::array<uint64_t, 9> t = byte_masks<First>();
	for (uint64_t &m : t)
		m &= highs;
	return t;
}
constexpr std::array<uint64_t, 9> first_highs = high_masks<true>(),
				   last_highs = high_masks<false>();

/* valid_value() in l7_decode()'s straight line: the same, but a value with a byte below 14
 * (a tab, or a bad one) is not taken here but by decode_general(): the line makes no call
 * then but its tail calls, and GCC saves its registers after the first checks, with no
 * stack frame of its own (3 instructions a request; the registers it saves are still six).
 * A value of 1-8 bytes is read as part of the word at `word`, which holds it as its first
 * bytes (masks first_highs) or its last (last_highs), the rest of that word the header's
 * next or previous bytes: below14() of the word, its value's bytes' bits kept (a table's
 * mask, no load of the value a byte or half at a time: short_word() and its length
 * branches, l7_decode() 183 -> 159 instructions with the status test). Exact for those
 * bytes where the bytes before them as loaded (the low ones, which a borrow comes from) are
 * the value's own or end in a byte of 15 or more: the first bytes on a little-endian CPU;
 * the last where the byte before the value is the name's last ('h' of ":path"). Elsewhere
 * a borrow may flag a good byte: decode_general() then, never a bad value taken. */
[[gnu::always_inline]] inline bool line_value(const uint8_t *p, size_t n, const uint8_t *word,
					       const std::array<uint64_t, 9> &masks) noexcept
{
	if (n <= 8)
		return (below14(load64(word)) & masks[n]) == 0;
	return n <= l7_max_value && none_below14(p, n);
}

bool valid_value(std::string_view v) noexcept
{
	return valid_value(reinterpret_cast<const uint8_t *>(v.data()), v.size());
}

/* Whether the bytes of word w in `bytes` (a mask of whole bytes) are upper-case letters,
 * the others zero: each byte below 0x80, at least 'A' (+0x3f sets its top bit) and below
 * '[' (+0x25 does not; a zero byte's top bit stays clear) */
constexpr bool upper_letters(uint64_t w, uint64_t bytes) noexcept
{
	return (w & highs) == 0 &&
	       ((w + 0x3f * ones) & ~(w + 0x25 * ones) & highs) == (bytes & highs);
}

/* A method of 1-8 upper-case letters (GET, POST, ...), tested as one word */
inline bool upper_method(std::string_view m) noexcept
{
	if (m.empty() || m.size() > 8)
		return false;
	return upper_letters(short_word(reinterpret_cast<const uint8_t *>(m.data()), m.size()),
			     ~uint64_t(0));
}

/* upper_method() of a method of 1-8 bytes at p, the first bytes of the word there (the rest
 * the next field's, zeroed: no carry out of a zero byte, whose test bit stays clear): its
 * bytes kept by a table's mask, not loaded by short_word() (~6 instructions) */
[[gnu::always_inline]] inline bool upper_method_first(const uint8_t *p, size_t n) noexcept
{
	if (n - 1 >= 8) /* 0, or longer than a word */
		return false;
	const uint64_t bytes = first_bytes[n];
	return upper_letters(load64(p) & bytes, bytes);
}

bool valid_method(std::string_view m) noexcept
{
	if (upper_method(m))
		return true;
	if (m.empty() || m.size() > 32)
		return false;
	for (char ch : m)
		if (!is_tchar(static_cast<uint8_t>(ch)))
			return false;
	return true;
}

/* The regular fields the decoder notes by name: the trace fields (l7_trace bits) and the
 * authorization (known_auth), each told by its length and two overlapping words. A known
 * name is a valid one: no valid_name() call for it ("authorization" a byte at a time was
 * 79 instructions of a JWT request). Noted while the fields are walked (looking for them
 * again afterwards, two finds, was 1% of the forward path; the JWT's find, ~70 a request). */
enum : unsigned { known_auth = 4 };
static_assert(((l7_trace_request_id | l7_trace_traceparent) & known_auth) == 0);
constexpr uint64_t k_auth[2] = {word_of("authorization"), word_of("authorization", 5)};
constexpr uint64_t k_request_id = word_of("x-request-id");
constexpr uint32_t k_request_id_tail = word4_of("x-request-id", 8);
constexpr uint64_t k_traceparent = word_of("traceparent");
constexpr uint32_t k_traceparent_tail = word4_of("traceparent", 7);

inline unsigned known_field(const uint8_t *name, uint8_t nl) noexcept
{
	switch (nl) {
	case 13:
		return load64(name) == k_auth[0] && load64(name + 5) == k_auth[1]
			       ? unsigned(known_auth)
			       : 0u;
	case 12:
		return load64(name) == k_request_id && load32(name + 8) == k_request_id_tail
			       ? unsigned(l7_trace_request_id)
			       : 0u;
	case 11:
		return load64(name) == k_traceparent && load32(name + 7) == k_traceparent_tail
			       ? unsigned(l7_trace_traceparent)
			       : 0u;
	default:
		return 0;
	}
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

namespace {

/* Where a walk over the fields is: the next field, the first regular one, what it saw. */
struct field_walk {
	const uint8_t *p;
	const uint8_t *fields = nullptr;
	unsigned seen = 0, trace = 0;
	uint16_t nb_fields = 0;
	uint16_t auth_len = 0;
	const uint8_t *auth = nullptr; /* the first authorization field's value */
};

/* `left` fields from w.p on, each checked in turn: its lengths, its value, then its name
 * (a pseudo-field's by its length and one or two word compares, its view to its slot
 * before the duplicate is looked for: on an error *out is unspecified). Out of line: the
 * calls in its loop (a long value, a regular name) would take its callers' registers. */
[[gnu::noinline]] l7_error walk_fields(field_walk &w, const uint8_t *end, unsigned left,
				       bool is_req, l7_view *out) noexcept
{
	const uint8_t *p = w.p;
	const uint8_t *fields = w.fields;
	unsigned seen = w.seen, trace = w.trace;
	uint16_t nb_fields = w.nb_fields;
	for (; left != 0; left--) {
		if (end - p < 4 || p[1] != 0)
			return l7_error::bad_field;
		const uint8_t nl = p[0];
		const uint16_t vl = get16(p + 2);
		if (static_cast<size_t>(end - p - 4) < size_t(nl) + vl)
			return l7_error::bad_field;
		const uint8_t *name = p + 4;
		const uint8_t *value = name + nl;
		if (!valid_value(value, vl))
			return l7_error::bad_value;
		const std::string_view v(reinterpret_cast<const char *>(value), vl);
		if (nl != 0 && name[0] == ':') {
			if (fields)
				return l7_error::pseudo_after_field;
			unsigned bit;
			switch (nl) {
			case 8:
				if (!is_req || load64(name) != k_service)
					return l7_error::unknown_pseudo;
				bit = ps_service;
				out->service = v;
				break;
			case 7: {
				const uint32_t a = load32(name), b = load32(name + 3);
				if (is_req && a == k_method[0] && b == k_method[1]) {
					bit = ps_method;
					out->method = v;
				} else if (!is_req && a == k_reason[0] && b == k_reason[1]) {
					bit = ps_reason;
					out->reason = v;
				} else {
					return l7_error::unknown_pseudo;
				}
				break;
			}
			case 5:
				if (!is_req || load32(name) != k_path || name[4] != 'h')
					return l7_error::unknown_pseudo;
				bit = ps_path;
				out->path = v;
				break;
			case 4:
				if (is_req || load32(name) != k_hop)
					return l7_error::unknown_pseudo;
				bit = ps_hop;
				out->hop = v;
				break;
			default:
				return l7_error::unknown_pseudo;
			}
			if (seen & bit)
				return l7_error::duplicate_pseudo;
			seen |= bit;
		} else {
			const unsigned known = known_field(name, nl);
			if (!known &&
			    !valid_name(std::string_view(reinterpret_cast<const char *>(name), nl)))
				return l7_error::bad_name;
			if (!fields)
				fields = p;
			nb_fields++;
			if (!(known & known_auth))
				trace |= known;
			else if (!w.auth) {
				w.auth = value;
				w.auth_len = vl;
			}
		}
		p = value + vl;
	}
	w.p = p;
	w.fields = fields;
	w.seen = seen;
	w.trace = trace;
	w.nb_fields = nb_fields;
	return l7_error::ok;
}

/* What a walk over the fields found, into the view (its end at `end`). */
inline l7_error walked(const field_walk &w, const uint8_t *end, l7_view *out) noexcept
{
	out->trace = static_cast<uint8_t>(w.trace);
	out->authorization = w.auth ? std::string_view(reinterpret_cast<const char *>(w.auth),
						       w.auth_len)
				    : std::string_view();
	out->fields = w.fields ? w.fields : end;
	out->end = end;
	out->nb_fields = w.nb_fields;
	return l7_error::ok;
}

} // namespace

namespace {

/* The general decoder, every header (l7_decode() takes the common request itself, in a
 * straight line): decoded into *out in place, a store per field (a view made on the stack
 * was cleared with a `rep stos` and copied out with 16-byte loads behind its narrow stores,
 * a store-forwarding stall: 30% of this function's samples in the forward profile). On an
 * error *out is left half written. */
[[gnu::noinline]] l7_error decode_general(const uint8_t *buf, size_t len, l7_view *out) noexcept
{
	if (len < l7_fixed_size)
		return l7_error::truncated;
	/* magic, version and kind in one compare; check_fixed() says which is wrong */
	const uint32_t head = load32(buf);
	constexpr uint8_t req_head[] = {l7_magic0, l7_magic1, l7_version,
					static_cast<uint8_t>(l7_kind::request)};
	constexpr uint8_t resp_head[] = {l7_magic0, l7_magic1, l7_version,
					 static_cast<uint8_t>(l7_kind::response)};
	const bool is_req = head == load32(req_head);
	if (!is_req && head != load32(resp_head))
		return check_fixed(buf, len, false);
	const uint16_t hlen = get16(buf + 4);
	if (hlen != len) /* len >= l7_fixed_size: so is an hlen equal to it */
		return hlen > len ? l7_error::truncated : l7_error::bad_length;
	const uint16_t nb = get16(buf + 6);
	const uint16_t status = get16(buf + 8);
	const uint16_t flags = get16(buf + 10);
	const uint32_t deadline_ms = l7_deadline(buf);
	if (nb > l7_max_fields)
		return l7_error::too_many_fields;
	if (flags & ~l7_flag_known)
		return l7_error::bad_flags;
	if (is_req ? status != 0 : (status < 100 || status > 599))
		return l7_error::bad_status;
	if (!is_req && deadline_ms != 0)
		return l7_error::bad_deadline;
	out->kind = is_req ? l7_kind::request : l7_kind::response;
	out->status = status;
	out->flags = flags;
	out->deadline_ms = deadline_ms;

	const uint8_t *end = buf + hlen;
	field_walk w{buf + l7_fixed_size};
	if (nb != 0)
		if (l7_error e = walk_fields(w, end, nb, is_req, out); e != l7_error::ok)
			return e;
	if (w.p != end)
		return l7_error::bad_length;
	if (is_req) {
		if ((w.seen & (ps_service | ps_method | ps_path)) !=
		    (ps_service | ps_method | ps_path)) {
			return l7_error::missing_pseudo;
		} else if (out->service.empty()) {
			return l7_error::missing_pseudo;
		} else if (out->path.empty() || out->path[0] != '/') {
			return l7_error::bad_path;
		} else if (!valid_method(out->method)) {
			return l7_error::bad_method;
		}
		/* one assignment each: `a = b = {}` reads b back (16 bytes behind two 8-byte
		 * stores: a store-forwarding stall) */
		out->reason = {};
		out->hop = {};
	} else {
		if (!(w.seen & ps_reason))
			out->reason = {};
		if (!(w.seen & ps_hop))
			out->hop = {};
		out->service = {};
		out->method = {};
		out->path = {};
	}
	return walked(w, end, out);
}

/* The regular fields of a request whose pseudo-fields l7_decode()'s straight line read
 * (from `p`, `left` of them, at least one), in a line of their own: each field's head,
 * bounds, value and name checked as walk_fields() checks a request's regular field, but
 * only accepted: a pseudo-field among them (which walk_fields() refuses), a value with a
 * byte below 14 longer than a word, anything that is not accepted goes to decode_general()
 * from the start, which decides. The walk's state in registers, not a field_walk in
 * memory, and no pseudo-field's cases (the JWT's one field was ~140 instructions through
 * request_fields() and walk_fields()). Out of line, so that a request with none keeps the
 * line a leaf (its calls made, it saved and restored six registers: a tenth of it). */
[[gnu::noinline]] l7_error request_fields(const uint8_t *buf, size_t len, const uint8_t *p,
					  unsigned left, l7_view *out) noexcept
{
	const uint8_t *const end = buf + len;
	const uint8_t *const fields = p;
	const unsigned nb_fields = left;
	unsigned trace = 0;
	const uint8_t *auth = nullptr;
	uint16_t auth_len = 0;
	do {
		if (end - p < 4 || p[1] != 0) [[unlikely]]
			return decode_general(buf, len, out);
		const uint8_t nl = p[0];
		const uint16_t vl = get16(p + 2);
		const uint8_t *const name = p + 4;
		const uint8_t *const value = name + nl;
		/* a value of up to 8 bytes read as the word it ends (inside: the line's
		 * fields are before it), after the name's last byte (a good name's is 15 or
		 * more; an empty name's, a field head's byte, may flag a good value: refused
		 * anyway) */
		if (static_cast<size_t>(end - name) < size_t(nl) + vl ||
		    !line_value(value, vl, value + vl - 8, last_highs)) [[unlikely]]
			return decode_general(buf, len, out);
		/* a pseudo-field here (refused) has a name that starts with ':', which no known
		 * name does and valid_name() refuses, as it refuses an empty one */
		const unsigned known = known_field(name, nl);
		if (!known &&
		    !valid_name(std::string_view(reinterpret_cast<const char *>(name), nl)))
			[[unlikely]]
			return decode_general(buf, len, out);
		if (!(known & known_auth)) {
			trace |= known;
		} else if (!auth) {
			auth = value;
			auth_len = vl;
		}
		p = value + vl;
	} while (--left != 0);
	if (p != end) [[unlikely]]
		return decode_general(buf, len, out);
	out->trace = static_cast<uint8_t>(trace);
	out->authorization =
		auth ? std::string_view(reinterpret_cast<const char *>(auth), auth_len)
		     : std::string_view();
	out->fields = fields;
	out->end = end;
	out->nb_fields = static_cast<uint16_t>(nb_fields);
	return l7_error::ok;
}

} // namespace

/*
 * The common request first, in a straight line, apart from the general decoder above: the
 * fixed part read in four loads; :service, :method and :path, in that order, each checked
 * by its head (name length and reserved byte in one compare) and its name in one or two
 * word compares, bounds checked once a field (a field's value and the next field's head
 * and name together); the method upper case, which also says it holds no CR, LF or NUL;
 * then the regular fields by walk_fields(). Anything else, or any of these checks failing,
 * goes to decode_general(), from the start: this form only accepts (a subset of what that
 * accepts, with the same view, as the reference decoder holds both to: l7_fuzz) and never
 * refuses. With decode_general()'s own form (the same checks, each apart, and the
 * pseudo-fields' tests after them) a 57-byte request took 258 instructions.
 */
l7_error l7_decode(const uint8_t *buf, size_t len, l7_view *out) noexcept
{
	/* the fixed part and the three fields' heads and names, each value a byte long */
	constexpr size_t least = l7_fixed_size + (4 + 8) + (4 + 7) + (4 + 5) + 3;
	constexpr uint8_t req_head[] = {l7_magic0, l7_magic1, l7_version,
					static_cast<uint8_t>(l7_kind::request)};
	/* a field's head's first two bytes: its name's length and the reserved 0 */
	constexpr auto head_of = [](uint8_t nl) {
		const uint8_t b[2] = {nl, 0};
		return std::bit_cast<uint16_t>(b);
	};
	/* the status (0) and the unknown flags' bits, as the 4 bytes from the status load:
	 * one test (~2 instructions) */
	constexpr uint8_t bad_bytes[4] = {0xff, 0xff,
					  static_cast<uint8_t>(~l7_flag_known >> 8 & 0xff),
					  static_cast<uint8_t>(~l7_flag_known & 0xff)};
	if (len < least) [[unlikely]]
		return decode_general(buf, len, out);
	const uint16_t nb = get16(buf + 6);
	if (load32(buf) != load32(req_head) || get16(buf + 4) != len || nb < 3 ||
	    nb > l7_max_fields || (load32(buf + 8) & load32(bad_bytes)) != 0) [[unlikely]]
		return decode_general(buf, len, out);
	const uint16_t flags = get16(buf + 10);
	const uint8_t *const end = buf + len;
	/* each part stored as soon as it is checked, so that few values stay live (and no
	 * register is saved and restored); a check that fails leaves *out half written, which
	 * decode_general() writes again */
	out->kind = l7_kind::request;
	out->status = 0;
	out->flags = flags;
	out->deadline_ms = l7_deadline(buf);
	/* :service (len >= least: its head and name are inside); a value of up to 8 bytes read
	 * as the word it starts (the method's head and name, 11 bytes, follow it inside) */
	const uint8_t *s = buf + l7_fixed_size;
	const uint16_t sl = get16(s + 2);
	if (load16(s) != head_of(8) || load64(s + 4) != k_service || sl == 0 ||
	    static_cast<size_t>(end - s) < (4 + 8) + size_t(sl) + (4 + 7) ||
	    !line_value(s + 12, sl, s + 12, first_highs)) [[unlikely]]
		return decode_general(buf, len, out);
	out->service = std::string_view(reinterpret_cast<const char *>(s + 12), sl);
	/* :method: upper case letters, one word (valid as a value, then), read as the word
	 * it starts (the path's head and name, 9 bytes, follow it inside) */
	const uint8_t *m = s + 12 + sl;
	const uint16_t ml = get16(m + 2);
	if (load16(m) != head_of(7) || load32(m + 4) != k_method[0] ||
	    load32(m + 7) != k_method[1] ||
	    static_cast<size_t>(end - m) < (4 + 7) + size_t(ml) + (4 + 5) ||
	    !upper_method_first(m + 11, ml)) [[unlikely]]
		return decode_general(buf, len, out);
	out->method = std::string_view(reinterpret_cast<const char *>(m + 11), ml);
	/* :path, starting with '/'; a value of up to 8 bytes read as the word it ends (its
	 * head and name, 9 bytes, are before it), after the 'h' that ends its name */
	const uint8_t *p = m + 11 + ml;
	const uint16_t pl = get16(p + 2);
	if (load16(p) != head_of(5) || load32(p + 4) != k_path || p[8] != 'h' || pl == 0 ||
	    static_cast<size_t>(end - p) < (4 + 5) + size_t(pl) || p[9] != '/' ||
	    !line_value(p + 9, pl, p + 9 + pl - 8, last_highs)) [[unlikely]]
		return decode_general(buf, len, out);
	out->path = std::string_view(reinterpret_cast<const char *>(p + 9), pl);
	out->reason = {};
	out->hop = {};
	if (nb != 3)
		return request_fields(buf, len, p + 9 + pl, nb - 3u, out);
	if (p + 9 + pl != end)
		return l7_error::bad_length; /* as decode_general() says of it */
	return walked(field_walk{end}, end, out); /* no regular field */
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
	l7_set_deadline(_buf, deadline_ms);
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
