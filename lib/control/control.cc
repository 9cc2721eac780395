// SPDX-License-Identifier: BSD-3-Clause
// Action functions of the control plane: snapshots of ports, lcores, drops; start/stop,
// log levels, stats period and config reload.
#include "dpumesh/control/control.h"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <cstring>

#include <rte_ether.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dpumesh/common/log.h"
#include "dpumesh/common/numbers.h"

namespace dpumesh::control {

node::node(const std::vector<port::port_info> &ports,
	   const std::vector<port::rx_ctx *> &rx, lcore::runner &runner,
	   config::node_config cfg, bool cfg_from_file, config_adjust adjust)
	: _ports(ports), _rx(rx), _runner(runner),
	  _cfg(std::make_shared<const config::node_config>(std::move(cfg))),
	  _cfg_from_file(cfg_from_file), _adjust(std::move(adjust))
{
}

node::node(::dpumesh::node::instance &n, bool cfg_from_file, config_adjust adjust)
	: node(n.ports(), n.rx(), n.runner(), n.config(), cfg_from_file, std::move(adjust))
{
	_inst = &n;
	set_mesh(&n.registry(), &n.sidecar(), n.emulator());
	set_shards(n.shards());
}

std::shared_ptr<const config::node_config> node::config() const
{
	std::lock_guard<std::mutex> lock(_mu);
	return _cfg;
}

void node::replace_config(std::shared_ptr<const config::node_config> cfg)
{
	std::lock_guard<std::mutex> lock(_mu);
	_cfg = std::move(cfg);
}

std::string format_mac(const uint8_t mac[6])
{
	char b[RTE_ETHER_ADDR_FMT_SIZE];
	std::snprintf(b, sizeof(b), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2],
		      mac[3], mac[4], mac[5]);
	return b;
}

std::string format_ipv4(const in_addr &a)
{
	char b[INET_ADDRSTRLEN];
	return inet_ntop(AF_INET, &a, b, sizeof(b)) ? b : "?";
}

std::string format_ipv6(const in6_addr &a)
{
	char b[INET6_ADDRSTRLEN];
	return inet_ntop(AF_INET6, &a, b, sizeof(b)) ? b : "?";
}

/* ---- ports ---- */

result<std::vector<const port::port_info *>> select_ports(const node &n, std::string_view which)
{
	std::vector<const port::port_info *> out;
	if (which == "all") {
		for (const port::port_info &p : n.ports())
			out.push_back(&p);
		return out;
	}
	std::string ids;
	for (const port::port_info &p : n.ports())
		ids += (ids.empty() ? "" : ", ") + std::to_string(p.port_id);
	std::string w(which);
	const auto parsed = parse_whole(w.c_str(), 0, UINT64_MAX);
	if (!parsed)
		return errorf("Bad arguments: port \"%s\" is neither a port id nor \"all\" "
			      "(ports: %s)",
			      w.c_str(), ids.empty() ? "none" : ids.c_str());
	const uint64_t id = *parsed;
	for (const port::port_info &p : n.ports())
		if (p.port_id == id) {
			out.push_back(&p);
			return out;
		}
	return errorf("Bad arguments: port %" PRIu64 " is not a dpumesh port (ports: %s)", id,
		      ids.empty() ? "none" : ids.c_str());
}

result<std::vector<port_snapshot>> port_snapshots(const node &n, std::string_view which)
{
	DPUMESH_ASSIGN_OR_RETURN(auto sel, select_ports(n, which));
	std::vector<port_snapshot> out;
	for (const port::port_info *p : sel) {
		port_snapshot s;
		s.info = p;
		s.stats_ok = rte_eth_stats_get(p->port_id, &s.stats) == 0;
		rte_eth_link_get_nowait(p->port_id, &s.link);
		rte_eth_macaddr_get(p->port_id, &s.mac);
		out.push_back(s);
	}
	return out;
}

