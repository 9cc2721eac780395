// SPDX-License-Identifier: BSD-3-Clause
// L7 policy: RBAC matching, rate limits over a simulated clock, circuit breakers, and the
// engine's verdicts (status, reason, counter) for whole request headers.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "dpumesh/config/config.h"
#include "dpumesh/policy/policy.h"
#include "jwt_signer.h"

using namespace dpumesh;
using namespace dpumesh::policy;
using dpumesh::test::make_jwt;
using dpumesh::test::signing_key;

namespace {

constexpr int64_t unix_now = 1900000000;
constexpr uint64_t ms = 1000000;  /* ns */
constexpr uint64_t sec = 1000 * ms;
const std::string secret = "0123456789abcdef0123456789abcdef-policy-test-secret";

/* A decoded request header that owns its bytes. */
struct request {
	std::vector<uint8_t> buf = std::vector<uint8_t>(4096);
	wire::l7_view v;
	request(std::string_view service, std::string_view method, std::string_view path,
		std::string_view auth = {})
	{
		wire::l7_writer w(buf.data(), buf.size());
		w.request(service, method, path);
		if (!auth.empty())
			w.field("authorization", auth);
		size_t n = w.finish();
		EXPECT_NE(n, 0u);
		EXPECT_EQ(wire::l7_decode(buf.data(), n, &v), wire::l7_error::ok);
	}
};

policy::schema::jwt_config jwt_cfg()
{
	policy::schema::jwt_config c;
	c.issuer = "iss";
	c.audiences = {"mesh"};
	c.keys.push_back({"h1", policy::schema::jwt_alg::hs256, secret, ""});
	return c;
}

std::string token(const std::string &extra = "", int64_t exp = unix_now + 3600)
{
	static auto key = signing_key::hmac(secret);
	std::string p = R"({"iss":"iss","aud":"mesh","exp":)" + std::to_string(exp);
	if (!extra.empty())
		p += "," + extra;
	return "Bearer " + make_jwt(*key, R"({"alg":"HS256"})", p + "}");
}

policy::schema::rbac_rule rule(std::vector<std::string> methods, policy::schema::path_match m, std::string path,
		       std::map<std::string, std::string> claims = {})
{
	policy::schema::rbac_rule r;
	r.methods = std::move(methods);
	r.match = m;
	r.path = std::move(path);
	r.claims = std::move(claims);
	return r;
}

std::unique_ptr<engine> make_engine(const policy::schema::policy_config &cfg, engine_options opt = {})
{
	opt.seed = 42;
	auto e = engine::create(cfg, opt);
	EXPECT_TRUE(e) << e.error().message();
	return e ? std::move(e).value() : nullptr;
}

uint64_t count(const engine &e, reason r) { return e.stats().reasons[static_cast<size_t>(r)].get(); }

} // namespace

/* ---- RBAC pieces ---- */

TEST(rbac, glob)
{
	EXPECT_TRUE(glob_match("/v1/*", "/v1/items"));
	EXPECT_TRUE(glob_match("/v1/*", "/v1/"));
	EXPECT_TRUE(glob_match("/v1/*", "/v1/a/b"));
	EXPECT_FALSE(glob_match("/v1/*", "/v2/a"));
	EXPECT_TRUE(glob_match("/v1/items/*/read", "/v1/items/42/read"));
	EXPECT_FALSE(glob_match("/v1/items/*/read", "/v1/items/42/write"));
	EXPECT_TRUE(glob_match("/v?/x", "/v1/x"));
	EXPECT_FALSE(glob_match("/v?/x", "/v10/x"));
	EXPECT_TRUE(glob_match("*", ""));
	EXPECT_TRUE(glob_match("**a*b", "xxaxxbyb"));
	EXPECT_FALSE(glob_match("*a*b", "xxaxxby"));
	EXPECT_TRUE(glob_match("/exact", "/exact"));
	EXPECT_FALSE(glob_match("/exact", "/exact/"));
	/* pathological patterns stay polynomial */
	EXPECT_FALSE(glob_match("*a*a*a*a*a*a*a*a*b", std::string(4000, 'a')));
}

TEST(rbac, paths)
{
	EXPECT_EQ(path_only("/a/b?x=/admin"), "/a/b");
	EXPECT_EQ(path_only("/a#frag"), "/a");
	EXPECT_TRUE(path_is_normal("/"));
	EXPECT_TRUE(path_is_normal("/v1/items/a.b/..c"));
	for (auto p : {"//admin", "/v1/../admin", "/v1/./x", "/v1/..", "/v1/.", "/v1/%2e%2e/admin",
		       "/v1%2fadmin", "/v1\\admin", "/v1/%5Cadmin", "relative"})
		EXPECT_FALSE(path_is_normal(p)) << p;
}

