// SPDX-License-Identifier: BSD-3-Clause
// The sidecar stage: the Arm's look at every message header, and every routing decision.
//
// Input: headers the DPA TX kernels copied into hbufs (sidecar TX SQs), deliveries the
// RX kernels could not carry out (notification queues), and whole messages port RX
// reassembled from the network (the ingress ring). Output: commands to the RX kernels
// (sidecar RX SQs): DELIVER a message to a pod, or COMPLETE a sender's TX; and frames for
// the port TX stages (Case 1: requests to services on other nodes, responses to requests
// that came from the network).
//
//   pod request  -> L7 decode -> service -> local: live pod (round robin) -> pending -> DELIVER
//                                        -> peer:  pending -> frames to the peer (Case 1)
//   pod response -> pending match (token, responder, step) -> pod origin: DELIVER
//                                                          -> network origin: frames (Case 1)
//   net request  -> header copied into an hbuf -> L7 decode -> local pod -> pending ->
//                   DELIVER with the body still in the received mbufs (Case 2)
//   net request  -> (a peer's service, from a network client, not from a peer) -> policy ->
//                   pending -> frames to the peer, the body still in the received mbufs
//                   (the relay; a peer's request for a service not served here: misrouted)
//   net response -> pending match (correlation = token, from the peer asked) -> pod origin:
//                   DELIVER; network client origin (relayed): frames back to the client
//   refused      -> an error response made here (404 no_route, 401/403/429/503 by the L7
//                   policy, 503 no_live_pod/dest_full/dest_gone/overloaded/misrouted/
//                   egress_failed/circuit_open, 504 timeout, 502 responder_gone for an
//                   answer that cannot be delivered) with :reason and :hop, sent to the
//                   origin (pod or network), the sender's TX completed
//
// Every request to a service this node serves passes the L7 policy (ruleset.h:
// JWT, RBAC, rate limits, circuit breaker) before a pod is picked; the request gets an
// x-request-id and a traceparent when it has none. A request on a route with retries is
// delivered with HOLD: the sender's buffers stay until the answer, so a 502/503/504 from
// the pod (or a delivery that fails) can be sent again to another pod after a back-off.
//
// Bodies are never read or copied here. A pod body that leaves through a port is attached
// to the frames zero-copy (mbuf external buffers) where the port takes multi-segment mbufs:
// the pod's TX completes when the NIC frees the last frame (pod_registry::tx_body_hold).
// The stage reports RCU quiescence to the registry once per poll.
//
// Inside, the stage is components with private headers in lib/sidecar/internal/ (admission,
// request_table, outbox, egress, network_in; the typed DPA command in command.h) and its flow
// in sidecar.cc (the poll), flow_pod.cc, flow_net.cc and flow_notes.cc: docs/architecture.md,
// "lib/sidecar: the sidecar as components".
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "dpumesh/config/config.h"
#include "dpumesh/common/counter.h"
#include "dpumesh/dpa/arm_side.h"
#include "dpumesh/dpa/emulator.h"
#include "dpumesh/lcore/runner.h"
#include "dpumesh/wire/frame.h"
#include "dpumesh/wire/l7.h"
#include "dpumesh/pending/table.h"
#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/port/rx.h"
#include "dpumesh/sidecar/ruleset.h"
#include "dpumesh/policy/retry.h"
#include "dpumesh/policy/trace.h"

#include <rte_mbuf.h>
#include <rte_ring.h>