result<std::vector<std::pair<std::string, uint64_t>>> port_xstats(const port::port_info &p)
{
	int nb = rte_eth_xstats_get_names(p.port_id, nullptr, 0);
	if (nb < 0)
		return errorf("port %u: xstats: %s", p.port_id, rte_strerror(-nb));
	std::vector<rte_eth_xstat_name> names(static_cast<size_t>(nb));
	std::vector<rte_eth_xstat> vals(static_cast<size_t>(nb));
	int got = rte_eth_xstats_get_names(p.port_id, names.data(), nb);
	int gotv = rte_eth_xstats_get(p.port_id, vals.data(), nb);
	if (got < 0 || gotv < 0 || got != gotv)
		return errorf("port %u: xstats changed while reading; try again", p.port_id);
	std::vector<std::pair<std::string, uint64_t>> out;
	for (int i = 0; i < gotv; i++)
		if (vals[i].id < names.size())
			out.emplace_back(names[vals[i].id].name, vals[i].value);
	return out;
}

status clear_port_stats(node &n, std::string_view which)
{
	DPUMESH_ASSIGN_OR_RETURN(auto sel, select_ports(n, which));
	for (const port::port_info *p : sel) {
		int rc = rte_eth_stats_reset(p->port_id);
		if (rc != 0)
			return errorf("port %u: stats reset: %s", p->port_id, rte_strerror(-rc));
		rc = rte_eth_xstats_reset(p->port_id);
		if (rc != 0 && rc != -ENOTSUP)
			return errorf("port %u: xstats reset: %s", p->port_id, rte_strerror(-rc));
	}
	return status::ok();
}

/* ---- stages, lcores, drops ---- */

namespace {
/* Worker k of a node with several: its RX queues, its sidecar shard, its DPA threads. */
void describe_worker(const ::dpumesh::node::instance &inst, lcore_view &v)
{
	const std::vector<unsigned> &w = inst.worker_lcores();
	const auto at = std::find(w.begin(), w.end(), v.id);
	if (at == w.end())
		return;
	const unsigned k = static_cast<unsigned>(at - w.begin()), nw = static_cast<unsigned>(w.size());
	v.worker = static_cast<int>(k);
	std::string rx;
	if (const port::rx_ctx *c = k < inst.worker_rx().size() ? inst.worker_rx()[k] : nullptr)
		for (const port::rx_ctx::queue &q : c->queues)
			for (const port::port_info &p : inst.ports())
				if (p.port_id == q.port)
					rx += (rx.empty() ? "" : ",") + p.name + ":" + std::to_string(q.queue);
	std::string dpa;
	for (unsigned t = k; t < inst.nb_dpa_threads(); t += nw)
		dpa += (dpa.empty() ? "" : ",") + std::to_string(t);
	v.placement = "rx=" + (rx.empty() ? std::string("none") : rx) + " shard=" +
		      std::to_string(k) + " dpa=" + dpa;
}
} // namespace

std::vector<lcore_view> lcores(const node &n)
{
	std::vector<lcore::stage_view> st = n.runner().stages();
	std::vector<lcore_view> out;
	unsigned id;
	RTE_LCORE_FOREACH(id)
	{
		lcore_view v{id, id == rte_get_main_lcore(), "", {}, 0, 0, -1, {}};
		if (v.is_main)
			v.state = "control";
		else
			v.state = rte_eal_get_lcore_state(id) == RUNNING ? "running" : "wait";
		for (const lcore::stage_view &s : st)
			if (s.lcore == id) {
				v.stages.push_back(s.name);
				v.busy_cycles += s.busy_cycles;
				v.idle_cycles += s.idle_cycles;
			}
		if (const ::dpumesh::node::instance *inst = n.instance())
			describe_worker(*inst, v);
		out.push_back(std::move(v));
	}
	return out;
}

drop_totals drops(const node &n)
{
	drop_totals t;
	if (!n.rx().empty()) { /* one pool and one reserve for every port RX */
		const port::rx_ctx &rx = *n.rx().front();
		t.rx_msgs_in_use = rte_mempool_in_use_count(rx.msg_pool) +
				   (rx.reserve_pool ? rte_mempool_in_use_count(rx.reserve_pool) : 0);
	}
	for (const port::rx_ctx *rx : n.rx()) {
		if (rx->next)
			t.ingress_queued += rte_ring_count(rx->next);
		t.frames += rx->stats.frames.get();
		t.bytes += rx->stats.bytes.get();
		t.accepted += rx->stats.accepted.get();
		t.messages += rx->stats.messages.get();
		t.in_reassembly += rx->reasm->in_flight();
		t.no_consumer += rx->stats.no_consumer.get();
		t.ring_full += rx->stats.ring_full.get();
		t.msg_pool_empty += rx->stats.msg_pool_empty.get();
		t.refused_saturated += rx->stats.refused_saturated.get();
		t.answered_saturated += rx->stats.answered_saturated.get();
		t.answers_handed_on += rx->stats.answers_handed_on.get();
		t.refused_overloaded += rx->stats.refused_overloaded.get();
		t.overloaded_backlog += rx->stats.overloaded_backlog.get();
		t.refused_incomplete += rx->stats.refused_incomplete.get();
		t.reserve_empty += rx->stats.reserve_empty.get();
		t.duplicates += rx->reasm->stats().duplicates.get();
		for (size_t d = 0; d < t.drops.size(); d++)
			t.drops[d] += rx->stats.drops[d].get() + rx->reasm->stats().drops[d].get();
	}
	return t;
}

