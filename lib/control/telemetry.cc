// SPDX-License-Identifier: BSD-3-Clause
// rte_telemetry endpoints under /dpumesh/..., served on DPDK's telemetry thread.
//
// DPDK 22.11 containers are flat (a dict may hold arrays of numbers or strings, not dicts),
// so tables are columnar: {"name": [...], "rx_packets": [...]} with one index per row.
// Callbacks read counters (atomics) and take a copy of the config view under the control
// mutex; they never touch lcore state otherwise (/dpumesh/pending asks the sidecar lcores
// for their listing: control::pending).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <rte_cycles.h>
#include <rte_mempool.h>
#include <rte_telemetry.h>

#include "dpumesh/control/control.h"
#include "dpumesh/control/snapshot.h"
#include "dpumesh/common/log.h"
#include "dpumesh/common/numbers.h"

namespace dpumesh::control {

namespace {

std::mutex g_mu;        /* guards g_node; telemetry thread and main lcore only */
node *g_node = nullptr;

using filler = int (*)(node &n, rte_tel_data *d);

/** Runs a filler with the node, or fails when dpumesh is shutting down. */
int with_node(filler f, rte_tel_data *d)
{
	std::lock_guard<std::mutex> lock(g_mu);
	if (!g_node)
		return -ENODEV;
	return f(*g_node, d);
}

/* The /dpumesh/ call being served on this thread (its command and parameter), for
 * telemetry_reply::emit(): set by the callbacks around the filler. */
thread_local const char *t_cmd = "";
thread_local const char *t_params = nullptr;

/* A table's column of a telemetry_reply, filled from the rows: one index per row. */
#define DPUMESH_TEL_U64_COLUMN(cols, name, rows, expr)                                   \
	do {                                                                             \
		std::vector<uint64_t> &c_ = (cols).u64_column(name);                     \
		for (const auto &r : rows)                                               \
			c_.push_back(static_cast<uint64_t>(expr));                       \
	} while (0)

#define DPUMESH_TEL_STR_COLUMN(cols, name, rows, expr)                                   \
	do {                                                                             \
		std::vector<std::string> &c_ = (cols).str_column(name);                  \
		for (const auto &r : rows)                                               \
			c_.emplace_back(expr);                                           \
	} while (0)

int fill_ports(node &n, rte_tel_data *d)
{
	const auto snaps = take_snapshot(n, snap::ports).ports;
	telemetry_reply c(d);
	DPUMESH_TEL_U64_COLUMN(c, "port_id", snaps, r.info->port_id);
	DPUMESH_TEL_STR_COLUMN(c, "name", snaps, r.info->name);
	DPUMESH_TEL_STR_COLUMN(c, "dev", snaps, r.info->dev);
	DPUMESH_TEL_STR_COLUMN(c, "driver", snaps, r.info->driver);
	DPUMESH_TEL_U64_COLUMN(c, "link_up", snaps, r.link.link_status);
	DPUMESH_TEL_U64_COLUMN(c, "rx_packets", snaps, r.stats.ipackets);
	DPUMESH_TEL_U64_COLUMN(c, "rx_bytes", snaps, r.stats.ibytes);
	DPUMESH_TEL_U64_COLUMN(c, "rx_missed", snaps, r.stats.imissed);
	DPUMESH_TEL_U64_COLUMN(c, "rx_errors", snaps, r.stats.ierrors);
	DPUMESH_TEL_U64_COLUMN(c, "rx_nombuf", snaps, r.stats.rx_nombuf);
	DPUMESH_TEL_U64_COLUMN(c, "tx_packets", snaps, r.stats.opackets);
	DPUMESH_TEL_U64_COLUMN(c, "tx_bytes", snaps, r.stats.obytes);
	DPUMESH_TEL_U64_COLUMN(c, "tx_errors", snaps, r.stats.oerrors);
	return c.emit();
}

int fill_stages(node &n, rte_tel_data *d)
{
	auto st = take_snapshot(n, snap::stages).stages;
	telemetry_reply c(d);
	DPUMESH_TEL_STR_COLUMN(c, "name", st, r.name);
	DPUMESH_TEL_U64_COLUMN(c, "lcore", st, r.lcore);
	DPUMESH_TEL_U64_COLUMN(c, "calls", st, r.calls);
	DPUMESH_TEL_U64_COLUMN(c, "work", st, r.work);
	DPUMESH_TEL_U64_COLUMN(c, "busy_cycles", st, r.busy_cycles);
	DPUMESH_TEL_U64_COLUMN(c, "idle_cycles", st, r.idle_cycles);
	/* thread CPU of the sampled polls (lcore::runner::cpu_sample_period) */
	DPUMESH_TEL_U64_COLUMN(c, "cpu_polls", st, r.cpu_polls);
	DPUMESH_TEL_U64_COLUMN(c, "cpu_work", st, r.cpu_work);
	DPUMESH_TEL_U64_COLUMN(c, "cpu_ns", st, r.cpu_ns);
	DPUMESH_TEL_U64_COLUMN(c, "cpu_tsc", st, r.cpu_tsc);
	DPUMESH_TEL_U64_COLUMN(c, "cpu_clipped_ns", st, r.cpu_clipped_ns);
	DPUMESH_TEL_U64_COLUMN(c, "cpu_idle_polls", st, r.cpu_idle_polls);
	DPUMESH_TEL_U64_COLUMN(c, "cpu_idle_ns", st, r.cpu_idle_ns);
	const uint64_t hz = n.runner().tsc_hz();
	DPUMESH_TEL_U64_COLUMN(c, "cpu_cycles_per_unit", st,
			       static_cast<uint64_t>(r.cpu_cycles_per_unit(hz) + 0.5));
	DPUMESH_TEL_U64_COLUMN(c, "tsc_cycles_per_unit", st,
			       static_cast<uint64_t>(r.tsc_cycles_per_unit() + 0.5));
	return c.emit();
}

int fill_lcore_cpu(node &n, rte_tel_data *d)
{
	auto lc = take_snapshot(n, snap::stages).lcore_cpu;
	telemetry_reply c(d);
	DPUMESH_TEL_U64_COLUMN(c, "lcore", lc, r.lcore);
	DPUMESH_TEL_U64_COLUMN(c, "tid", lc, static_cast<uint64_t>(r.tid));
	DPUMESH_TEL_U64_COLUMN(c, "running", lc, r.running);
	DPUMESH_TEL_U64_COLUMN(c, "wall_ns", lc, r.wall_ns);
	DPUMESH_TEL_U64_COLUMN(c, "user_ns", lc, r.user_ns);
	DPUMESH_TEL_U64_COLUMN(c, "sys_ns", lc, r.sys_ns);
	DPUMESH_TEL_U64_COLUMN(c, "oncpu_ns", lc, r.oncpu_ns);
	DPUMESH_TEL_U64_COLUMN(c, "runq_ns", lc, r.runq_ns);
	DPUMESH_TEL_U64_COLUMN(c, "voluntary_switches", lc, r.voluntary_switches);
	DPUMESH_TEL_U64_COLUMN(c, "involuntary_switches", lc, r.involuntary_switches);
	DPUMESH_TEL_U64_COLUMN(c, "clock_read_ns", lc, r.clock_read_ns);
	return c.emit();
}

int fill_lcores(node &n, rte_tel_data *d)
{
	auto lc = lcores(n);
	telemetry_reply c(d);
	DPUMESH_TEL_U64_COLUMN(c, "lcore", lc, r.id);
	DPUMESH_TEL_STR_COLUMN(c, "role", lc, r.is_main ? "control" : "worker");
	DPUMESH_TEL_STR_COLUMN(c, "state", lc, r.state);
	DPUMESH_TEL_U64_COLUMN(c, "nb_stages", lc, r.stages.size());
	DPUMESH_TEL_U64_COLUMN(c, "busy_cycles", lc, r.busy_cycles);
	DPUMESH_TEL_U64_COLUMN(c, "idle_cycles", lc, r.idle_cycles);
	DPUMESH_TEL_STR_COLUMN(c, "placement", lc, r.placement);
	return c.emit();
}

int fill_drops(node &n, rte_tel_data *d)
{
	const drop_totals t = take_snapshot(n, snap::rx).rx;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "frames", t.frames);
	rte_tel_data_add_dict_u64(d, "bytes", t.bytes);
	rte_tel_data_add_dict_u64(d, "accepted", t.accepted);
	rte_tel_data_add_dict_u64(d, "messages", t.messages);
	rte_tel_data_add_dict_u64(d, "in_reassembly", t.in_reassembly);
	rte_tel_data_add_dict_u64(d, "rx_msgs_in_use", t.rx_msgs_in_use);
	rte_tel_data_add_dict_u64(d, "ingress_queued", t.ingress_queued);
	t.for_each([&](const char *name, const char *, uint64_t v) {
		rte_tel_data_add_dict_u64(d, name, v);
	});
	return 0;
}

/* The pod side: counters are atomics written by their lcore, safe to read from here. */
int fill_sidecar(node &n, rte_tel_data *d)
{
	snapshot s = take_snapshot(n, snap::sidecar);
	if (!s.has_sidecar)
		return -ENODEV;
	rte_tel_data_start_dict(d);
	for (const counter_row &r : s.sidecar)
		rte_tel_data_add_dict_u64(d, r.name, r.value);
	return 0;
}

} // namespace

