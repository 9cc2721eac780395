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

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dpumesh/policy/schema.h"
#include "dpumesh/policy/jwt.h"
#include "dpumesh/common/status.h"

namespace dpumesh::policy {

/** Glob match: '*' any run of characters (also '/'), '?' exactly one; no escapes. */
bool glob_match(std::string_view pattern, std::string_view s) noexcept;
/** The path without "?query" and "#fragment". */
std::string_view path_only(std::string_view path) noexcept;
/** False for paths a router might read differently from a byte compare (see above). */
bool path_is_normal(std::string_view path) noexcept;

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
		    const token_claims *claims) const noexcept;

	bool require_jwt() const noexcept { return _require_jwt; }
	bool default_allow() const noexcept { return _default_allow; }
	size_t nb_rules() const noexcept { return _rules.size(); }

private:
	struct claim_req {
		unsigned index;
		std::string value;
	};
	struct rule {
		uint16_t methods = 0; /* bit per known method; 0: any */
		schema::path_match match = schema::path_match::prefix;
		std::string path;
		std::vector<claim_req> claims;
	};
	bool matches(const rule &r, uint16_t method_bit, std::string_view path, bool normal,
		     const token_claims *claims) const noexcept;

	std::vector<rule> _rules;
	bool _default_allow = false;
	bool _require_jwt = true;
};

} // namespace dpumesh::policy