/* ---- pods, pending, DPA ---- */

result<std::vector<pod_view>> pods(const node &n, std::string_view which)
{
	const pod_registry *reg = n.registry();
	if (!reg)
		return errorf("no pod registry in this node");
	uint32_t only = UINT32_MAX;
	if (which != "all") {
		std::string w(which);
		const auto v = parse_whole(w.c_str(), 0, DPUMESH_MAX_PODS - 1);
		if (!v)
			return errorf("pod \"%s\": expected all or a pod id below %u", w.c_str(),
				      DPUMESH_MAX_PODS);
		only = static_cast<uint32_t>(*v);
	}
	std::vector<pod_view> out;
	for (uint32_t id = 0; id < DPUMESH_MAX_PODS; id++) {
		if (only != UINT32_MAX && id != only)
			continue;
		uint32_t h = reg->handle(id);
		if (h == 0)
			continue;
		pod_view v{};
		v.pod_id = id;
		v.handle = h;
		v.generation = DPUMESH_HANDLE_GENERATION(h);
		v.nb_tx_sqs = reg->nb_tx_sqs(id);
		v.service = std::string(reg->pod_service(id));
		v.entry = reg->table()[id];
		v.counters = reg->counters(id);
		v.tx_outstanding = reg->tx_outstanding(id);
		for (const sidecar::stage *sc : n.shards()) {
			sidecar::quota_usage u;
			sc->pod_quota(h, &u);
			v.quota.add(u);
		}
		out.push_back(v);
	}
	if (only != UINT32_MAX && out.empty())
		return errorf("pod %u is not registered", only);
	return out;
}

std::vector<source_quota_view> source_quotas(const node &n)
{
	std::vector<source_quota_view> out;
	for (const sidecar::stage *sc : n.shards())
		for (const auto &[ep, u] : sc->source_quotas()) {
			char buf[INET6_ADDRSTRLEN] = "?";
			if (ep.is_v4())
				inet_ntop(AF_INET, ep.ip + 12, buf, sizeof(buf));
			else
				inet_ntop(AF_INET6, ep.ip, buf, sizeof(buf));
			auto it = std::find_if(out.begin(), out.end(), [&](const source_quota_view &v) {
				return v.address == buf;
			});
			if (it == out.end())
				out.push_back({buf, u});
			else
				it->usage.add(u);
		}
	std::sort(out.begin(), out.end(), [](const source_quota_view &a, const source_quota_view &b) {
		return a.usage.in_flight + a.usage.refused > b.usage.in_flight + b.usage.refused;
	});
	return out;
}

void node::refresh_pods_snapshot()
{
	auto v = pods(*this, "all");
	std::lock_guard<std::mutex> lock(_mu);
	_pods = v ? std::move(*v) : std::vector<pod_view>{};
}

void node::tick()
{
	uint32_t nb = _reg ? _reg->nb_pods() : 0;
	if (++_ticks % 20 == 0 || nb != _ticked_pods) {
		_ticked_pods = nb;
		refresh_pods_snapshot();
	}
}

std::vector<pod_view> node::pods_snapshot() const
{
	std::lock_guard<std::mutex> lock(_mu);
	return _pods;
}

/* "pod:0x..", "peer:N" or "none": a pending entry's origin or destination. */
std::string party_text(const pending::party &p)
{
	char buf[32];
	switch (p.type) {
	case pending::party::kind::pod:
		std::snprintf(buf, sizeof(buf), "pod:%#x", p.pod_handle);
		return buf;
	case pending::party::kind::peer:
		std::snprintf(buf, sizeof(buf), "peer:%u", static_cast<unsigned>(p.peer));
		return buf;
	default:
		return "none";
	}
}

