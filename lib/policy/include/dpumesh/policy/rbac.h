// SPDX-License-Identifier: BSD-3-Clause
// RBAC for one service: allow rules on (method, path, claims), then the service's default.
//
// A rule matches when the method is one of its methods (or it lists none), the path
// matches (exact, prefix, or glob: '*' any run of characters including '/', '?' one
// character), and every claim it names holds the required value (a string claim equal
// to it, or an array claim holding it). The first matching rule allows; no match falls to
// the default. Paths are compared without their query ("?...") and fragment, byte for
// byte; a path that is not in normal form ("//", "/./", "/../", "%2e", "%2f", "%5c", '\')
// matches no rule, so it can never slip past a prefix rule: it gets the default.
//
//   auto p = dpumesh::policy::rbac_policy::compile(cfg.policy.rbac[0], verifier.get());
//   bool ok = p->allows("GET", "/v1/items?x=1", claims_or_null);
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "dpumesh/common/copy.h"
#include "dpumesh/policy/schema.h"
#include "dpumesh/policy/jwt.h"
#include "dpumesh/common/status.h"

namespace dpumesh::policy {

/**
 * Bit of a known method (GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH, CONNECT, TRACE: bits 0
 * to 8, in that order); 0 for any other, which then matches only rules with no methods.
 * Case-sensitive. By length, then its bytes compared as one word with each name of that
 * length: one or two compares instead of up to nine string compares.
 */
inline uint16_t method_bit(std::string_view m) noexcept
{
	/* a name's bytes as a little-endian word */
	auto name = [](const char *s, size_t n) constexpr noexcept {
		uint64_t w = 0;
		for (size_t i = 0; i < n; i++)
			w |= uint64_t(static_cast<uint8_t>(s[i])) << (8 * i);
		return w;
	};
	constexpr std::string_view names[] = {"GET",     "HEAD",  "POST",    "PUT",  "DELETE",
					      "OPTIONS", "PATCH", "CONNECT", "TRACE"};
	if constexpr (std::endian::native != std::endian::little) {
		for (size_t i = 0; i < std::size(names); i++)
			if (names[i] == m)
				return static_cast<uint16_t>(1u << i);
		return 0;
	}
	/* the method's bytes as that word: one or two loads, overlapping for 7 */
	const char *p = m.data();
	auto at = [p](size_t i, auto bytes) noexcept {
		decltype(bytes) v;
		std::memcpy(&v, p + i, sizeof(v));
		return uint64_t(v);
	};
	uint64_t w;
	switch (m.size()) {
	case 3:
		w = at(0, uint16_t()) | at(2, uint8_t()) << 16;
		return w == name("GET", 3) ? 1u << 0 : w == name("PUT", 3) ? 1u << 3 : 0;
	case 4:
		w = at(0, uint32_t());
		return w == name("HEAD", 4) ? 1u << 1 : w == name("POST", 4) ? 1u << 2 : 0;
	case 5:
		w = at(0, uint32_t()) | at(4, uint8_t()) << 32;
		return w == name("PATCH", 5) ? 1u << 6 : w == name("TRACE", 5) ? 1u << 8 : 0;
	case 6:
		w = at(0, uint32_t()) | at(4, uint16_t()) << 32;
		return w == name("DELETE", 6) ? 1u << 4 : 0;
	case 7:
		w = at(0, uint32_t()) | at(3, uint32_t()) << 24;
		return w == name("OPTIONS", 7) ? 1u << 5 : w == name("CONNECT", 7) ? 1u << 7 : 0;
	default: return 0;
	}
}

/** Glob match: '*' any run of characters (also '/'), '?' exactly one; no escapes. */
bool glob_match(std::string_view pattern, std::string_view s) noexcept;
/** The path without "?query" and "#fragment". */
inline std::string_view path_only(std::string_view path) noexcept
{
	/* a plain loop: find_first_of calls memchr on the set for every byte */
	for (size_t i = 0; i < path.size(); i++)
		if (path[i] == '?' || path[i] == '#')
			return path.substr(0, i);
	return path;
}
/** False for paths a router might read differently from a byte compare (see above). */
bool path_is_normal(std::string_view path) noexcept;

/** A path cut as path_only() cuts it, and whether it holds none of the bytes that make
 *  path_is_normal() look closer: no '%', no '\', no '/' or '.' right after a '/'. Such a
 *  path is normal exactly when it starts with '/'. */
struct cut_path {
	std::string_view path;
	bool plain = false;
};

namespace detail {
/* bytes the path scan looks at: 1 cuts ('?', '#'), 2 needs path_is_normal()'s look ('%',
 * '\'), 8 after a '/' does too ('/', '.'), 4 is a '/' */
inline constexpr auto path_classes = [] {
	struct table {
		uint8_t c[256] = {};
	} t;
	t.c[uint8_t('?')] = t.c[uint8_t('#')] = 1;
	t.c[uint8_t('%')] = t.c[uint8_t('\\')] = 2;
	t.c[uint8_t('/')] = 4 | 8;
	t.c[uint8_t('.')] = 8;
	return t;
}();
} // namespace detail

/**
 * path_only() and the plain test in one pass (the engine's cut and RBAC's form check were
 * a scan each, and path_is_normal() a call for every request that a rule allowed).
 */
inline cut_path scan_path(std::string_view p) noexcept
{
	unsigned odd = 0, after_slash = 0;
	size_t i = 0;
	for (; i < p.size(); i++) {
		const unsigned k = detail::path_classes.c[static_cast<uint8_t>(p[i])];
		if (k & 1)
			break;
		odd |= (k & 2) | (after_slash & k);
		after_slash = (k & 4) << 1;
	}
	return {p.substr(0, i), odd == 0};
}

class rbac_policy {
public:
	/**
	 * Compiles a service's RBAC from config.
	 * @param jwt the verifier whose claim indexes rules use; may be null only when no
	 *        rule names a claim
	 * @return the policy, or an error naming the rule whose claim the verifier lacks
	 */
	static result<rbac_policy> compile(const schema::rbac_policy &cfg, const jwt_verifier *jwt);

