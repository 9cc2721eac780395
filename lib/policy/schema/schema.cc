// SPDX-License-Identifier: BSD-3-Clause
// Reads and validates /policy (dpumesh::json): JWT keys, RBAC, rate limits, breakers, timeouts.
#include "dpumesh/policy/schema.h"

#include <set>

#include "dpumesh/common/base64url.h"

namespace dpumesh::policy {

using namespace schema;

namespace {

using ctx = json::reader;
using obj = json::object_reader;
using json::pointer_append;
using json::type_name;

/* Where the reader is: the pointer of /policy and the node's services. */
struct scope {
	const std::string &ptr;
	const service_lookup &known_service;
	std::string at(std::string_view key) const { return pointer_append(ptr, key); }
};

void check_service_ref(ctx &c, const scope &sc, obj &o, const std::string &service)
{
	if (!c.failed() && !sc.known_service(service))
		c.fail(o.child("service"), "unknown service \"" + service + "\"");
}

void read_jwt(ctx &c, const scope &sc, const json_t *v, policy_config &cfg)
{
	jwt_config j;
	obj o(c, v, sc.at("jwt"));
	std::string issuer;
	if (o.str("issuer", issuer, false, 1024))
		j.issuer = issuer;
	if (const json_t *aud = o.array("audiences", false, 64)) {
		size_t i;
		const json_t *a;
		json_array_foreach(aud, i, a)
		{
			if (!json_is_string(a) || json_string_length(a) == 0)
				return c.fail(pointer_append(o.child("audiences"), std::to_string(i)),
					      "expected a non-empty string");
			j.audiences.emplace_back(json_string_value(a));
		}
	}
	o.uint("clock_skew_s", j.clock_skew_s, 0, 3600);
	o.uint("cache_entries", j.cache_entries, 0, 1u << 20);
	const json_t *keys = o.array("keys", true, 64);
	o.done();
	if (!keys)
		return;
	if (json_array_size(keys) == 0)
		return c.fail(o.child("keys"), "needs at least one key");
	size_t i;
	const json_t *kv;
	json_array_foreach(keys, i, kv)
	{
		jwt_key k;
		obj ko(c, kv, pointer_append(o.child("keys"), std::to_string(i)));
		ko.str("kid", k.kid, true, 128);
		ko.enumeration("alg", k.alg,
			       {{"HS256", jwt_alg::hs256}, {"RS256", jwt_alg::rs256},
				{"ES256", jwt_alg::es256}},
			       true);
		std::string secret;
		bool has_secret = ko.str("secret", secret, false, 4096);
		bool has_pem = ko.str("pem", k.pem, false, 16384);
		ko.done();
		if (c.failed())
			return;
		if (k.alg == jwt_alg::hs256) {
			if (!has_secret || has_pem)
				return c.fail(ko.ptr(), "HS256 key needs \"secret\" (base64url) and no \"pem\"");
			auto bytes = base64url_decode(secret, base64url_form::lenient);
			if (!bytes)
				return c.fail(ko.child("secret"),
					      "not valid base64url (or base64; '=' only at the end)");
			k.secret = std::move(*bytes);
			if (k.secret.size() < 32)
				return c.fail(ko.child("secret"),
					      "HS256 secret is " + std::to_string(k.secret.size()) +
						      " bytes; at least 32 are required");
		} else {
			if (!has_pem || has_secret)
				return c.fail(ko.ptr(), "RS256/ES256 key needs \"pem\" and no \"secret\"");
			if (k.pem.find("-----BEGIN PUBLIC KEY-----") == std::string::npos)
				return c.fail(ko.child("pem"), "not a PEM public key (-----BEGIN PUBLIC KEY-----)");
		}
		for (const auto &other : j.keys)
			if (other.kid == k.kid)
				return c.fail(ko.child("kid"), "duplicate key id \"" + k.kid + "\"");
		j.keys.push_back(std::move(k));
	}
	cfg.jwt = std::move(j);
}

void read_path_match(ctx &c, obj &o, path_match &match, std::string &path)
{
	int found = 0;
	for (auto [key, kind] : {std::pair{"exact", path_match::exact},
				 std::pair{"prefix", path_match::prefix},
				 std::pair{"glob", path_match::glob}}) {
		std::string s;
		if (o.str(key, s, false, 1024)) {
			found++;
			match = kind;
			path = s;
			if (s[0] != '/')
				c.fail(o.child(key), "\"" + s + "\" must start with '/'");
		}
	}
	if (found > 1)
		c.fail(o.ptr(), "give only one of \"exact\", \"prefix\", \"glob\"");
}

void read_rbac(ctx &c, const scope &sc, const json_t *arr, policy_config &cfg)
{
	static const std::set<std::string> methods = {"GET",    "HEAD",    "POST",  "PUT",
						      "DELETE", "OPTIONS", "PATCH", "CONNECT",
						      "TRACE"};
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v)
	{
		rbac_policy p;
		obj o(c, v, pointer_append(sc.at("rbac"), i));
		o.str("service", p.service, true, 63);
		std::string def = "deny";
		o.enumeration("default", p.default_allow, {{"deny", false}, {"allow", true}});
		o.boolean("require_jwt", p.require_jwt);
		const json_t *rules = o.array("rules", false, 1024);
		o.done();
		check_service_ref(c, sc, o, p.service);
		size_t j;
		const json_t *rv;
		if (rules) {
			json_array_foreach(rules, j, rv)
			{
				rbac_rule r;
				obj ro(c, rv, pointer_append(o.child("rules"), std::to_string(j)));
				if (const json_t *m = ro.array("methods", false, 16)) {
					size_t k;
					const json_t *mv;
					json_array_foreach(m, k, mv)
					{
						std::string mp = pointer_append(ro.child("methods"),
										std::to_string(k));
						if (!json_is_string(mv) || !methods.count(json_string_value(mv)))
							return c.fail(mp, "expected an HTTP method (GET, POST, ...)");
						r.methods.emplace_back(json_string_value(mv));
					}
				}
				read_path_match(c, ro, r.match, r.path);
				if (const json_t *cl = ro.get("claims", false)) {
					if (!json_is_object(cl))
						return c.fail(ro.child("claims"),
							      std::string("expected an object, got ") +
								      type_name(cl));
					const char *ck;
					const json_t *cv;
					json_object_foreach(const_cast<json_t *>(cl), ck, cv)
					{
						if (!json_is_string(cv))
							return c.fail(pointer_append(ro.child("claims"), ck),
								      "expected a string");
						r.claims[ck] = json_string_value(cv);
					}
				}
				ro.done();
				if (c.failed())
					return;
				p.rules.push_back(std::move(r));
			}
		}
		if (c.failed())
			return;
		for (const auto &other : cfg.rbac)
			if (other.service == p.service)
				return c.fail(o.child("service"),
					      "duplicate RBAC policy for service \"" + p.service + "\"");
		if (p.require_jwt && !cfg.jwt)
			return c.fail(o.child("service"),
				      "RBAC policy requires JWT but /policy/jwt is not configured "
				      "(set \"require_jwt\": false or add /policy/jwt)");
		cfg.rbac.push_back(std::move(p));
	}
}

void read_rate_limits(ctx &c, const scope &sc, const json_t *arr, policy_config &cfg)
{
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v)
	{
		ratelimit_config r;
		obj o(c, v, pointer_append(sc.at("rate_limits"), i));
		o.str("service", r.service, true, 63);
		if (o.str("path_prefix", r.path_prefix, false, 1024) && r.path_prefix[0] != '/')
			c.fail(o.child("path_prefix"), "must start with '/'");
		std::string key;
		if (o.str("key", key, false, 128)) {
			if (key == "source")
				r.key = ratelimit_key::source;
			else if (key == "route")
				r.key = ratelimit_key::route;
			else if (key.rfind("claim:", 0) == 0 && key.size() > 6) {
				r.key = ratelimit_key::claim;
				r.claim = key.substr(6);
			} else
				c.fail(o.child("key"), "\"" + key +
							       "\" is not one of: source, route, claim:<name>");
		}
		o.uint("rate", r.rate, 1, 100000000, true);
		r.burst = r.rate;
		o.uint("burst", r.burst, 1, 100000000);
		o.done();
		check_service_ref(c, sc, o, r.service);
		if (c.failed())
			return;
		if (r.key == ratelimit_key::claim && !cfg.jwt)
			return c.fail(o.child("key"), "a claim key needs /policy/jwt");
		cfg.rate_limits.push_back(std::move(r));
	}
}