result<std::vector<pending_view>> pending(const node &n, size_t max, uint32_t *total,
					  uint32_t *capacity)
{
	if (!n.sidecar())
		return errorf("no sidecar in this node");
	/* every shard's requests, with the tokens their answers carry, as each shard's lcore
	 * lists them (its table is its own) */
	*total = 0;
	if (capacity)
		*capacity = 0;
	std::vector<pending_view> out;
	for (const sidecar::stage *sc : n.shards()) {
		DPUMESH_ASSIGN_OR_RETURN(const auto listing,
					 sc->pending_list(std::chrono::milliseconds(1000)));
		*total += listing.size;
		if (capacity)
			*capacity += sc->pending().capacity();
		for (uint32_t i = 0; i < listing.n; i++)
			out.push_back({listing.entries[i].first, listing.entries[i].second});
	}
	/* the oldest of all shards first, in a shard's order (the TSC is one clock across
	 * lcores) */
	std::sort(out.begin(), out.end(), [](const pending_view &a, const pending_view &b) {
		return pending::started_before(a.entry.start_tsc, a.token, b.entry.start_tsc,
					       b.token);
	});
	if (out.size() > max)
		out.resize(max);
	return out;
}

/* ---- actions ---- */

bool set_forwarding(node &n, bool on)
{
	if (n.runner().forwarding() == on)
		return false;
	n.runner().set_forwarding(on);
	DPUMESH_LOG(DEBUG, console, "forwarding %s", on ? "started" : "stopped");
	return true;
}

namespace {

struct named_type {
	const char *name;
	int *id;
};

const named_type dpumesh_types[] = {
#define DPUMESH_LOGTYPE_NAMED(n) {#n, &logtype.n},
	DPUMESH_FOREACH_LOGTYPE(DPUMESH_LOGTYPE_NAMED)
#undef DPUMESH_LOGTYPE_NAMED
};

std::string level_name(int level)
{
	if (level >= 1 && level <= 8)
		return std::string(log_level_names[level - 1]);
	return std::to_string(level);
}

} // namespace

status set_log_level(std::string_view type, std::string_view level)
{
	int lvl = 0;
	for (size_t i = 0; i < std::size(log_level_names); i++)
		if (level == log_level_names[i])
			lvl = static_cast<int>(i) + 1;
	if (!lvl)
		return errorf("Bad arguments: log level \"%.*s\" is not one of: emerg, alert, crit, "
			      "err, warning, notice, info, debug",
			      static_cast<int>(level.size()), level.data());
	std::string_view t = type;
	if (t.rfind("dpumesh.", 0) == 0)
		t.remove_prefix(8);
	std::string known;
	for (const named_type &nt : dpumesh_types) {
		if (type == "all" || t == nt.name) {
			int rc = rte_log_set_level(static_cast<uint32_t>(*nt.id),
						   static_cast<uint32_t>(lvl));
			if (rc != 0)
				return errorf("set log dpumesh.%s: %s", nt.name, rte_strerror(-rc));
			if (type != "all")
				return status::ok();
		}
		known += known.empty() ? "" : ", ";
		known += nt.name;
	}
	if (type == "all")
		return status::ok();
	return errorf("Bad arguments: log type \"%.*s\" is not \"all\" nor one of: %s",
		      static_cast<int>(type.size()), type.data(), known.c_str());
}

std::vector<log_level_view> log_levels()
{
	std::vector<log_level_view> out;
	out.push_back({"global", level_name(static_cast<int>(rte_log_get_global_level()))});
	for (const named_type &nt : dpumesh_types)
		out.push_back({std::string("dpumesh.") + nt.name,
			       level_name(rte_log_get_level(static_cast<uint32_t>(*nt.id)))});
	return out;
}

status set_stats_period(node &n, std::string_view seconds)
{
	std::string s(seconds);
	const auto v = parse_whole(s.c_str(), 0, max_stats_period);
	if (!v)
		return errorf("Bad arguments: stats-period \"%s\" is not a whole number of "
			      "seconds in [0, %u]",
			      s.c_str(), max_stats_period);
	n.stats_period.store(static_cast<unsigned>(*v));
	return status::ok();
}

/* ---- reload ---- */