namespace dpumesh::sidecar {

using port::rx_msg;

/** The sidecar's counters, by name. */
#define DPUMESH_FOREACH_SIDECAR_COUNTER(_)                                               \
	_(requests, "requests taken from pods")                                          \
	_(responses, "responses taken from pods")                                        \
	_(forwarded, "requests sent on to a pod")                                        \
	_(answered, "responses sent on to their origin")                                 \
	_(no_route, "requests to an unknown service (404)")                              \
	_(to_peer, "pod requests sent to a service on another node (Case 1)")          \
	_(to_network, "pod responses sent to a requester on the network (Case 1)")       \
	_(net_requests, "requests received from the network (Case 2)")                   \
	_(net_responses, "responses received from the network (Case 2)")                 \
	_(misrouted, "requests from a peer for a service this node does not serve (503)") \
	_(relayed, "network clients' requests relayed to the peer serving their service") \
	_(relayed_answers, "peers' answers to relayed requests sent back to the client")  \
	_(zero_copy, "bodies sent out of a port without a copy")                         \
	_(copied_out, "bodies copied into frames (the port takes no chained mbufs)")     \
	_(relayed_in_place, "relayed requests framed in the mbuf they came in")           \
	_(no_egress, "replies to the network not sent: receive-only port or no address") \
	_(egress_no_mbuf, "messages not sent: packet mbuf pool empty")                   \
	_(egress_ring_full, "messages not sent: port TX ring full")                      \
	_(net_header_too_large, "network messages whose L7 header exceeds an hbuf")      \
	_(no_live_pod, "requests to a service with no live pod (503)")                   \
	_(overloaded, "requests refused: pending table full, or a network source over its quota (503)") \
	_(quota_refused, "requests refused: their origin (pod, network address) over its quota") \
	_(saturated, "requests refused at the first look: every pod of the service full (503)") \
	_(saturated_gate, "of saturated: pods' requests refused on the service's gate flag, undecoded") \
	_(rx_refusals, "requests port RX refused and handed here to answer (503 saturated or overloaded, 408)") \
	_(timeouts, "requests not answered before their deadline (504)")                 \
	_(retries, "deliveries retried on another pod")                                  \
	_(dest_full, "deliveries given back: destination had no RX slot, or an earlier one waits") \
	_(parked, "deliveries queued behind their destination until it has room")       \
	_(park_expired, "parked deliveries that never found room (503 / response lost)") \
	_(park_refused, "deliveries refused: destination's queue at its share (503 dest_full)") \
	_(park_refused_network, "of park_refused: network requests over pools.network.queued") \
	_(resumes, "held-back destinations tried again (first of their queue, RESUME)")  \
	_(dest_gone, "deliveries refused: destination unregistered (503)")               \
	_(src_gone, "messages whose sender unregistered before delivery")               \
	_(no_match, "responses that match no pending request (dropped)")                 \
	_(responses_lost, "responses whose origin could not receive them")               \
	_(answers_refused, "answers given up: the requester's RX had no room in time (its quota); each is owed as 504 answer_refused") \
	_(answers_orphaned, "answers not delivered: the requester unregistered")          \
	_(dest_left, "pending requests whose destination unregistered before answering: retried, or 503 dest_gone") \
	_(origin_left, "pending requests ended: their requester unregistered")            \
	_(answers_deferred, "answers to the network not sent (no mbuf, TX ring full): 502 soon") \
	_(responses_failed, "responses not deliverable (responder gone, too large): 502 sent instead") \
	_(bad_header, "messages with an invalid L7 header")                              \
	_(header_dma_error, "headers whose copy into an hbuf failed")                    \
	_(hbuf_empty, "network messages not taken: no header buffer")                    \
	_(answers_owed, "error answers that waited for a buffer (hbuf, mbuf, TX ring room) or for their requester to drain, sent later") \
	_(answers_unsent, "error answers not sent: the owed answers' queue full (never expected)") \
	_(backlog_stalls, "polls that stopped taking input: RX kernel queues full")      \
	_(net_share_refused, "network requests refused (503 overloaded): the network backlog full and their source holding its share") \
	_(backlog_overflow, "commands dropped: RX kernel backlog full (never expected)")  \
	_(policy_refused, "requests refused by the L7 policy (401/403/429/503)")        \
	_(held, "requests delivered with the sender's buffers kept for a retry")        \
	_(held_done, "held deliveries the DPA reported done")                            \
	_(retry_budget, "retries not taken: the route's or the origin's retry budget was spent") \
	_(held_lost, "held requests whose delivery was never reported (never expected)") \
	_(request_ids, "x-request-id fields added to requests that had none")            \
	_(traceparents, "traceparent fields added to requests that had none")            \
	_(trace_no_room, "requests with no header room for a generated trace field")     \
	_(policy_swaps, "policy versions published")                                     \
	_(handoff_out, "messages and commands handed to another sidecar shard")          \
	_(handoff_in, "messages and commands another sidecar shard handed here")         \
	_(handoff_full, "messages dropped: another shard's hand-off ring full (never expected)") \
	_(expiry_cycles, "TSC cycles spent in the deadline walk and the answers it makes (504s)") \
	_(decoded_without_hbuf, "network requests decoded in the sidecar's header buffer (an hbuf only for a pod)")

struct alignas(64) counters {
#define DPUMESH_SIDECAR_FIELD(n, d) counter n;
	DPUMESH_FOREACH_SIDECAR_COUNTER(DPUMESH_SIDECAR_FIELD)
#undef DPUMESH_SIDECAR_FIELD
	std::array<counter, static_cast<size_t>(wire::l7_error::count)> l7_errors;
};

/** One tenant's use of the node's shared resources and its refusals (docs/quota.md). */
struct quota_usage {
	uint64_t in_flight = 0;       /**< pending requests it asked (now) */
	uint64_t refused = 0;         /**< requests refused: over its quota */
	uint64_t answers_refused = 0; /**< answers to it given up: its RX had no room */
	uint64_t peak = 0;            /**< most requests it had pending at once */
	uint64_t dest_refused = 0;    /**< requests to it (a destination) refused: no room */
	void add(const quota_usage &o) noexcept
	{
		in_flight += o.in_flight;
		refused += o.refused;
		answers_refused += o.answers_refused;
		dest_refused += o.dest_refused;
		peak = peak > o.peak ? peak : o.peak;
	}
};

/** Visits every sidecar counter: fn(name, help, value). */
template <typename Fn>
void for_each_counter(const counters &s, Fn &&fn)
{
#define DPUMESH_SIDECAR_VISIT(n, d) fn(#n, d, s.n.get());
	DPUMESH_FOREACH_SIDECAR_COUNTER(DPUMESH_SIDECAR_VISIT)
#undef DPUMESH_SIDECAR_VISIT
}

/** What the sidecar needs to carry external traffic (Case 1 and Case 2). */
struct network {
	struct port {
		uint16_t port_id = 0;
		uint16_t mtu = 1500;    /**< IP packet size */
		bool external = false;  /**< may send (replay ports only receive) */
		bool zero_copy = false; /**< takes chained mbufs: bodies are attached, not copied */
		rte_ring *tx = nullptr; /**< frames for this port's TX stage (external ports) */
	};
	rte_ring *ingress = nullptr;   /**< rx_msg* from port RX */
	rte_ring *refusals = nullptr;  /**< rx_msg* port RX refused (taken every poll) */
	rte_mempool *pkts = nullptr;   /**< frames are built from it */
	std::vector<port> ports;       /**< by ethdev port id order of the config */
	/** The sidecar shard this is for, of how many (frames' message ids stay distinct:
	 *  shard k sends k + s, k + 2s, ..., s = id_step, or nb_shards when it is 0; the node
	 *  gives 2 × nb_shards, the other half to its port RX stages' own answers). */
	unsigned shard = 0, nb_shards = 1, id_step = 0;
	/** Port RX's rx_msgs, all shards (0: no bound): network requests wait in this shard's
	 *  destination queues at most half of them, shared out among the shards. */
	uint32_t rx_msgs = 0;
};

/** A hand-off ring for one sidecar shard (MP/SC, `size` entries); nullptr and rte_errno. */
rte_ring *create_handoff_ring(const char *name, unsigned size) noexcept;

/**
 * Where a stage sits among the node's sidecar shards (one per worker lcore; docs/
 * architecture.md, "Worker lcores"). Shard k owns the DPA threads t with t % count == k
 * (it alone produces to their sidecar RX SQs and consumes their sidecar TX SQs and
 * notification queues), its port RX queues' ingress ring, and a partition of the pending
 * requests: its tokens carry k. Work that must change shard goes through the owner's
 * hand-off ring (MP/SC rte_ring of handoff_item, lib/sidecar/internal/outbox.h).
 */
struct shard_info {
	unsigned index = 0;
	unsigned count = 1;
	/** Every shard's hand-off ring, by shard (empty with one shard). */
	std::vector<rte_ring *> handoff;
	/** Shard 0's first version (shards > 0): rate-limit buckets are shared with it. */
	const ruleset *share_limits = nullptr;
	/** Whether DPA thread t is this shard's. */
	bool owns_thread(unsigned t) const noexcept { return t % count == index; }
};

class admission;
class request_table;
class outbox;
class egress;
struct remote;
struct kept_reply;
class network_in;
class quota;
class net_sched;
struct owed;
struct dpa_command;
struct dpa_note;
struct handoff_item;
struct pod_message;
struct net_message;
struct request_ctx;
struct expiry;
struct verdict;

/**
 * The stage: the flow through its components (docs/architecture.md, "lib/sidecar"):
 * admission (route + policy verdict), the request table (one context per pending
 * request), the outbox (backlogs and parking in front of the DPA threads), egress (Case 1
 * frames) and network-in (Case 2 decode). Retries, the retry budget and trace ids are the
 * L7 policy's (dpumesh/policy/retry.h, trace.h).
 */
class stage {
public:
	/** Builds the routing view from the config (control path); `dpa`: the DPA threads'
	 *  queues and hbufs from the backend (the emulator's side(), or DOCA's). */
	static result<std::unique_ptr<stage>> create(const config::node_config &cfg,
						       pod_registry &reg, const dpa::arm_side &dpa,
						       const network &net = {},
						       const shard_info &shard = {});
	~stage();

