// SPDX-License-Identifier: BSD-3-Clause
// The running node as control sees it, and the action functions that read or change it.
//
// The console, the config loader and (later) the pod API call these same functions; each
// returns a snapshot or a `status` with context. They run on the control path only: the
// main lcore (console, stats) and the telemetry thread. Data-path lcores never take the
// mutex here; they only write their own counters, which control reads as atomics.
//
//   control::node n(ports, rx, runner, std::move(cfg), overrides);
//   auto snaps = control::port_snapshots(n, "all");    // result<std::vector<...>>
//   control::set_forwarding(n, false);                  // `stop`
//   auto rep = control::reload_config(n);               // `reload config`
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include "dpumesh/config/config.h"
#include "dpumesh/dpa/emulator.h"
#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/sidecar/sidecar.h"
#include "dpumesh/lcore/runner.h"
#include "dpumesh/node/node.h"
#include "dpumesh/port/port.h"
#include "dpumesh/port/rx.h"
#include "dpumesh/common/status.h"

namespace dpumesh::control {

struct pod_view {
	uint32_t pod_id, generation, handle, nb_tx_sqs;
	std::string service;
	pod_registry_entry entry; /**< pod_lookup_table[pod_id] as the DPA reads it */
	pod_counters counters;
	sidecar::quota_usage quota; /**< its share of the node's resources, over the shards */
	uint32_t tx_outstanding;    /**< TX descriptors taken and not completed (now) */
};

/** Longest statistics period, seconds (as --stats-period). */
inline constexpr unsigned max_stats_period = 3600;

class node {
public:
	using config_adjust = std::function<void(config::node_config &)>;

	/**
	 * @param ports  open ports; immutable while the node runs (owned by the caller)
	 * @param rx     port RX contexts (owned by the caller)
	 * @param adjust applied to every (re)loaded config: command-line overrides
	 */
	node(const std::vector<port::port_info> &ports,
	     const std::vector<port::rx_ctx *> &rx, lcore::runner &runner,
	     config::node_config cfg, bool cfg_from_file, config_adjust adjust);
	/** Control's view of a whole node (lib/node), its pods, sidecar and DPA included. */
	node(::dpumesh::node::instance &n, bool cfg_from_file, config_adjust adjust);

	const std::vector<port::port_info> &ports() const noexcept { return _ports; }
	const std::vector<port::rx_ctx *> &rx() const noexcept { return _rx; }
	lcore::runner &runner() noexcept { return _runner; }
	const lcore::runner &runner() const noexcept { return _runner; }

	/** The current config view (a copy of the pointer, taken under the control mutex). */
	std::shared_ptr<const config::node_config> config() const;
	bool config_from_file() const noexcept { return _cfg_from_file; }
	/** Swaps in a new config view (control path; readers keep the old one until done). */
	void replace_config(std::shared_ptr<const config::node_config> cfg);
	const config_adjust &adjust() const noexcept { return _adjust; }

	/** The pod side of the node (set once before the console starts; may stay unset). */
	void set_mesh(const pod_registry *reg, sidecar::stage *sc,
		      const dpa::emulator *emu) noexcept
	{
		_reg = reg;
		_sidecar = sc;
		_emu = emu;
	}
	const pod_registry *registry() const noexcept { return _reg; }
	/** The sidecar (its first shard); control may publish policy versions to it. */
	sidecar::stage *sidecar() const noexcept { return _sidecar; }
	/**
	 * Every sidecar shard (one per worker lcore): counters are summed over them, a policy
	 * version is applied to each. Just sidecar() when the node has one worker.
	 */
	std::vector<sidecar::stage *> shards() const
	{
		if (!_shards.empty())
			return _shards;
		return _sidecar ? std::vector<sidecar::stage *>{_sidecar} : std::vector<sidecar::stage *>{};
	}
	void set_shards(std::vector<sidecar::stage *> s) { _shards = std::move(s); }
	const dpa::emulator *emulator() const noexcept { return _emu; }
	/** The node this view was built from (null when built from parts). */
	const ::dpumesh::node::instance *instance() const noexcept { return _inst; }

	/** Main lcore: takes a copy of the pods for readers on other threads (telemetry). */
	void refresh_pods_snapshot();
	/** The last copy (any control thread). */
	std::vector<pod_view> pods_snapshot() const;
	/**
	 * Main lcore, every loop turn: refreshes the pods' copy at once when pods came or went,
	 * else every 20th call (~100 ms at the loop's 5 ms).
	 */
	void tick();