namespace {

/* DPDK 22.11's telemetry.c: MAX_OUTPUT_LEN, the most a reply writes ({"<cmd>": ...}). */
constexpr size_t reply_max = 16 * 1024;

/* Upper bounds of what DPDK writes for a value and its comma, and for a key with its
 * quotes and colon: a string's '"' and '\\' escaped, a control byte as \u00XX, and no more
 * than the RTE_TEL_MAX_STRING_LEN - 1 bytes DPDK keeps of it. */
size_t u64_cost(uint64_t v) noexcept
{
	size_t n = 2;
	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

size_t str_cost(std::string_view s) noexcept
{
	s = s.substr(0, RTE_TEL_MAX_STRING_LEN - 1);
	size_t n = 3;
	for (unsigned char c : s)
		n += c == '"' || c == '\\' ? 2 : c < 0x20 ? 6 : 1;
	return n;
}

size_t key_cost(std::string_view k) noexcept { return str_cost(k) + 1; }

/* rte_telemetry dict keys take letters, digits, '_' and '/': anything else becomes '_'. */
std::string telemetry_key(std::string_view s)
{
	std::string k(s);
	for (char &c : k)
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '/'))
			c = '_';
	return k;
}

} // namespace

void telemetry_reply::u64(std::string key, uint64_t v)
{
	value x(value::kind::u64);
	x.n = v;
	_keys.insert(key);
	_fixed.emplace_back(std::move(key), std::move(x));
}

