// SPDX-License-Identifier: BSD-3-Clause
// Admission: where a request goes and whether it may go there (route + L7 policy verdict).
//
// For each request (from a pod or from the network) admit() finds the service, its route,
// asks the L7 policy engine (services served here, and a network client's requests this node
// relays to the peer serving them) and picks a live pod. A refusal comes
// back with its reason and status; the caller answers it. The component owns the
// per-service metrics (for the sidecar's whole life) and counts what it refuses.
//
// With set_load() it also looks at each pod's requests in flight and refuses (503
// `saturated`) what no pod of the service has room for, before anything is copied or parked.
// It publishes that in its service gate (port::service_gate) for its shard's port RX, which
// then refuses the service's network requests at their first frame; refresh_gate() lowers
// a service's flag once one of its pods has room again (or none is live), and raises it
// again when that room is taken within a while (docs/overload.md).
//
//   verdict v = adm.admit(rules, view, 0, source::client, now, &client_address);
//   if (v.refused()) { adm.count_refusal(rules, v); answer v.status, v.reason(); }
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "clock.h"
#include "dpumesh/port/service_gate.h"
#include "dpumesh/sidecar/ruleset.h"
#include "dpumesh/wire/frame_hdr.h"
#include "dpumesh/wire/l7.h"

namespace dpumesh::sidecar {

struct counters;

/** Why a request was refused. */
enum class refusal : uint8_t {
	none,
	no_route,    /**< 404: no such service */
	misrouted,   /**< 503: a peer sent a request for a service this node does not serve
		      *  (relays are for network clients only: no loops between nodes) */
	circuit_open, /**< 503: the breaker of a peer's service is open */
	policy,      /**< 401/403/429/503: the L7 policy engine (the verdict's reason) */
	no_live_pod, /**< 503: the service has no live pod */
	overloaded,  /**< 503: the request table is full (set by the caller) */
	saturated,   /**< 503: every live pod of the service has as many requests in flight as
		      *  it has RX slots plus its queue (refused at the first look) */
};

/** Who sent a request: the route and the policy depend on it. */
enum class source : uint8_t {
	pod,    /**< a local pod: a peer's service goes to the peer (its breaker applies) */
	peer,   /**< a configured peer node: only services served here (else misrouted) */
	client, /**< anyone else on the network: a peer's service is relayed to the peer,
		 *  after the L7 policy here (where the request enters the mesh) */
};

/** The outcome of routing and policy for one request. */
struct verdict {
	uint32_t svc = UINT32_MAX;         /**< registry service index, or UINT32_MAX (404) */
	const route_rule *route = nullptr; /**< set when svc is */
	uint32_t dst = 0;                  /**< local pod handle (0: a peer's service, or refused) */
	bool policy = false;               /**< admitted by the policy engine or a peer's breaker (report outcomes) */
	uint16_t status = 0;               /**< 0: admitted; else the refusal's status */
	refusal why = refusal::none;
	const char *policy_reason = nullptr; /**< refusal::policy: the engine's reason name */

	bool refused() const noexcept { return why != refusal::none; }
	const char *reason() const noexcept;
};

class admission {
public:
	admission(pod_registry &reg, std::vector<std::string> svc_names, const tsc_clock &clock,
		  counters &stats);

	/** Routing and policy for one request under `rules` (the poll's version). `source_id`
	 *  keys the requester's rate limits; a network requester's is network_source() of its
	 *  address, `client` (then source_id is not read): hashed only for a service with a
	 *  policy. Inline (internal/admit.h), in its two callers. `no_policy`, when given,
	 *  counts the requests to a service without a policy that the engine was not asked
	 *  about (the caller adds them to its counters at once: engine::count_no_policy()). */
	[[gnu::always_inline]] inline verdict admit(ruleset &rules, const wire::l7_view &v,
						    uint64_t source_id, source from, uint64_t now,
						    const wire::endpoint *client = nullptr,
						    uint32_t *no_policy = nullptr) noexcept;
	/**
	 * The first look: admit() picks only a pod with `loads[pod_id]` (requests in flight to
	 * it, the request table's count) below its RX slots plus `queue`, trying the service's
	 * pods round robin, and refuses the request (`saturated`, 503) when none has room.
	 * Without it (nullptr), any live pod is picked.
	 */
	void set_load(const uint32_t *loads, uint32_t queue) noexcept
	{
		_loads = loads;
		_queue = queue;
	}
	/** Marks an admitted request refused after all (the request table was full). */
	void overloaded(verdict &v) noexcept;
	/** A refusal made here, in the service's and route's metrics. */
	void count_refusal(ruleset &rules, const verdict &v) noexcept;

	const tsc_clock &clock() const noexcept { return _clock; }
	uint32_t nb_services() const noexcept { return _gate.nb_services(); }
	const std::string &name(uint32_t svc) const noexcept { return _gate.name(svc); }
	l7_metrics &metrics(uint32_t svc) noexcept { return _metrics[svc]; }
	const l7_metrics &metrics(uint32_t svc) const noexcept { return _metrics[svc]; }
	/** The registry's index of a service name, or UINT32_MAX: a hash built once (the
	 *  registry's service_index() compares every name). */
	uint32_t service_of(std::string_view name) const noexcept { return _gate.find(name); }

	/** The saturation flags this shard publishes for its port RX. */
	const port::service_gate &gate() const noexcept { return _gate; }
	/** Publishes port RX's frames per poll (0: a full burst): the network's share. */
	void rx_quantum(uint16_t q) noexcept { _gate.set_rx_quantum(q); }
	/** Lowers the flag of every saturated service that has a pod with room again, or no
	 *  live pod (then the sidecar answers no_live_pod), and raises it again for one
	 *  lowered in the last `watch_tsc` cycles whose pods are full again (the request let
	 *  in took the room); cheap when none is raised or watched. */
	void refresh_gate(uint64_t now, uint64_t watch_tsc) noexcept;
	/** A request port RX refused (service gate): in the service's metrics. */
	void count_refused_at_rx(uint32_t svc) noexcept;
	/** For a request to `svc` whose flag is up, before its header is decoded: whether no
	 *  live pod of it has room still (the first look's pick, without route or policy). */
	bool still_saturated(uint32_t svc) noexcept;
	/** A pod's request refused that way: `saturated` and `saturated_gate`, and the
	 *  service's metrics by reason (not a route's: the path was not read). */
	void count_saturated(uint32_t svc) noexcept;

private:
	pod_registry &_reg;
	port::service_gate _gate;           /* the names' index and the saturation flags */
	std::vector<uint32_t> _raised;      /* services whose flag is up, or was lately */
	std::vector<uint8_t> _gate_state;   /* per service: gate_state */
	std::vector<uint64_t> _watch_until; /* per service watched: TSC it stops being */
	enum gate_state : uint8_t { gate_down, gate_up, gate_watched };

	void raise(uint32_t svc) noexcept;
	std::unique_ptr<l7_metrics[]> _metrics;
	tsc_clock _clock;
	counters &_stats;
	const uint32_t *_loads = nullptr;
	uint32_t _queue = 0;

	uint32_t pick_with_room(uint32_t svc) noexcept;
	bool has_room(uint32_t handle) const noexcept;
};

/**
 * The source key of a requester on the network for rate limits: its address and port,
 * hashed, with the top bit set so it is never a pod handle.
 */
uint64_t network_source(const wire::endpoint &ep) noexcept;

} // namespace dpumesh::sidecar