	/** Seconds between periodic stats prints; 0: none. Read by the main loop. */
	std::atomic<unsigned> stats_period{0};
	/** Set by `quit`; the main loop ends. */
	std::atomic<bool> quit{false};

private:
	const ::dpumesh::node::instance *_inst = nullptr;
	const pod_registry *_reg = nullptr;
	sidecar::stage *_sidecar = nullptr;
	std::vector<sidecar::stage *> _shards;
	const dpa::emulator *_emu = nullptr;
	const std::vector<port::port_info> &_ports;
	const std::vector<port::rx_ctx *> &_rx;
	lcore::runner &_runner;
	mutable std::mutex _mu; /* guards _cfg and _pods; control path only */
	std::vector<pod_view> _pods;
	unsigned _ticks = 0;
	uint32_t _ticked_pods = UINT32_MAX;
	std::shared_ptr<const config::node_config> _cfg;
	bool _cfg_from_file;
	config_adjust _adjust;
};

/* ---- ports ---- */

struct port_snapshot {
	const port::port_info *info;
	rte_eth_stats stats{};
	rte_eth_link link{};
	rte_ether_addr mac{};
	bool stats_ok = false;
};

/** "all" or a port id that dpumesh opened; errors list the valid ids. */
result<std::vector<const port::port_info *>> select_ports(const node &n, std::string_view which);

result<std::vector<port_snapshot>> port_snapshots(const node &n, std::string_view which);

/** Extended statistics of one port, in the driver's order. */
result<std::vector<std::pair<std::string, uint64_t>>> port_xstats(const port::port_info &p);

/** Resets basic and extended stats of the selected ports. */
status clear_port_stats(node &n, std::string_view which);

/* ---- stages, lcores, drops ---- */

struct lcore_view {
	unsigned id;
	bool is_main;
	std::string state; /**< "running", "wait" (worker) or "control" (main) */
	std::vector<std::string> stages;
	uint64_t busy_cycles = 0, idle_cycles = 0;
	/** Worker k's lcore (`lcores.workers` > 1): k; else -1. */
	int worker = -1;
	/** What worker k runs: "rx=PORT:Q,.. shard=k dpa=T,.." (empty for -1). */
	std::string placement;
};
std::vector<lcore_view> lcores(const node &n);

struct drop_totals {
	uint64_t frames = 0, bytes = 0, accepted = 0, messages = 0, in_reassembly = 0;
	/** gauges: rx_msgs taken from port RX's pool and reserve (on the rings, in the sidecar,
	 *  in destination queues, with the DPA), and of those waiting on the rings to the
	 *  sidecar */
	uint64_t rx_msgs_in_use = 0, ingress_queued = 0;
	/** frames (parser) and messages (reassembler) dropped, by wire reason */
	std::array<uint64_t, static_cast<size_t>(port::rx_drop::count)> drops{};
	uint64_t no_consumer = 0, ring_full = 0, msg_pool_empty = 0, duplicates = 0;
	uint64_t refused_saturated = 0, refused_overloaded = 0, reserve_empty = 0;
	/** of refused_saturated: answered by port RX itself; handed on to the sidecar though
	 *  port RX could answer (docs/overload.md, "Port RX answers what it refuses") */
	uint64_t answered_saturated = 0, answers_handed_on = 0;
	uint64_t overloaded_backlog = 0; /**< of refused_overloaded: the backlog bound fired */
	uint64_t refused_incomplete = 0; /**< timed-out reassemblies answered 408 */

