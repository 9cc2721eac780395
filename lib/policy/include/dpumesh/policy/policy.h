// SPDX-License-Identifier: BSD-3-Clause
// The L7 policy engine: JWT, RBAC, rate limits and circuit breakers for one node config.
//
// Built on the control path from schema::policy_config; then, per request header, the
// sidecar asks check_request() and gets "allow" or a refusal with its status and a
// machine-readable reason (docs/policy.md lists them). Headers only: bodies never reach it.
//
//   auto eng = dpumesh::policy::engine::create(cfg.policy);        // control path
//   if (!eng) { log(eng.error().message()); ... }
//   verdict v = (*eng)->check_request(view, source_id, now_ns, unix_s); // per request
//   if (!v.allowed()) reply_error(v.status, v.reason_name());
//   ... when the answer (or a 504 timeout) comes back:
//   (*eng)->on_response(view.service, status, now_ns);
//
// Threading: an engine is immutable after create() except its counters, JWT cache, rate
// buckets and breakers, which belong to the one lcore that checks requests (single writer;
// control reads counters and breaker states at any time). A policy change builds a new
// engine and the sidecar swaps its engine pointer (RCU: the old engine is freed once the
// sidecar lcore has reported quiescent). Buckets and breakers start afresh in the new one.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dpumesh/policy/breaker.h"
#include "dpumesh/policy/schema.h"
#include "dpumesh/common/counter.h"
#include "dpumesh/policy/jwt.h"
#include "dpumesh/wire/l7.h"
#include "dpumesh/policy/ratelimit.h"
#include "dpumesh/policy/rbac.h"
#include "dpumesh/common/status.h"

namespace dpumesh::policy {

/**
 * Why the policy refused a request (or `allowed`): name (the reason string a mesh error
 * response carries), HTTP status, help. The JWT reasons are jwt_error's, in its order,
 * so reason(jwt_error) is a plain conversion.
 */
#define DPUMESH_FOREACH_POLICY_REASON(_)                                                 \
	_(rbac_denied, "rbac_denied", 403, "a valid request that no RBAC rule allows")  \
	_(rate_limited, "rate_limited", 429, "a rate limit's bucket was empty")          \
	_(circuit_open, "circuit_open", 503, "the service's circuit breaker is open")

enum class reason : uint8_t {
	allowed,
#define DPUMESH_POLICY_JWT_REASON(n, s, d) jwt_##n,
	DPUMESH_FOREACH_JWT_ERROR(DPUMESH_POLICY_JWT_REASON)
#undef DPUMESH_POLICY_JWT_REASON
#define DPUMESH_POLICY_REASON_ENUM(n, s, st, d) n,
	DPUMESH_FOREACH_POLICY_REASON(DPUMESH_POLICY_REASON_ENUM)
#undef DPUMESH_POLICY_REASON_ENUM
	count
};
static_assert(static_cast<int>(reason::jwt_missing) == static_cast<int>(jwt_error::missing));
static_assert(static_cast<int>(reason::rbac_denied) == static_cast<int>(jwt_error::count));

inline reason to_reason(jwt_error e) noexcept { return static_cast<reason>(e); }
/** "jwt_expired", "rate_limited", ... ("allowed" for allowed). */
const char *reason_name(reason r) noexcept;
const char *reason_help(reason r) noexcept;
/** 0 for allowed, else 401 (JWT), 403, 429 or 503. */
uint16_t reason_status(reason r) noexcept;

/** The answer for one request. */
struct verdict {
	uint16_t status = 0; /**< 0: allowed; else the status of the mesh's error response */
	reason why = reason::allowed;
	/** The verified token's claims when one was checked (valid until the next call). */
	const token_claims *claims = nullptr;

