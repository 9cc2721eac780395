// SPDX-License-Identifier: BSD-3-Clause
// Numbers typed by a person (a command line, an environment variable, a console word): the
// whole text one number in range, or none. strtoul() and strtod() alone read "abc" as 0,
// "8k" as 8, " 8" as 8, "-1" as the largest value, and "nan" as a number no range test
// refuses (every compare with it is false); every program of the tree and its benchmark
// drivers read their numbers here, and say what they wanted when it is none.
//
//   if (auto v = parse_whole(arg, 1, 65535)) port = *v; else refuse("--port", arg);
//   auto share = parse_real(arg, 0.0, 1.0);
//   seconds = real_arg("dpumesh-http-load", "--seconds", argv[i], 0.01, 86400); // or exit 2
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>

namespace dpumesh {

/**
 * `s` as one whole number in [lo, hi]: decimal digits (base 10), or with base 0 also 0x hex
 * and 0-led octal, as strtoull reads them; nothing before or after, no sign, no space.
 * nullopt for none, an empty text, or one out of range (over 2^64 included).
 */
inline std::optional<uint64_t> parse_whole(const char *s, uint64_t lo, uint64_t hi,
					   int base = 10) noexcept
{
	if (!s || *s < '0' || *s > '9') /* strtoull would skip spaces and take a sign */
		return std::nullopt;
	char *end = nullptr;
	errno = 0;
	const unsigned long long v = std::strtoull(s, &end, base);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return std::nullopt;
	return static_cast<uint64_t>(v);
}

/**
 * `s` as one finite number in [lo, hi], in strtod's forms ("1.5", "2e3", "0x1p4") less
 * "nan" and "inf"; nothing before or after it. nullopt for none, an empty text, one that
 * overflows or underflows a double, or one out of range.
 */
inline std::optional<double> parse_real(const char *s, double lo, double hi) noexcept
{
	if (!s || *s == '\0' || *s == ' ' || (*s >= '\t' && *s <= '\r'))
		return std::nullopt;
	char *end = nullptr;
	errno = 0;
	const double v = std::strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !std::isfinite(v) || !(v >= lo && v <= hi))
		return std::nullopt;
	return v;
}

/**
 * A program's argument (or variable) `v`, named `what`, as parse_whole() reads it; when it is
 * none, "PROG: WHAT \"V\": want a whole number in [LO, HI]" on stderr and exit(code).
 */
inline uint64_t whole_arg(const char *prog, const char *what, const char *v, uint64_t lo,
			  uint64_t hi, int code = 2, int base = 10)
{
	if (const auto n = parse_whole(v, lo, hi, base))
		return *n;
	std::fprintf(stderr, "%s: %s \"%s\": want a whole number in [%llu, %llu]\n", prog, what,
		     v ? v : "", static_cast<unsigned long long>(lo),
		     static_cast<unsigned long long>(hi));
	std::exit(code);
}

/** The same for parse_real(): "want a number in [LO, HI]" (%g) and exit(code). */
inline double real_arg(const char *prog, const char *what, const char *v, double lo, double hi,
		       int code = 2)
{
	if (const auto x = parse_real(v, lo, hi))
		return *x;
	std::fprintf(stderr, "%s: %s \"%s\": want a number in [%g, %g]\n", prog, what, v ? v : "",
		     lo, hi);
	std::exit(code);
}

} // namespace dpumesh