namespace {

bool same_addr4(const std::optional<in_addr> &a, const std::optional<in_addr> &b)
{
	return a.has_value() == b.has_value() && (!a || a->s_addr == b->s_addr);
}

bool same_addr6(const std::optional<in6_addr> &a, const std::optional<in6_addr> &b)
{
	return a.has_value() == b.has_value() && (!a || !std::memcmp(&*a, &*b, sizeof(*a)));
}

bool same(const config::node_identity &a, const config::node_identity &b)
{
	return a.name == b.name && !std::memcmp(a.mac, b.mac, 6) && same_addr4(a.ipv4, b.ipv4) &&
	       same_addr6(a.ipv6, b.ipv6) && a.mesh_port == b.mesh_port &&
	       a.control_socket == b.control_socket;
}

bool same(const config::port_config &a, const config::port_config &b)
{
	return a.name == b.name && a.dev == b.dev && a.role == b.role &&
	       a.rx_queues == b.rx_queues && a.tx_queues == b.tx_queues &&
	       a.rx_desc == b.rx_desc && a.tx_desc == b.tx_desc && a.mtu == b.mtu &&
	       a.promiscuous == b.promiscuous;
}

bool same(const config::pool_geometry &a, const config::pool_geometry &b)
{
	return a.slots == b.slots && a.slot_size == b.slot_size;
}

bool same(const config::peer_config &a, const config::peer_config &b)
{
	return a.name == b.name && !std::memcmp(a.mac, b.mac, 6) && same_addr4(a.ipv4, b.ipv4) &&
	       same_addr6(a.ipv6, b.ipv6) && a.mesh_port == b.mesh_port;
}

/** The first section that cannot change at run time and differs, or nullptr. */
bool peers_differ(const config::node_config &a, const config::node_config &b)
{
	if (a.peers.size() != b.peers.size())
		return true;
	for (size_t i = 0; i < a.peers.size(); i++)
		if (!same(a.peers[i], b.peers[i]))
			return true;
	return false;
}

const char *fixed_section_changed(const config::node_config &a, const config::node_config &b)
{
	if (!same(a.node, b.node))
		return "node";
	if (a.ports.size() != b.ports.size())
		return "ports";
	for (size_t i = 0; i < a.ports.size(); i++)
		if (!same(a.ports[i], b.ports[i]))
			return "ports";
	if (a.mempool.mbufs != b.mempool.mbufs || a.mempool.cache != b.mempool.cache ||
	    a.mempool.data_room != b.mempool.data_room)
		return "mempool";
	if (a.lcores.idle != b.lcores.idle || a.lcores.idle_polls != b.lcores.idle_polls ||
	    a.lcores.max_sleep_us != b.lcores.max_sleep_us || a.lcores.spin_us != b.lcores.spin_us ||
	    a.lcores.stages != b.lcores.stages)
		return "lcores";
	if (!same(a.pools.tx_header, b.pools.tx_header) || !same(a.pools.tx_body, b.pools.tx_body) ||
	    !same(a.pools.rx_header, b.pools.rx_header) || !same(a.pools.rx_body, b.pools.rx_body) ||
	    a.pools.sq_depth != b.pools.sq_depth)
		return "pools";
	if (a.dpa.backend != b.dpa.backend || a.dpa.threads != b.dpa.threads)
		return "dpa";
	if (a.dma.backend != b.dma.backend || a.dma.device != b.dma.device)
		return "dma";
	if (peers_differ(a, b))
		return "peers";
	if (a.services.size() != b.services.size())
		return "services";
	for (size_t i = 0; i < a.services.size(); i++)
		if (a.services[i].name != b.services[i].name)
			return "services";
	return nullptr;
}

bool services_differ(const config::node_config &a, const config::node_config &b)
{
	if (a.services.size() != b.services.size())
		return true;
	for (size_t i = 0; i < a.services.size(); i++)
		if (a.services[i].name != b.services[i].name ||
		    a.services[i].max_pods != b.services[i].max_pods)
			return true;
	return false;
}

bool routes_differ(const config::node_config &a, const config::node_config &b)
{
	if (a.routes.size() != b.routes.size())
		return true;
	for (size_t i = 0; i < a.routes.size(); i++)
		if (a.routes[i].service != b.routes[i].service || a.routes[i].to != b.routes[i].to)
			return true;
	return false;
}

/** Policy has many nested fields; compare the parts the console shows, by value. */
bool policy_differs(const config::policy_config &a, const config::policy_config &b)
{
	if (a.default_timeout_ms != b.default_timeout_ms || a.jwt.has_value() != b.jwt.has_value() ||
	    a.rbac.size() != b.rbac.size() || a.rate_limits.size() != b.rate_limits.size() ||
	    a.circuit_breakers.size() != b.circuit_breakers.size() ||
	    a.timeouts.size() != b.timeouts.size())
		return true;
	if (a.jwt) {
		const auto &x = *a.jwt, &y = *b.jwt;
		if (x.issuer != y.issuer || x.audiences != y.audiences ||
		    x.clock_skew_s != y.clock_skew_s || x.cache_entries != y.cache_entries ||
		    x.keys.size() != y.keys.size())
			return true;
		for (size_t i = 0; i < x.keys.size(); i++)
			if (x.keys[i].kid != y.keys[i].kid || x.keys[i].alg != y.keys[i].alg ||
			    x.keys[i].secret != y.keys[i].secret || x.keys[i].pem != y.keys[i].pem)
				return true;
	}
	for (size_t i = 0; i < a.rbac.size(); i++) {
		const auto &x = a.rbac[i], &y = b.rbac[i];
		if (x.service != y.service || x.default_allow != y.default_allow ||
		    x.require_jwt != y.require_jwt || x.rules.size() != y.rules.size())
			return true;
		for (size_t j = 0; j < x.rules.size(); j++)
			if (x.rules[j].methods != y.rules[j].methods ||
			    x.rules[j].match != y.rules[j].match || x.rules[j].path != y.rules[j].path ||
			    x.rules[j].claims != y.rules[j].claims)
				return true;
	}
	for (size_t i = 0; i < a.rate_limits.size(); i++) {
		const auto &x = a.rate_limits[i], &y = b.rate_limits[i];
		if (x.service != y.service || x.path_prefix != y.path_prefix || x.key != y.key ||
		    x.claim != y.claim || x.rate != y.rate || x.burst != y.burst)
			return true;
	}
	for (size_t i = 0; i < a.circuit_breakers.size(); i++) {
		const auto &x = a.circuit_breakers[i], &y = b.circuit_breakers[i];
		if (x.service != y.service || x.consecutive_failures != y.consecutive_failures ||
		    x.error_rate_percent != y.error_rate_percent || x.min_requests != y.min_requests ||
		    x.window_ms != y.window_ms || x.open_ms != y.open_ms ||
		    x.half_open_probes != y.half_open_probes)
			return true;
	}
	for (size_t i = 0; i < a.timeouts.size(); i++) {
		const auto &x = a.timeouts[i], &y = b.timeouts[i];
		if (x.service != y.service || x.path_prefix != y.path_prefix ||
		    x.timeout_ms != y.timeout_ms || x.retries != y.retries ||
		    x.backoff_ms != y.backoff_ms || x.retry_non_idempotent != y.retry_non_idempotent ||
		    x.retry_budget_percent != y.retry_budget_percent)
			return true;
	}
	return false;
}

} // namespace

