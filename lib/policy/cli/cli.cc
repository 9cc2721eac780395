// SPDX-License-Identifier: BSD-3-Clause
// The policy module's console rows (show policy, run-time edits of routes and policy) and its
// telemetry family (/dpumesh/policy).
// Handlers parse their words, call lib/control's action functions and render text.
#include "dpumesh/policy/cli.h"

#include <rte_telemetry.h>

#include <cerrno>
#include <cinttypes>
#include <string>
#include <utility>
#include <vector>

#include "dpumesh/console/commands.h"
#include "dpumesh/control/control.h"
#include "dpumesh/policy/policy.h"
#include "dpumesh/sidecar/sidecar.h"

namespace dpumesh::policy::cli {

namespace {

using console::appendf;
using console::command_spec;
using console::invocation;

const char *yes_no(bool b) { return b ? "yes" : "no"; }

const char *alg_name(config::jwt_alg a)
{
	switch (a) {
	case config::jwt_alg::hs256: return "HS256";
	case config::jwt_alg::rs256: return "RS256";
	case config::jwt_alg::es256: return "ES256";
	}
	return "?";
}

const char *match_name(config::path_match m)
{
	switch (m) {
	case config::path_match::exact: return "exact";
	case config::path_match::prefix: return "prefix";
	case config::path_match::glob: return "glob";
	}
	return "?";
}

const char *key_name(config::ratelimit_key k)
{
	switch (k) {
	case config::ratelimit_key::source: return "source";
	case config::ratelimit_key::route: return "route";
	case config::ratelimit_key::claim: return "claim";
	}
	return "?";
}

/* The engine's counters, summed over the sidecar shards' copies of `pol`'s version (a swap
 * under way may not have reached every shard yet: those are left out). The names are
 * copied: the visitor's may be built for the call. */
std::vector<std::pair<std::string, uint64_t>>
counter_sums(const sidecar::ruleset &pol, const std::vector<sidecar::stage *> &shards)
{
	std::vector<std::pair<std::string, uint64_t>> sums;
	policy::for_each_policy_counter(pol.engine().stats(),
					[&](const char *name, const char *, uint64_t) {
						sums.emplace_back(name, 0);
					});
	for (const sidecar::stage *sh : shards) {
		auto copy = sh->policy();
		if (!copy || copy->version() != pol.version())
			continue;
		size_t k = 0;
		policy::for_each_policy_counter(copy->engine().stats(),
						[&](const char *, const char *, uint64_t v) {
							if (k < sums.size())
								sums[k].second += v;
							k++;
						});
	}
	return sums;
}

/* A service's breaker over the shards (each keeps its own, docs/policy.md "Breakers are per
 * shard"): the most severe state any shard's copy of `pol`'s version is in (open, then
 * half-open, then closed), and each shard's state in shard order ("closed,open") when there
 * are several. */
struct breaker_view {
	policy::breaker_state worst = policy::breaker_state::closed;
	std::string per_shard;
};

breaker_view breaker_over_shards(const sidecar::ruleset &pol, const std::string &svc,
				 const std::vector<sidecar::stage *> &shards)
{
	auto rank = [](policy::breaker_state b) {
		return b == policy::breaker_state::open ? 2 : b == policy::breaker_state::half_open ? 1 : 0;
	};
	breaker_view v;
	v.worst = pol.engine().breaker(svc);
	for (const sidecar::stage *sh : shards) {
		auto copy = sh->policy();
		if (!copy || copy->version() != pol.version())
			continue;
		const policy::breaker_state b = copy->engine().breaker(svc);
		if (rank(b) > rank(v.worst))
			v.worst = b;
		if (shards.size() > 1)
			v.per_shard += (v.per_shard.empty() ? "" : ",") +
				       std::string(policy::breaker_state_name(b));
	}
	return v;
}

/* The engine's state: version, counters that are not zero (over all shards), breakers (over
 * all shards: the most severe state, and each shard's when there are several). */
void append_engine_state(std::string &out, const sidecar::ruleset &pol,
			 const std::vector<sidecar::stage *> &shards)
{
	const policy::engine &e = pol.engine();
	if (shards.size() > 1)
		appendf(out, "policy version %" PRIu64 " (enforced by the sidecar, %zu shards)\n",
			pol.version(), shards.size());
	else
		appendf(out, "policy version %" PRIu64 " (enforced by the sidecar)\n", pol.version());
	const auto sums = counter_sums(pol, shards);
	std::string line;
	for (const auto &[name, v] : sums)
		if (v)
			line += " " + name + "=" + std::to_string(v);
	appendf(out, "  counters:%s\n", line.empty() ? " (none yet)" : line.c_str());
	for (size_t i = 0; i < e.nb_services(); i++) {
		const std::string &svc = e.service_name(static_cast<uint32_t>(i));
		const breaker_view b = breaker_over_shards(pol, svc, shards);
		if (b.per_shard.empty())
			appendf(out, "  service %s breaker=%s\n", svc.c_str(),
				policy::breaker_state_name(b.worst));
		else
			appendf(out, "  service %s breaker=%s shards=%s\n", svc.c_str(),
				policy::breaker_state_name(b.worst), b.per_shard.c_str());
	}
}

status cmd_show_policy(invocation &inv)
{
	auto cfg = inv.node.config();
	const config::policy_config &p = cfg->policy;
	if (const sidecar::stage *sc = inv.node.sidecar())
		append_engine_state(inv.out, *sc->policy(), inv.node.shards());
	else
		appendf(inv.out, "policy (no sidecar in this node: not enforced)\n");
	appendf(inv.out, "  default_timeout_ms=%u\n", p.default_timeout_ms);
	if (p.jwt) {
		std::string aud;
		for (const std::string &a : p.jwt->audiences)
			aud += (aud.empty() ? "" : ",") + a;
		appendf(inv.out, "  jwt issuer=%s audiences=%s clock_skew_s=%u keys:",
			p.jwt->issuer ? p.jwt->issuer->c_str() : "-", aud.empty() ? "-" : aud.c_str(),
			p.jwt->clock_skew_s);
		for (const config::jwt_key &k : p.jwt->keys)
			appendf(inv.out, " %s/%s", k.kid.c_str(), alg_name(k.alg));
		appendf(inv.out, "\n");
	} else {
		appendf(inv.out, "  jwt none\n");
	}
	for (const config::rbac_policy &r : p.rbac) {
		appendf(inv.out, "  rbac %s default=%s require_jwt=%s rules=%zu\n", r.service.c_str(),
			r.default_allow ? "allow" : "deny", yes_no(r.require_jwt), r.rules.size());
		for (const config::rbac_rule &rule : r.rules) {
			std::string m;
			for (const std::string &x : rule.methods)
				m += (m.empty() ? "" : ",") + x;
			appendf(inv.out, "    allow methods=%s %s %s claims=%zu\n",
				m.empty() ? "*" : m.c_str(), match_name(rule.match), rule.path.c_str(),
				rule.claims.size());
		}
	}
	for (const config::ratelimit_config &r : p.rate_limits)
		appendf(inv.out, "  ratelimit %s %s key=%s%s%s rate=%u/s burst=%u\n",
			r.service.c_str(), r.path_prefix.c_str(), key_name(r.key),
			r.claim.empty() ? "" : ":", r.claim.c_str(), r.rate, r.burst);
	for (const config::breaker_config &b : p.circuit_breakers)
		appendf(inv.out,
			"  breaker %s consecutive_failures=%u error_rate=%u%% min_requests=%u "
			"window_ms=%u open_ms=%u half_open_probes=%u\n",
			b.service.c_str(), b.consecutive_failures, b.error_rate_percent,
			b.min_requests, b.window_ms, b.open_ms, b.half_open_probes);
	for (const config::timeout_config &t : p.timeouts)
		appendf(inv.out,
			"  timeout %s %s timeout_ms=%u retries=%u backoff_ms=%u budget=%u%%%s\n",
			t.service.c_str(), t.path_prefix.c_str(), t.timeout_ms, t.retries,
			t.backoff_ms, t.retry_budget_percent,
			t.retry_non_idempotent ? " retry_non_idempotent" : "");
	return status::ok();
}

status print_edit(invocation &inv, const result<control::edit_report> &rep)
{
	if (!rep)
		return rep.error();
	appendf(inv.out, "%s: applied, policy version %" PRIu64 "\n", rep->what.c_str(),
		rep->version);
	return status::ok();
}

status cmd_set_route(invocation &inv)
{
	return print_edit(inv, control::set_route(inv.node, inv.words[2], inv.words[3]));
}

status cmd_set_ratelimit(invocation &inv)
{
	return print_edit(inv, control::set_ratelimit(inv.node, inv.words[2], inv.words[3],
						       inv.words[4], inv.words[5], inv.words[6]));
}

status cmd_set_timeout(invocation &inv)
{
	return print_edit(inv, control::set_timeout(inv.node, inv.words[2], inv.words[3],
						     inv.words[4], inv.words[5]));
}

status cmd_set_policy(invocation &inv)
{
	return print_edit(inv, control::set_policy(inv.node, inv.words[2], inv.words[3]));
}

/* Policy: the published version, the engine's counters, "breaker/<service>" states. */
int fill_policy(control::node &n, rte_tel_data *d)
{
	if (!n.sidecar())
		return -ENODEV;
	auto pol = n.sidecar()->policy();
	/* the counters always; the breakers (one a service: up to 1024) paged */
	control::telemetry_reply r(d);
	r.u64("version", pol->version());
	for (const auto &[name, v] : counter_sums(*pol, n.shards()))
		r.u64(name, v);
	for (size_t i = 0; i < pol->engine().nb_services(); i++) {
		const std::string &svc = pol->engine().service_name(static_cast<uint32_t>(i));
		r.entry_dict("breaker/" + svc,
			     {{"service", svc},
			      {"state", policy::breaker_state_name(
						breaker_over_shards(*pol, svc, n.shards()).worst)}},
			     {});
	}
	return r.emit();
}

const control::telemetry_family families[] = {
	{"policy", "L7 policy: version, verdicts by reason, JWT cache, breaker/<service> states",
	 &fill_policy},
};

const command_spec rows[] = {
	{"show policy", "L7 policy: version, verdict counters, breakers, and the rules", &cmd_show_policy},
	{"set route <service> <to>", "route a service to \"local\" pods or a peer node", &cmd_set_route},
	{"set ratelimit <service> <path_prefix> <key> <rate> <burst>", "add or change a token bucket (key: source, route, claim:<name>; rate 0 removes it)", &cmd_set_ratelimit},
	{"set timeout <service> <path_prefix> <timeout_ms> <retries>", "add or change a route's deadline and retries (timeout_ms 0 removes it)", &cmd_set_timeout},
	{"set policy <pointer> <json...>", "set any value under /policy (JSON pointer) to the JSON of the rest of the line, blanks included, validated like the config (null removes, a trailing /- appends)", &cmd_set_policy},
};

} // namespace

void register_module()
{
	console::register_commands(rows);
	control::register_telemetry_families(families);
}

} // namespace dpumesh::policy::cli