std::vector<uint64_t> &telemetry_reply::u64_column(std::string name)
{
	_columns.emplace_back(std::move(name), value(value::kind::u64s));
	return _columns.back().second.ns;
}

std::vector<std::string> &telemetry_reply::str_column(std::string name)
{
	_columns.emplace_back(std::move(name), value(value::kind::strs));
	return _columns.back().second.ss;
}

/* DPDK keeps a key's first RTE_TEL_MAX_STRING_LEN - 1 bytes: the keys are made unique
 * within that (a route prefix may be 1024 bytes long), the suffix kept whole. */
void telemetry_reply::add_entry(std::string_view name, value v)
{
	constexpr size_t max_key = RTE_TEL_MAX_STRING_LEN - 1;
	const std::string base = telemetry_key(name.substr(0, max_key));
	std::string key = base;
	for (unsigned n = 2; !_keys.insert(key).second; n++) {
		const std::string suffix = "_" + std::to_string(n);
		key = base.substr(0, max_key - suffix.size()) + suffix;
	}
	_entries.emplace_back(std::move(key), std::move(v));
}

void telemetry_reply::entry_str(std::string_view name, std::string v)
{
	value x(value::kind::str);
	x.s = std::move(v);
	add_entry(name, std::move(x));
}

void telemetry_reply::entry_u64s(std::string_view name, std::vector<uint64_t> v)
{
	value x(value::kind::u64s);
	x.ns = std::move(v);
	add_entry(name, std::move(x));
}

void telemetry_reply::entry_dict(std::string_view name,
				 std::vector<std::pair<std::string, std::string>> strs,
				 std::vector<std::pair<std::string, uint64_t>> v)
{
	value x(value::kind::dict);
	x.dict_strs = std::move(strs);
	x.dict = std::move(v);
	add_entry(name, std::move(x));
}

