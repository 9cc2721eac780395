// SPDX-License-Identifier: BSD-3-Clause
// What the sidecar applies to every request, as one immutable version: where each service
// is served (local pods or a peer), per-route deadlines and retries, and the L7 policy
// engine (JWT, RBAC, rate limits, circuit breakers).
//
// Control builds a version from a config (at start, `reload config`, `set route|policy|
// ratelimit`) and hands it to stage::apply(), which publishes it with one pointer store
// and frees the old version after an RCU grace period (pod_registry::dp_synchronize()).
// The sidecar loads the pointer once per poll, so every request of a burst is checked,
// routed and timed under one version: none sees half of a change.
//
//   auto v = sidecar::ruleset::build(cfg, registry, 2);   // control path
//   if (!v) return v.error();                                    // config path in the text
//   sidecar.apply(std::move(*v));                                 // blocks one grace period
//
// Per-route metrics live in the version (a route is a `policy.timeouts` entry, or the
// service's default route), so they start at zero when the routes change; per-service
// metrics live in the sidecar for its whole life.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dpumesh/config/config.h"
#include "dpumesh/common/counter.h"
#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/policy/policy.h"
#include "dpumesh/policy/retry.h"
#include "dpumesh/common/status.h"

namespace dpumesh::sidecar {

/** Log2 latency buckets in microseconds: bucket 0 is < 1 us, bucket k is [2^(k-1), 2^k). */
struct latency_histogram {
	static constexpr unsigned nb_buckets = 28; /* the last one holds >= 2^26 us (67 s) */
	std::array<counter, nb_buckets> buckets;
	counter sum_us;

	void record(uint64_t us) noexcept
	{
		buckets[bucket_of(us)].inc();
		sum_us.add(us);
	}
	/** `n` latencies of one bucket that add up to `sum` us, at once. */
	void record(unsigned bucket, uint64_t n, uint64_t sum) noexcept
	{
		buckets[bucket].add(n);
		sum_us.add(sum);
	}
	static unsigned bucket_of(uint64_t us) noexcept
	{
		const unsigned b = us == 0 ? 0 : 64 - static_cast<unsigned>(__builtin_clzll(us));
		return b < nb_buckets ? b : nb_buckets - 1;
	}
	/** Upper bound (us) of the bucket holding quantile q (0..1); 0 when empty. Control. */
	uint64_t quantile_us(double q) const noexcept;
	/** The same over a copy of the buckets (e.g. the difference of two reads). */
	static uint64_t quantile_us(const std::array<uint64_t, nb_buckets> &buckets, double q) noexcept;
	/** A copy of the buckets (control). */
	std::array<uint64_t, nb_buckets> read() const noexcept;
	uint64_t count() const noexcept;
	/** Adds another histogram's reads into this one (control: a sum over shards). */
	void add(const latency_histogram &o) noexcept;
};

/** Why the mesh refused a request, as counted per service and route (l7_metrics::
 *  refused_by; docs/overload.md "Counted"): at the first look, by the policy, or after a
 *  delivery was tried (dest_full: the destination's queue refused it or it waited past its
 *  give-up time; dest_gone: the destination unregistered). */
#define DPUMESH_FOREACH_REFUSAL_REASON(_)                                                \
	_(misrouted) _(circuit_open) _(policy) _(no_live_pod) _(overloaded) _(saturated)  \
	_(dest_full) _(dest_gone)
enum class refusal_reason : uint8_t {
#define DPUMESH_REFUSAL_ENUM(n) n,
	DPUMESH_FOREACH_REFUSAL_REASON(DPUMESH_REFUSAL_ENUM)
#undef DPUMESH_REFUSAL_ENUM
	count
};
/** The reason's name ("saturated", ...). */
const char *refusal_reason_name(refusal_reason r) noexcept;

/** Request metrics of a service or a route; single writer (the sidecar lcore). */
struct alignas(64) l7_metrics {
	counter requests;               /**< requests the sidecar took for it */
	counter refused;                /**< refused by the mesh here (policy or routing) */
	/** refusals of its requests by reason (admission's and the destinations') */
	std::array<counter, static_cast<size_t>(refusal_reason::count)> refused_by;
	std::array<counter, 5> classes; /**< answers to the origin by status class 1xx..5xx */
	counter mesh_generated;         /**< answers the mesh made (errors), any node */
	counter retries;                /**< attempts after the first */
	counter timeouts;               /**< 504 timeout made here */
	latency_histogram latency;      /**< request taken -> answer sent to the origin */