	lcore::stage_def lcore_stage() noexcept { return {"sidecar", &poll, this, false}; }
	/** Which shard this is, of how many. */
	unsigned shard() const noexcept { return _shard.index; }
	unsigned nb_shards() const noexcept { return _shard.count; }
	const counters &stats() const noexcept { return _stats; }
	/** The pending table: control reads its size() and capacity() alone (its entries
	 *  are the lcore's: pending_list()). */
	const pending::table &pending() const noexcept;
	/** What `show pending` shows of a shard: its oldest pending requests (the earliest
	 *  starts), oldest first, with the tokens this shard handed out (the table's own
	 *  carry no shard), and how many it held when the listing ended. */
	struct pending_listing {
		static constexpr uint32_t max = 32;
		uint32_t size = 0;
		uint32_t n = 0;
		std::array<std::pair<uint32_t, pending::entry>, max> entries{};
	};
	/**
	 * The shard's lcore lists its pending requests for control (`show pending`): the
	 * table is the lcore's alone, so control asks and the lcore walks the whole table
	 * between two polls, keeping the oldest entries it meets (pending::oldest), a step of
	 * pending_list_step slots every 10 us (from cold memory ~2.5-3.5 us a step on a full
	 * table, 6-8 us when each entry met is older than all before it: docs/console.md,
	 * dpumesh-pending-list-bench; a walk of a 65536-slot table at once held a core ~0.3 ms,
	 * a pause the requests behind it would all wait out). Waits up to `wait`; an error
	 * if the lcore did not finish by then (not polling). Control path; one caller at a time
	 * (a lock), a late listing is not taken for the next one's.
	 */
	result<pending_listing> pending_list(std::chrono::milliseconds wait) const;
	static constexpr uint32_t pending_list_step = 256;
	/**
	 * How long after a pod's unregistration began the shard ends the pending requests it
	 * left (depart_step()): its answers already on their way (taken from its SQ before
	 * the registry stopped its TX) are matched first. Far below any route's timeout.
	 */
	static constexpr uint64_t depart_grace_ms = 10;