	/** Calls fn(name, help, value) for every drop counter, wire reasons first. */
	template <typename Fn>
	void for_each(Fn &&fn) const
	{
		for (size_t i = 1; i < drops.size(); i++) {
			auto d = static_cast<port::rx_drop>(i);
			fn(port::rx_drop_name(d), port::rx_drop_help(d), drops[i]);
		}
		fn("no_consumer", "whole messages with no next stage attached", no_consumer);
		fn("ring_full", "whole messages refused by the next stage's ring", ring_full);
		fn("msg_pool_empty",
		   "answers dropped for want of a message buffer (their requester hears 504)",
		   msg_pool_empty);
		fn("duplicates", "repeated fragments ignored", duplicates);
		fn("refused_saturated",
		   "requests refused at their first frame: their service was saturated (503)",
		   refused_saturated);
		fn("answered_saturated",
		   "of refused_saturated: requests of one frame port RX answered 503 itself, out "
		   "of the port (the rest: answered by the sidecar)",
		   answered_saturated);
		fn("answers_handed_on",
		   "of refused_saturated: requests of one frame port RX could answer but handed to "
		   "the sidecar (port TX held frames, or the port's queue did not take the answer)",
		   answers_handed_on);
		fn("refused_overloaded",
		   "requests refused 503 overloaded: no message buffer was left (the reserve's), "
		   "or pools.network.backlog messages waited for the sidecar",
		   refused_overloaded);
		fn("overloaded_backlog",
		   "of refused_overloaded: pools.network.backlog messages waited (the rest: the "
		   "message pool was empty)",
		   overloaded_backlog);
		fn("refused_incomplete",
		   "requests whose reassembly timed out with their first frame held: answered 408",
		   refused_incomplete);
		fn("reserve_empty",
		   "requests dropped with no answer: not even the reserve had a message buffer",
		   reserve_empty);
	}
};
drop_totals drops(const node &n);

/* ---- pods, pending requests, DPA threads ---- */

/** Registered pods (pod_id == UINT32_MAX: all; else that one, or an error). */
result<std::vector<pod_view>> pods(const node &n, std::string_view which);

struct pending_view {
	uint32_t token;
	pending::entry entry;
};
/** In-flight requests, the oldest first (at most `max`, and at most the oldest 32 of a
 *  shard), how many there are and, if asked, the tables' capacity, as each sidecar shard's
 *  lcore lists its own (sidecar::stage::pending_list): an error if one did not within 1 s. */
result<std::vector<pending_view>> pending(const node &n, size_t max, uint32_t *total,
					  uint32_t *capacity = nullptr);

/** "pod:0x..", "peer:N" or "none": a pending entry's origin or destination. */
std::string party_text(const pending::party &p);

/** A network address that holds pending requests or was refused (quota, per shard). */
struct source_quota_view {
	std::string address;
	sidecar::quota_usage usage;
};
/** Network addresses with pending requests or refusals, the busiest first. */
std::vector<source_quota_view> source_quotas(const node &n);

/* ---- actions ---- */

/** `start` / `stop`: returns whether the state changed. */
bool set_forwarding(node &n, bool on);

/** Sets the level of one dpumesh log type ("port" or "dpumesh.port") or "all" of them. */
status set_log_level(std::string_view type, std::string_view level);

struct log_level_view {
	std::string type;
	std::string level;
};
/** Global level first ("global"), then every dpumesh type. */
std::vector<log_level_view> log_levels();

/** Level names accepted by set_log_level, lowest to highest verbosity. */
inline constexpr std::string_view log_level_names[] = {
	"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
};

status set_stats_period(node &n, std::string_view seconds);

struct reload_report {
	std::string source;
	std::vector<std::string> changed; /**< sections applied: services, routes, peers, policy */
};

/**
 * Re-loads the config file with the same loader and validation as at start. Routes and
 * policy are applied to the sidecar as one new version (sidecar_policy.h), services'
 * limits to control's view; a change anywhere else (node, ports, mempool, lcores, pools,
 * peers, dpa, dma, or the set of service names) refuses the whole reload.
 */
result<reload_report> reload_config(node &n);

/* ---- routing and policy at run time (console `set ...`) ---- */

/**
 * Makes `cfg` the node's config: builds the sidecar's routing and policy version from it
 * (every error, with its config path, refuses the change) and publishes it (one RCU grace
 * period), then swaps control's view. Requests in flight finish under the version that
 * admitted them; each new one sees the old or the new version, never a mix.
 */
status apply_config(node &n, config::node_config cfg);

/** What a `set` command changed, for its one-line answer. */
struct edit_report {
	std::string what;   /**< "route echo -> local", ... */
	uint64_t version;   /**< the policy version now published (0: no sidecar) */
};

/** `set route <service> local|<peer>` */
result<edit_report> set_route(node &n, std::string_view service, std::string_view to);
/**
 * `set ratelimit <service> <path_prefix> <key> <rate> <burst>`: replaces the limit with
 * the same service, prefix and key, or adds one; rate 0 removes it.
 */
result<edit_report> set_ratelimit(node &n, std::string_view service, std::string_view prefix,
				  std::string_view key, std::string_view rate,
				  std::string_view burst);
/** `set timeout <service> <path_prefix> <timeout_ms> <retries>`: as set ratelimit. */
result<edit_report> set_timeout(node &n, std::string_view service, std::string_view prefix,
				std::string_view timeout_ms, std::string_view retries);
/**
 * `set policy <pointer> <json>`: sets the value at a JSON pointer under /policy (e.g.
 * `/policy/rbac/0/default "allow"`, `/policy/rate_limits/0/rate 50`); `-` as the last
 * token appends to an array, and the value `null` removes the member or element.
 */
result<edit_report> set_policy(node &n, std::string_view pointer, std::string_view json);

/* ---- telemetry ---- */

/**
 * A telemetry family a module adds under /dpumesh/<name> (the control plane does not know
 * it by name). `fill` runs on the telemetry thread with the node, under the same lock as
 * the built-in families; it returns 0 or a negative errno (-ENODEV: not available).
 */
struct telemetry_family {
	const char *name; /**< "policy" -> /dpumesh/policy */
	const char *help;
	int (*fill)(node &n, rte_tel_data *d);
};

/**
 * Adds families to those telemetry_register() serves (a module's start-up; before
 * telemetry_register, or the next call of it picks them up). The same name twice is a
 * no-op.
 */
void register_telemetry_families(std::span<const telemetry_family> families);

/**
 * One /dpumesh/... reply, built here and written into rte_tel_data by emit() within what
 * DPDK can send. DPDK 22.11 writes at most 16 KiB a reply (`/info`: max_output_len), a dict
 * of at most RTE_TEL_MAX_DICT_ENTRIES and arrays of RTE_TEL_MAX_ARRAY_ENTRIES, and leaves
 * out without a word whatever passes that: the last services of /dpumesh/metrics at 64
 * services, or the end of one column of a table and not of the others.
 *
 * A reply has fixed entries (always written; small), and either a table (columns of one
 * length) or listed entries (paged). The listed rows or entries from the call's parameter
 * (`/dpumesh/pods,40`: from the 41st; none: from the first) are written while they fit; if
 * some are left, the reply's `next` says where the next call starts. Built on the telemetry
 * thread, inside a /dpumesh/ callback (the parameter is that call's).
 */
class telemetry_reply {
public:
	explicit telemetry_reply(rte_tel_data *d) noexcept : _d(d) {}