result<reload_report> reload_config(node &n)
{
	auto cur = n.config();
	if (!n.config_from_file())
		return errorf("reload config: refused: running on the embedded default config; "
			      "start dpumesh with --config FILE to reload");
	auto fresh = config::load_file(cur->source);
	if (!fresh)
		return fresh.error().with_context("reload config: refused (nothing changed)");
	if (n.adjust())
		n.adjust()(*fresh);
	if (const char *sec = fixed_section_changed(*cur, *fresh))
		return errorf("reload config: refused: /%s changed, which cannot change at run "
			      "time (restart dpumesh); nothing applied",
			      sec);
	reload_report rep;
	rep.source = cur->source;
	if (services_differ(*cur, *fresh))
		rep.changed.push_back("services");
	if (routes_differ(*cur, *fresh))
		rep.changed.push_back("routes");
	if (policy_differs(cur->policy, fresh->policy))
		rep.changed.push_back("policy");
	DPUMESH_RETURN_IF_ERROR(apply_config(n, std::move(*fresh))
					.with_context("reload config: refused (nothing changed)"));
	DPUMESH_LOG(INFO, config, "reloaded %s: %zu section(s) changed", rep.source.c_str(),
		    rep.changed.size());
	return rep;
}

} // namespace dpumesh::control