int telemetry_reply::emit()
{
	size_t first = 0;
	if (t_params && *t_params) {
		const auto v = parse_whole(t_params, 0, UINT32_MAX);
		if (!v)
			return -EINVAL;
		first = static_cast<size_t>(*v);
	}
	const auto cost = [](const value &v) {
		size_t n = 3; /* brackets or braces, comma */
		switch (v.what) {
		case value::kind::u64:
			return u64_cost(v.n);
		case value::kind::str:
			return str_cost(v.s);
		case value::kind::u64s:
			for (uint64_t x : v.ns)
				n += u64_cost(x);
			return n;
		case value::kind::strs:
			for (const std::string &x : v.ss)
				n += str_cost(x);
			return n;
		case value::kind::dict:
			for (const auto &[k, x] : v.dict_strs)
				n += key_cost(k) + str_cost(x);
			for (const auto &[k, x] : v.dict)
				n += key_cost(k) + u64_cost(x);
			return n;
		}
		return n;
	};
	/* {"<cmd>":{...}} and room for "next" */
	const size_t frame = std::strlen(t_cmd) + 8 + key_cost("next") + u64_cost(UINT32_MAX);
	size_t left = reply_max > frame ? reply_max - frame : 0;
	const auto spend = [&](size_t n) { left = n < left ? left - n : 0; };
	rte_tel_data_start_dict(_d);
	const auto put = [&](const std::string &key, const value &v, size_t from, size_t to) {
		switch (v.what) {
		case value::kind::u64:
			rte_tel_data_add_dict_u64(_d, key.c_str(), v.n);
			return;
		case value::kind::str:
			rte_tel_data_add_dict_string(_d, key.c_str(), v.s.c_str());
			return;
		default:
			break;
		}
		rte_tel_data *c = rte_tel_data_alloc();
		if (!c)
			return;
		if (v.what == value::kind::dict) {
			rte_tel_data_start_dict(c);
			for (const auto &[k, x] : v.dict_strs)
				rte_tel_data_add_dict_string(c, k.c_str(), x.c_str());
			for (const auto &[k, x] : v.dict)
				rte_tel_data_add_dict_u64(c, k.c_str(), x);
		} else if (v.what == value::kind::u64s) {
			rte_tel_data_start_array(c, RTE_TEL_U64_VAL);
			for (size_t i = from; i < to && i < v.ns.size(); i++)
				rte_tel_data_add_array_u64(c, v.ns[i]);
		} else {
			rte_tel_data_start_array(c, RTE_TEL_STRING_VAL);
			for (size_t i = from; i < to && i < v.ss.size(); i++)
				rte_tel_data_add_array_string(c, v.ss[i].c_str());
		}
		if (rte_tel_data_add_dict_container(_d, key.c_str(), c, 0) != 0)
			rte_tel_data_free(c);
	};
	size_t keys = 0;
	for (const auto &[k, v] : _fixed) {
		put(k, v, 0, SIZE_MAX);
		spend(key_cost(k) + cost(v));
		keys++;
	}
	size_t total = 0, end = 0;
	if (!_columns.empty()) {
		/* a table: the rows [first, end) that fit, in every column */
		const auto rows = [](const value &v) {
			return v.what == value::kind::u64s ? v.ns.size() : v.ss.size();
		};
		total = rows(_columns.front().second);
		for (const auto &[k, v] : _columns) {
			total = std::min(total, rows(v));
			spend(key_cost(k) + 3);
		}
		end = std::min(first, total);
		while (end < total && end - first < RTE_TEL_MAX_ARRAY_ENTRIES) {
			size_t row = 0;
			for (const auto &[k, v] : _columns)
				row += v.what == value::kind::u64s ? u64_cost(v.ns[end])
								   : str_cost(v.ss[end]);
			if (row > left && end > first)
				break; /* the first row always: a page moves on */
			spend(row);
			end++;
		}
		for (const auto &[k, v] : _columns)
			put(k, v, std::min(first, total), end);
	} else {
		/* listed entries: those from first that fit, within the dict's entries */
		total = _entries.size();
		end = std::min(first, total);
		while (end < total && keys + 1 < RTE_TEL_MAX_DICT_ENTRIES) {
			const size_t c = key_cost(_entries[end].first) + cost(_entries[end].second);
			if (c > left && end > first)
				break;
			spend(c);
			put(_entries[end].first, _entries[end].second, 0, SIZE_MAX);
			keys++;
			end++;
		}
	}
	if (end < total)
		rte_tel_data_add_dict_u64(_d, "next", end);
	return 0;
}

