// SPDX-License-Identifier: BSD-3-Clause
// Statistics printing: rates per port, per-stage work and cycles, port RX drops, pods, the
// sidecar's and the DPA threads' counters. Every number comes from control::take_snapshot.
#include "stats.h"

#include <inttypes.h>

#include <algorithm>
#include <array>
#include <string_view>

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

/* Each stage's sampled thread CPU (lcore::runner), then each worker thread's CPU from /proc. */
void print_lcore_cpu(FILE *out, const control::snapshot &s, bool final)
{
	if (final)
		for (const lcore::stage_view &st : s.stages)
			std::fprintf(out,
				     "final stage_cpu name=%s lcore=%u calls=%" PRIu64 " work=%" PRIu64
				     " busy_tsc_cycles=%" PRIu64 " idle_tsc_cycles=%" PRIu64
				     " cpu_polls=%" PRIu64 " cpu_work=%" PRIu64 " cpu_ns=%" PRIu64
				     " cpu_tsc_cycles=%" PRIu64 " cpu_cycles_per_unit=%.1f"
				     " tsc_cycles_per_unit=%.1f\n",
				     st.name.c_str(), st.lcore, st.calls, st.work, st.busy_cycles,
				     st.idle_cycles, st.cpu_polls, st.cpu_work, st.cpu_ns, st.cpu_tsc,
				     st.cpu_cycles_per_unit(s.tsc_hz), st.tsc_cycles_per_unit());
	for (const lcore::lcore_cpu_view &l : s.lcore_cpu)
		std::fprintf(out,
			     "%s lcore=%u tid=%d wall_ns=%" PRIu64 " user_ns=%" PRIu64 " sys_ns=%" PRIu64
			     " oncpu_ns=%" PRIu64 " runq_ns=%" PRIu64 " runq_pct=%.1f"
			     " involuntary_switches=%" PRIu64 "\n",
			     final ? "final lcore_cpu" : "lcore_cpu", l.lcore, l.tid, l.wall_ns, l.user_ns,
			     l.sys_ns, l.oncpu_ns, l.runq_ns, l.runq_percent(), l.involuntary_switches);
}

} // namespace

stats_printer::stats_printer(const control::node &n, bool full) : _n(n), _full(full)
{
	_prev = take();
	_start_tsc = _prev.tsc;
}

control::snapshot stats_printer::take()
{
	control::snapshot s = control::take_snapshot(_n);
	_port_base.resize(s.ports.size());
	_port_last.resize(s.ports.size());
	for (size_t i = 0; i < s.ports.size(); i++) {
		rte_eth_stats &c = s.ports[i].stats, &base = _port_base[i], &last = _port_last[i];
		if (!s.ports[i].stats_ok)
			continue;
		if (c.ipackets < last.ipackets || c.opackets < last.opackets) {
			base.ipackets += last.ipackets;
			base.ibytes += last.ibytes;
			base.opackets += last.opackets;
			base.obytes += last.obytes;
		}
		last = c;
		c.ipackets += base.ipackets;
		c.ibytes += base.ibytes;
		c.opackets += base.opackets;
		c.obytes += base.obytes;
	}
	return s;
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
	control::snapshot s = take();
	double dt = static_cast<double>(s.tsc - _prev.tsc) / static_cast<double>(rte_get_tsc_hz());
	if (dt <= 0)
		dt = 1e-9;
	char *buf = nullptr;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	if (!out)
		return {};
	if (_full)
		full_block(out, s, dt);
	else
		compact_block(out, s, dt);
	std::fclose(out);
	std::string text(buf, len);
	std::free(buf);
	_prev = std::move(s);
	return text;
}