	bool allowed() const noexcept { return status == 0; }
	const char *reason_name() const noexcept { return policy::reason_name(why); }
};

/** Engine counters beyond the per-reason ones. */
#define DPUMESH_FOREACH_POLICY_COUNTER(_)                                                \
	_(requests, "requests checked")                                                  \
	_(no_policy, "requests to a service with no policy (allowed)")                   \
	_(jwt_checked, "requests whose token was checked")                               \
	_(jwt_cache_hits, "tokens found in the verified-token cache")                    \
	_(jwt_signatures, "signature verifications (cache misses)")                      \
	_(limiter_overflow, "keyed rate-limit lookups that fell back to the overflow bucket") \
	_(responses, "outcomes recorded for circuit breakers")                           \
	_(response_failures, "outcomes that counted as failures (5xx)")                  \
	_(breaker_opened, "circuit breaker transitions to open")

struct alignas(64) policy_stats {
#define DPUMESH_POLICY_COUNTER_FIELD(n, d) counter n;
	DPUMESH_FOREACH_POLICY_COUNTER(DPUMESH_POLICY_COUNTER_FIELD)
#undef DPUMESH_POLICY_COUNTER_FIELD
	/** Verdicts by reason (reasons[allowed] counts allowed requests). */
	std::array<counter, static_cast<size_t>(reason::count)> reasons;
};

/** Visits every counter: fn(name, help, value); per-reason ones as "verdict_<reason>". */
template <typename Fn>
void for_each_policy_counter(const policy_stats &s, Fn &&fn)
{
#define DPUMESH_POLICY_COUNTER_VISIT(n, d) fn(#n, d, s.n.get());
	DPUMESH_FOREACH_POLICY_COUNTER(DPUMESH_POLICY_COUNTER_VISIT)
#undef DPUMESH_POLICY_COUNTER_VISIT
	for (size_t i = 0; i < s.reasons.size(); i++) {
		auto r = static_cast<reason>(i);
		std::string name = std::string("verdict_") + reason_name(r);
		fn(name.c_str(), reason_help(r), s.reasons[i].get());
	}
}

struct engine_options {
	/** Buckets per keyed (source or claim) rate limit; rounded up to a power of two. */
	uint32_t limiter_slots = 4096;
	/**
	 * Divides every rate (and burst) by this: with N sidecar lcores each running its own
	 * engine, pass N so the node as a whole keeps the configured rate (docs/policy.md).
	 */
	uint32_t rate_divisor = 1;
	/** Hash seed of keyed tables; 0: random. */
	uint64_t seed = 0;
	/**
	 * An engine built from the same policy config whose rate-limit buckets this one
	 * shares (the node's sidecar shards: one engine each, one set of buckets, so the node
	 * admits the configured rate whichever shard a request lands on; docs/policy.md).
	 * JWT caches, RBAC and breakers stay per engine. Null: buckets of its own.
	 */
	const class engine *share_limits = nullptr;
};

class engine {
public:
	static constexpr uint32_t no_service = UINT32_MAX;

	/**
	 * Builds an engine (control path).
	 * @return the engine, or an error with the config path of what cannot be used: an
	 *         unreadable or unfit key, a rule naming a claim with no /policy/jwt, more
	 *         than jwt_max_claims claims, more than max_limits_per_service limits
	 */
	static result<std::unique_ptr<engine>> create(const schema::policy_config &cfg,
						      const engine_options &opt = {});
	~engine();
	engine(const engine &) = delete;
	engine &operator=(const engine &) = delete;

	static constexpr size_t max_limits_per_service = 16;

	/**
	 * Checks one request header: breaker (open: 503), per-source and per-route limits
	 * (429), JWT (401) and RBAC (403), per-claim limits (429), breaker admission (503).
	 * A refused request takes no token from any limit.
	 * @param source_id who sent it (pod handle, peer/client address hash): per-source key
	 * @param now_ns monotonic nanoseconds (buckets, breakers)
	 * @param unix_s wall-clock unix seconds (JWT exp/nbf); not read without /policy/jwt
	 *        (jwt() null), so a caller may skip reading the clock then
	 */
	verdict check_request(const wire::l7_view &req, uint64_t source_id, uint64_t now_ns,
			      int64_t unix_s) noexcept;
	/** The same for a service resolved once with find_service() (no name hashing). A
	 *  service without a policy is allowed inline (a call, and the caller's clocks, saved
	 *  on every request of a service without one). */
	verdict check_request(const wire::l7_view &req, uint32_t service, uint64_t source_id,
			      uint64_t now_ns, int64_t unix_s) noexcept
	{
		/* the size before the counter's store (which may alias the vector's bounds, to
		 * the compiler): then the same compare in the caller (admission's, a policy or
		 * not) is taken once, not again after the store */
		const bool none = service >= _nb_services;
		_stats.requests.inc();
		if (none) {
			_stats.no_policy.inc();
			_stats.reasons[static_cast<size_t>(reason::allowed)].inc();
			return {};
		}
		return check_policy(req, _services[service], source_id, now_ns, unix_s);
	}