	/**
	 * @param path the request path, query included (it is cut here)
	 * @param claims the verified token's claims, or null when the request has none
	 */
	bool allows(std::string_view method, std::string_view path,
		    const token_claims *claims) const noexcept
	{
		return allows_cut(method, scan_path(path), claims);
	}
	/**
	 * allows() for a path already scanned with scan_path() (the engine scans it once, for
	 * its limits too). A default allow answers without looking at the rules (whichever
	 * rule matched, the answer would be yes).
	 */
	bool allows_cut(std::string_view method, const cut_path &cut,
			const token_claims *claims) const noexcept
	{
		return _default_allow || allowed_by_rule(method, cut.path, cut.plain, claims);
	}

	bool require_jwt() const noexcept { return _require_jwt; }
	bool default_allow() const noexcept { return _default_allow; }
	size_t nb_rules() const noexcept { return _rules.size(); }

private:
	struct claim_req {
		unsigned index;
		std::string value;
	};
	/* How a rule's path is compared, decided when it is compiled. A path allowed must be
	 * normal, and a normal path starts with '/': a rule's leading '/' is not compared
	 * again (a path without it fails the final check), and a prefix "" or "/" and a glob
	 * of '*' or of '/' then '*' match every such path without a compare. */
	enum class kind : uint8_t { any, exact, prefix, glob };
	struct rule {
		uint16_t methods = 0; /* bit per known method; 0: any */
		kind how = kind::prefix;
		uint8_t skip = 0; /* leading bytes not compared: 1 for a leading '/' */
		std::string path;
		std::vector<claim_req> claims;
	};
	/* whether a rule allows the request: the first that matches, on a normal path (inline:
	 * the engine's one call per request) */
	bool allowed_by_rule(std::string_view method, std::string_view path, bool plain,
			     const token_claims *claims) const noexcept;
	/* whether the token's claims hold every value a rule names: a call (inline, its
	 * loops made GCC call allowed_by_rule() instead, ~35 instructions a request) */
	static bool claims_hold(const rule &r, const token_claims *claims) noexcept;

	std::vector<rule> _rules;
	bool _default_allow = false;
	bool _require_jwt = true;
	bool _any_methods = false; /* a rule lists methods: the request's is decoded */
};

inline bool rbac_policy::allowed_by_rule(std::string_view method, std::string_view path,
					 bool plain, const token_claims *claims) const noexcept
{
	const uint16_t mbit = _any_methods ? method_bit(method) : 0;
	for (const rule &r : _rules) {
		if (r.methods != 0 && (r.methods & mbit) == 0)
			continue;
		const size_t n = r.path.size();
		switch (r.how) {
		case kind::any: break;
		case kind::exact:
			if (path.size() != n ||
			    !same_bytes(path.data() + r.skip, r.path.data() + r.skip, n - r.skip))
				continue;
			break;
		case kind::prefix:
			if (path.size() < n ||
			    !same_bytes(path.data() + r.skip, r.path.data() + r.skip, n - r.skip))
				continue;
			break;
		case kind::glob:
			if (!glob_match(r.path, path))
				continue;
			break;
		}
		if (!r.claims.empty() && !claims_hold(r, claims))
			continue;
		/* a path not in normal form matches no rule: it gets the default (deny, else
		 * allows_cut() had answered), so the form is checked once, for a rule that
		 * matched; a plain path (scan_path()) is normal when it starts with '/' */
		return plain ? !path.empty() && path[0] == '/' : path_is_normal(path);
	}
	return false;
}

} // namespace dpumesh::policy
