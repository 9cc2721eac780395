// SPDX-License-Identifier: BSD-3-Clause
// L7 policy's schema: the /policy object of a node config, its types and its strict reader.
//
// The policy module owns its part of the config: lib/config reads the node's own keys and
// hands the value at /policy to read_config(), which validates it with the same JSON reader
// (errors as file:line:col: /policy/...: message). The reference is docs/config.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dpumesh/json/json.h"

/* The schema's types are in policy::schema: the engine's compiled forms (policy::rbac_policy,
 * ...) take the plain names. */
namespace dpumesh::policy::schema {

enum class jwt_alg { hs256, rs256, es256 };

struct jwt_key {
	std::string kid;
	jwt_alg alg = jwt_alg::hs256;
	std::string secret; /**< HS256: raw key bytes (decoded from base64url) */
	std::string pem;    /**< RS256/ES256: public key PEM */
};

struct jwt_config {
	std::optional<std::string> issuer;
	std::vector<std::string> audiences;
	uint32_t clock_skew_s = 30;
	uint32_t cache_entries = 1024;
	std::vector<jwt_key> keys;
};

enum class path_match { exact, prefix, glob };

struct rbac_rule {
	std::vector<std::string> methods; /**< empty: any method */
	path_match match = path_match::prefix;
	std::string path = "/";
	std::map<std::string, std::string> claims; /**< claim name -> required value */
};

struct rbac_policy {
	std::string service;
	bool default_allow = false;
	bool require_jwt = true;
	std::vector<rbac_rule> rules;
};

enum class ratelimit_key { source, route, claim };

struct ratelimit_config {
	std::string service;
	std::string path_prefix = "/";
	ratelimit_key key = ratelimit_key::source;
	std::string claim; /**< for key == claim */
	uint32_t rate = 0;  /**< tokens per second */
	uint32_t burst = 0; /**< bucket depth */
};

struct breaker_config {
	std::string service;
	uint32_t consecutive_failures = 5;
	uint32_t error_rate_percent = 50;
	uint32_t min_requests = 20;
	uint32_t window_ms = 10000;
	uint32_t open_ms = 5000;
	uint32_t half_open_probes = 1;
};

struct timeout_config {
	std::string service;
	std::string path_prefix = "/";
	uint32_t timeout_ms = 1000;
	uint32_t retries = 0;
	uint32_t backoff_ms = 10;
	/** retries in the last second may be at most this share of requests (plus 3) */
	uint32_t retry_budget_percent = 20;
	bool retry_non_idempotent = false;
};

struct policy_config {
	std::optional<jwt_config> jwt;
	std::vector<rbac_policy> rbac;
	std::vector<ratelimit_config> rate_limits;
	std::vector<breaker_config> circuit_breakers;
	std::vector<timeout_config> timeouts;
	uint32_t default_timeout_ms = 5000;
};

} // namespace dpumesh::policy::schema

namespace dpumesh::policy {

/** Whether a service name is configured (policies may only name known services). */
using service_lookup = std::function<bool(std::string_view service)>;

/**
 * Reads and validates the /policy object `v` (pointer `ptr`) into out. Errors go to `r`
 * (the first one wins); a nullptr `v` reads nothing.
 */
void read_config(json::reader &r, const json_t *v, const std::string &ptr,
		 const service_lookup &known_service, schema::policy_config &out);

} // namespace dpumesh::policy