	/**
	 * Publishes a new routing and policy version (control path): one pointer store, then
	 * an RCU grace period (the sidecar lcore reports quiescence once per poll), then the
	 * old version is released. Holders of policy() keep theirs alive until done.
	 */
	void apply(std::shared_ptr<ruleset> next);
	/** The published version (control path: console, telemetry). */
	std::shared_ptr<ruleset> policy() const;
	/** Per-service metrics for the sidecar's whole life, by registry service index. */
	uint32_t nb_services() const noexcept;
	const std::string &service_name(uint32_t svc) const noexcept;
	/** Adds the service's metrics here into `to`: this shard's, and the refusals its port
	 *  RX answered itself (counted in the gate, as the shard counts the rest). */
	void add_service_metrics(uint32_t svc, l7_metrics &to) const noexcept;
	/** Deliveries waiting here now: in destination queues, parked retries and refused
	 *  answers owed to pods that did not drain (control path, read without locks). */
	uint32_t waiting() const noexcept;
	/** What the pod `handle` holds and was refused here (quota, docs/quota.md). */
	void pod_quota(uint32_t handle, quota_usage *out) const noexcept;
	/** Network addresses that hold or were refused anything here (control path). */
	std::vector<std::pair<wire::endpoint, quota_usage>> source_quotas() const;
	/** The saturation flags this shard publishes; its port RX reads them (set before
	 *  the lcores start; docs/overload.md). */
	const port::service_gate &gate() const noexcept;
	/** The node's hop name in the answers the mesh makes ("<node>/sidecar"). */
	const std::string &hop() const noexcept { return _hop; }

private:
	stage();
	static uint16_t poll(void *arg) noexcept;
	uint32_t run() noexcept;