TEST(rbac, one_pass_scan_is_path_only_and_path_is_normal)
{
	/* every path of up to 6 bytes over the bytes that matter (and one that does not):
	 * scan_path() cuts where path_only() does, and a plain path is normal exactly when it
	 * starts with '/' (what the engine's RBAC check takes for path_is_normal()) */
	const char alphabet[] = {'/', '.', '%', '2', 'e', '\\', '?', '#', 'a'};
	const size_t k = sizeof(alphabet);
	size_t plain = 0, total = 0;
	char buf[6];
	for (size_t len = 0; len <= 6; len++) {
		size_t count = 1;
		for (size_t i = 0; i < len; i++)
			count *= k;
		for (size_t n = 0; n < count; n++) {
			size_t x = n;
			for (size_t i = 0; i < len; i++, x /= k)
				buf[i] = alphabet[x % k];
			const std::string_view p(buf, len);
			const cut_path c = scan_path(p);
			ASSERT_EQ(c.path, path_only(p)) << p;
			ASSERT_EQ(c.path.data(), p.data());
			if (c.plain) {
				plain++;
				ASSERT_EQ(!c.path.empty() && c.path[0] == '/', path_is_normal(c.path)) << p;
			}
			total++;
		}
	}
	EXPECT_GT(plain, total / 10); /* the shortcut is taken, not only the look */
	EXPECT_FALSE(scan_path("/a//b").plain);
	EXPECT_FALSE(scan_path("/a/.b").plain); /* normal, but path_is_normal() says so */
	EXPECT_TRUE(path_is_normal("/a/.b"));
	EXPECT_TRUE(scan_path("/a.b/c?//x").plain);
	EXPECT_EQ(scan_path("/a.b/c?//x").path, "/a.b/c");
}

TEST(rbac, rules_methods_paths_claims)
{
	auto v = jwt_verifier::create(jwt_cfg(), {"sub", "role", "roles"});
	ASSERT_TRUE(v);
	policy::schema::rbac_policy cp;
	cp.service = "api";
	cp.rules.push_back(rule({}, policy::schema::path_match::exact, "/health"));
	cp.rules.push_back(rule({"GET", "HEAD"}, policy::schema::path_match::glob, "/v1/items/*", {{"role", "reader"}}));
	cp.rules.push_back(rule({}, policy::schema::path_match::prefix, "/", {{"roles", "admin"}}));
	auto p = rbac_policy::compile(cp, v->get());
	ASSERT_TRUE(p) << p.error().message();

	token_claims none, reader, admin;
	unsigned role = static_cast<unsigned>((*v)->claim_index("role"));
	unsigned roles = static_cast<unsigned>((*v)->claim_index("roles"));
	reader.add(role, "reader");
	admin.add(roles, "dev");
	admin.add(roles, "admin");

	EXPECT_TRUE(p->allows("GET", "/health", nullptr));
	EXPECT_TRUE(p->allows("POST", "/health?deep=1", nullptr));
	EXPECT_FALSE(p->allows("GET", "/health/x", nullptr));
	EXPECT_TRUE(p->allows("GET", "/v1/items/42", &reader));
	EXPECT_TRUE(p->allows("HEAD", "/v1/items/42", &reader));
	EXPECT_FALSE(p->allows("DELETE", "/v1/items/42", &reader));
	EXPECT_FALSE(p->allows("GET", "/v1/items", &reader));
	EXPECT_FALSE(p->allows("GET", "/v1/items/42", &none));
	EXPECT_FALSE(p->allows("GET", "/v1/items/42", nullptr));
	EXPECT_TRUE(p->allows("DELETE", "/v1/anything", &admin));
	EXPECT_FALSE(p->allows("GET", "/v1/items/../../admin", &reader)); /* not normal: default */
	EXPECT_FALSE(p->allows("PROPFIND", "/v1/items/42", &reader));

	cp.default_allow = true;
	auto open = rbac_policy::compile(cp, v->get());
	EXPECT_TRUE(open->allows("GET", "/v1/items/../../admin", &reader));

	/* a claim rule needs a verifier that extracts the claim */
	cp.rules.push_back(rule({}, policy::schema::path_match::prefix, "/", {{"group", "x"}}));
	auto bad = rbac_policy::compile(cp, v->get());
	ASSERT_FALSE(bad);
	EXPECT_NE(bad.error().message().find("claim \"group\""), std::string::npos) << bad.error().message();
}