	/** What check_request() counts for `n` requests to services without a policy
	 *  (service >= nb_services()), added at once by a caller that allowed them itself
	 *  (the sidecar's network burst: three counters' load, add and store a request) */
	void count_no_policy(uint64_t n) noexcept
	{
		_stats.requests.add(n);
		_stats.no_policy.add(n);
		_stats.reasons[static_cast<size_t>(reason::allowed)].add(n);
	}

	/** Index of a service with any policy, or no_service (resolve once, then use it). */
	uint32_t find_service(std::string_view name) const noexcept;

	/** Whether a request (e.g. a retry) may go to the service now; half-open: takes a probe. */
	bool breaker_allows(std::string_view service, uint64_t now_ns) noexcept;
	bool breaker_allows(uint32_t service, uint64_t now_ns) noexcept;

	/**
	 * Records the outcome of an allowed request for the service's breaker: its response
	 * status, or 504 when it timed out. Not for refusals the mesh made itself.
	 */
	void on_response(std::string_view service, uint16_t status, uint64_t now_ns) noexcept;
	/** The same for a service resolved with find_service(). Inline: a service without a
	 *  breaker records nothing, and every 504 of a deadline sweep asked (a call, and the
	 *  caller's clock read for it: ~30 instructions a 504). */
	void on_response(uint32_t service, uint16_t status, uint64_t now_ns) noexcept
	{
		if (service < _nb_services && _services[service].breaker)
			record_response(*_services[service].breaker, status, now_ns);
	}

	const policy_stats &stats() const noexcept { return _stats; }
	/** The service's breaker state (closed when it has none); control may call it. */
	breaker_state breaker(std::string_view service) const noexcept;
	/** The JWT verifier, or null without /policy/jwt. */
	const jwt_verifier *jwt() const noexcept { return _jwt.get(); }
	/** Services with a policy, by index (telemetry). */
	size_t nb_services() const noexcept { return _nb_services; }
	const std::string &service_name(uint32_t i) const noexcept { return _services[i].name; }

private:
	struct limit {
		std::string path_prefix;
		/* how path_prefix is compared, decided in create(): none applies to every path,
		 * "/" (the schema's default) to every path that starts with it, one byte tested
		 * (a same_bytes() of one byte was ~18 instructions a limit and request) */
		enum class match : uint8_t { all, slash, prefix } how = match::all;
		schema::ratelimit_key key = schema::ratelimit_key::source;
		int claim = -1; /* claim index for key == claim */
		rate_limiter lim;
	};
	struct service_policy {
		std::string name;
		std::unique_ptr<rbac_policy> rbac;
		std::vector<limit> limits;
		std::unique_ptr<circuit_breaker> breaker;
		bool needs_jwt = false;    /* RBAC or a claim limit */
		bool claim_limits = false; /* a limit keyed by a claim: a second pass after RBAC */
	};

	engine() = default;
	service_policy *lookup(std::string_view name) noexcept;
	const service_policy *lookup(std::string_view name) const noexcept;
	verdict refuse(reason r) noexcept;
	/* on_response() of a service with a breaker */
	void record_response(circuit_breaker &b, uint16_t status, uint64_t now_ns) noexcept;
	/* check_request() of a service with a policy */
	verdict check_policy(const wire::l7_view &req, service_policy &s, uint64_t source_id,
			     uint64_t now_ns, int64_t unix_s) noexcept;

	std::vector<service_policy> _services;
	/* _services.size(), kept when create() is done: the size of a vector of 80-byte
	 * entries is a division, taken on every request (check_request()) and every answer
	 * (on_response()) */
	uint32_t _nb_services = 0;
	std::vector<uint32_t> _index; /* open addressing: service index + 1, 0 empty */
	std::unique_ptr<jwt_verifier> _jwt;
	policy_stats _stats;
};

} // namespace dpumesh::policy
