// SPDX-License-Identifier: BSD-3-Clause
// The console's commands: the table (bottom of the file) and one handler per row. Handlers
// only parse their words, call control's action functions and render text.
#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mempool.h>

#include "dpumesh/common/log.h"
#include "dpumesh/control/snapshot.h"
#include "internal/commands.h"

namespace dpumesh::console {

void appendf(std::string &s, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (static_cast<size_t>(n) < sizeof(buf)) {
		s.append(buf, static_cast<size_t>(n));
		return;
	}
	/* a long value (a PEM key, a long path): format again at its size */
	std::string big(static_cast<size_t>(n) + 1, '\0');
	va_start(ap, fmt);
	std::vsnprintf(big.data(), big.size(), fmt, ap);
	va_end(ap);
	big.resize(static_cast<size_t>(n));
	s += big;
}

/* The listing holds each entry as its shard's walk over the table met it, the count is the
 * table's size at the walk's end: a request that came in behind the walk is counted and not
 * listed (and one answered during it may be listed beside a count that no longer holds it). */
std::string pending_header(uint32_t total, uint32_t capacity, size_t listed, size_t most)
{
	std::string h;
	appendf(h, "pending requests: %u (capacity %u)", total, capacity);
	if (listed == most && total > most)
		appendf(h, ", the oldest %zu:\n", most);
	else if (total > listed)
		appendf(h, ", %zu listed (the others came in during the listing):\n", listed);
	else
		h += "\n";
	return h;
}

namespace {

const char *yes_no(bool b) { return b ? "yes" : "no"; }

/* ---- ports ---- */

status cmd_show_port(invocation &inv)
{
	const std::string &what = inv.words[2];
	DPUMESH_ASSIGN_OR_RETURN(auto snaps, control::port_snapshots(inv.node, inv.words[3]));
	for (const control::port_snapshot &s : snaps) {
		const port::port_info &p = *s.info;
		appendf(inv.out, "port %u (%s, %s)\n", p.port_id, p.name.c_str(), p.dev.c_str());
		if (what == "stats") {
			const rte_eth_stats &st = s.stats;
			appendf(inv.out,
				"  rx_packets=%" PRIu64 " rx_bytes=%" PRIu64 " rx_missed=%" PRIu64
				" rx_errors=%" PRIu64 " rx_nombuf=%" PRIu64 "\n"
				"  tx_packets=%" PRIu64 " tx_bytes=%" PRIu64 " tx_errors=%" PRIu64 "\n",
				st.ipackets, st.ibytes, st.imissed, st.ierrors, st.rx_nombuf,
				st.opackets, st.obytes, st.oerrors);
		} else if (what == "info") {
			char mac[RTE_ETHER_ADDR_FMT_SIZE];
			rte_ether_format_addr(mac, sizeof(mac), &s.mac);
			uint16_t mtu = 0;
			rte_eth_dev_get_mtu(p.port_id, &mtu);
			int promisc = rte_eth_promiscuous_get(p.port_id);
			appendf(inv.out,
				"  driver=%s role=%s rx_queues=%u tx_queues=%u socket=%d\n"
				"  mac=%s mtu=%u promiscuous=%s link=%s speed=%s\n",
				p.driver.c_str(), std::string(config::to_string(p.role)).c_str(),
				p.nb_rxq, p.nb_txq, rte_eth_dev_socket_id(p.port_id), mac, mtu,
				yes_no(promisc == 1), s.link.link_status ? "up" : "down",
				rte_eth_link_speed_to_str(s.link.link_speed));
		} else {
			DPUMESH_ASSIGN_OR_RETURN(auto xs, control::port_xstats(p));
			for (const auto &[name, value] : xs)
				appendf(inv.out, "  %-32s %" PRIu64 "\n", name.c_str(), value);
		}
	}
	return status::ok();
}

status cmd_clear_port_stats(invocation &inv)
{
	DPUMESH_RETURN_IF_ERROR(control::clear_port_stats(inv.node, inv.words[3]));
	appendf(inv.out, "port stats cleared: %s\n", inv.words[3].c_str());
	return status::ok();
}

/* ---- lcores, stages, drops ---- */

double percent(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

status cmd_show_lcores(invocation &inv)
{
	for (const control::lcore_view &l : control::lcores(inv.node)) {
		if (l.is_main) {
			appendf(inv.out, "lcore %u  main    control: pod registrations, console, stats "
					 "(%s; telemetry has its own thread)\n",
				l.id, lcore::main_thread_policy().c_str());
			continue;
		}
		std::string st;
		for (const std::string &s : l.stages)
			st += (st.empty() ? "" : ",") + s;
		appendf(inv.out, "lcore %u  worker  %-7s stages=%s busy=%.1f%%\n", l.id,
			l.state.c_str(), st.empty() ? "none" : st.c_str(),
			percent(l.busy_cycles, l.busy_cycles + l.idle_cycles));
		if (l.worker >= 0) /* several workers: what this one runs to completion */
			appendf(inv.out, "          worker %d: %s\n", l.worker, l.placement.c_str());
	}
	appendf(inv.out, "idle policy %s, forwarding %s\n",
		std::string(config::to_string(inv.node.runner().idle())).c_str(),
		inv.node.runner().forwarding() ? "on" : "off");
	return status::ok();
}

status cmd_show_stages(invocation &inv)
{
	control::snapshot snap = control::take_snapshot(inv.node, control::snap::stages);
	if (snap.stages.empty())
		appendf(inv.out, "no stages (no ports configured)\n");
	for (const lcore::stage_view &s : snap.stages)
		appendf(inv.out,
			"stage %s lcore=%u calls=%" PRIu64 " work=%" PRIu64 " busy_cycles=%" PRIu64
			" idle_cycles=%" PRIu64 " cycles_per_unit=%.1f busy=%.1f%% cpu_polls=%" PRIu64
			" cpu_work=%" PRIu64 " cpu_ns=%" PRIu64 " cpu_cycles_per_unit=%.1f"
			" cpu_tsc_ratio=%.2f cpu_idle_polls=%" PRIu64 " cpu_ns_per_idle_poll=%.0f\n",
			s.name.c_str(), s.lcore, s.calls, s.work, s.busy_cycles, s.idle_cycles,
			s.tsc_cycles_per_unit(), percent(s.busy_cycles, s.busy_cycles + s.idle_cycles),
			s.cpu_polls, s.cpu_work, s.cpu_ns, s.cpu_cycles_per_unit(snap.tsc_hz),
			s.cpu_tsc_ratio(snap.tsc_hz), s.cpu_idle_polls,
			s.cpu_idle_polls ? static_cast<double>(s.cpu_idle_ns) /
						   static_cast<double>(s.cpu_idle_polls)
					 : 0.0);
	for (const lcore::lcore_cpu_view &l : snap.lcore_cpu)
		appendf(inv.out,
			"lcore %u thread=%d wall_s=%.3f user_s=%.3f sys_s=%.3f oncpu=%.1f%% "
			"runqueue=%.1f%% switches=%" PRIu64 "/%" PRIu64 " clock_read_ns=%" PRIu64 "\n",
			l.lcore, l.tid, static_cast<double>(l.wall_ns) / 1e9,
			static_cast<double>(l.user_ns) / 1e9, static_cast<double>(l.sys_ns) / 1e9,
			l.oncpu_percent(), l.runq_percent(), l.voluntary_switches,
			l.involuntary_switches, l.clock_read_ns);
	appendf(inv.out, "tsc_hz=%" PRIu64 " forwarding=%s\n", inv.node.runner().tsc_hz(),
		snap.forwarding ? "on" : "off");
	return status::ok();
}

status cmd_show_drops(invocation &inv)
{
	const control::drop_totals t = control::take_snapshot(inv.node, control::snap::rx).rx;
	appendf(inv.out,
		"port_rx frames=%" PRIu64 " bytes=%" PRIu64 " accepted=%" PRIu64 " messages=%" PRIu64
		" in_reassembly=%" PRIu64 " rx_msgs_in_use=%" PRIu64 " ingress_queued=%" PRIu64 "\n",
		t.frames, t.bytes, t.accepted, t.messages, t.in_reassembly, t.rx_msgs_in_use,
		t.ingress_queued);
	t.for_each([&](const char *name, const char *help, uint64_t v) {
		appendf(inv.out, "  drop %-14s %12" PRIu64 "  %s\n", name, v, help);
	});
	return status::ok();
}

/* ---- pods, pending requests, DPA threads, DMA engines ---- */

status show_pods(invocation &inv, std::string_view which, bool detail)
{
	DPUMESH_ASSIGN_OR_RETURN(auto views, control::pods(inv.node, which));
	if (views.empty())
		appendf(inv.out, "no pods registered\n");
	for (const control::pod_view &v : views) {
		const pod_counters &c = v.counters;
		appendf(inv.out,
			"pod %u service=%s generation=%u handle=%#x tx_sqs=%u tx_taken=%" PRIu64
			" tx_refused=%" PRIu64 " tx_done=%" PRIu64 " rx_delivered=%" PRIu64
			" rx_no_slot=%" PRIu64 " rx_sq_full=%" PRIu64 " doorbells=%" PRIu64
			" doorbells_suppressed=%" PRIu64 " tx_outstanding=%u in_flight=%" PRIu64
			" quota_refused=%" PRIu64 " answers_refused=%" PRIu64 " dest_refused=%" PRIu64
			"\n",
			v.pod_id, v.service.c_str(), v.generation, v.handle, v.nb_tx_sqs, c.tx_taken,
			c.tx_refused_total(), c.tx_done_posted, c.rx_delivered, c.rx_no_slot,
			c.rx_sq_full, c.doorbells, c.doorbells_suppressed, v.tx_outstanding,
			v.quota.in_flight, v.quota.refused, v.quota.answers_refused,
			v.quota.dest_refused);
		if (!detail)
			continue;
		appendf(inv.out,
			"  pod_lookup_table[%u]: rx_header_mkey=%#x rx_body_mkey=%#x "
			"rx_sq_doorbell=%" PRIu64 " is_active=%u generation=%u\n",
			v.pod_id, v.entry.rx_header_mkey, v.entry.rx_body_mkey, v.entry.rx_sq_doorbell,
			v.entry.is_active, v.entry.generation);
		for (size_t r = 0; r < static_cast<size_t>(tx_refusal::count); r++)
			if (c.tx_refused[r])
				appendf(inv.out, "  tx refused %-16s %" PRIu64 "\n",
					tx_refusal_name(static_cast<tx_refusal>(r)), c.tx_refused[r]);
		for (size_t r = 0; r < static_cast<size_t>(refill_refusal::count); r++)
			if (c.refill_refused[r])
				appendf(inv.out, "  refill refused %-16s %" PRIu64 "\n",
					refill_refusal_name(static_cast<refill_refusal>(r)),
					c.refill_refused[r]);
	}
	return status::ok();
}

status cmd_show_pods(invocation &inv) { return show_pods(inv, "all", false); }

/* Quotas: the limits, then every pod and network address holding or refused anything. */
status cmd_show_quota(invocation &inv)
{
	auto cfg = inv.node.config();
	const config::pools_config::quota_config &q = cfg->pools.quota;
	appendf(inv.out,
		"limits: requests_per_pod=%u requests_per_source=%u answers_per_pod=%u "
		"answer_wait_ms=%u\n",
		q.requests_per_pod, q.requests_per_source, q.answers_per_pod, q.answer_wait_ms);
	DPUMESH_ASSIGN_OR_RETURN(auto pods, control::pods(inv.node, "all"));
	for (const control::pod_view &v : pods)
		appendf(inv.out,
			"pod %u service=%s in_flight=%" PRIu64 " peak=%" PRIu64 " refused=%" PRIu64
			" answers_refused=%" PRIu64 "\n",
			v.pod_id, v.service.c_str(), v.quota.in_flight, v.quota.peak, v.quota.refused,
			v.quota.answers_refused);
	for (const control::source_quota_view &s : control::source_quotas(inv.node))
		appendf(inv.out,
			"source %s in_flight=%" PRIu64 " peak=%" PRIu64 " refused=%" PRIu64 "\n",
			s.address.c_str(), s.usage.in_flight, s.usage.peak, s.usage.refused);
	return status::ok();
}
status cmd_show_pod(invocation &inv) { return show_pods(inv, inv.words[2], true); }

status cmd_show_pending(invocation &inv)
{
	constexpr size_t most = 32;
	uint32_t total = 0, capacity = 0;
	DPUMESH_ASSIGN_OR_RETURN(auto views, control::pending(inv.node, most, &total, &capacity));
	const uint64_t hz = inv.node.runner().tsc_hz();
	const uint64_t now = rte_rdtsc();
	inv.out += pending_header(total, capacity, views.size(), most);
	for (const control::pending_view &v : views) {
		const pending::entry &e = v.entry;
		double age_ms = static_cast<double>(now - e.start_tsc) * 1000.0 / static_cast<double>(hz);
		double left_ms = e.deadline_tsc > now ? static_cast<double>(e.deadline_tsc - now) * 1000.0 /
								static_cast<double>(hz)
						      : 0.0;
		appendf(inv.out,
			"  token=%#x origin=%s dest=%s req_id=%u step_id=%u attempt=%u "
			"age=%.1fms deadline_in=%.1fms\n",
			v.token, control::party_text(e.origin).c_str(),
			control::party_text(e.dest).c_str(), e.origin_req_id, e.step_id, e.attempt,
			age_ms, left_ms);
	}
	return status::ok();
}

status cmd_show_dpa(invocation &inv)
{
	control::snapshot snap = control::take_snapshot(inv.node, control::snap::dpa);
	if (!snap.has_dpa)
		return errorf("no DPA emulator in this node");
	appendf(inv.out, "DPA emulator: %zu thread(s), hbufs in use %u of %u (%u B each)\n",
		snap.dpa.size(), snap.hbufs_in_use, snap.hbufs_total, snap.hbuf_size);
	for (const control::dpa_thread_view &t : snap.dpa)
		appendf(inv.out,
			"thread %u: tx_taken=%" PRIu64 " tx_posted=%" PRIu64 " rx_delivered=%" PRIu64
			" rx_handed_back=%" PRIu64 " tx_completions=%" PRIu64
			" remote_completions=%" PRIu64 " doorbells=%" PRIu64
			" doorbells_suppressed=%" PRIu64 " doorbell_cycles=%" PRIu64
			" tx_parks=%" PRIu64 " tx_rings=%" PRIu64
			" tx_ring_checks=%" PRIu64 "\n"
			"  tx pods: cools=%" PRIu64 " unparks=%" PRIu64 " looks=%" PRIu64
			" sq_heads=%" PRIu64 " sweep_finds=%" PRIu64 " follow_ups=%" PRIu64 "\n"
			"  kernels: tx_inflight=%u rx_inflight=%u tx_no_hbuf=%" PRIu64
			" tx_dma_errors=%" PRIu64 " rx_completions=%" PRIu64 " rx_bad_commands=%" PRIu64
			"\n",
			t.thread, t.tx_taken, t.tx_posted, t.rx_delivered, t.rx_handed_back,
			t.tx_completions, t.remote_completions, t.doorbells, t.doorbells_suppressed,
			t.doorbell_cycles, t.tx_parks, t.tx_rings, t.tx_ring_checks,
			t.tx_cools, t.tx_unparks, t.tx_ready_calls, t.tx_sq_looks, t.tx_sweep_finds, t.follow_ups,
			t.tx_inflight, t.rx_inflight,
			t.tx_no_hbuf, t.tx_dma_errors, t.rx_completions, t.rx_bad_commands);
	return status::ok();
}

status cmd_show_dma(invocation &inv)
{
	control::snapshot snap = control::take_snapshot(inv.node, control::snap::dpa);
	if (!snap.has_dpa)
		return errorf("no DPA emulator in this node");
	for (const control::dpa_thread_view &t : snap.dpa)
		appendf(inv.out,
			"engine %u %s: max_copy=%u B max_inflight=%u inflight=%u ops=%" PRIu64
			" segments=%" PRIu64 " bytes=%" PRIu64 " completed=%" PRIu64 " errors=%" PRIu64
			" ring_full=%" PRIu64 "\n",
			t.thread, t.dma_name.c_str(), t.dma_max_copy, t.dma_max_inflight, t.dma_inflight,
			t.dma_ops, t.dma_segments, t.dma_bytes, t.dma_completed, t.dma_errors,
			t.dma_ring_full);
	return status::ok();
}

status cmd_show_sidecar(invocation &inv)
{
	control::snapshot snap = control::take_snapshot(inv.node, control::snap::sidecar);
	if (!snap.has_sidecar)
		return errorf("no sidecar in this node");
	for (const control::counter_row &r : snap.sidecar)
		appendf(inv.out, "  %-18s %12" PRIu64 "  %s\n", r.name, r.value, r.help);
	return status::ok();
}

/* ---- config views ---- */

status cmd_show_config(invocation &inv)
{
	auto cfg = inv.node.config();
	const config::node_config &c = *cfg;
	appendf(inv.out, "config %s\n", c.source.c_str());
	appendf(inv.out, "  node %s mac=%s ipv4=%s ipv6=%s mesh_port=%u\n", c.node.name.c_str(),
		control::format_mac(c.node.mac).c_str(),
		c.node.ipv4 ? control::format_ipv4(*c.node.ipv4).c_str() : "-",
		c.node.ipv6 ? control::format_ipv6(*c.node.ipv6).c_str() : "-", c.node.mesh_port);
	for (const config::port_config &p : c.ports)
		appendf(inv.out, "  port %s dev=%s role=%s rxq=%u txq=%u mtu=%u\n", p.name.c_str(),
			p.dev.c_str(), std::string(config::to_string(p.role)).c_str(), p.rx_queues,
			p.tx_queues, p.mtu);
	appendf(inv.out, "  mempool mbufs=%u cache=%u data_room=%u\n", c.mempool.mbufs,
		c.mempool.cache, c.mempool.data_room);
	std::string map;
	for (const auto &[stage, lcore] : c.lcores.stages)
		map += " " + stage + "=" + std::to_string(lcore);
	appendf(inv.out, "  lcores idle=%s idle_polls=%u max_sleep_us=%u spin_us=%u control_priority=%u "
			 "stages:%s\n",
		std::string(config::to_string(c.lcores.idle)).c_str(), c.lcores.idle_polls,
		c.lcores.max_sleep_us, c.lcores.spin_us, c.lcores.control_priority,
		map.empty() ? " (default)" : map.c_str());
	appendf(inv.out, "  services=%zu routes=%zu peers=%zu rbac=%zu rate_limits=%zu "
			 "circuit_breakers=%zu timeouts=%zu jwt=%s\n",
		c.services.size(), c.routes.size(), c.peers.size(), c.policy.rbac.size(),
		c.policy.rate_limits.size(), c.policy.circuit_breakers.size(),
		c.policy.timeouts.size(), yes_no(c.policy.jwt.has_value()));
	appendf(inv.out, "  dpa=%s dma=%s%s%s stats-period=%u s\n",
		std::string(config::to_string(c.dpa.backend)).c_str(),
		std::string(config::to_string(c.dma.backend)).c_str(), c.dma.device.empty() ? "" : ":",
		c.dma.device.c_str(), inv.node.stats_period.load());
	return status::ok();
}

status cmd_show_services(invocation &inv)
{
	auto cfg = inv.node.config();
	if (cfg->services.empty())
		appendf(inv.out, "no services\n");
	for (const config::service_config &s : cfg->services) {
		const config::route_config *r = cfg->find_route(s.name);
		appendf(inv.out, "service %-16s max_pods=%u route=%s\n", s.name.c_str(), s.max_pods,
			r ? r->to.c_str() : "none");
	}
	if (const pod_registry *reg = inv.node.registry())
		appendf(inv.out, "(registered pods: %u; see 'show pods')\n", reg->nb_pods());
	return status::ok();
}

status cmd_show_routes(invocation &inv)
{
	auto cfg = inv.node.config();
	if (cfg->routes.empty())
		appendf(inv.out, "no routes\n");
	for (const config::route_config &r : cfg->routes) {
		std::string via = "local pods";
		if (const config::peer_config *p = cfg->find_peer(r.to))
			via = "peer " + p->name + " " +
			      (p->ipv4 ? control::format_ipv4(*p->ipv4)
				       : p->ipv6 ? control::format_ipv6(*p->ipv6) : std::string("?")) +
			      ":" + std::to_string(p->mesh_port);
		appendf(inv.out, "route %-16s -> %-10s (%s)\n", r.service.c_str(), r.to.c_str(),
			via.c_str());
	}
	return status::ok();
}

status cmd_show_peers(invocation &inv)
{
	auto cfg = inv.node.config();
	if (cfg->peers.empty())
		appendf(inv.out, "no peers\n");
	for (const config::peer_config &p : cfg->peers)
		appendf(inv.out, "peer %-12s mac=%s ipv4=%s ipv6=%s mesh_port=%u\n", p.name.c_str(),
			control::format_mac(p.mac).c_str(),
			p.ipv4 ? control::format_ipv4(*p.ipv4).c_str() : "-",
			p.ipv6 ? control::format_ipv6(*p.ipv6).c_str() : "-", p.mesh_port);
	return status::ok();
}

void append_metrics(std::string &out, const char *label, const sidecar::l7_metrics &m)
{
	const auto &c = m.classes;
	appendf(out,
		"  %-28s requests=%" PRIu64 " refused=%" PRIu64 " 2xx=%" PRIu64 " 4xx=%" PRIu64
		" 5xx=%" PRIu64 " mesh=%" PRIu64 " retries=%" PRIu64 " timeouts=%" PRIu64
		" p50=%" PRIu64 "us p99=%" PRIu64 "us p99.9=%" PRIu64 "us\n",
		label, m.requests.get(), m.refused.get(), c[1].get(), c[3].get(), c[4].get(),
		m.mesh_generated.get(), m.retries.get(), m.timeouts.get(),
		m.latency.quantile_us(0.5), m.latency.quantile_us(0.99),
		m.latency.quantile_us(0.999));
	/* refusals by reason, those that happened (docs/overload.md, "Counted") */
	std::string by;
	for (size_t r = 0; r < m.refused_by.size(); r++)
		if (const uint64_t n = m.refused_by[r].get())
			appendf(by, "%s%s=%" PRIu64, by.empty() ? "" : " ",
				sidecar::refusal_reason_name(static_cast<sidecar::refusal_reason>(r)), n);
	if (!by.empty())
		appendf(out, "  %-28s refused by reason: %s\n", "", by.c_str());
}

status cmd_show_metrics(invocation &inv)
{
	sidecar::stage *sc = inv.node.sidecar();
	if (!sc)
		return errorf("no sidecar in this node");
	appendf(inv.out, "by service (since start; latency: bucket upper bounds, log2 us)\n");
	for (uint32_t i = 0; i < sc->nb_services(); i++) {
		sidecar::l7_metrics t; /* the sum over the shards, as telemetry gives it */
		for (const sidecar::stage *sh : inv.node.shards())
			sh->add_service_metrics(i, t);
		append_metrics(inv.out, sc->service_name(i).c_str(), t);
	}
	auto pol = sc->policy();
	appendf(inv.out, "by route (since policy version %" PRIu64 ")\n", pol->version());
	for (const sidecar::service_rules &svc : pol->services())
		for (const sidecar::route_rule &r : svc.routes) {
			std::string label = svc.name + " " + (r.configured ? r.path_prefix : "default");
			append_metrics(inv.out, label.c_str(), pol->route_metrics(r.metrics));
		}
	return status::ok();
}

/* ---- actions ---- */

status cmd_start(invocation &inv)
{
	bool changed = control::set_forwarding(inv.node, true);
	appendf(inv.out, "%s\n", changed ? "forwarding started" : "forwarding is already on");
	return status::ok();
}

status cmd_stop(invocation &inv)
{
	bool changed = control::set_forwarding(inv.node, false);
	appendf(inv.out, "%s\n", changed ? "forwarding stopped" : "forwarding is already off");
	return status::ok();
}

status cmd_set_log(invocation &inv)
{
	DPUMESH_RETURN_IF_ERROR(control::set_log_level(inv.words[2], inv.words[3]));
	appendf(inv.out, "log level of %s: %s\n", inv.words[2].c_str(), inv.words[3].c_str());
	return status::ok();
}

status cmd_show_log(invocation &inv)
{
	for (const control::log_level_view &l : control::log_levels())
		appendf(inv.out, "%-18s %s\n", l.type.c_str(), l.level.c_str());
	return status::ok();
}

status cmd_set_stats_period(invocation &inv)
{
	DPUMESH_RETURN_IF_ERROR(control::set_stats_period(inv.node, inv.words[2]));
	appendf(inv.out, "stats-period %u s%s\n", inv.node.stats_period.load(),
		inv.node.stats_period.load() ? "" : " (periodic stats off)");
	return status::ok();
}

status cmd_reload_config(invocation &inv)
{
	DPUMESH_ASSIGN_OR_RETURN(control::reload_report rep, control::reload_config(inv.node));
	std::string ch;
	for (const std::string &c : rep.changed)
		ch += (ch.empty() ? "" : ", ") + c;
	appendf(inv.out, "reloaded %s: %s%s\n", rep.source.c_str(), ch.empty() ? "no change" : "applied ",
		ch.c_str());
	return status::ok();
}

status cmd_quit(invocation &inv)
{
	inv.quit = true;
	appendf(inv.out, "bye\n");
	return status::ok();
}

/* ---- help ---- */

void append_row(std::string &out, const command_spec &c)
{
	if (std::strlen(c.syntax) > 36)
		appendf(out, "  %s\n  %-36s %s\n", c.syntax, "", c.help);
	else
		appendf(out, "  %-36s %s\n", c.syntax, c.help);
}

status cmd_help(invocation &inv)
{
	appendf(inv.out, "dpumesh console commands ('help <topic>' narrows, TAB completes):\n");
	for (const command_spec &c : commands())
		append_row(inv.out, c);
	appendf(inv.out, "<port> is a port id or \"all\"; <type> is a dpumesh log type or \"all\".\n");
	return status::ok();
}

status cmd_help_topic(invocation &inv)
{
	const std::string &topic = inv.words[1];
	std::string rows;
	std::vector<std::string> firsts;
	for (const command_spec &c : commands()) {
		bool hit = false;
		for (const std::string &tok : split_words(c.syntax)) {
			std::string_view t = tok;
			while (!t.empty()) {
				size_t bar = t.find('|');
				std::string_view choice = t.substr(0, bar);
				std::string_view name = choice.size() > 2 && choice.front() == '<'
								? choice.substr(1, choice.size() - 2)
								: std::string_view();
				if (name.size() > 3 && name.substr(name.size() - 3) == "...")
					name.remove_suffix(3);
				if (choice == topic || (!name.empty() && name == topic))
					hit = true;
				t = bar == std::string_view::npos ? std::string_view() : t.substr(bar + 1);
			}
		}
		if (hit)
			append_row(rows, c);
		std::string f = split_words(c.syntax)[0];
		if (std::find(firsts.begin(), firsts.end(), f) == firsts.end())
			firsts.push_back(f);
	}
	if (rows.empty()) {
		std::string all;
		for (const std::string &f : firsts)
			all += (all.empty() ? "" : ", ") + f;
		return errorf("Bad arguments: no help topic \"%s\" (try one of: %s)", topic.c_str(),
			      all.c_str());
	}
	inv.out += rows;
	return status::ok();
}

/* The console's own rows. One row per command; console.cc generates cmdline instances, help
 * and hints from these and the rows modules register (register_commands: the L7 policy
 * module's rows are in lib/policy/cli). */
const command_spec command_table[] = {
	{"help", "list every command", &cmd_help},
	{"help <topic>", "commands whose syntax has the word <topic> (e.g. help port)", &cmd_help_topic},
	{"show port stats|info|xstats <port>", "port statistics, device info, driver xstats", &cmd_show_port},
	{"clear port stats <port>", "reset a port's statistics", &cmd_clear_port_stats},
	{"show lcores", "lcores, their role, state and stages", &cmd_show_lcores},
	{"show stages", "what runs where: calls, work, TSC busy/idle cycles, thread CPU per unit", &cmd_show_stages},
	{"show drops", "port RX frames, accepted, and drops by reason", &cmd_show_drops},
	{"show config", "summary of the running config", &cmd_show_config},
	{"show services", "services from the config and their routes", &cmd_show_services},
	{"show routes", "service routes: local pods or a peer node", &cmd_show_routes},
	{"show peers", "peer nodes", &cmd_show_peers},
	{"show metrics", "requests by service and route: answers by class, retries, latency", &cmd_show_metrics},
	{"start", "resume polling of the port stages", &cmd_start},
	{"stop", "pause polling of the port stages (pods keep talking through the DPA)", &cmd_stop},
	{"set log <type> emerg|alert|crit|err|warning|notice|info|debug", "set a log level", &cmd_set_log},
	{"show log", "log levels of the dpumesh types", &cmd_show_log},
	{"set stats-period <seconds>", "periodic stats every N s (0: off)", &cmd_set_stats_period},
	{"reload config", "re-load the config file; apply routes, policy and service limits", &cmd_reload_config},
	{"show pods", "registered pods: service, generation, queue and refusal counters", &cmd_show_pods},
	{"show pod <id>", "one pod: its pod_lookup_table entry and counters by reason", &cmd_show_pod},
	{"show pending", "requests waiting for their response (pending table)", &cmd_show_pending},
	{"show quota", "quotas: limits, and what each pod and network address holds and was refused", &cmd_show_quota},
	{"show sidecar", "sidecar counters: requests, responses, mesh errors by reason", &cmd_show_sidecar},
	{"show dpa", "DPA emulator threads and kernel state", &cmd_show_dpa},
	{"show dma", "DMA engines of the DPA threads", &cmd_show_dma},
	{"quit", "stop dpumesh (as SIGINT)", &cmd_quit},
};

std::vector<command_spec> &table()
{
	static std::vector<command_spec> t(std::begin(command_table), std::end(command_table));
	return t;
}

} // namespace

void register_commands(std::span<const command_spec> rows)
{
	std::vector<command_spec> &t = table();
	for (const command_spec &r : rows) {
		bool known = std::any_of(t.begin(), t.end(), [&](const command_spec &c) {
			return std::strcmp(c.syntax, r.syntax) == 0 && c.run == r.run;
		});
		if (!known)
			t.push_back(r);
	}
}

std::span<const command_spec> commands() { return table(); }

bool syntax_token::matches(const std::string &w) const
{
	return choices.empty() || std::find(choices.begin(), choices.end(), w) != choices.end();
}

std::vector<syntax_token> parse_syntax(const char *syntax)
{
	std::vector<syntax_token> out;
	for (const std::string &w : split_words(syntax)) {
		syntax_token t;
		t.text = w;
		t.rest = w.size() > 5 && w.front() == '<' && w.compare(w.size() - 4, 4, "...>") == 0;
		if (w.front() != '<') {
			size_t s = 0;
			for (;;) {
				size_t bar = w.find('|', s);
				t.choices.push_back(w.substr(s, bar - s));
				if (bar == std::string::npos)
					break;
				s = bar + 1;
			}
		}
		out.push_back(std::move(t));
	}
	return out;
}

std::string first_overlap(std::span<const command_spec> table)
{
	for (size_t i = 0; i < table.size(); i++)
		for (size_t j = i + 1; j < table.size(); j++) {
			auto a = parse_syntax(table[i].syntax), b = parse_syntax(table[j].syntax);
			if (a.size() != b.size())
				continue;
			bool all = true;
			for (size_t k = 0; k < a.size() && all; k++) {
				if (a[k].choices.empty() || b[k].choices.empty())
					continue;
				bool common = false;
				for (const std::string &c : a[k].choices)
					common = common || b[k].matches(c);
				all = common;
			}
			if (all)
				return std::string(table[i].syntax) + " / " + table[j].syntax;
		}
	return "";
}

std::vector<std::string> split_words(std::string_view line)
{
	std::vector<std::string> out;
	size_t i = 0;
	while (i < line.size()) {
		while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
			i++;
		size_t j = i;
		while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\n' &&
		       line[j] != '\r')
			j++;
		if (j > i)
			out.emplace_back(line.substr(i, j - i));
		if (j < line.size() && (line[j] == '\n' || line[j] == '\r'))
			break;
		i = j;
	}
	return out;
}

} // namespace dpumesh::console
