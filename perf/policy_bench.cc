// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-policy-bench: cost of policy::engine::check_request per request on one core.
//
//   build-perf/bin/dpumesh-policy-bench [--benchmark_repetitions=3 ...]
// Each case checks one decoded request header again and again (the L7 decode is not
// counted), with a monotonic clock that moves 1 us per request:
//   no_policy       a service with no policy at all (the lookup only)
//   no_jwt          source rate limit + route rate limit + circuit breaker, no token
//   jwt_cached/ALG  RBAC with a claim rule, the same token each time (a cache hit)
//   jwt_uncached/ALG  the same with the cache off: every request verifies the signature
// Results in docs/policy.md.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dpumesh/wire/l7.h"
#include "dpumesh/policy/policy.h"
#include "jwt_signer.h"

using namespace dpumesh;
using namespace dpumesh::policy;

namespace {

constexpr int64_t unix_now = 1900000000;
const std::string secret = "bench-secret-bench-secret-bench-secret-0123456789";

struct keys {
	std::unique_ptr<test::signing_key> hs = test::signing_key::hmac(secret);
	std::unique_ptr<test::signing_key> rs = test::signing_key::rsa(2048);
	std::unique_ptr<test::signing_key> es = test::signing_key::ec("P-256");
};

keys &k()
{
	static keys x;
	return x;
}

struct request {
	std::vector<uint8_t> buf = std::vector<uint8_t>(4096);
	wire::l7_view v;
	request(std::string_view service, std::string_view auth)
	{
		wire::l7_writer w(buf.data(), buf.size());
		w.request(service, "GET", "/v1/items/42?verbose=1");
		w.field("x-request-id", "0af7651916cd43dd8448eb211c80319c");
		if (!auth.empty())
			w.field("authorization", auth);
		size_t n = w.finish();
		if (n == 0 || wire::l7_decode(buf.data(), n, &v) != wire::l7_error::ok)
			std::abort();
	}
};

policy::schema::policy_config make_policy(uint32_t cache_entries)
{
	policy::schema::policy_config p;
	policy::schema::jwt_config j;
	j.issuer = "https://issuer.example";
	j.audiences = {"mesh"};
	j.cache_entries = cache_entries;
	j.keys.push_back({"h1", policy::schema::jwt_alg::hs256, secret, ""});
	j.keys.push_back({"r1", policy::schema::jwt_alg::rs256, "", k().rs->public_pem()});
	j.keys.push_back({"e1", policy::schema::jwt_alg::es256, "", k().es->public_pem()});
	p.jwt = j;
	policy::schema::rbac_policy r;
	r.service = "api";
	policy::schema::rbac_rule admin;
	admin.claims = {{"roles", "admin"}};
	policy::schema::rbac_rule reader;
	reader.methods = {"GET", "HEAD"};
	reader.match = policy::schema::path_match::glob;
	reader.path = "/v1/items/*";
	reader.claims = {{"role", "reader"}};
	r.rules = {admin, reader};
	p.rbac.push_back(r);
	for (const char *svc : {"api", "open"}) {
		policy::schema::ratelimit_config src;
		src.service = svc;
		src.rate = 100000000;
		src.burst = 100000000;
		p.rate_limits.push_back(src);
		policy::schema::ratelimit_config route = src;
		route.key = policy::schema::ratelimit_key::route;
		route.path_prefix = "/v1/";
		p.rate_limits.push_back(route);
		policy::schema::breaker_config b;
		b.service = svc;
		p.circuit_breakers.push_back(b);
	}
	return p;
}

std::unique_ptr<engine> make_engine(uint32_t cache_entries)
{
	auto e = engine::create(make_policy(cache_entries));
	if (!e) {
		std::fprintf(stderr, "%s\n", e.error().message().c_str());
		std::abort();
	}
	return std::move(e).value();
}

std::string token(const char *alg)
{
	std::string hdr = std::string(R"({"alg":")") + alg + R"(","kid":")" +
			  (alg[0] == 'H' ? "h1" : alg[0] == 'R' ? "r1" : "e1") + R"(","typ":"JWT"})";
	const test::signing_key &key = alg[0] == 'H' ? *k().hs : alg[0] == 'R' ? *k().rs : *k().es;
	return "Bearer " + test::make_jwt(key, hdr,
					  R"({"iss":"https://issuer.example","aud":"mesh","sub":"alice",)"
					  R"("role":"reader","tenant":"t1","iat":1899990000,"exp":1900086400})");
}

void run(benchmark::State &state, engine &e, const request &r)
{
	uint64_t now_ns = 1000000000;
	uint64_t source = 0;
	for (auto _ : state) {
		now_ns += 1000;
		verdict v = e.check_request(r.v, source++ & 1023, now_ns, unix_now);
		if (!v.allowed()) [[unlikely]] {
			state.SkipWithError(v.reason_name());
			break;
		}
		benchmark::DoNotOptimize(v);
	}
	state.SetItemsProcessed(state.iterations());
}

void no_policy(benchmark::State &state)
{
	auto e = make_engine(1024);
	request r("other", "");
	run(state, *e, r);
}

void no_jwt(benchmark::State &state)
{
	auto e = make_engine(1024);
	request r("open", "");
	run(state, *e, r);
}

void jwt_cached(benchmark::State &state, const char *alg)
{
	auto e = make_engine(1024);
	request r("api", token(alg));
	run(state, *e, r);
	state.counters["hits"] = static_cast<double>(e->stats().jwt_cache_hits.get());
}

void jwt_uncached(benchmark::State &state, const char *alg)
{
	auto e = make_engine(0);
	request r("api", token(alg));
	run(state, *e, r);
	state.counters["signatures"] = static_cast<double>(e->stats().jwt_signatures.get());
}

} // namespace

BENCHMARK(no_policy);
BENCHMARK(no_jwt);
BENCHMARK_CAPTURE(jwt_cached, HS256, "HS256");
BENCHMARK_CAPTURE(jwt_cached, RS256, "RS256");
BENCHMARK_CAPTURE(jwt_cached, ES256, "ES256");
BENCHMARK_CAPTURE(jwt_uncached, HS256, "HS256");
BENCHMARK_CAPTURE(jwt_uncached, RS256, "RS256");
BENCHMARK_CAPTURE(jwt_uncached, ES256, "ES256");

BENCHMARK_MAIN();