namespace {

/** Sidecar counters that count messages lost or not sent (everything else is work or an
 * answer the mesh made). */
constexpr std::string_view sidecar_drops[] = {
	"no_egress",  "egress_no_mbuf", "egress_ring_full", "net_header_too_large",
	"src_gone",   "no_match",       "responses_lost",   "bad_header",
	"header_dma_error", "hbuf_empty", "backlog_overflow", "held_lost",
};

struct drop_row {
	std::string_view name;
	uint64_t total, delta;
};

std::vector<drop_row> drop_rows(const control::snapshot &s, const control::snapshot &prev)
{
	std::vector<drop_row> rows;
	std::vector<uint64_t> before;
	prev.rx.for_each([&](const char *, const char *, uint64_t v) { before.push_back(v); });
	size_t i = 0;
	s.rx.for_each([&](const char *name, const char *, uint64_t v) {
		uint64_t b = i < before.size() ? before[i] : 0;
		i++;
		if (std::string_view(name) != "duplicates" && v)
			rows.push_back({name, v, v - b});
	});
	for (std::string_view d : sidecar_drops)
		if (uint64_t v = s.sidecar_value(d))
			rows.push_back({d, v, v - prev.sidecar_value(d)});
	return rows;
}

std::string us_text(uint64_t us)
{
	char b[32];
	if (us >= 10000)
		std::snprintf(b, sizeof(b), "%.1f ms", static_cast<double>(us) / 1000.0);
	else
		std::snprintf(b, sizeof(b), "%" PRIu64 " us", us);
	return b;
}

} // namespace

/* The compact display (testpmd-like): ports, messages by case, answers by class and their
 * latency, drops as a total with the top reasons. Rates are over the last period. */
void stats_printer::compact_block(FILE *out, const control::snapshot &s, double dt)
{
	auto rate = [dt](uint64_t now, uint64_t before) {
		return static_cast<double>(now >= before ? now - before : 0) / dt;
	};
	auto sc = [&](std::string_view n) { return rate(s.sidecar_value(n), _prev.sidecar_value(n)); };
	std::fprintf(out, "---- dpumesh stats at %.1f s (%s): %u pod(s), %u pending ----\n",
		     static_cast<double>(s.tsc - _start_tsc) / static_cast<double>(rte_get_tsc_hz()),
		     s.forwarding ? "forwarding" : "stopped", s.nb_pods, s.pending);
	for (size_t i = 0; i < s.ports.size(); i++) {
		const rte_eth_stats &c = s.ports[i].stats;
		rte_eth_stats p = i < _prev.ports.size() ? _prev.ports[i].stats : rte_eth_stats{};
		std::fprintf(out,
			     "port %-2u %-10s RX %10.0f pps %8.3f Gbps | TX %10.0f pps %8.3f Gbps\n",
			     s.ports[i].info->port_id, s.ports[i].info->name.c_str(),
			     rate(c.ipackets, p.ipackets), rate(c.ibytes, p.ibytes) * 8 / 1e9,
			     rate(c.opackets, p.opackets), rate(c.obytes, p.obytes) * 8 / 1e9);
	}
	std::fprintf(out,
		     "msgs/s    network in %.0f | pod to pod %.0f | to peers %.0f | answers out %.0f\n",
		     sc("net_requests"), rate(s.sidecar_value("requests"), _prev.sidecar_value("requests")) -
						 sc("to_peer"),
		     sc("to_peer"), sc("to_network"));
	std::array<uint64_t, 5> cls{}, cls0{};
	uint64_t mesh = 0, mesh0 = 0;
	std::array<uint64_t, sidecar::latency_histogram::nb_buckets> lat{};
	for (size_t i = 0; i < s.services.size(); i++) {
		const control::service_view &v = s.services[i];
		const control::service_view *b = i < _prev.services.size() ? &_prev.services[i] : nullptr;
		for (size_t c = 0; c < cls.size(); c++) {
			cls[c] += v.classes[c];
			cls0[c] += b ? b->classes[c] : 0;
		}
		mesh += v.mesh_generated;
		mesh0 += b ? b->mesh_generated : 0;
		for (size_t k = 0; k < lat.size(); k++)
			lat[k] += v.latency[k] - (b ? b->latency[k] : 0);
	}
	std::fprintf(out, "answers/s 2xx %.0f | 4xx %.0f | 5xx %.0f | mesh errors %.0f | p50 %s p99 %s\n",
		     rate(cls[1], cls0[1]), rate(cls[3], cls0[3]), rate(cls[4], cls0[4]),
		     rate(mesh, mesh0), us_text(sidecar::latency_histogram::quantile_us(lat, 0.5)).c_str(),
		     us_text(sidecar::latency_histogram::quantile_us(lat, 0.99)).c_str());
	std::vector<drop_row> rows = drop_rows(s, _prev);
	uint64_t total = 0, delta = 0;
	for (const drop_row &r : rows) {
		total += r.total;
		delta += r.delta;
	}
	std::sort(rows.begin(), rows.end(), [](const drop_row &a, const drop_row &b) {
		return a.delta != b.delta ? a.delta > b.delta : a.total > b.total;
	});
	std::fprintf(out, "drops/s   %.0f (total %" PRIu64 ")", static_cast<double>(delta) / dt, total);
	for (size_t i = 0; i < rows.size() && i < 4; i++)
		std::fprintf(out, "%s %.*s %" PRIu64, i ? "," : ":", static_cast<int>(rows[i].name.size()),
			     rows[i].name.data(), rows[i].total);
	std::fprintf(out, "%s\n", rows.size() > 4 ? ", ... (show drops, show sidecar)" : "");
}