	/* pods (flow_pod.cc) */
	void from_pod(const sw_descriptor &d, uint64_t now) noexcept;
	void pod_request(const pod_message &m, const wire::l7_view &v, uint64_t now) noexcept;
	bool pod_over_quota(const pod_message &m, uint64_t now) noexcept;
	void pod_response(const pod_message &m, const wire::l7_view &v, uint64_t now) noexcept;
	/* internal/open_request.h */
	[[gnu::always_inline]] inline uint32_t
	open_request(pending::party origin, pending::party dest, const verdict &a,
		     const wire::l7_view &v, bool hold, const remote *reply_to, uint16_t source,
		     uint64_t now, uint64_t origin_correlation, uint32_t origin_req_id = 0,
		     uint32_t step_id = 0) noexcept;
	void prefetch_dispatch(const net_message &m) noexcept;
	/* internal/add_trace.h */
	[[gnu::always_inline]] inline uint32_t add_trace(uint64_t header, uint32_t len,
							 const wire::l7_view &v,
							 uint16_t *sum = nullptr) noexcept;
	void answered(const pending::entry &e, const request_ctx &c, uint16_t status, bool mesh,
		      uint64_t now, bool report) noexcept;
	void reply_error(uint32_t origin, uint32_t req_id, uint32_t step_id, uint16_t status,
			 const char *reason) noexcept;
	void reply_to_origin(const pending::entry &e, const request_ctx &c, uint16_t status,
			     const char *reason, uint64_t now) noexcept;
	bool make_error(uint32_t origin, uint32_t req_id, uint32_t step_id, uint16_t status,
			const char *reason) noexcept;
	void reply_net(const remote &to, uint64_t correlation, uint16_t status,
		       const char *reason, uint64_t now) noexcept;
	void owe_net(const remote &to, uint64_t correlation, uint16_t status, const char *reason,
		     uint64_t now) noexcept;
	uint32_t pay_owed(uint64_t now) noexcept;
	/* a step of `show pending`'s listing for control's request `asked` */
	[[gnu::cold]] void list_pending(uint64_t asked) noexcept;
	/* a step of the walk that ends the requests of pods that left (flow_notes.cc) */
	[[gnu::cold]] void depart_step(uint64_t now) noexcept;
	void departed(uint32_t token, uint64_t now) noexcept;
	bool left(const pending::party &p) const noexcept;
	void refuse(const pending::entry &e, const request_ctx &c, uint32_t dst, uint32_t status,
		    uint64_t now) noexcept;
	/* network (flow_net.cc) */
	void from_network(port::rx_msg *m, uint64_t now) noexcept;
	unsigned from_network_burst(port::rx_msg **msgs, unsigned n, uint64_t now) noexcept;
	void dispatch(net_message &m, uint64_t now) noexcept;
	void net_request(net_message &m, int peer, uint64_t now) noexcept;
	void net_request_here(net_message &m, verdict a, int peer, uint64_t now) noexcept;
	void net_response(net_message &m, uint64_t now) noexcept;
	void relay(net_message &m, const verdict &a, uint64_t now) noexcept;
	void refused_at_rx(port::rx_msg *m) noexcept;
	uint32_t from_network_sources(unsigned quantum, bool shared, uint64_t now) noexcept;
	/* what the DPA hands back, retries, parking, deadlines (flow_notes.cc) */
	void note(const dpa_note &n) noexcept;
	void held_done(const dpa_note &n) noexcept;
	void give_up(const dpa_command &c, uint32_t status) noexcept;
	bool retry(pending::entry &e, request_ctx &c, uint64_t now) noexcept;
	void release_held(request_ctx &c) noexcept;
	void expired(const expiry &x, uint64_t now, kept_reply *&timeout) noexcept;
	void expired(const expiry *due, uint32_t n, uint64_t now) noexcept;
	void timeouts_flush() noexcept;
	uint32_t unpark(uint64_t now) noexcept;
	/* per-destination queues (flow_notes.cc): order while a pod is full */
	void admit_delivery(unsigned thread, const dpa_command &c) noexcept;
	void bounced(const dpa_command &c, uint64_t now) noexcept;
	uint32_t pump_queues(uint64_t now) noexcept;
	void turn_down(const dpa_command &c, uint32_t status) noexcept;
	void purge_gone() noexcept;
	void deliver_new(const dpa_command &c, const pending::entry &e) noexcept;
	/* shards: work that belongs to another shard goes to its hand-off ring */
	unsigned token_shard(uint32_t token) const noexcept;
	bool hand_off(unsigned shard, const handoff_item &h) noexcept;
	uint32_t take_handoffs(uint64_t now) noexcept;
	/* commands */
	void deliver(const dpa_command &c) noexcept;
	void complete(uint64_t header, uint32_t status) noexcept;
	void finish(const dpa_command &c, uint32_t status) noexcept;
	void lost_note(const dpa_command &c, uint32_t status) noexcept;
	void drop(const dpa_command &c) noexcept;

