// SPDX-License-Identifier: BSD-3-Clause
// One immutable version of the sidecar's routes, deadlines, retries and L7 policy.
#include "dpumesh/sidecar/ruleset.h"

#include <algorithm>

namespace dpumesh::sidecar {

uint64_t latency_histogram::count() const noexcept
{
	uint64_t n = 0;
	for (const counter &c : buckets)
		n += c.get();
	return n;
}

uint64_t latency_histogram::quantile_us(double q) const noexcept
{
	return quantile_us(read(), q);
}

void latency_histogram::add(const latency_histogram &o) noexcept
{
	for (unsigned i = 0; i < nb_buckets; i++)
		buckets[i].add(o.buckets[i].get());
	sum_us.add(o.sum_us.get());
}

const char *refusal_reason_name(refusal_reason r) noexcept
{
	switch (r) {
#define DPUMESH_REFUSAL_NAME(n)                                                                  \
	case refusal_reason::n:                                                                  \
		return #n;
		DPUMESH_FOREACH_REFUSAL_REASON(DPUMESH_REFUSAL_NAME)
#undef DPUMESH_REFUSAL_NAME
	case refusal_reason::count:
		break;
	}
	return "refused";
}

void l7_metrics::add(const l7_metrics &o) noexcept
{
	requests.add(o.requests.get());
	refused.add(o.refused.get());
	for (size_t r = 0; r < refused_by.size(); r++)
		refused_by[r].add(o.refused_by[r].get());
	for (size_t c = 0; c < classes.size(); c++)
		classes[c].add(o.classes[c].get());
	mesh_generated.add(o.mesh_generated.get());
	retries.add(o.retries.get());
	timeouts.add(o.timeouts.get());
	latency.add(o.latency);
}

std::array<uint64_t, latency_histogram::nb_buckets> latency_histogram::read() const noexcept
{
	std::array<uint64_t, nb_buckets> snap;
	for (unsigned i = 0; i < nb_buckets; i++)
		snap[i] = buckets[i].get();
	return snap;
}

uint64_t latency_histogram::quantile_us(const std::array<uint64_t, nb_buckets> &snap,
					double q) noexcept
{
	uint64_t n = 0;
	for (uint64_t v : snap)
		n += v;
	if (n == 0)
		return 0;
	/* the rank of the q-quantile, 1-based, rounded up */
	uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(n));
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	uint64_t seen = 0;
	for (unsigned i = 0; i < nb_buckets; i++) {
		seen += snap[i];
		if (seen >= rank)
			return i == 0 ? 1 : uint64_t(1) << i;
	}
	return uint64_t(1) << (nb_buckets - 1);
}

result<std::unique_ptr<ruleset>> ruleset::build(const config::node_config &cfg,
							       const pod_registry &reg,
							       uint64_t version, const ruleset *share_limits)
{
	std::unique_ptr<ruleset> p(new ruleset());
	p->_version = version;
	p->_default_timeout_ms = cfg.policy.default_timeout_ms;
	p->_cfg = cfg.policy;
	policy::engine_options eo;
	if (share_limits)
		eo.share_limits = &share_limits->engine();
	auto eng = policy::engine::create(cfg.policy, eo);
	if (!eng)
		return eng.error();
	p->_engine = std::move(*eng);

	p->_services.resize(cfg.services.size());
	uint32_t nb_routes = 0;
	for (size_t i = 0; i < cfg.services.size(); i++) {
		const config::service_config &svc = cfg.services[i];
		uint32_t idx = reg.service_index(svc.name);
		if (idx >= p->_services.size())
			return errorf("%s: service %s is not one the node started with (services "
				      "cannot change at run time; restart dpumesh)",
				      cfg.where("/services/" + std::to_string(i)).c_str(),
				      svc.name.c_str());
		service_rules &s = p->_services[idx];
		s.name = svc.name;
		s.policy = p->_engine->find_service(svc.name);
		for (const auto &b : cfg.policy.circuit_breakers)
			s.breaker = s.breaker || b.service == svc.name;
		if (const config::route_config *r = cfg.find_route(svc.name); r && !r->is_local()) {
			s.local = false;
			const config::peer_config *peer = cfg.find_peer(r->to);
			if (!peer)
				return errorf("%s: route of %s names no peer %s",
					      cfg.where("/routes").c_str(), svc.name.c_str(),
					      r->to.c_str());
			s.peer = static_cast<uint16_t>(peer - cfg.peers.data());
		}
		for (const config::timeout_config &t : cfg.policy.timeouts) {
			if (t.service != svc.name)
				continue;
			route_rule r;
			r.path_prefix = t.path_prefix;
			r.timeout_ms = t.timeout_ms;
			r.retries = t.retries;
			r.backoff_ms = t.backoff_ms;
			r.retry_budget_percent = t.retry_budget_percent;
			r.retry_non_idempotent = t.retry_non_idempotent;
			r.configured = true;
			s.routes.push_back(std::move(r));
		}
		std::stable_sort(s.routes.begin(), s.routes.end(), [](const auto &a, const auto &b) {
			return a.path_prefix.size() > b.path_prefix.size();
		});
		route_rule def; /* no configured prefix matched: the node's default deadline */
		def.timeout_ms = cfg.policy.default_timeout_ms;
		s.routes.push_back(std::move(def));
		for (route_rule &r : s.routes)
			r.metrics = nb_routes++;
	}
	p->_route_metrics = std::make_unique<l7_metrics[]>(nb_routes);
	return p;
}

const route_rule &ruleset::route_by_prefix(const std::vector<route_rule> &routes,
					   std::string_view path) noexcept
{
	for (size_t i = 0; i + 1 < routes.size(); i++)
		if (path.substr(0, routes[i].path_prefix.size()) == routes[i].path_prefix)
			return routes[i];
	return routes.back();
}

} // namespace dpumesh::sidecar
