// SPDX-License-Identifier: BSD-3-Clause
// take_snapshot: the one place that reads a running node's counters for every view.
#include "dpumesh/control/snapshot.h"

#include <rte_cycles.h>
#include <rte_mempool.h>

namespace dpumesh::control {

uint64_t snapshot::sidecar_value(std::string_view name) const noexcept
{
	for (const counter_row &r : sidecar)
		if (name == r.name)
			return r.value;
	return 0;
}

namespace {

void read_dpa(const dpa::emulator &emu, snapshot &s)
{
	s.has_dpa = true;
	s.hbufs_in_use = rte_mempool_in_use_count(emu.hbufs());
	s.hbufs_total = emu.hbufs()->size;
	s.hbuf_size = emu.hbuf_size();
	for (unsigned t = 0; t < emu.nb_threads(); t++) {
		const dpa::thread_stats &ts = emu.stats(t);
		const dpa::kernel_counters k = emu.kernels(t);
		const dma::engine &e = emu.dma(t);
		const dma::engine_stats &d = e.stats();
		dpa_thread_view v{};
		v.thread = t;
		v.tx_taken = ts.tx_taken.get();
		v.tx_posted = ts.tx_posted.get();
		v.rx_delivered = ts.rx_delivered.get();
		v.rx_handed_back = ts.rx_handed_back.get();
		v.tx_completions = ts.tx_completions.get();
		v.remote_completions = ts.remote_completions.get();
		v.completion_ring_full = ts.completion_ring_full.get();
		v.doorbells = ts.doorbells.get();
		v.doorbells_suppressed = ts.doorbells_suppressed.get();
		v.doorbell_cycles = ts.doorbell_cycles.get();
		v.doorbell_timed_ns = ts.doorbell_timed_ns.get();
		v.doorbell_timed_writes = ts.doorbell_timed_writes.get();
		v.tx_parks = ts.tx_parks.get();
		v.tx_rings = ts.tx_rings.get();
		v.tx_ring_checks = ts.tx_ring_checks.get();
		v.tx_cools = ts.tx_cools.get();
		v.tx_unparks = ts.tx_unparks.get();
		v.tx_ready_calls = ts.tx_ready_calls.get();
		v.tx_sq_looks = ts.tx_sq_looks.get();
		v.tx_sweep_finds = ts.tx_sweep_finds.get();
		v.follow_ups = ts.follow_ups.get();
		v.tx_inflight = k.nb_tx_inflight;
		v.rx_inflight = k.nb_rx_inflight;
		v.tx_no_hbuf = k.tx_no_hbuf;
		v.tx_dma_errors = k.tx_dma_errors;
		v.rx_completions = k.rx_completions;
		v.rx_bad_commands = k.rx_bad_commands;
		v.dma_name = e.name();
		v.dma_max_copy = e.max_copy_size();
		v.dma_max_inflight = e.max_inflight();
		v.dma_inflight = e.inflight();
		v.dma_ops = d.ops_submitted.get();
		v.dma_segments = d.segments_submitted.get();
		v.dma_bytes = d.bytes_submitted.get();
		v.dma_completed = d.ops_completed.get();
		v.dma_errors = d.errors.get();
		v.dma_ring_full = d.ring_full.get();
		s.dpa.push_back(std::move(v));
	}
}

} // namespace

snapshot take_snapshot(const node &n, unsigned sections)
{
	snapshot s;
	s.tsc = rte_get_tsc_cycles();
	s.forwarding = n.runner().forwarding();
	if (sections & snap::ports) {
		auto p = port_snapshots(n, "all");
		if (p)
			s.ports = std::move(*p);
	}
	s.tsc_hz = n.runner().tsc_hz();
	if (sections & snap::stages) {
		s.stages = n.runner().stages();
		s.lcore_cpu = n.runner().lcore_cpu();
	}
	if (sections & snap::rx)
		s.rx = drops(n);
	if ((sections & snap::tx) && n.instance())
		for (const port::tx_ctx *t : n.instance()->tx())
			s.tx.push_back({t->port, t->stats.frames.get(), t->stats.bytes.get(),
					t->stats.stalls.get(), t->stats.dropped.get(),
					t->stats.owed.get(), t->stats.backlog_full.get(),
					t->backlog_size()});
	/* the sidecar's counters and metrics: summed over its shards (one per worker) */
	const std::vector<sidecar::stage *> shards = n.shards();
	if ((sections & snap::sidecar) && !shards.empty()) {
		s.has_sidecar = true;
		for (const sidecar::stage *sc : shards) {
			size_t i = 0;
			sidecar::for_each_counter(sc->stats(),
						  [&](const char *name, const char *help, uint64_t v) {
							  if (i == s.sidecar.size())
								  s.sidecar.push_back({name, help, 0});
							  s.sidecar[i++].value += v;
						  });
			s.pending += sc->pending().size();
			s.waiting += sc->waiting();
		}
	}
	if ((sections & snap::services) && !shards.empty()) {
		const sidecar::stage &sc = *shards.front();
		for (uint32_t i = 0; i < sc.nb_services(); i++) {
			sidecar::l7_metrics t; /* the sum over the shards */
			for (const sidecar::stage *sh : shards)
				sh->add_service_metrics(i, t);
			service_view v{sc.service_name(i), t.requests.get(), t.refused.get(),
				       t.mesh_generated.get(), t.retries.get(), t.timeouts.get(),
				       {}, t.latency.read()};
			for (size_t c = 0; c < v.classes.size(); c++)
				v.classes[c] = t.classes[c].get();
			for (size_t r = 0; r < v.refused_by.size(); r++)
				v.refused_by[r] = t.refused_by[r].get();
			s.services.push_back(std::move(v));
		}
	}
	if ((sections & snap::dpa) && n.emulator())
		read_dpa(*n.emulator(), s);
	if (n.registry())
		s.nb_pods = n.registry()->nb_pods();
	return s;
}

} // namespace dpumesh::control