namespace {

/* One dict of request metrics (requests, answers by class, latency quantiles). */
std::vector<std::pair<std::string, uint64_t>> metrics_dict(const sidecar::l7_metrics &m)
{
	std::vector<std::pair<std::string, uint64_t>> c;
	c.reserve(24);
	c.emplace_back("requests", m.requests.get());
	c.emplace_back("refused", m.refused.get());
	/* refusals by reason: those that happened */
	for (size_t r = 0; r < m.refused_by.size(); r++) {
		const uint64_t n = m.refused_by[r].get();
		if (n == 0)
			continue;
		c.emplace_back(std::string("refused_") + sidecar::refusal_reason_name(
								 static_cast<sidecar::refusal_reason>(r)),
			       n);
	}
	static const char *const classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
	for (size_t k = 0; k < m.classes.size(); k++)
		c.emplace_back(classes[k], m.classes[k].get());
	c.emplace_back("mesh_generated", m.mesh_generated.get());
	c.emplace_back("retries", m.retries.get());
	c.emplace_back("timeouts", m.timeouts.get());
	c.emplace_back("latency_count", m.latency.count());
	c.emplace_back("latency_sum_us", m.latency.sum_us.get());
	c.emplace_back("latency_p50_us", m.latency.quantile_us(0.50));
	c.emplace_back("latency_p90_us", m.latency.quantile_us(0.90));
	c.emplace_back("latency_p99_us", m.latency.quantile_us(0.99));
	c.emplace_back("latency_p999_us", m.latency.quantile_us(0.999));
	return c;
}

/* Request metrics by service (the sidecar's life) and by route (this policy version). */
/* Adds a service's metrics of every sidecar shard (one per worker) into t. */
void add_service_total(node &n, uint32_t svc, sidecar::l7_metrics &t)
{
	for (const sidecar::stage *sh : n.shards())
		sh->add_service_metrics(svc, t);
}

int fill_metrics(node &n, rte_tel_data *d)
{
	sidecar::stage *sc = n.sidecar();
	if (!sc)
		return -ENODEV;
	telemetry_reply r(d);
	for (uint32_t i = 0; i < sc->nb_services(); i++) {
		sidecar::l7_metrics t;
		add_service_total(n, i, t);
		r.entry_dict(sc->service_name(i), {{"service", sc->service_name(i)}}, metrics_dict(t));
	}
	/* every shard runs its own copy of the version (built together): sum the copies that
	 * are this version (a swap under way may have reached some shards only) */
	auto pol = sc->policy();
	std::vector<std::shared_ptr<sidecar::ruleset>> copies;
	for (const sidecar::stage *sh : n.shards())
		if (auto p = sh->policy(); p && p->version() == pol->version())
			copies.push_back(std::move(p));
	for (const sidecar::service_rules &s : pol->services())
		for (const sidecar::route_rule &rt : s.routes) {
			sidecar::l7_metrics t;
			for (const auto &p : copies)
				t.add(p->route_metrics(rt.metrics));
			const std::string route = rt.configured ? rt.path_prefix : "default";
			r.entry_dict("route/" + s.name + "/" + route,
				     {{"service", s.name}, {"route", route}}, metrics_dict(t));
		}
	return r.emit();
}

/* Latency histograms by service: bucket k counts answers in [2^(k-1), 2^k) us. */
int fill_latency(node &n, rte_tel_data *d)
{
	sidecar::stage *sc = n.sidecar();
	if (!sc)
		return -ENODEV;
	telemetry_reply r(d);
	for (uint32_t i = 0; i < sc->nb_services(); i++) {
		sidecar::l7_metrics t;
		add_service_total(n, i, t);
		std::vector<uint64_t> a;
		a.reserve(t.latency.buckets.size());
		for (const counter &b : t.latency.buckets)
			a.push_back(b.get());
		r.entry_u64s(sc->service_name(i), std::move(a));
	}
	return r.emit();
}

int fill_dpa(node &n, rte_tel_data *d)
{
	snapshot s = take_snapshot(n, snap::dpa);
	if (!s.has_dpa)
		return -ENODEV;
	const auto &t = s.dpa;
	telemetry_reply c(d);
	DPUMESH_TEL_U64_COLUMN(c, "thread", t, r.thread);
	DPUMESH_TEL_U64_COLUMN(c, "tx_taken", t, r.tx_taken);
	DPUMESH_TEL_U64_COLUMN(c, "tx_posted", t, r.tx_posted);
	DPUMESH_TEL_U64_COLUMN(c, "rx_delivered", t, r.rx_delivered);
	DPUMESH_TEL_U64_COLUMN(c, "rx_handed_back", t, r.rx_handed_back);
	DPUMESH_TEL_U64_COLUMN(c, "tx_completions", t, r.tx_completions);
	DPUMESH_TEL_U64_COLUMN(c, "remote_completions", t, r.remote_completions);
	DPUMESH_TEL_U64_COLUMN(c, "completion_ring_full", t, r.completion_ring_full);
	DPUMESH_TEL_U64_COLUMN(c, "doorbells", t, r.doorbells);
	DPUMESH_TEL_U64_COLUMN(c, "doorbells_suppressed", t, r.doorbells_suppressed);
	DPUMESH_TEL_U64_COLUMN(c, "doorbell_cycles", t, r.doorbell_cycles);
	DPUMESH_TEL_U64_COLUMN(c, "doorbell_timed_ns", t, r.doorbell_timed_ns);
	DPUMESH_TEL_U64_COLUMN(c, "doorbell_timed_writes", t, r.doorbell_timed_writes);
	DPUMESH_TEL_U64_COLUMN(c, "tx_parks", t, r.tx_parks);
	DPUMESH_TEL_U64_COLUMN(c, "tx_rings", t, r.tx_rings);
	DPUMESH_TEL_U64_COLUMN(c, "tx_ring_checks", t, r.tx_ring_checks);
	DPUMESH_TEL_U64_COLUMN(c, "tx_cools", t, r.tx_cools);
	DPUMESH_TEL_U64_COLUMN(c, "tx_unparks", t, r.tx_unparks);
	DPUMESH_TEL_U64_COLUMN(c, "tx_ready_calls", t, r.tx_ready_calls);
	DPUMESH_TEL_U64_COLUMN(c, "tx_sq_looks", t, r.tx_sq_looks);
	DPUMESH_TEL_U64_COLUMN(c, "tx_sweep_finds", t, r.tx_sweep_finds);
	DPUMESH_TEL_U64_COLUMN(c, "follow_ups", t, r.follow_ups);
	/* one pool for all threads: the same number in every row */
	DPUMESH_TEL_U64_COLUMN(c, "hbufs_in_use", t, ((void)r, s.hbufs_in_use));
	/* what doorbell_cycles count in (the same in every row) */
	const uint64_t hz = n.runner().tsc_hz();
	DPUMESH_TEL_U64_COLUMN(c, "tsc_hz", t, ((void)r, hz));
	return c.emit();
}

int fill_dma(node &n, rte_tel_data *d)
{
	snapshot s = take_snapshot(n, snap::dpa);
	if (!s.has_dpa)
		return -ENODEV;
	const auto &t = s.dpa;
	telemetry_reply c(d);
	DPUMESH_TEL_STR_COLUMN(c, "engine", t, r.dma_name);
	DPUMESH_TEL_U64_COLUMN(c, "max_copy_size", t, r.dma_max_copy);
	DPUMESH_TEL_U64_COLUMN(c, "ops", t, r.dma_ops);
	DPUMESH_TEL_U64_COLUMN(c, "segments", t, r.dma_segments);
	DPUMESH_TEL_U64_COLUMN(c, "bytes", t, r.dma_bytes);
	DPUMESH_TEL_U64_COLUMN(c, "completed", t, r.dma_completed);
	DPUMESH_TEL_U64_COLUMN(c, "errors", t, r.dma_errors);
	DPUMESH_TEL_U64_COLUMN(c, "ring_full", t, r.dma_ring_full);
	return c.emit();
}

/* Pods change on the main lcore: read the copy it refreshes (at most ~100 ms old). */
int fill_pods(node &n, rte_tel_data *d)
{
	auto pods = n.pods_snapshot();
	telemetry_reply c(d);
	DPUMESH_TEL_U64_COLUMN(c, "pod_id", pods, r.pod_id);
	DPUMESH_TEL_STR_COLUMN(c, "service", pods, r.service);
	DPUMESH_TEL_U64_COLUMN(c, "generation", pods, r.generation);
	DPUMESH_TEL_U64_COLUMN(c, "tx_taken", pods, r.counters.tx_taken);
	DPUMESH_TEL_U64_COLUMN(c, "tx_refused", pods, r.counters.tx_refused_total());
	DPUMESH_TEL_U64_COLUMN(c, "tx_done", pods, r.counters.tx_done_posted);
	DPUMESH_TEL_U64_COLUMN(c, "rx_delivered", pods, r.counters.rx_delivered);
	DPUMESH_TEL_U64_COLUMN(c, "rx_no_slot", pods, r.counters.rx_no_slot);
	DPUMESH_TEL_U64_COLUMN(c, "rx_sq_full", pods, r.counters.rx_sq_full);
	DPUMESH_TEL_U64_COLUMN(c, "doorbells", pods, r.counters.doorbells);
	DPUMESH_TEL_U64_COLUMN(c, "doorbells_suppressed", pods, r.counters.doorbells_suppressed);
	DPUMESH_TEL_U64_COLUMN(c, "doorbells_deferred", pods, r.counters.doorbells_deferred);
	DPUMESH_TEL_U64_COLUMN(c, "in_flight", pods, r.quota.in_flight);
	DPUMESH_TEL_U64_COLUMN(c, "quota_refused", pods, r.quota.refused);
	DPUMESH_TEL_U64_COLUMN(c, "answers_refused", pods, r.quota.answers_refused);
	DPUMESH_TEL_U64_COLUMN(c, "dest_refused", pods, r.quota.dest_refused);
	DPUMESH_TEL_U64_COLUMN(c, "tx_outstanding", pods, r.tx_outstanding);
	return c.emit();
}

/* `show pending` as columns: the 32 oldest pending requests as the shards' lcores list them
 * (control::pending), with the table's size and capacity; -EAGAIN when a shard's lcore
 * did not list its own within 1 s */
int fill_pending(node &n, rte_tel_data *d)
{
	uint32_t total = 0, capacity = 0;
	auto views = pending(n, 32, &total, &capacity);
	if (!views) {
		DPUMESH_LOG(WARNING, console, "/dpumesh/pending: %s", views.error().message().c_str());
		return -EAGAIN;
	}
	const uint64_t now = rte_rdtsc();
	const double us_per_cycle = 1e6 / static_cast<double>(n.runner().tsc_hz());
	const auto us = [&](uint64_t cycles) {
		return static_cast<uint64_t>(static_cast<double>(cycles) * us_per_cycle);
	};
	telemetry_reply c(d);
	c.u64("total", total);
	c.u64("capacity", capacity);
	DPUMESH_TEL_U64_COLUMN(c, "token", *views, r.token);
	DPUMESH_TEL_STR_COLUMN(c, "origin", *views, party_text(r.entry.origin));
	DPUMESH_TEL_STR_COLUMN(c, "dest", *views, party_text(r.entry.dest));
	DPUMESH_TEL_U64_COLUMN(c, "req_id", *views, r.entry.origin_req_id);
	DPUMESH_TEL_U64_COLUMN(c, "step_id", *views, r.entry.step_id);
	DPUMESH_TEL_U64_COLUMN(c, "attempt", *views, r.entry.attempt);
	DPUMESH_TEL_U64_COLUMN(c, "age_us", *views,
			       now > r.entry.start_tsc ? us(now - r.entry.start_tsc) : 0);
	DPUMESH_TEL_U64_COLUMN(c, "deadline_in_us", *views,
			       r.entry.deadline_tsc > now ? us(r.entry.deadline_tsc - now) : 0);
	return c.emit();
}

/* Network addresses holding pending requests or refused over their quota. */
int fill_sources(node &n, rte_tel_data *d)
{
	auto src = source_quotas(n);
	telemetry_reply c(d);
	DPUMESH_TEL_STR_COLUMN(c, "address", src, r.address);
	DPUMESH_TEL_U64_COLUMN(c, "in_flight", src, r.usage.in_flight);
	DPUMESH_TEL_U64_COLUMN(c, "peak", src, r.usage.peak);
	DPUMESH_TEL_U64_COLUMN(c, "quota_refused", src, r.usage.refused);
	return c.emit();
}

int fill_services(node &n, rte_tel_data *d)
{
	auto cfg = n.config();
	telemetry_reply c(d);
	DPUMESH_TEL_STR_COLUMN(c, "name", cfg->services, r.name);
	DPUMESH_TEL_U64_COLUMN(c, "max_pods", cfg->services, r.max_pods);
	DPUMESH_TEL_STR_COLUMN(c, "route", cfg->services, [&] {
		const config::route_config *rt = cfg->find_route(r.name);
		return rt ? rt->to : std::string("none");
	}());
	return c.emit();
}

int fill_routes(node &n, rte_tel_data *d)
{
	auto cfg = n.config();
	telemetry_reply r(d);
	for (const config::route_config &rt : cfg->routes)
		r.entry_str(rt.service, rt.to);
	return r.emit();
}

int fill_peers(node &n, rte_tel_data *d)
{
	auto cfg = n.config();
	telemetry_reply c(d);
	DPUMESH_TEL_STR_COLUMN(c, "name", cfg->peers, r.name);
	DPUMESH_TEL_STR_COLUMN(c, "mac", cfg->peers, format_mac(r.mac));
	DPUMESH_TEL_STR_COLUMN(c, "ipv4", cfg->peers, r.ipv4 ? format_ipv4(*r.ipv4) : "");
	DPUMESH_TEL_STR_COLUMN(c, "ipv6", cfg->peers, r.ipv6 ? format_ipv6(*r.ipv6) : "");
	DPUMESH_TEL_U64_COLUMN(c, "mesh_port", cfg->peers, r.mesh_port);
	return c.emit();
}

int fill_config(node &n, rte_tel_data *d)
{
	auto cfg = n.config();
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "source", cfg->source.c_str());
	rte_tel_data_add_dict_string(d, "node", cfg->node.name.c_str());
	rte_tel_data_add_dict_string(d, "mac", format_mac(cfg->node.mac).c_str());
	if (cfg->node.ipv4)
		rte_tel_data_add_dict_string(d, "ipv4", format_ipv4(*cfg->node.ipv4).c_str());
	if (cfg->node.ipv6)
		rte_tel_data_add_dict_string(d, "ipv6", format_ipv6(*cfg->node.ipv6).c_str());
	rte_tel_data_add_dict_u64(d, "mesh_port", cfg->node.mesh_port);
	rte_tel_data_add_dict_u64(d, "ports", cfg->ports.size());
	rte_tel_data_add_dict_u64(d, "services", cfg->services.size());
	rte_tel_data_add_dict_u64(d, "routes", cfg->routes.size());
	rte_tel_data_add_dict_u64(d, "peers", cfg->peers.size());
	rte_tel_data_add_dict_string(d, "idle", std::string(config::to_string(cfg->lcores.idle)).c_str());
	rte_tel_data_add_dict_string(d, "dpa_backend",
				     std::string(config::to_string(cfg->dpa.backend)).c_str());
	rte_tel_data_add_dict_string(d, "dma_backend",
				     std::string(config::to_string(cfg->dma.backend)).c_str());
	rte_tel_data_add_dict_u64(d, "forwarding", n.runner().forwarding());
	rte_tel_data_add_dict_u64(d, "stats_period", n.stats_period.load());
	return 0;
}

