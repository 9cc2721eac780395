// SPDX-License-Identifier: BSD-3-Clause
// The sidecar stage: the Arm's look at every message header, and every routing decision.
//
// Input: headers the DPA TX kernels copied into hbufs (sidecar TX SQs), and deliveries the
// RX kernels could not carry out (notification queues). Output: commands to the RX kernels
// (sidecar RX SQs): DELIVER a message to a pod, or COMPLETE a sender's TX.
//
//   request  -> L7 decode -> service -> live pod (round robin) -> pending entry -> DELIVER
//   response -> pending match (token, responder, step) -> DELIVER to the origin
//   refused  -> an error response made here (404 no_route, 503 no_live_pod/dest_full/
//               dest_gone/overloaded, 504 timeout) with :reason and :hop, and the
//               sender's TX completed; a response that cannot be delivered completes its
//               sender with TX_DONE|ERROR
//
// Bodies are never read here. The stage holds no pointer into pod memory (only handles and
// hbufs), so it needs no RCU quiescent reports.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dpumesh/config.h"
#include "dpumesh/counter.h"
#include "dpumesh/dpa_emu.h"
#include "dpumesh/engine.h"
#include "dpumesh/l7.h"
#include "dpumesh/pending.h"
#include "dpumesh/pod_registry.h"

namespace dpumesh::pipeline {

/** The sidecar's counters, by name. */
#define DPUMESH_FOREACH_SIDECAR_COUNTER(_)                                               \
	_(requests, "requests taken from pods")                                          \
	_(responses, "responses taken from pods")                                        \
	_(forwarded, "requests sent on to a pod")                                        \
	_(answered, "responses sent on to their origin")                                 \
	_(no_route, "requests to an unknown service (404)")                              \
	_(remote_unavailable, "requests to a service on another node (503, Case 1 not wired)") \
	_(no_live_pod, "requests to a service with no live pod (503)")                   \
	_(overloaded, "requests refused: pending table full (503)")                      \
	_(timeouts, "requests not answered before their deadline (504)")                 \
	_(retries, "deliveries retried on another pod")                                  \
	_(dest_full, "deliveries refused: destination had no RX slot (parked and retried)") \
	_(parked, "deliveries parked until the destination has room")                   \
	_(park_expired, "parked deliveries that never found room (503 / response lost)") \
	_(dest_gone, "deliveries refused: destination unregistered (503)")               \
	_(src_gone, "messages whose sender unregistered before delivery")               \
	_(no_match, "responses that match no pending request (dropped)")                 \
	_(responses_lost, "responses whose origin could not receive them")               \
	_(bad_header, "messages with an invalid L7 header")                              \
	_(header_dma_error, "headers whose copy into an hbuf failed")                    \
	_(hbuf_empty, "error responses not sent: no header buffer")                      \
	_(backlog_stalls, "polls that stopped taking input: RX kernel queues full")

struct alignas(64) sidecar_stats {
#define DPUMESH_SIDECAR_FIELD(n, d) counter n;
	DPUMESH_FOREACH_SIDECAR_COUNTER(DPUMESH_SIDECAR_FIELD)
#undef DPUMESH_SIDECAR_FIELD
	std::array<counter, static_cast<size_t>(wire::l7_error::count)> l7_errors;
};

/** Visits every sidecar counter: fn(name, help, value). */
template <typename Fn>
void for_each_sidecar_counter(const sidecar_stats &s, Fn &&fn)
{
#define DPUMESH_SIDECAR_VISIT(n, d) fn(#n, d, s.n.get());
	DPUMESH_FOREACH_SIDECAR_COUNTER(DPUMESH_SIDECAR_VISIT)
#undef DPUMESH_SIDECAR_VISIT
}

class sidecar {
public:
	/** Builds the routing view from the config (control path). */
	static result<std::unique_ptr<sidecar>> create(const config::node_config &cfg,
						       pod_registry &reg, dpa::emulator &emu);
	~sidecar();

	engine::stage_def stage() noexcept { return {"sidecar", &poll, this, false}; }
	const sidecar_stats &stats() const noexcept { return _stats; }
	const route::pending_table &pending() const noexcept { return *_pending; }

private:
	struct route_policy {
		std::string path_prefix;
		uint32_t timeout_ms;
	};
	struct service_view {
		bool local = true;
		std::vector<route_policy> policies; /* longest prefix first */
	};
	/** A delivery waiting for its destination to post RX slots (back-pressure). */
	struct parked_cmd {
		sw_descriptor cmd;
		uint64_t retry_at;
		uint64_t give_up_at;
		uint32_t delay_us;
	};
	struct parking {
		static constexpr uint32_t size = 4096;
		parked_cmd q[size];
		uint32_t head = 0, count = 0;
	};
	struct backlog {
		static constexpr uint32_t size = 1024;
		sw_descriptor q[size];
		uint32_t head = 0, count = 0;
	};

	sidecar() = default;
	static uint16_t poll(void *arg) noexcept;
	uint32_t run() noexcept;
	void from_pod(const sw_descriptor &d, uint64_t now) noexcept;
	void request(const sw_descriptor &d, const wire::l7_view &v, uint64_t now) noexcept;
	void response(const sw_descriptor &d) noexcept;
	void note(const sw_descriptor &n) noexcept;
	void complete(const sw_descriptor &d, uint32_t status) noexcept;
	void reply_error(uint32_t origin, uint32_t req_id, uint32_t step_id, uint16_t status,
			 const char *reason) noexcept;
	void to_dpa(unsigned thread, const sw_descriptor &cmd) noexcept;
	void flush_backlogs() noexcept;
	bool park(const sw_descriptor &cmd, uint64_t now, uint64_t give_up_at) noexcept;
	void give_up(const sw_descriptor &cmd) noexcept;
	uint32_t unpark(uint64_t now) noexcept;
	bool backlog_room() const noexcept;
	const route_policy *policy_for(uint32_t service, std::string_view path) const noexcept;

	pod_registry *_reg = nullptr;
	dpa::emulator *_emu = nullptr;
	std::unique_ptr<route::pending_table> _pending;
	std::vector<service_view> _services; /* by registry service index */
	std::vector<std::unique_ptr<backlog>> _backlogs; /* per DPA thread */
	std::unique_ptr<parking> _parking;
	uint32_t _default_timeout_ms = 5000;
	uint64_t _tsc_hz = 0;
	std::string _hop;
	unsigned _polls = 0;
	sidecar_stats _stats;
};

} // namespace dpumesh::pipeline