/* Every counter, one block a period (--stats-format full; scripts read it). */
void stats_printer::full_block(FILE *out, const control::snapshot &s, double dt)
{
	std::fprintf(out, "---- dpumesh stats at %.1f s (%s) ----\n",
		     static_cast<double>(s.tsc - _start_tsc) / static_cast<double>(rte_get_tsc_hz()),
		     s.forwarding ? "forwarding" : "stopped");
	for (size_t i = 0; i < s.ports.size(); i++) {
		const control::port_snapshot &p = s.ports[i];
		if (!p.stats_ok)
			continue;
		rte_eth_stats pv = i < _prev.ports.size() ? _prev.ports[i].stats : rte_eth_stats{};
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
		double busy = st.busy_cycles + st.idle_cycles
				      ? 100.0 * st.busy_cycles / (st.busy_cycles + st.idle_cycles)
				      : 0;
		std::fprintf(out,
			     "stage %-8s lcore %u: work %" PRIu64 ", %.1f TSC cycles/unit, busy %.1f%%;"
			     " thread CPU %.1f cycles/unit (%" PRIu64 " sampled polls, CPU/TSC %.2f)\n",
			     st.name.c_str(), st.lcore, st.work, st.tsc_cycles_per_unit(), busy,
			     st.cpu_cycles_per_unit(s.tsc_hz), st.cpu_polls, st.cpu_tsc_ratio(s.tsc_hz));
	}
	print_lcore_cpu(out, s, false);
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
}

void stats_printer::print_final(FILE *out)
{
	control::snapshot s = take();
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
		     " msg_pool_empty=%" PRIu64 " refused_saturated=%" PRIu64
		     " answered_saturated=%" PRIu64 " answers_handed_on=%" PRIu64
		     " refused_overloaded=%" PRIu64 " overloaded_backlog=%" PRIu64
		     " refused_incomplete=%" PRIu64 " reserve_empty=%" PRIu64,
		     r.frames, r.accepted,
		     r.messages + r.answered_saturated + r.no_consumer + r.ring_full +
			     r.msg_pool_empty + r.reserve_empty,
		     r.duplicates, r.no_consumer, r.ring_full, r.msg_pool_empty, r.refused_saturated,
		     r.answered_saturated, r.answers_handed_on, r.refused_overloaded,
		     r.overloaded_backlog, r.refused_incomplete, r.reserve_empty);
	for (size_t d = 1; d < r.drops.size(); d++)
		std::fprintf(out, " drop_%s=%" PRIu64,
			     port::rx_drop_name(static_cast<port::rx_drop>(d)), r.drops[d]);
	std::fprintf(out, "\n");
	for (const control::tx_stage_view &t : s.tx)
		std::fprintf(out,
			     "final stage=port_tx port=%u frames=%" PRIu64 " bytes=%" PRIu64
			     " stalls=%" PRIu64 " dropped=%" PRIu64 " owed=%" PRIu64
			     " backlog_full=%" PRIu64 " backlog=%u\n",
			     t.port, t.frames, t.bytes, t.stalls, t.dropped, t.owed, t.backlog_full,
			     t.backlog);
	std::fprintf(out, "final pods registered=%u\n", s.nb_pods);
	print_lcore_cpu(out, s, true);
	print_sidecar(out, s, true);
	print_dpa(out, s, true);
	std::fflush(out);
}

void print_pools(FILE *out, const node::instance &n)
{
	/* a port still open may hold its RX ring: net_pcap's infinite_rx keeps its capture */
	std::fprintf(out, "final mempool mbufs_in_use=%u rx_msgs_in_use=%u\n",
		     rte_mempool_in_use_count(n.packet_pool()),
		     rte_mempool_in_use_count(n.message_pool()) +
			     rte_mempool_in_use_count(n.message_reserve()));
}

} // namespace dpumesh::app