void read_breakers(ctx &c, const scope &sc, const json_t *arr, policy_config &cfg)
{
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v)
	{
		breaker_config b;
		obj o(c, v, pointer_append(sc.at("circuit_breakers"), i));
		o.str("service", b.service, true, 63);
		o.uint("consecutive_failures", b.consecutive_failures, 1, 1000000);
		o.uint("error_rate_percent", b.error_rate_percent, 1, 100);
		o.uint("min_requests", b.min_requests, 1, 1000000);
		o.uint("window_ms", b.window_ms, 10, 3600000);
		o.uint("open_ms", b.open_ms, 1, 3600000);
		o.uint("half_open_probes", b.half_open_probes, 1, 1000);
		o.done();
		check_service_ref(c, sc, o, b.service);
		if (c.failed())
			return;
		for (const auto &other : cfg.circuit_breakers)
			if (other.service == b.service)
				return c.fail(o.child("service"), "duplicate circuit breaker for \"" +
									  b.service + "\"");
		cfg.circuit_breakers.push_back(std::move(b));
	}
}

void read_timeouts(ctx &c, const scope &sc, const json_t *arr, policy_config &cfg)
{
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v)
	{
		timeout_config t;
		obj o(c, v, pointer_append(sc.at("timeouts"), i));
		o.str("service", t.service, true, 63);
		if (o.str("path_prefix", t.path_prefix, false, 1024) && t.path_prefix[0] != '/')
			c.fail(o.child("path_prefix"), "must start with '/'");
		o.uint("timeout_ms", t.timeout_ms, 1, 3600000);
		o.uint("retries", t.retries, 0, 10);
		o.uint("backoff_ms", t.backoff_ms, 0, 60000);
		o.uint("retry_budget_percent", t.retry_budget_percent, 0, 100);
		o.boolean("retry_non_idempotent", t.retry_non_idempotent);
		o.done();
		check_service_ref(c, sc, o, t.service);
		if (c.failed())
			return;
		cfg.timeouts.push_back(std::move(t));
	}
}

void read_policy(ctx &c, const scope &sc, const json_t *v, policy_config &cfg)
{
	obj o(c, v, sc.ptr);
	o.uint("default_timeout_ms", cfg.default_timeout_ms, 1, 3600000);
	if (const json_t *j = o.get("jwt", false))
		read_jwt(c, sc, j, cfg);
	if (const json_t *a = o.array("rbac"))
		read_rbac(c, sc, a, cfg);
	if (const json_t *a = o.array("rate_limits"))
		read_rate_limits(c, sc, a, cfg);
	if (const json_t *a = o.array("circuit_breakers"))
		read_breakers(c, sc, a, cfg);
	if (const json_t *a = o.array("timeouts"))
		read_timeouts(c, sc, a, cfg);
	o.done();
}

} // namespace

void read_config(json::reader &r, const json_t *v, const std::string &ptr,
		 const service_lookup &known_service, schema::policy_config &out)
{
	if (!v)
		return;
	scope sc{ptr, known_service};
	read_policy(r, sc, v, out);
}

} // namespace dpumesh::policy
