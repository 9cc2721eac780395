// SPDX-License-Identifier: BSD-3-Clause
// The policy engine: builds per-service policy from config, checks requests, feeds breakers.
#include "dpumesh/policy/policy.h"

#include <algorithm>
#include <random>
#include <set>

#include "dpumesh/common/copy.h"

namespace dpumesh::policy {

const char *reason_name(reason r) noexcept
{
	if (r == reason::allowed)
		return "allowed";
	if (static_cast<uint8_t>(r) < static_cast<uint8_t>(jwt_error::count))
		return jwt_error_name(static_cast<jwt_error>(r));
	switch (r) {
#define DPUMESH_POLICY_REASON_NAME(n, s, st, d)                                          \
	case reason::n: return s;
		DPUMESH_FOREACH_POLICY_REASON(DPUMESH_POLICY_REASON_NAME)
#undef DPUMESH_POLICY_REASON_NAME
	default: break;
	}
	return "unknown";
}

const char *reason_help(reason r) noexcept
{
	if (r == reason::allowed)
		return "requests the policy allowed";
	if (static_cast<uint8_t>(r) < static_cast<uint8_t>(jwt_error::count))
		return jwt_error_help(static_cast<jwt_error>(r));
	switch (r) {
#define DPUMESH_POLICY_REASON_HELP(n, s, st, d)                                          \
	case reason::n: return d;
		DPUMESH_FOREACH_POLICY_REASON(DPUMESH_POLICY_REASON_HELP)
#undef DPUMESH_POLICY_REASON_HELP
	default: break;
	}
	return "?";
}

uint16_t reason_status(reason r) noexcept
{
	if (r == reason::allowed)
		return 0;
	if (static_cast<uint8_t>(r) < static_cast<uint8_t>(jwt_error::count))
		return 401;
	switch (r) {
#define DPUMESH_POLICY_REASON_STATUS(n, s, st, d)                                        \
	case reason::n: return st;
		DPUMESH_FOREACH_POLICY_REASON(DPUMESH_POLICY_REASON_STATUS)
#undef DPUMESH_POLICY_REASON_STATUS
	default: break;
	}
	return 500;
}

namespace {

/* FNV-1a over a service name (at most 63 bytes). */
inline uint32_t name_hash(std::string_view s) noexcept
{
	uint32_t h = 2166136261u;
	for (char c : s)
		h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
	return h;
}

} // namespace

engine::~engine() = default;

result<std::unique_ptr<engine>> engine::create(const schema::policy_config &cfg,
					       const engine_options &opt)
{
	std::unique_ptr<engine> e(new engine());
	const uint32_t div = opt.rate_divisor ? opt.rate_divisor : 1;
	uint64_t seed = opt.seed;
	if (seed == 0) {
		std::random_device rd;
		seed = (uint64_t(rd()) << 32) | rd() | 1;
	}

	/* the claims any rule or limit looks at, plus the usual identity claims */
	std::vector<std::string> claims = {"sub", "role", "roles", "tenant"};
	auto want = [&](const std::string &c) {
		if (std::find(claims.begin(), claims.end(), c) == claims.end())
			claims.push_back(c);
	};
	for (const auto &p : cfg.rbac)
		for (const auto &r : p.rules)
			for (const auto &[name, value] : r.claims)
				want(name);
	for (const auto &l : cfg.rate_limits)
		if (l.key == schema::ratelimit_key::claim)
			want(l.claim);
	if (cfg.jwt) {
		auto v = jwt_verifier::create(*cfg.jwt, claims);
		if (!v)
			return v.error();
		e->_jwt = std::move(v).value();
	}

	auto svc = [&](const std::string &name) -> service_policy & {
		for (auto &s : e->_services)
			if (s.name == name)
				return s;
		e->_services.push_back({});
		e->_services.back().name = name;
		return e->_services.back();
	};
	for (size_t i = 0; i < cfg.rbac.size(); i++) {
		const auto &p = cfg.rbac[i];
		if (p.require_jwt && !e->_jwt)
			return errorf("/policy/rbac/%zu: service \"%s\" requires JWT but /policy/jwt is "
				      "not configured",
				      i, p.service.c_str());
		auto r = rbac_policy::compile(p, e->_jwt.get());
		if (!r)
			return r.error();
		service_policy &s = svc(p.service);
		if (s.rbac)
			return errorf("/policy/rbac/%zu: a second RBAC policy for \"%s\"", i,
				      p.service.c_str());
		s.rbac = std::make_unique<rbac_policy>(std::move(r).value());
		s.needs_jwt = true;
	}
	for (size_t i = 0; i < cfg.rate_limits.size(); i++) {
		const auto &l = cfg.rate_limits[i];
		if (l.rate == 0)
			return errorf("/policy/rate_limits/%zu: rate is 0", i);
		uint32_t rate = std::max<uint32_t>(1, l.rate / div);
		uint32_t burst = std::max<uint32_t>(1, (l.burst ? l.burst : l.rate) / div);
		token_bucket b(rate, burst);
		limit lim{l.path_prefix,
			  l.path_prefix.empty()	 ? limit::match::all
			  : l.path_prefix == "/" ? limit::match::slash
						 : limit::match::prefix,
			  l.key, -1,
			  l.key == schema::ratelimit_key::route
				  ? rate_limiter(b)
				  : rate_limiter(b, opt.limiter_slots, seed + i)};
		if (l.key == schema::ratelimit_key::claim) {
			if (!e->_jwt)
				return errorf("/policy/rate_limits/%zu: key claim:%s needs /policy/jwt", i,
					      l.claim.c_str());
			lim.claim = e->_jwt->claim_index(l.claim);
		}
		service_policy &s = svc(l.service);
		if (s.limits.size() >= max_limits_per_service)
			return errorf("/policy/rate_limits/%zu: service \"%s\" has more than %zu rate "
				      "limits",
				      i, l.service.c_str(), max_limits_per_service);
		if (lim.claim >= 0)
			s.needs_jwt = s.claim_limits = true;
		s.limits.push_back(std::move(lim));
	}
	if (const engine *o = opt.share_limits) {
		for (service_policy &sp : e->_services) {
			const service_policy *os = o->lookup(sp.name);
			if (!os || os->limits.size() != sp.limits.size())
				return errorf("/policy/rate_limits: service \"%s\": cannot share buckets "
					      "with an engine of another config", sp.name.c_str());
			for (size_t j = 0; j < sp.limits.size(); j++)
				sp.limits[j].lim = os->limits[j].lim.share();
		}
	}
	for (size_t i = 0; i < cfg.circuit_breakers.size(); i++) {
		const auto &b = cfg.circuit_breakers[i];
		service_policy &s = svc(b.service);
		if (s.breaker)
			return errorf("/policy/circuit_breakers/%zu: a second breaker for \"%s\"", i,
				      b.service.c_str());
		s.breaker = std::make_unique<circuit_breaker>(b);
	}

	size_t cap = 8;
	while (cap < e->_services.size() * 2)
		cap <<= 1;
	e->_index.assign(cap, 0);
	for (uint32_t i = 0; i < e->_services.size(); i++) {
		uint32_t h = name_hash(e->_services[i].name) & (cap - 1);
		while (e->_index[h] != 0)
			h = (h + 1) & (cap - 1);
		e->_index[h] = i + 1;
	}
	e->_nb_services = static_cast<uint32_t>(e->_services.size());
	return e;
}

uint32_t engine::find_service(std::string_view name) const noexcept
{
	const uint32_t mask = static_cast<uint32_t>(_index.size() - 1);
	for (uint32_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
		uint32_t v = _index[h];
		if (v == 0)
			return no_service;
		if (_services[v - 1].name == name)
			return v - 1;
	}
}

engine::service_policy *engine::lookup(std::string_view name) noexcept
{
	uint32_t i = find_service(name);
	return i == no_service ? nullptr : &_services[i];
}

const engine::service_policy *engine::lookup(std::string_view name) const noexcept
{
	uint32_t i = find_service(name);
	return i == no_service ? nullptr : &_services[i];
}

verdict engine::refuse(reason r) noexcept
{
	_stats.reasons[static_cast<size_t>(r)].inc();
	return {reason_status(r), r, nullptr};
}

verdict engine::check_request(const wire::l7_view &req, uint64_t source_id, uint64_t now_ns,
			      int64_t unix_s) noexcept
{
	return check_request(req, find_service(req.service), source_id, now_ns, unix_s);
}

verdict engine::check_policy(const wire::l7_view &req, service_policy &sp, uint64_t source_id,
			     uint64_t now_ns, int64_t unix_s) noexcept
{
	service_policy *s = &sp;
	if (s->breaker && s->breaker->shedding(now_ns)) [[unlikely]]
		return refuse(reason::circuit_open);

	/* phase 1: reserve a token in every matching limit; commit only if all pass (the
	 * tickets are not cleared: reserve() writes each one it hands out) */
	rate_limiter::ticket tickets[max_limits_per_service];
	unsigned nb_tickets = 0;
	const cut_path cut = scan_path(req.path); /* for RBAC too: one pass */
	const std::string_view path = cut.path;
	auto applies = [&](const limit &l) noexcept {
		if (l.how == limit::match::all)
			return true;
		if (l.how == limit::match::slash)
			return !path.empty() && path[0] == '/';
		const size_t n = l.path_prefix.size();
		return path.size() >= n && same_bytes(path.data(), l.path_prefix.data(), n);
	};
	auto reserve = [&](limit &l, uint64_t key) noexcept {
		/* a fall back to the overflow bucket counted where it is found */
		return l.lim.reserve(key, now_ns, &tickets[nb_tickets++], &_stats.limiter_overflow);
	};
	for (auto &l : s->limits) {
		if (l.claim >= 0 || !applies(l))
			continue;
		if (!reserve(l, source_id))
			return refuse(reason::rate_limited);
	}

	const token_claims *claims = nullptr;
	if (s->needs_jwt && _jwt) {
		/* noted by the decoder (l7_view::authorization): no walk of the fields here */
		if (const std::string_view auth = req.authorization; auth.data()) {
			_stats.jwt_checked.inc();
			const verified_token *tok = nullptr;
			jwt_path how;
			jwt_error e = _jwt->verify_header(auth, unix_s, &tok, &how);
			if (how == jwt_path::cache_hit)
				_stats.jwt_cache_hits.inc();
			else if (how == jwt_path::signature)
				_stats.jwt_signatures.inc();
			if (e != jwt_error::ok)
				return refuse(to_reason(e));
			claims = &tok->claims;
		} else if (s->rbac && s->rbac->require_jwt()) {
			return refuse(reason::jwt_missing);
		}
	}
	if (s->rbac && !s->rbac->allows_cut(req.method, cut, claims))
		return refuse(reason::rbac_denied);

	if (s->claim_limits) { /* tested once, not the loop set up to stop at once */
		for (auto &l : s->limits) {
			if (l.claim < 0 || !applies(l))
				continue;
			/* requests without the claim share the bucket of the empty value */
			std::string_view v =
				claims ? claims->first(static_cast<unsigned>(l.claim)) : "";
			if (!reserve(l, limiter_key(v.data(), v.size())))
				return refuse(reason::rate_limited);
		}
	}
	if (s->breaker && !s->breaker->admit(now_ns))
		return refuse(reason::circuit_open);

	for (unsigned i = 0; i < nb_tickets; i++)
		rate_limiter::commit(tickets[i]);
	_stats.reasons[static_cast<size_t>(reason::allowed)].inc();
	return {0, reason::allowed, claims};
}

bool engine::breaker_allows(uint32_t service, uint64_t now_ns) noexcept
{
	if (service >= _nb_services || !_services[service].breaker)
		return true;
	return _services[service].breaker->admit(now_ns);
}

bool engine::breaker_allows(std::string_view service, uint64_t now_ns) noexcept
{
	return breaker_allows(find_service(service), now_ns);
}

void engine::record_response(circuit_breaker &b, uint16_t status, uint64_t now_ns) noexcept
{
	const bool failure = status >= 500;
	_stats.responses.inc();
	if (failure)
		_stats.response_failures.inc();
	uint64_t before = b.opened();
	b.record(failure, now_ns);
	if (b.opened() != before)
		_stats.breaker_opened.inc();
}

void engine::on_response(std::string_view service, uint16_t status, uint64_t now_ns) noexcept
{
	on_response(find_service(service), status, now_ns);
}

breaker_state engine::breaker(std::string_view service) const noexcept
{
	const service_policy *s = lookup(service);
	return s && s->breaker ? s->breaker->state() : breaker_state::closed;
}

} // namespace dpumesh::policy