	pod_registry *_reg = nullptr;
	dpa::arm_side _dpa; /* the backend seam (dpumesh/dpa/arm_side.h) */
	std::unique_ptr<admission> _admission;
	std::unique_ptr<request_table> _requests;
	std::unique_ptr<outbox> _outbox;
	std::unique_ptr<egress> _egress;
	std::unique_ptr<network_in> _net_in;
	std::unique_ptr<quota> _quota;
	std::unique_ptr<owed> _owed; /* error answers waiting for a buffer (internal/owed.h) */
	std::unique_ptr<net_sched> _net_sched; /* network requests by source (internal/net_sched.h) */
	/* routing and policy: published by control, loaded once per poll into _cur */
	std::atomic<ruleset *> _published{nullptr};
	ruleset *_cur = nullptr;
	mutable std::mutex _policy_mu; /* control path: _owned */
	std::shared_ptr<ruleset> _owned;
	std::vector<policy::retry_budget> _budgets; /* by service */
	uint64_t _tsc_hz = 0;
	rte_ring *_ingress = nullptr;
	rte_ring *_refusals = nullptr; /* port RX's refusals */
	shard_info _shard;
	unsigned _token_bits = 0; /* request_table::shard_bits(_shard.count) */
	unsigned _qsbr_id = 0;
	bool _registered = false;
	std::string _hop;
	uint64_t _next_sweep = 0; /* TSC of the next deadline sweep */
	uint64_t _next_gate = 0;  /* TSC of the next look at saturated services (refresh_gate) */
	/* the network's share while pods' messages pass (docs/overload.md "Fairness") */
	uint64_t _pods_until = 0; /* TSC until which pods count as busy */
	uint64_t _net_cycles = 0; /* TSC cycles per network message (step 6), moving average */
	uint64_t _net_budget = 0; /* TSC cycles of network work per poll while pods are busy */
	uint64_t _net_idle_budget = 0; /* the same while they are not */
	int64_t _net_credit = 0;  /* what the network may still spend (deficit round robin) */
	int64_t _net_max_debt = 0; /* the most it may owe */
	policy::trace_rng _trace_rng; /* trace ids of requests without them (seeded at create) */
	/* a deadline sweep's 504 timeouts of one service, route, routing version and latency
	 * bucket in a row, counted at once (timeouts_flush(), at the end of each burst of the
	 * sweep) */
	struct timeout_tally {
		uint32_t n = 0;
		uint32_t service = 0;
		uint32_t route = 0;    /* route_metrics index, counted when `version` is the poll's */
		uint32_t version = 0;  /* the routing version they were admitted under */
		unsigned bucket = 0;   /* latency_histogram::bucket_of() */
		/* `version` is the poll's, and then the service's policy (the engine's index):
		 * a policy-admitted 504's outcome goes to it, found once a run */
		bool current = false;
		/* current, and the service's policy has a breaker: only then does an outcome
		 * record anything (engine::on_response()'s own tests were ~5 a 504) */
		bool breaker = false;
		uint32_t policy = 0;
		/* the bucket's latencies (us), [lo, hi): a 504 in it is of the run with a compare
		 * each (none at each burst's start: an empty range, hi = 0) */
		uint64_t lo = 1, hi = 0;
		uint64_t sum_us = 0;
	} _tally;
	/* relays in place with both trace fields added (nearly all of a client's requests):
	 * their request_ids, traceparents, relayed_in_place and relayed, counted at once at
	 * the end of the burst (relays_flush(); four counters' load, add and store a relay
	 * were 12 instructions: relay 1186.1 -> 1171.7 a message, routes 131B) */
	uint32_t _relays_both = 0;
	/* the burst's network requests to services without a policy, which admission allowed
	 * without asking the engine: its counters at the end of the burst (relays_flush();
	 * relay 1139.7 -> 1128.2, routes 131B) */
	uint32_t _no_policy = 0;
	/* the longest header both trace fields still fit after: an hbuf's room and
	 * wire::l7_max_size, less policy::trace_both_size (0: none); the relay's one test
	 * (with add_both()'s own four and add_trace_fields()'s: relay 1161.7 -> 1139.7) */
	uint32_t _trace_both_max = 0;
	void relays_flush() noexcept;
	counters _stats;
	/* `show pending` (pending_list()), last: cold (~15 KB), away from the poll's
	 * fields. Control raises _list_asked (under _list_mu); the lcore walks the table a
	 * step each 10 us, from slot _list_at, for the request _list_for, keeping the oldest
	 * entries in _list_kept; at the end it puts them in _listing and stores the request's
	 * number in _list_given (release) */
	mutable std::mutex _list_mu;
	mutable std::atomic<uint64_t> _list_asked{0};
	std::atomic<uint64_t> _list_given{0};
	uint64_t _list_for = 0;
	uint32_t _list_at = 0;
	pending::oldest<pending_listing::max> _list_kept;
	pending_listing _listing;
	/* pods that left (depart_step()): the registry's departures() last seen; when the
	 * walk over the table (re)starts (0: not due); the walk's next slot (UINT32_MAX: no
	 * walk) */
	uint32_t _departs_seen = 0;
	uint64_t _depart_due = 0;
	uint32_t _depart_slot = UINT32_MAX;
	/* deliveries queued for pods that left are still to be taken out (purge_gone()) */
	bool _purge_gone = false;
};

} // namespace dpumesh::sidecar