	/* a fixed entry */
	void u64(std::string key, uint64_t v);

	/* a table: one column per call (the same rows in each) */
	std::vector<uint64_t> &u64_column(std::string name);
	std::vector<std::string> &str_column(std::string name);

	/*
	 * Listed entries: a string, an array of numbers, or a dict of strings and numbers each.
	 * An entry's key is a name (a service's, a route's) made a key of this reply: every
	 * character but letters, digits, '_' and '/' (all rte_telemetry takes) made '_', then
	 * given "_2", "_3", ... while an earlier key of the reply has it
	 * ("next", the pages' own key, is always taken). So `a-b` and `a_b` get `a_b` and
	 * `a_b_2`, in the order they are added; an entry whose name matters carries it in its
	 * dict.
	 */
	void entry_str(std::string_view name, std::string v);
	void entry_u64s(std::string_view name, std::vector<uint64_t> v);
	void entry_dict(std::string_view name, std::vector<std::pair<std::string, std::string>> strs,
			std::vector<std::pair<std::string, uint64_t>> v);

	/** Writes the reply; 0, or -EINVAL for a parameter that is not a whole number. */
	int emit();

private:
	struct value {
		enum class kind : uint8_t { u64, str, u64s, strs, dict };
		explicit value(kind k) noexcept : what(k) {}
		kind what;
		uint64_t n = 0;
		std::string s;
		std::vector<uint64_t> ns;
		std::vector<std::string> ss;
		std::vector<std::pair<std::string, std::string>> dict_strs;
		std::vector<std::pair<std::string, uint64_t>> dict;
	};
	void add_entry(std::string_view name, value v);

	rte_tel_data *_d;
	std::vector<std::pair<std::string, value>> _fixed, _columns, _entries;
	std::unordered_set<std::string> _keys{"next"}; /* the reply's keys so far */
};

/** Registers the /dpumesh/... telemetry endpoints, served from `n` until unregistered. */
status telemetry_register(node &n);
/** Detaches the endpoints from the node (they answer with an error afterwards). */
void telemetry_unregister() noexcept;

/* ---- formatting helpers shared by console and telemetry ---- */
std::string format_mac(const uint8_t mac[6]);
std::string format_ipv4(const in_addr &a);
std::string format_ipv6(const in6_addr &a);

} // namespace dpumesh::control
