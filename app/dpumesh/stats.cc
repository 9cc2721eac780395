// SPDX-License-Identifier: BSD-3-Clause
// Statistics printing: ethdev stats per port and per-stage counters.
#include "stats.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>

namespace dpumesh::app {

stats_printer::stats_printer(node_view v)
	: _v(v), _prev(v.ports->size()), _prev_tsc(rte_get_tsc_cycles()), _start_tsc(_prev_tsc)
{
}

void stats_printer::print_periodic(FILE *out)
{
	uint64_t now = rte_get_tsc_cycles();
	double dt = static_cast<double>(now - _prev_tsc) / static_cast<double>(rte_get_tsc_hz());
	double t = static_cast<double>(now - _start_tsc) / static_cast<double>(rte_get_tsc_hz());
	_prev_tsc = now;
	if (dt <= 0)
		dt = 1e-9;
	std::fprintf(out, "---- dpumesh stats at %.1f s (%s) ----\n", t,
		     _v.runner->forwarding() ? "forwarding" : "stopped");
	for (size_t i = 0; i < _v.ports->size(); i++) {
		const port::port_info &p = (*_v.ports)[i];
		rte_eth_stats s{};
		if (rte_eth_stats_get(p.port_id, &s) != 0)
			continue;
		port_prev &pv = _prev[i];
		double rx_pps = static_cast<double>(s.ipackets - pv.ipackets) / dt;
		double rx_bps = static_cast<double>(s.ibytes - pv.ibytes) * 8 / dt;
		double tx_pps = static_cast<double>(s.opackets - pv.opackets) / dt;
		double tx_bps = static_cast<double>(s.obytes - pv.obytes) * 8 / dt;
		pv = {s.ipackets, s.ibytes, s.opackets, s.obytes};
		std::fprintf(out,
			     "port %u %-8s RX %12lu pkts %8.3f Mpps %8.3f Gbps  missed %lu errors %lu"
			     " nombuf %lu\n"
			     "              TX %12lu pkts %8.3f Mpps %8.3f Gbps  errors %lu\n",
			     p.port_id, p.name.c_str(), s.ipackets, rx_pps / 1e6, rx_bps / 1e9,
			     s.imissed, s.ierrors, s.rx_nombuf, s.opackets, tx_pps / 1e6,
			     tx_bps / 1e9, s.oerrors);
	}
	for (const lcore::stage_view &st : _v.runner->stages()) {
		double cpw = st.work ? static_cast<double>(st.busy_cycles) / st.work : 0;
		double busy = st.busy_cycles + st.idle_cycles
				      ? 100.0 * st.busy_cycles / (st.busy_cycles + st.idle_cycles)
				      : 0;
		std::fprintf(out, "stage %-8s lcore %u: work %lu, %.1f cycles/unit, busy %.1f%%\n",
			     st.name.c_str(), st.lcore, st.work, cpw, busy);
	}
	for (const port::rx_ctx *rx : *_v.rx) {
		std::fprintf(out, "port_rx: frames %lu accepted %lu messages %lu in-reassembly %u drops:",
			     rx->stats.frames.get(), rx->stats.accepted.get(),
			     rx->stats.messages.get(), rx->reasm->in_flight());
		bool any = false;
		for (size_t d = 1; d < rx->stats.drops.size(); d++) {
			uint64_t n = rx->stats.drops[d].get() + rx->reasm->stats().drops[d].get();
			if (n) {
				std::fprintf(out, " %s=%lu",
					     port::rx_drop_name(static_cast<port::rx_drop>(d)), n);
				any = true;
			}
		}
		for (auto [name, c] : {std::pair{"no_consumer", &rx->stats.no_consumer},
				       std::pair{"ring_full", &rx->stats.ring_full},
				       std::pair{"msg_pool_empty", &rx->stats.msg_pool_empty}}) {
			if (c->get()) {
				std::fprintf(out, " %s=%lu", name, c->get());
				any = true;
			}
		}
		std::fprintf(out, "%s\n", any ? "" : " none");
	}
	print_mesh(out, false);
	std::fflush(out);
}

void stats_printer::print_mesh(FILE *out, bool final) const
{
	if (_v.registry) {
		std::fprintf(out, final ? "final pods registered=%u\n" : "pods: %u registered\n",
			     _v.registry->nb_pods());
	}
	if (_v.sidecar) {
		std::fprintf(out, final ? "final stage=sidecar" : "sidecar:");
		sidecar::for_each_counter(_v.sidecar->stats(),
						   [&](const char *name, const char *, uint64_t v) {
							   if (final || v)
								   std::fprintf(out, " %s=%lu", name, v);
						   });
		std::fprintf(out, " pending=%u\n", _v.sidecar->pending().size());
	}
	if (_v.emu) {
		for (unsigned t = 0; t < _v.emu->nb_threads(); t++) {
			const dpa::thread_stats &s = _v.emu->stats(t);
			const dma::engine_stats &d = _v.emu->dma(t).stats();
			std::fprintf(out,
				     "%s thread=%u tx_taken=%lu tx_posted=%lu rx_delivered=%lu "
				     "rx_handed_back=%lu tx_completions=%lu remote_completions=%lu "
				     "completion_ring_full=%lu dma_ops=%lu dma_bytes=%lu dma_errors=%lu "
				     "hbufs_in_use=%u\n",
				     final ? "final dpa" : "dpa", t, s.tx_taken.get(), s.tx_posted.get(),
				     s.rx_delivered.get(), s.rx_handed_back.get(), s.tx_completions.get(),
				     s.remote_completions.get(), s.completion_ring_full.get(),
				     d.ops_completed.get(), d.bytes_submitted.get(), d.errors.get(),
				     rte_mempool_in_use_count(_v.emu->hbufs()));
		}
	}
}

void stats_printer::print_final(FILE *out)
{
	for (const port::port_info &p : *_v.ports) {
		rte_eth_stats s{};
		if (rte_eth_stats_get(p.port_id, &s) != 0)
			continue;
		std::fprintf(out,
			     "final port=%u name=%s rx_packets=%lu rx_bytes=%lu rx_missed=%lu "
			     "rx_errors=%lu tx_packets=%lu tx_bytes=%lu tx_errors=%lu\n",
			     p.port_id, p.name.c_str(), s.ipackets, s.ibytes, s.imissed, s.ierrors,
			     s.opackets, s.obytes, s.oerrors);
	}
	uint64_t frames = 0, accepted = 0, messages = 0, no_consumer = 0, ring_full = 0,
		 pool_empty = 0, duplicates = 0;
	std::vector<uint64_t> drops(static_cast<size_t>(port::rx_drop::count), 0);
	for (const port::rx_ctx *rx : *_v.rx) {
		frames += rx->stats.frames.get();
		accepted += rx->stats.accepted.get();
		messages += rx->stats.messages.get() + rx->stats.no_consumer.get() +
			    rx->stats.ring_full.get() + rx->stats.msg_pool_empty.get();
		no_consumer += rx->stats.no_consumer.get();
		ring_full += rx->stats.ring_full.get();
		pool_empty += rx->stats.msg_pool_empty.get();
		duplicates += rx->reasm->stats().duplicates.get();
		for (size_t d = 0; d < drops.size(); d++)
			drops[d] += rx->stats.drops[d].get() + rx->reasm->stats().drops[d].get();
	}
	std::fprintf(out,
		     "final stage=port_rx frames=%lu accepted=%lu messages=%lu duplicates=%lu "
		     "msg_no_consumer=%lu msg_ring_full=%lu msg_pool_empty=%lu",
		     frames, accepted, messages, duplicates, no_consumer, ring_full, pool_empty);
	for (size_t d = 1; d < drops.size(); d++)
		std::fprintf(out, " drop_%s=%lu",
			     port::rx_drop_name(static_cast<port::rx_drop>(d)), drops[d]);
	std::fprintf(out, "\n");
	for (const port::tx_ctx *tx : _v.tx ? *_v.tx : std::vector<port::tx_ctx *>{})
		std::fprintf(out, "final stage=port_tx port=%u frames=%lu bytes=%lu stalls=%lu dropped=%lu\n",
			     tx->port, tx->stats.frames.get(), tx->stats.bytes.get(),
			     tx->stats.stalls.get(), tx->stats.dropped.get());
	print_mesh(out, true);
	std::fflush(out);
}

} // namespace dpumesh::app