#define DPUMESH_FOREACH_TELEMETRY(_)                                                     \
	_(ports, "Port stats as columns: port_id, name, rx_packets, ... (one index per port)") \
	_(stages, "Stages: name, lcore, calls, work, TSC busy/idle cycles, sampled thread CPU (columns)") \
	_(lcore_cpu, "Worker lcore threads from /proc: wall, user, sys, on-CPU, run-queue ns (columns)") \
	_(lcores, "Lcores: lcore, role, state, nb_stages, busy/idle cycles (columns)")       \
	_(drops, "Port RX totals: frames, bytes, accepted, and one counter per drop reason") \
	_(services, "Services: name, max_pods, route (columns)")                             \
	_(routes, "Routes: service -> local or a peer name")                                 \
	_(peers, "Peers: name, mac, ipv4, ipv6, mesh_port (columns)")                        \
	_(config, "Config summary: node, source, counts, idle policy, forwarding, stats_period") \
	_(pods, "Registered pods: id, service, generation, TX/RX counters, quota (columns)") \
	_(pending, "Pending requests: total, capacity, the first 32 (token, parties, ids, age, time left)") \
	_(sources, "Network addresses holding pending requests or refused (quota, columns)") \
	_(sidecar, "Sidecar counters: requests, responses, mesh errors by reason")            \
	_(metrics, "Requests by service and route: answers by class, retries, latency quantiles") \
	_(latency, "Latency histograms by service: log2 microsecond buckets")                 \
	_(dpa, "DPA emulator threads: descriptors, deliveries, completions (columns)")         \
	_(dma, "DMA engines of the DPA threads: ops, segments, bytes, errors (columns)")

