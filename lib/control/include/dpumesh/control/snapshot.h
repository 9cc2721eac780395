// SPDX-License-Identifier: BSD-3-Clause
// One read of a node's counters, taken on the control path, that every view renders: the
// periodic and final statistics (app/dpumesh/stats.cc), the console's `show` commands and
// telemetry. Counters are single-writer atomics (dpumesh::counter) or ethdev stats, so a
// snapshot is defined behaviour while the lcores run; it is not atomic across counters.
//
//   control::snapshot s = control::take_snapshot(n, control::snap::ports | control::snap::rx);
//   for (const auto &p : s.ports) ... p.stats.ipackets ...
//   s.rx.for_each([](const char *name, const char *help, uint64_t v) { ... });
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dpumesh/control/control.h"
#include "dpumesh/lcore/runner.h"

namespace dpumesh::control {

/** Sections of a snapshot; take only what a view shows (ethdev reads cost syscalls on
 * some PMDs). */
namespace snap {
inline constexpr unsigned ports = 1u << 0;
inline constexpr unsigned stages = 1u << 1;
inline constexpr unsigned rx = 1u << 2;      /**< port RX stage totals and drops */
inline constexpr unsigned tx = 1u << 3;      /**< port TX stages */
inline constexpr unsigned sidecar = 1u << 4;
inline constexpr unsigned dpa = 1u << 5;     /**< DPA threads, their kernels and DMA engines */
inline constexpr unsigned services = 1u << 6; /**< the sidecar's per-service request metrics */
inline constexpr unsigned all = ~0u;
} // namespace snap

struct counter_row {
	const char *name;
	const char *help;
	uint64_t value;
};

struct tx_stage_view {
	uint16_t port;
	uint64_t frames, bytes, stalls, dropped;
	uint64_t owed, backlog_full; /**< frames that went through the backlog; times it filled */
	uint32_t backlog;            /**< frames owed now (dropped if the node stops) */
};

struct dpa_thread_view {
	unsigned thread;
	uint64_t tx_taken, tx_posted, rx_delivered, rx_handed_back, tx_completions,
		remote_completions, completion_ring_full;
	uint64_t doorbells, doorbells_suppressed; /**< pods' eventfds written / not needed */
	uint64_t doorbell_cycles;                 /**< TSC cycles spent writing them */
	uint64_t doorbell_timed_ns = 0;           /**< thread CPU of the timed ones (1 flush in 32) */
	uint64_t doorbell_timed_writes = 0;       /**< how many writes those flushes made */
	/** pod -> DPA: pods parked, parked pods woken by their TX doorbell, doorbell looks */
	uint64_t tx_parks, tx_rings, tx_ring_checks;
	/** hot -> cold, parked -> cold, looks for SQs with work, SQ heads loaded, sweep finds */
	uint64_t tx_cools, tx_unparks, tx_ready_calls, tx_sq_looks, tx_sweep_finds;
	uint64_t follow_ups; /**< dpa::thread_stats::follow_ups */
	/* the thread's kernels */
	uint32_t tx_inflight, rx_inflight;
	uint64_t tx_no_hbuf, tx_dma_errors, rx_completions, rx_bad_commands;
	/* its DMA engine */
	std::string dma_name;
	uint32_t dma_max_copy, dma_max_inflight, dma_inflight;
	uint64_t dma_ops, dma_segments, dma_bytes, dma_completed, dma_errors, dma_ring_full;
};

/** A service's request metrics (sidecar::l7_metrics) as read. */
struct service_view {
	std::string name;
	uint64_t requests, refused, mesh_generated, retries, timeouts;
	std::array<uint64_t, 5> classes; /**< answers to the origin by status class 1xx..5xx */
	std::array<uint64_t, sidecar::latency_histogram::nb_buckets> latency;
	/** refusals by reason (sidecar::refusal_reason) */
	std::array<uint64_t, static_cast<size_t>(sidecar::refusal_reason::count)> refused_by{};
	uint64_t refused_for(sidecar::refusal_reason r) const noexcept
	{
		return refused_by[static_cast<size_t>(r)];
	}
};

struct snapshot {
	uint64_t tsc = 0;         /**< when it was taken */
	bool forwarding = false;
	std::vector<port_snapshot> ports;
	uint64_t tsc_hz = 0;
	std::vector<lcore::stage_view> stages;       /**< snap::stages: TSC and sampled thread CPU */
	std::vector<lcore::lcore_cpu_view> lcore_cpu; /**< snap::stages: each worker thread's CPU */
	drop_totals rx;
	std::vector<tx_stage_view> tx;
	bool has_sidecar = false;
	std::vector<counter_row> sidecar; /**< every sidecar counter, in X-macro order */
	std::vector<service_view> services;
	uint32_t pending = 0;             /**< requests in flight in the sidecar */
	uint32_t waiting = 0;             /**< deliveries in destination queues and parking */
	bool has_dpa = false;
	std::vector<dpa_thread_view> dpa;
	uint32_t hbufs_in_use = 0, hbufs_total = 0, hbuf_size = 0;
	uint32_t nb_pods = 0;

	/** The value of a sidecar counter by name (0 when absent). */
	uint64_t sidecar_value(std::string_view name) const noexcept;
};

/** Reads the sections asked for (snap::*); the others stay empty. Control path only. */
snapshot take_snapshot(const node &n, unsigned sections = snap::all);

} // namespace dpumesh::control
