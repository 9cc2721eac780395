// SPDX-License-Identifier: BSD-3-Clause
// Statistics printing: rates per port, per-stage work and cycles, port RX drops, pods, the
// sidecar's and the DPA threads' counters. Every number comes from control::take_snapshot.
#include "stats.h"

#include <inttypes.h>

#include <rte_cycles.h>

namespace dpumesh::app {

namespace {

void print_sidecar(FILE *out, const control::snapshot &s, bool final)
{
	if (!s.has_sidecar)
		return;
	std::fprintf(out, final ? "final stage=sidecar" : "sidecar:");
	for (const control::counter_row &r : s.sidecar)
		if (final || r.value)
			std::fprintf(out, " %s=%" PRIu64, r.name, r.value);
	std::fprintf(out, " pending=%u\n", s.pending);
}

void print_dpa(FILE *out, const control::snapshot &s, bool final)
{
	for (const control::dpa_thread_view &t : s.dpa)
		std::fprintf(out,
			     "%s thread=%u tx_taken=%" PRIu64 " tx_posted=%" PRIu64
			     " rx_delivered=%" PRIu64 " rx_handed_back=%" PRIu64
			     " tx_completions=%" PRIu64 " remote_completions=%" PRIu64
			     " completion_ring_full=%" PRIu64 " dma_ops=%" PRIu64 " dma_bytes=%" PRIu64
			     " dma_errors=%" PRIu64 " hbufs_in_use=%u\n",
			     final ? "final dpa" : "dpa", t.thread, t.tx_taken, t.tx_posted,
			     t.rx_delivered, t.rx_handed_back, t.tx_completions, t.remote_completions,
			     t.completion_ring_full, t.dma_completed, t.dma_bytes, t.dma_errors,
			     s.hbufs_in_use);
}

} // namespace

stats_printer::stats_printer(const control::node &n)
	: _n(n), _prev(control::take_snapshot(n, control::snap::ports)), _start_tsc(_prev.tsc)
{
}

bool stats_printer::due(unsigned period_s)
{
	const uint64_t now = rte_get_tsc_cycles(), hz = rte_get_tsc_hz();
	if (period_s != _period) {
		_period = period_s;
		_next_tsc = now + period_s * hz;
	}
	if (!_period || now < _next_tsc)
		return false;
	_next_tsc += _period * hz;
	return true;
}

std::string stats_printer::periodic()
{
	control::snapshot s = control::take_snapshot(_n);
	const double hz = static_cast<double>(rte_get_tsc_hz());
	double dt = static_cast<double>(s.tsc - _prev.tsc) / hz;
	if (dt <= 0)
		dt = 1e-9;
	char *buf = nullptr;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	if (!out)
		return {};
	std::fprintf(out, "---- dpumesh stats at %.1f s (%s) ----\n",
		     static_cast<double>(s.tsc - _start_tsc) / hz,
		     s.forwarding ? "forwarding" : "stopped");
	for (const control::port_snapshot &p : s.ports) {
		if (!p.stats_ok)
			continue;
		rte_eth_stats pv{};
		for (const control::port_snapshot &q : _prev.ports)
			if (q.info == p.info && q.stats_ok)
				pv = q.stats;
		const rte_eth_stats &c = p.stats;
		std::fprintf(out,
			     "port %u %-8s RX %12" PRIu64 " pkts %8.3f Mpps %8.3f Gbps  missed %" PRIu64
			     " errors %" PRIu64 " nombuf %" PRIu64 "\n"
			     "              TX %12" PRIu64 " pkts %8.3f Mpps %8.3f Gbps  errors %" PRIu64
			     "\n",
			     p.info->port_id, p.info->name.c_str(), c.ipackets,
			     static_cast<double>(c.ipackets - pv.ipackets) / dt / 1e6,
			     static_cast<double>(c.ibytes - pv.ibytes) * 8 / dt / 1e9, c.imissed,
			     c.ierrors, c.rx_nombuf, c.opackets,
			     static_cast<double>(c.opackets - pv.opackets) / dt / 1e6,
			     static_cast<double>(c.obytes - pv.obytes) * 8 / dt / 1e9, c.oerrors);
	}
	for (const lcore::stage_view &st : s.stages) {
		double cpw = st.work ? static_cast<double>(st.busy_cycles) / st.work : 0;
		double busy = st.busy_cycles + st.idle_cycles
				      ? 100.0 * st.busy_cycles / (st.busy_cycles + st.idle_cycles)
				      : 0;
		std::fprintf(out, "stage %-8s lcore %u: work %" PRIu64 ", %.1f cycles/unit, busy %.1f%%\n",
			     st.name.c_str(), st.lcore, st.work, cpw, busy);
	}
	if (!s.ports.empty()) {
		std::fprintf(out,
			     "port_rx: frames %" PRIu64 " accepted %" PRIu64 " messages %" PRIu64
			     " in-reassembly %" PRIu64 " drops:",
			     s.rx.frames, s.rx.accepted, s.rx.messages, s.rx.in_reassembly);
		bool any = false;
		s.rx.for_each([&](const char *name, const char *, uint64_t v) {
			if (v && std::string_view(name) != "duplicates") {
				std::fprintf(out, " %s=%" PRIu64, name, v);
				any = true;
			}
		});
		std::fprintf(out, "%s\n", any ? "" : " none");
	}
	std::fprintf(out, "pods: %u registered\n", s.nb_pods);
	print_sidecar(out, s, false);
	print_dpa(out, s, false);
	std::fclose(out);
	std::string text(buf, len);
	std::free(buf);
	_prev = std::move(s);
	return text;
}

void stats_printer::print_final(FILE *out) const
{
	control::snapshot s = control::take_snapshot(_n);
	for (const control::port_snapshot &p : s.ports) {
		if (!p.stats_ok)
			continue;
		const rte_eth_stats &c = p.stats;
		std::fprintf(out,
			     "final port=%u name=%s rx_packets=%" PRIu64 " rx_bytes=%" PRIu64
			     " rx_missed=%" PRIu64 " rx_errors=%" PRIu64 " tx_packets=%" PRIu64
			     " tx_bytes=%" PRIu64 " tx_errors=%" PRIu64 "\n",
			     p.info->port_id, p.info->name.c_str(), c.ipackets, c.ibytes, c.imissed,
			     c.ierrors, c.opackets, c.obytes, c.oerrors);
	}
	const control::drop_totals &r = s.rx;
	std::fprintf(out,
		     "final stage=port_rx frames=%" PRIu64 " accepted=%" PRIu64 " messages=%" PRIu64
		     " duplicates=%" PRIu64 " msg_no_consumer=%" PRIu64 " msg_ring_full=%" PRIu64
		     " msg_pool_empty=%" PRIu64,
		     r.frames, r.accepted,
		     r.messages + r.no_consumer + r.ring_full + r.msg_pool_empty, r.duplicates,
		     r.no_consumer, r.ring_full, r.msg_pool_empty);
	for (size_t d = 1; d < r.drops.size(); d++)
		std::fprintf(out, " drop_%s=%" PRIu64,
			     port::rx_drop_name(static_cast<port::rx_drop>(d)), r.drops[d]);
	std::fprintf(out, "\n");
	for (const control::tx_stage_view &t : s.tx)
		std::fprintf(out,
			     "final stage=port_tx port=%u frames=%" PRIu64 " bytes=%" PRIu64
			     " stalls=%" PRIu64 " dropped=%" PRIu64 "\n",
			     t.port, t.frames, t.bytes, t.stalls, t.dropped);
	std::fprintf(out, "final pods registered=%u\n", s.nb_pods);
	print_sidecar(out, s, true);
	print_dpa(out, s, true);
	std::fflush(out);
}

void print_pools(FILE *out, const node::instance &n)
{
	/* a port still open may hold its RX ring: net_pcap's infinite_rx keeps its capture */
	std::fprintf(out, "final mempool mbufs_in_use=%u rx_msgs_in_use=%u\n",
		     rte_mempool_in_use_count(n.packet_pool()),
		     rte_mempool_in_use_count(n.message_pool()));
}

} // namespace dpumesh::app