TEST(rbac, method_bits_by_length_and_word)
{
	const char *names[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE"};
	for (unsigned i = 0; i < std::size(names); i++)
		EXPECT_EQ(method_bit(names[i]), 1u << i) << names[i];
	/* case, one byte off at each end, lengths with no method, the 7-byte overlap */
	for (auto m : {"get", "Get", "GEt", "PUX", "XET", "HEAd", "POSX", "PATCh", "TRACF", "DELETf",
		       "xELETE", "OPTIONs", "CONNECt", "OPTIONX", "CPTIONS", "OPTINNS", "", "G", "GE",
		       "GETX", "PROPFIND", "DELETEX", "CONNECTX", "\xff" "ET"})
		EXPECT_EQ(method_bit(m), 0u) << m;
	/* a view into a longer buffer: only its own bytes count */
	EXPECT_EQ(method_bit(std::string_view("GETX", 3)), 1u);
	EXPECT_EQ(method_bit(std::string_view("DELETED", 6)), 1u << 4);
}

TEST(rbac, compiled_rule_kinds_decide_as_the_rules_say)
{
	policy::schema::rbac_policy cp;
	cp.service = "api";
	cp.rules.push_back(rule({"POST"}, policy::schema::path_match::exact, "/"));
	cp.rules.push_back(rule({"GET"}, policy::schema::path_match::prefix, "/admin/"));
	cp.rules.push_back(rule({"PUT"}, policy::schema::path_match::prefix, "/"));
	cp.rules.push_back(rule({"PATCH"}, policy::schema::path_match::glob, "/*"));
	cp.rules.push_back(rule({"TRACE"}, policy::schema::path_match::exact, "/health"));
	cp.rules.push_back(rule({"OPTIONS"}, policy::schema::path_match::prefix, ""));
	cp.rules.push_back(rule({"HEAD"}, policy::schema::path_match::glob, "*"));
	auto p = rbac_policy::compile(cp, nullptr);
	ASSERT_TRUE(p) << p.error().message();

	EXPECT_TRUE(p->allows("POST", "/", nullptr));
	EXPECT_TRUE(p->allows("POST", "/?x=1", nullptr));
	EXPECT_TRUE(p->allows("POST", "/#f", nullptr));
	EXPECT_FALSE(p->allows("POST", "/x", nullptr));
	EXPECT_FALSE(p->allows("POST", "x", nullptr)); /* one byte, not '/': not normal */
	EXPECT_TRUE(p->allows("GET", "/admin/x", nullptr));
	EXPECT_TRUE(p->allows("GET", "/admin/", nullptr));
	EXPECT_FALSE(p->allows("GET", "/admin", nullptr));
	EXPECT_FALSE(p->allows("GET", "xadmin/x", nullptr)); /* the leading byte still counts */
	EXPECT_FALSE(p->allows("GET", "/admin?/x", nullptr)); /* cut at '?' before the compare */
	EXPECT_FALSE(p->allows("GET", "/admin/../x", nullptr)); /* not normal */
	EXPECT_TRUE(p->allows("TRACE", "/health", nullptr));
	EXPECT_TRUE(p->allows("TRACE", "/health?deep=1#top", nullptr));
	EXPECT_FALSE(p->allows("TRACE", "xhealth", nullptr));
	EXPECT_FALSE(p->allows("TRACE", "/healt", nullptr));
	EXPECT_FALSE(p->allows("TRACE", "/health/", nullptr));
	/* the match-everything kinds still refuse what is not in normal form */
	for (auto m : {"PUT", "PATCH", "OPTIONS", "HEAD"}) {
		EXPECT_TRUE(p->allows(m, "/any/thing", nullptr)) << m;
		EXPECT_TRUE(p->allows(m, "/", nullptr)) << m;
		for (auto bad : {"", "relative", "//x", "/a/./b", "/a/..", "/%2e", "/a\\b", "/a%2Fb"})
			EXPECT_FALSE(p->allows(m, bad, nullptr)) << m << " " << bad;
	}
	/* unknown and lowercase methods match only rules without methods: none here */
	EXPECT_FALSE(p->allows("PROPFIND", "/", nullptr));
	EXPECT_FALSE(p->allows("put", "/", nullptr));
	EXPECT_FALSE(p->allows("DELETE", "/", nullptr));

	/* a default allow answers yes to anything, normal or not */
	cp.default_allow = true;
	auto open = rbac_policy::compile(cp, nullptr);
	ASSERT_TRUE(open);
	for (auto path : {"/", "relative", "//x", "/a/../b"})
		EXPECT_TRUE(open->allows("PROPFIND", path, nullptr)) << path;

	/* a rule with no methods takes any method, an unknown one too */
	policy::schema::rbac_policy any;
	any.service = "api";
	any.rules.push_back(rule({}, policy::schema::path_match::prefix, "/pub"));
	auto a = rbac_policy::compile(any, nullptr);
	ASSERT_TRUE(a);
	EXPECT_TRUE(a->allows("PROPFIND", "/pub/x", nullptr));
	EXPECT_TRUE(a->allows("", "/public", nullptr));
	EXPECT_FALSE(a->allows("GET", "/pu", nullptr));
}

/* ---- token buckets ---- */

TEST(rbac, a_claim_value_matches_only_with_every_byte)
{
	/* token_claims::contains() compares values as one or two words up to 16 bytes and by
	 * memcmp past that: every length 1-40, a byte flipped at every place, one byte short */
	for (size_t n = 1; n <= 40; n++) {
		std::string v(n, 'a');
		for (size_t i = 0; i < n; i++)
			v[i] = static_cast<char>('a' + (i * 7) % 26);
		token_claims c;
		ASSERT_TRUE(c.add(2, "zz"));
		ASSERT_TRUE(c.add(2, v)); /* an array claim: its second value */
		EXPECT_TRUE(c.contains(2, v)) << n;
		EXPECT_FALSE(c.contains(1, v)) << n;
		for (size_t i = 0; i < n; i++) {
			std::string w = v;
			w[i] = static_cast<char>(w[i] ^ 0x01);
			EXPECT_FALSE(c.contains(2, w)) << n << " " << i;
		}
		EXPECT_FALSE(c.contains(2, v.substr(0, n - 1))) << n;
		EXPECT_FALSE(c.contains(2, v + "a")) << n;
	}
}

TEST(ratelimit, burst_then_rate)
{
	token_bucket b(10, 5);
	uint64_t tat = 0;
	uint64_t t = 5 * sec;
	int ok = 0;
	for (int i = 0; i < 20; i++)
		ok += b.take(&tat, t);
	EXPECT_EQ(ok, 5); /* the burst, back to back */
	EXPECT_FALSE(b.take(&tat, t + 99 * ms));
	EXPECT_TRUE(b.take(&tat, t + 100 * ms)); /* one token per 100 ms */
	EXPECT_FALSE(b.take(&tat, t + 150 * ms));
	/* idle for long: the bucket is full again, never fuller */
	ok = 0;
	for (int i = 0; i < 20; i++)
		ok += b.take(&tat, t + 60 * sec);
	EXPECT_EQ(ok, 5);
}

TEST(ratelimit, holds_rate_within_5_percent_over_10_s)
{
	struct shape {
		uint32_t rate, burst;
		uint64_t step_ns; /* offered load: one request per step */
	};
	for (shape s : {shape{1000, 100, 250000}, shape{100000, 200000, 3000}, shape{7, 2, 10 * ms},
			shape{33333, 50, 7001}}) {
		rate_limiter lim(token_bucket(s.rate, s.burst));
		uint64_t allowed = 0;
		const uint64_t start = 1000 * sec;
		for (uint64_t t = start; t < start + 10 * sec; t += s.step_ns)
			allowed += lim.admit(0, t);
		const double expect = 10.0 * s.rate; /* sustained rate, burst on top */
		const double got = static_cast<double>(allowed) - s.burst;
		EXPECT_NEAR(got / expect, 1.0, 0.05)
			<< "rate " << s.rate << " burst " << s.burst << ": allowed " << allowed;
	}
}

TEST(ratelimit, keyed_tables_keep_keys_apart_and_reuse_full_buckets)
{
	rate_limiter lim(token_bucket(10, 2), 64, 7);
	EXPECT_EQ(lim.slots(), 64u);
	uint64_t t = 10 * sec;
	EXPECT_TRUE(lim.admit(1, t));
	EXPECT_TRUE(lim.admit(1, t));
	EXPECT_FALSE(lim.admit(1, t));
	EXPECT_TRUE(lim.admit(2, t)); /* another key has its own bucket */
	EXPECT_TRUE(lim.admit(2, t));
	EXPECT_FALSE(lim.admit(2, t));
	/* thousands of distinct keys over time: slots are reused once their bucket refilled */
	for (uint64_t k = 100; k < 5000; k++)
		EXPECT_TRUE(lim.admit(k, t + k * 200 * ms)) << k;
	EXPECT_EQ(lim.overflows(), 0u);
	/* more live keys than slots at one instant: the rest share the overflow bucket */
	uint64_t t2 = 10000 * sec;
	for (uint64_t k = 0; k < 200; k++)
		lim.admit(1000000 + k, t2);
	EXPECT_GT(lim.overflows(), 0u);
}

TEST(ratelimit, two_phase_reserve_takes_nothing_until_commit)
{
	rate_limiter lim(token_bucket(1, 1));
	rate_limiter::ticket t{}; /* reserve() writes `next` only when it returns true */
	ASSERT_TRUE(lim.reserve(0, sec, &t));
	ASSERT_TRUE(lim.reserve(0, sec, &t)); /* nothing taken yet */
	rate_limiter::commit(t);
	EXPECT_FALSE(lim.reserve(0, sec, &t));
}

TEST(ratelimit, shared_buckets_take_a_token_for_every_commit)
{
	/* two shards' limiters on one set of buckets (share()): tickets reserved against the
	 * same bucket state each take a token when committed (a compare-and-swap from where
	 * the bucket is then, by the bucket's interval), where one limiter's would not */
	for (bool keyed : {false, true}) {
		rate_limiter a = keyed ? rate_limiter(token_bucket(1, 3), 64, 7)
				       : rate_limiter(token_bucket(1, 3));
		rate_limiter b = a.share();
		EXPECT_EQ(a.users(), 2u);
		EXPECT_EQ(b.users(), 2u);
		rate_limiter::ticket ta{}, tb{};
		ASSERT_TRUE(a.reserve(5, sec, &ta));
		ASSERT_TRUE(b.reserve(5, sec, &tb)); /* both saw the same state */
		rate_limiter::commit(ta);
		rate_limiter::commit(tb); /* two tokens, not one */
		ASSERT_TRUE(a.reserve(5, sec, &ta));
		rate_limiter::commit(ta); /* the burst's third */
		EXPECT_FALSE(b.reserve(5, sec, &tb)) << keyed;
		EXPECT_FALSE(a.reserve(5, sec, &ta)) << keyed;
		/* one interval later, one more, on either */
		EXPECT_TRUE(b.admit(5, 2 * sec)) << keyed;
		EXPECT_FALSE(a.admit(5, 2 * sec)) << keyed;
	}
	/* unshared, the same stale tickets take one token between them */
	rate_limiter one(token_bucket(1, 3));
	rate_limiter::ticket t1{}, t2{};
	ASSERT_TRUE(one.reserve(0, sec, &t1));
	ASSERT_TRUE(one.reserve(0, sec, &t2));
	rate_limiter::commit(t1);
	rate_limiter::commit(t2);
	EXPECT_TRUE(one.admit(0, sec));
	EXPECT_TRUE(one.admit(0, sec));
	EXPECT_FALSE(one.admit(0, sec));
}

/* ---- circuit breakers ---- */

TEST(breaker, opens_after_consecutive_failures_sheds_half_opens_and_recovers)
{
	policy::schema::breaker_config c;
	c.service = "db";
	c.consecutive_failures = 3;
	c.min_requests = 1000; /* keep the rate rule out of this test */
	c.open_ms = 500;
	c.half_open_probes = 2;
	circuit_breaker b(c);
	uint64_t t = 100 * sec;
	EXPECT_TRUE(b.admit(t));
	b.record(true, t);
	b.record(true, t);
	b.record(false, t); /* a success resets the run */
	b.record(true, t);
	b.record(true, t);
	EXPECT_EQ(b.state(), breaker_state::closed);
	b.record(true, t);
	EXPECT_EQ(b.state(), breaker_state::open);
	EXPECT_EQ(b.opened(), 1u);
	EXPECT_TRUE(b.shedding(t + 499 * ms));
	EXPECT_FALSE(b.admit(t + 499 * ms));
	b.record(false, t + 100 * ms); /* a late answer from before: ignored */
	EXPECT_EQ(b.state(), breaker_state::open);

	/* half-open: two probes, then refusals until they answer */
	EXPECT_FALSE(b.shedding(t + 500 * ms));
	EXPECT_TRUE(b.admit(t + 500 * ms));
	EXPECT_EQ(b.state(), breaker_state::half_open);
	EXPECT_TRUE(b.admit(t + 501 * ms));
	EXPECT_FALSE(b.admit(t + 502 * ms));
	b.record(false, t + 510 * ms);
	EXPECT_EQ(b.state(), breaker_state::half_open);
	b.record(true, t + 520 * ms); /* a probe failed: open again */
	EXPECT_EQ(b.state(), breaker_state::open);
	EXPECT_EQ(b.opened(), 2u);
	EXPECT_FALSE(b.admit(t + 1000 * ms));

	/* probes succeed: closed, with clean counts */
	EXPECT_TRUE(b.admit(t + 1020 * ms));
	EXPECT_TRUE(b.admit(t + 1020 * ms));
	b.record(false, t + 1030 * ms);
	b.record(false, t + 1030 * ms);
	EXPECT_EQ(b.state(), breaker_state::closed);
	b.record(true, t + 1040 * ms);
	b.record(true, t + 1040 * ms);
	EXPECT_EQ(b.state(), breaker_state::closed);
}

TEST(breaker, half_open_probes_that_never_answer_are_rearmed)
{
	policy::schema::breaker_config c;
	c.consecutive_failures = 1;
	c.open_ms = 100;
	circuit_breaker b(c);
	b.record(true, 0);
	EXPECT_TRUE(b.admit(100 * ms));
	EXPECT_FALSE(b.admit(150 * ms));
	EXPECT_TRUE(b.admit(200 * ms)); /* open_ms later with no answer: a new probe */
}

TEST(breaker, error_rate_over_the_window)
{
	policy::schema::breaker_config c;
	c.consecutive_failures = 1000;
	c.error_rate_percent = 50;
	c.min_requests = 20;
	c.window_ms = 1000;
	circuit_breaker b(c);
	uint64_t t = 50 * sec;
	/* 40% errors: stays closed however long it runs */
	for (int i = 0; i < 500; i++)
		b.record(i % 5 < 2, t + static_cast<uint64_t>(i) * 10 * ms);
	EXPECT_EQ(b.state(), breaker_state::closed);
	/* failures long ago fall out of the window */
	circuit_breaker b2(c);
	for (int i = 0; i < 15; i++)
		b2.record(true, t);
	t += 2 * sec;
	for (int i = 0; i < 15; i++) {
		b2.record(false, t);
		b2.record(i < 4, t);
	}
	EXPECT_EQ(b2.state(), breaker_state::closed);
	/* 50% over at least min_requests: open */
	circuit_breaker b3(c);
	for (int i = 0; i < 19; i++)
		b3.record(i % 2 == 0, t);
	EXPECT_EQ(b3.state(), breaker_state::closed);
	b3.record(true, t);
	EXPECT_EQ(b3.state(), breaker_state::open);
}

/* ---- the engine ---- */

namespace {

policy::schema::policy_config api_policy()
{
	policy::schema::policy_config c;
	c.jwt = jwt_cfg();
	policy::schema::rbac_policy r;
	r.service = "api";
	r.rules.push_back(rule({"GET"}, policy::schema::path_match::glob, "/v1/items/*", {{"role", "reader"}}));
	r.rules.push_back(rule({}, policy::schema::path_match::prefix, "/", {{"roles", "admin"}}));
	r.rules.push_back(rule({}, policy::schema::path_match::exact, "/health"));
	c.rbac.push_back(r);
	policy::schema::rbac_policy pub;
	pub.service = "web";
	pub.require_jwt = false;
	pub.default_allow = true;
	c.rbac.push_back(pub);
	return c;
}

} // namespace

TEST(engine, jwt_and_rbac_verdicts_with_counters)
{
	auto e = make_engine(api_policy());
	ASSERT_TRUE(e);
	struct tcase {
		const char *what;
		std::string service, method, path, auth;
		uint16_t status;
		reason why;
	};
	const std::string reader = token(R"("sub":"ann","role":"reader")");
	const std::string admin = token(R"("sub":"bob","roles":["dev","admin"])");
	const std::string nobody = token(R"("sub":"eve")");
	const std::vector<tcase> cases = {
		{"reader GET item", "api", "GET", "/v1/items/1", reader, 0, reason::allowed},
		{"reader DELETE item", "api", "DELETE", "/v1/items/1", reader, 403, reason::rbac_denied},
		{"reader other path", "api", "GET", "/v1/users", reader, 403, reason::rbac_denied},
		{"admin anything", "api", "DELETE", "/v1/users/9", admin, 0, reason::allowed},
		{"no role", "api", "GET", "/v1/items/1", nobody, 403, reason::rbac_denied},
		{"health, still needs a token", "api", "GET", "/health", "", 401, reason::jwt_missing},
		{"health with a token", "api", "GET", "/health", nobody, 0, reason::allowed},
		{"missing", "api", "GET", "/v1/items/1", "", 401, reason::jwt_missing},
		{"expired", "api", "GET", "/v1/items/1", token(R"("role":"reader")", unix_now - 60), 401,
		 reason::jwt_expired},
		{"not yet valid", "api", "GET", "/v1/items/1", token(R"("nbf":1900000600)"), 401,
		 reason::jwt_not_yet_valid},
		{"wrong audience", "api", "GET", "/v1/items/1",
		 "Bearer " + make_jwt(*signing_key::hmac(secret), R"({"alg":"HS256"})", R"({"iss":"iss","aud":"x"})"),
		 401, reason::jwt_bad_audience},
		{"bad signature", "api", "GET", "/v1/items/1",
		 "Bearer " + make_jwt(*signing_key::hmac(secret + "x"), R"({"alg":"HS256"})", R"({"iss":"iss","aud":"mesh"})"),
		 401, reason::jwt_bad_signature},
		{"basic auth", "api", "GET", "/v1/items/1", "Basic YTpi", 401, reason::jwt_bad_scheme},
		{"garbage", "api", "GET", "/v1/items/1", "Bearer x.y", 401, reason::jwt_malformed},
		{"public service, no token", "web", "GET", "/", "", 0, reason::allowed},
		{"public service, bad token", "web", "GET", "/", "Bearer eHg.eHg.eHg", 401, reason::jwt_bad_json},
		{"public service, good token", "web", "GET", "/", reader, 0, reason::allowed},
		{"no policy at all", "other", "GET", "/", "", 0, reason::allowed},
	};
	std::array<uint64_t, static_cast<size_t>(reason::count)> want{};
	for (const auto &c : cases) {
		request r(c.service, c.method, c.path, c.auth);
		verdict v = e->check_request(r.v, 1, 5 * sec, unix_now);
		EXPECT_EQ(v.status, c.status) << c.what;
		EXPECT_EQ(v.why, c.why) << c.what << ": got " << v.reason_name();
		EXPECT_EQ(reason_status(v.why), c.status) << c.what;
		want[static_cast<size_t>(c.why)]++;
	}
	for (size_t i = 0; i < want.size(); i++)
		EXPECT_EQ(e->stats().reasons[i].get(), want[i]) << reason_name(static_cast<reason>(i));
	EXPECT_EQ(e->stats().requests.get(), cases.size());
	EXPECT_EQ(e->stats().no_policy.get(), 1u);

	/* claims come back with an allowed verdict */
	request r("api", "GET", "/v1/items/1", reader);
	verdict v = e->check_request(r.v, 1, 5 * sec, unix_now);
	ASSERT_TRUE(v.allowed());
	ASSERT_NE(v.claims, nullptr);
	EXPECT_EQ(v.claims->first(static_cast<unsigned>(e->jwt()->claim_index("sub"))), "ann");
	EXPECT_GT(e->stats().jwt_cache_hits.get(), 0u);
	/* one engine, one verifier: what verify_header() says it did (jwt_path) counts the
	 * same hits and signatures as the verifier's own counters */
	EXPECT_EQ(e->stats().jwt_cache_hits.get(), e->jwt()->stats().cache_hits.get());
	EXPECT_EQ(e->stats().jwt_signatures.get(), e->jwt()->stats().signatures.get());
	EXPECT_GT(e->stats().jwt_signatures.get(), 0u);
	EXPECT_LT(e->stats().jwt_signatures.get(), e->stats().jwt_checked.get());
}

TEST(engine, reason_names_and_counters_are_listed)
{
	std::set<std::string> names;
	for (size_t i = 0; i < static_cast<size_t>(reason::count); i++)
		EXPECT_TRUE(names.insert(reason_name(static_cast<reason>(i))).second);
	EXPECT_STREQ(reason_name(reason::jwt_expired), "jwt_expired");
	EXPECT_STREQ(reason_name(reason::rbac_denied), "rbac_denied");
	EXPECT_STREQ(reason_name(reason::rate_limited), "rate_limited");
	EXPECT_STREQ(reason_name(reason::circuit_open), "circuit_open");
	EXPECT_EQ(reason_status(reason::jwt_alg_none), 401);
	EXPECT_EQ(reason_status(reason::rbac_denied), 403);
	EXPECT_EQ(reason_status(reason::rate_limited), 429);
	EXPECT_EQ(reason_status(reason::circuit_open), 503);
	policy_stats s;
	size_t n = 0;
	bool saw = false;
	for_each_policy_counter(s, [&](const char *name, const char *help, uint64_t) {
		n++;
		saw = saw || std::string(name) == "verdict_rate_limited";
		EXPECT_NE(std::string(help), "");
	});
	EXPECT_TRUE(saw);
	EXPECT_GT(n, static_cast<size_t>(reason::count));
}

TEST(engine, rate_limits_per_source_route_and_claim)
{
	policy::schema::policy_config c;
	c.jwt = jwt_cfg();
	policy::schema::ratelimit_config src;
	src.service = "api";
	src.key = policy::schema::ratelimit_key::source;
	src.rate = 100;
	src.burst = 10;
	c.rate_limits.push_back(src);
	policy::schema::ratelimit_config route = src;
	route.key = policy::schema::ratelimit_key::route;
	route.path_prefix = "/slow";
	route.rate = 10;
	route.burst = 5;
	c.rate_limits.push_back(route);
	policy::schema::ratelimit_config tenant = src;
	tenant.service = "tenants";
	tenant.key = policy::schema::ratelimit_key::claim;
	tenant.claim = "tenant";
	tenant.rate = 50;
	tenant.burst = 5;
	c.rate_limits.push_back(tenant);
	auto e = make_engine(c);
	ASSERT_TRUE(e);

	/* per source: a 10 s run at 3x the rate from source 1; source 2 is not affected */
	uint64_t allowed1 = 0, allowed2 = 0, offered2 = 0;
	const uint64_t t0 = 100 * sec;
	for (uint64_t t = t0; t < t0 + 10 * sec; t += 10 * ms / 3) {
		request r("api", "GET", "/fast");
		allowed1 += e->check_request(r.v, 1, t, unix_now).allowed();
		if ((t - t0) % (20 * ms) < 10 * ms / 3) {
			offered2++;
			allowed2 += e->check_request(r.v, 2, t, unix_now).allowed();
		}
	}
	EXPECT_NEAR(static_cast<double>(allowed1 - 10) / 1000.0, 1.0, 0.05) << allowed1;
	EXPECT_GE(offered2, 490u);
	EXPECT_EQ(allowed2, offered2); /* ~50/s, under its own limit */
	EXPECT_GT(count(*e, reason::rate_limited), 0u);

	/* per route: shared by every source; a refused request takes no source token */
	const uint64_t t1 = 200 * sec;
	int route_ok = 0;
	for (uint64_t s = 0; s < 20; s++) {
		request r("api", "GET", "/slow/x");
		route_ok += e->check_request(r.v, 100 + s, t1, unix_now).allowed();
	}
	EXPECT_EQ(route_ok, 5);

	/* per claim: two tenants each get their own bucket; no token shares the empty one */
	const uint64_t t2 = 300 * sec;
	int a = 0, b = 0, none = 0;
	for (int i = 0; i < 20; i++) {
		request ra("tenants", "GET", "/", token(R"("tenant":"a")"));
		request rb("tenants", "GET", "/", token(R"("tenant":"b")"));
		request rn("tenants", "GET", "/");
		a += e->check_request(ra.v, 7, t2, unix_now).allowed();
		b += e->check_request(rb.v, 7, t2, unix_now).allowed();
		none += e->check_request(rn.v, 7, t2, unix_now).allowed();
	}
	EXPECT_EQ(a, 5);
	EXPECT_EQ(b, 5);
	EXPECT_EQ(none, 5);
}

TEST(engine, a_limit_that_refuses_commits_none_before_it)
{
	/* three limits on one service: a source limit, a route limit, and a tight limit on
	 * /slow; a request the third refuses takes no token from the first two */
	policy::schema::policy_config c;
	policy::schema::ratelimit_config src;
	src.service = "api";
	src.key = policy::schema::ratelimit_key::source;
	src.rate = 1;
	src.burst = 3;
	c.rate_limits.push_back(src);
	policy::schema::ratelimit_config route = src;
	route.key = policy::schema::ratelimit_key::route;
	route.burst = 4;
	c.rate_limits.push_back(route);
	policy::schema::ratelimit_config slow = src;
	slow.key = policy::schema::ratelimit_key::route;
	slow.path_prefix = "/slow";
	slow.burst = 1;
	c.rate_limits.push_back(slow);
	auto e = make_engine(c);
	ASSERT_TRUE(e);
	const uint64_t t = 100 * sec;
	request slow_req("api", "GET", "/slow/x?y=1");
	EXPECT_TRUE(e->check_request(slow_req.v, 1, t, unix_now).allowed()); /* 1 of each */
	for (int i = 0; i < 5; i++) {
		verdict v = e->check_request(slow_req.v, 1, t, unix_now);
		EXPECT_EQ(v.why, reason::rate_limited);
		EXPECT_EQ(v.status, 429);
	}
	/* the refusals took nothing: source 1 has 2 of its 3 left, the route 3 of its 4 */
	request fast("api", "GET", "/fast");
	EXPECT_TRUE(e->check_request(fast.v, 1, t, unix_now).allowed());
	EXPECT_TRUE(e->check_request(fast.v, 1, t, unix_now).allowed());
	EXPECT_EQ(e->check_request(fast.v, 1, t, unix_now).why, reason::rate_limited); /* source */
	EXPECT_TRUE(e->check_request(fast.v, 2, t, unix_now).allowed());
	EXPECT_EQ(e->check_request(fast.v, 3, t, unix_now).why, reason::rate_limited); /* route */
	/* a prefix is matched on the path without its query: "/sl?ow" is not under /slow */
	request query("api", "GET", "/sl?ow");
	EXPECT_EQ(e->check_request(query.v, 4, t + 2 * sec, unix_now).why, reason::allowed);
	EXPECT_EQ(count(*e, reason::rate_limited), 7u);
	EXPECT_EQ(e->stats().limiter_overflow.get(), 0u);
}

TEST(engine, overflowed_keys_are_counted_once_each)
{
	/* a keyed table of 8 slots, 20 live sources at one instant: the keys past the window's
	 * room fall back to the overflow bucket, each lookup counted once */
	policy::schema::policy_config c;
	policy::schema::ratelimit_config src;
	src.service = "api";
	src.key = policy::schema::ratelimit_key::source;
	src.rate = 1;
	src.burst = 1000;
	c.rate_limits.push_back(src);
	engine_options opt;
	opt.limiter_slots = 8;
	auto e = make_engine(c, opt);
	ASSERT_TRUE(e);
	request r("api", "GET", "/");
	for (uint64_t s = 1; s <= 20; s++)
		EXPECT_TRUE(e->check_request(r.v, s, 100 * sec, unix_now).allowed());
	EXPECT_EQ(e->stats().limiter_overflow.get(), 12u);
	EXPECT_TRUE(e->check_request(r.v, 1, 100 * sec, unix_now).allowed()); /* has its slot */
	EXPECT_EQ(e->stats().limiter_overflow.get(), 12u);
}

TEST(engine, rate_divisor_splits_the_rate)
{
	policy::schema::policy_config c;
	policy::schema::ratelimit_config r;
	r.service = "api";
	r.key = policy::schema::ratelimit_key::route;
	r.rate = 1000;
	r.burst = 100;
	c.rate_limits.push_back(r);
	engine_options o;
	o.rate_divisor = 4;
	auto e = make_engine(c, o);
	int ok = 0;
	for (int i = 0; i < 100; i++) {
		request q("api", "GET", "/");
		ok += e->check_request(q.v, 1, sec, unix_now).allowed();
	}
	EXPECT_EQ(ok, 25);
}

TEST(engine, breaker_opens_sheds_and_recovers)
{
	policy::schema::policy_config c;
	policy::schema::breaker_config b;
	b.service = "db";
	b.consecutive_failures = 5;
	b.open_ms = 1000;
	b.half_open_probes = 1;
	c.circuit_breakers.push_back(b);
	auto e = make_engine(c);
	ASSERT_TRUE(e);
	const uint32_t db = e->find_service("db");
	ASSERT_NE(db, engine::no_service);
	EXPECT_EQ(e->find_service("nope"), engine::no_service);
	request r("db", "GET", "/q");
	uint64_t t = 10 * sec;
	for (int i = 0; i < 5; i++) {
		ASSERT_TRUE(e->check_request(r.v, 1, t, unix_now).allowed());
		e->on_response("db", i == 2 ? 504 : 500, t);
	}
	EXPECT_EQ(e->breaker("db"), breaker_state::open);
	EXPECT_EQ(e->stats().breaker_opened.get(), 1u);
	EXPECT_EQ(e->stats().response_failures.get(), 5u);
	/* open: shed at once */
	for (int i = 0; i < 100; i++) {
		verdict v = e->check_request(r.v, 1, t + 500 * ms, unix_now);
		EXPECT_EQ(v.status, 503);
		EXPECT_EQ(v.why, reason::circuit_open);
	}
	EXPECT_FALSE(e->breaker_allows(db, t + 500 * ms));
	EXPECT_EQ(count(*e, reason::circuit_open), 100u);
	/* half-open: one probe goes through, the rest are shed */
	EXPECT_TRUE(e->check_request(r.v, 1, t + 1000 * ms, unix_now).allowed());
	EXPECT_EQ(e->breaker("db"), breaker_state::half_open);
	EXPECT_EQ(e->check_request(r.v, 1, t + 1001 * ms, unix_now).status, 503);
	e->on_response(db, 200, t + 1010 * ms);
	EXPECT_EQ(e->breaker("db"), breaker_state::closed);
	for (int i = 0; i < 10; i++)
		EXPECT_TRUE(e->check_request(r.v, 1, t + 1020 * ms, unix_now).allowed());
	/* 4xx are not failures */
	for (int i = 0; i < 10; i++)
		e->on_response(db, 404, t + 1030 * ms);
	EXPECT_EQ(e->breaker("db"), breaker_state::closed);
	EXPECT_TRUE(e->breaker_allows("db", t + 1030 * ms));
	EXPECT_TRUE(e->breaker_allows("unknown", t));
}

TEST(engine, build_errors_name_the_config)
{
	policy::schema::policy_config c;
	policy::schema::rbac_policy r;
	r.service = "api";
	c.rbac.push_back(r); /* require_jwt without /policy/jwt */
	auto e = engine::create(c);
	ASSERT_FALSE(e);
	EXPECT_NE(e.error().message().find("/policy/rbac/0"), std::string::npos) << e.error().message();

	policy::schema::policy_config c2;
	c2.jwt = jwt_cfg();
	c2.jwt->keys[0].pem = "x";
	c2.jwt->keys[0].alg = policy::schema::jwt_alg::rs256;
	auto e2 = engine::create(c2);
	ASSERT_FALSE(e2);
	EXPECT_NE(e2.error().message().find("/policy/jwt/keys/0"), std::string::npos) << e2.error().message();

	policy::schema::policy_config c3;
	policy::schema::ratelimit_config l;
	l.service = "api";
	l.rate = 1;
	for (int i = 0; i <= 16; i++)
		c3.rate_limits.push_back(l);
	auto e3 = engine::create(c3);
	ASSERT_FALSE(e3);
	EXPECT_NE(e3.error().message().find("/policy/rate_limits/16"), std::string::npos)
		<< e3.error().message();
}

TEST(engine, from_the_default_config_file)
{
	auto cfg = config::load_file(std::string(DPUMESH_SOURCE_DIR) + "/conf/default.json");
	ASSERT_TRUE(cfg) << cfg.error().message();
	auto e = engine::create(cfg->policy);
	ASSERT_TRUE(e) << e.error().message();
	request r("echo", "POST", "/v1/echo");
	EXPECT_TRUE((*e)->check_request(r.v, 1, sec, unix_now).allowed());
}