/* Families that modules registered: one callback finds the family by its command name. */
std::vector<telemetry_family> g_families; /* appended at start-up, under g_mu */
size_t g_families_served = 0;             /* how many are registered with rte_telemetry */

/* The call's command and parameter where telemetry_reply::emit() finds them. */
struct serving {
	serving(const char *cmd, const char *params) noexcept
	{
		t_cmd = cmd ? cmd : "";
		t_params = params;
	}
	~serving()
	{
		t_cmd = "";
		t_params = nullptr;
	}
};

int tel_family(const char *cmd, const char *params, rte_tel_data *d)
{
	std::lock_guard<std::mutex> lock(g_mu);
	if (!g_node)
		return -ENODEV;
	serving call(cmd, params);
	for (const telemetry_family &f : g_families)
		if (std::string_view(cmd) == std::string("/dpumesh/") + f.name)
			return f.fill(*g_node, d);
	return -ENOENT;
}

#define DPUMESH_TEL_CB(name, help)                                                       \
	int tel_##name(const char *cmd, const char *params, rte_tel_data *d)             \
	{                                                                                \
		serving call(cmd, params);                                               \
		return with_node(&fill_##name, d);                                       \
	}
DPUMESH_FOREACH_TELEMETRY(DPUMESH_TEL_CB)
#undef DPUMESH_TEL_CB

} // namespace