	/** `n` answers to the origin with `status`, made by the mesh (`mesh`) or not. */
	void answer(uint16_t status, bool mesh, uint64_t n = 1) noexcept
	{
		if (status >= 100 && status < 600)
			classes[status / 100 - 1].add(n);
		if (mesh)
			mesh_generated.add(n);
	}
	/** `n` requests the mesh refused itself with `status`: taken, refused, answered. */
	void refused_here(uint16_t status, uint64_t n = 1) noexcept
	{
		requests.add(n);
		refused.add(n);
		answer(status, true, n);
	}
	/** Adds another's reads into this one (control: the sum over sidecar shards). */
	void add(const l7_metrics &o) noexcept;
};

/** One route of a service: the longest matching `path_prefix` wins. */
struct route_rule {
	std::string path_prefix = "/";
	uint32_t timeout_ms = 0;
	uint32_t retries = 0;            /**< attempts after the first, at most */
	uint32_t backoff_ms = 10;        /**< before retry k: backoff_ms << (k - 1) */
	uint32_t retry_budget_percent = 20;
	bool retry_non_idempotent = false;
	bool configured = false;         /**< false: the service's default route */
	uint32_t metrics = 0;            /**< index into ruleset::route_metrics() */
};

struct service_rules {
	std::string name;
	bool local = true;
	uint16_t peer = 0;                  /**< !local: index into the config's peers */
	uint32_t policy = UINT32_MAX;       /**< the engine's index of it (resolved at build) */
	/** The policy has a circuit breaker for it (config.circuit_breakers): only then does
	 *  an outcome reported to the engine (engine::on_response()) record anything */
	bool breaker = false;
	std::vector<route_rule> routes;     /**< longest prefix first; the last is the default */
};

class ruleset {
public:
	/**
	 * Builds a version from a config (control path).
	 * @return the version, or an error naming the config path of what cannot be used
	 *         (an unusable JWT key, a route to an unknown peer, a service the registry
	 *         does not know: services cannot change at run time)
	 */
	/**
	 * @param share_limits the same version built for another sidecar shard: this one's
	 *        rate limits use its buckets (policy::engine_options::share_limits)
	 */
	static result<std::unique_ptr<ruleset>> build(const config::node_config &cfg,
							     const pod_registry &reg,
							     uint64_t version,
							     const ruleset *share_limits = nullptr);

	uint64_t version() const noexcept { return _version; }
	/** By registry service index. */
	const std::vector<service_rules> &services() const noexcept { return _services; }
	/** The route a request to service `svc` (registry index) with `path` takes: a
	 *  service's only route (its default) inline, the prefixes compared out of line. */
	const route_rule &route_for(uint32_t svc, std::string_view path) const noexcept
	{
		const std::vector<route_rule> &routes = _services[svc].routes;
		return routes.size() == 1 ? routes.front() : route_by_prefix(routes, path);
	}
	policy::engine &engine() noexcept { return *_engine; }
	const policy::engine &engine() const noexcept { return *_engine; }
	l7_metrics &route_metrics(uint32_t i) noexcept { return _route_metrics[i]; }
	const l7_metrics &route_metrics(uint32_t i) const noexcept { return _route_metrics[i]; }
	uint32_t default_timeout_ms() const noexcept { return _default_timeout_ms; }
	/** The config it was built from (show policy, telemetry). */
	const config::policy_config &config() const noexcept { return _cfg; }

private:
	ruleset() = default;
	static const route_rule &route_by_prefix(const std::vector<route_rule> &routes,
						 std::string_view path) noexcept;
	uint64_t _version = 0;
	uint32_t _default_timeout_ms = 5000;
	std::vector<service_rules> _services;
	std::unique_ptr<policy::engine> _engine;
	std::unique_ptr<l7_metrics[]> _route_metrics;
	config::policy_config _cfg;
};

/** Methods retried without `retry_non_idempotent`: the L7 policy's (dpumesh/policy/retry.h). */
using policy::idempotent;

} // namespace dpumesh::sidecar