void register_telemetry_families(std::span<const telemetry_family> families)
{
	std::lock_guard<std::mutex> lock(g_mu);
	for (const telemetry_family &f : families) {
		bool known = false;
		for (const telemetry_family &g : g_families)
			known = known || std::string_view(g.name) == f.name;
		if (!known)
			g_families.push_back(f);
	}
}

namespace {

/* Registers the module families not yet given to rte_telemetry (it has no unregister). */
status serve_families()
{
	std::vector<telemetry_family> todo;
	{
		std::lock_guard<std::mutex> lock(g_mu);
		todo.assign(g_families.begin() + static_cast<ptrdiff_t>(g_families_served),
			    g_families.end());
		g_families_served = g_families.size();
	}
	for (const telemetry_family &f : todo) {
		std::string cmd = std::string("/dpumesh/") + f.name;
		if (int rc = rte_telemetry_register_cmd(cmd.c_str(), &tel_family, f.help); rc != 0)
			return errorf("telemetry: registering %s: %s", cmd.c_str(), rte_strerror(-rc));
	}
	return status::ok();
}

} // namespace

status telemetry_register(node &n)
{
	{
		std::lock_guard<std::mutex> lock(g_mu);
		g_node = &n;
	}
	DPUMESH_RETURN_IF_ERROR(serve_families());
	static bool registered = false; /* rte_telemetry has no unregister */
	if (registered)
		return status::ok();
	/* rte_telemetry refuses a help text of RTE_TEL_MAX_STRING_LEN characters or more
	 * (EINVAL), and the endpoints after it would go unregistered */
#define DPUMESH_TEL_REG(name, help)                                                      \
	static_assert(sizeof(help) <= RTE_TEL_MAX_STRING_LEN, "/dpumesh/" #name ": help too long"); \
	if (int rc = rte_telemetry_register_cmd("/dpumesh/" #name, &tel_##name, help); rc != 0) \
		return errorf("telemetry: registering /dpumesh/" #name ": %s", rte_strerror(-rc));
	DPUMESH_FOREACH_TELEMETRY(DPUMESH_TEL_REG)
#undef DPUMESH_TEL_REG
	registered = true;
	return status::ok();
}

void telemetry_unregister() noexcept
{
	std::lock_guard<std::mutex> lock(g_mu);
	g_node = nullptr;
}

} // namespace dpumesh::control
