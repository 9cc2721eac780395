// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: JWT and policy parsing of untrusted header values.
//
// The first byte picks what the rest is:
//   0  an Authorization value, verified twice (the second may hit the cache: same answer)
//   1  "<header JSON>\0<payload JSON>", signed here with the HS256 key, so the fuzzer gets
//      past the signature into alg/kid/claim handling
//   2  an L7 request header (wire format) run through policy::engine::check_request
//   3  base64url text (decode, re-encode: same text), JSON text (our strict scanner
//      against jansson) and "<glob>\0<path>" matching
// Nothing may crash, leak or read out of bounds (ASan); verdicts must be self-consistent.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <jansson.h>

#include "dpumesh/policy/jwt.h"
#include "internal/json_scan.h"
#include "dpumesh/wire/l7.h"
#include "dpumesh/policy/policy.h"
#include "jwt_signer.h"

using namespace dpumesh;
using namespace dpumesh::policy;

namespace {

constexpr int64_t unix_now = 1900000000;
const std::string secret = "fuzz-secret-fuzz-secret-fuzz-secret-0123";

struct world {
	std::unique_ptr<test::signing_key> hs = test::signing_key::hmac(secret);
	std::unique_ptr<test::signing_key> es = test::signing_key::ec("P-256");
	std::unique_ptr<jwt_verifier> verifier;
	std::unique_ptr<engine> eng;

	world()
	{
		policy::schema::policy_config p;
		policy::schema::jwt_config j;
		j.issuer = "iss";
		j.audiences = {"mesh"};
		j.cache_entries = 16;
		j.keys.push_back({"h1", policy::schema::jwt_alg::hs256, secret, ""});
		j.keys.push_back({"e1", policy::schema::jwt_alg::es256, "", es->public_pem()});
		p.jwt = j;
		policy::schema::rbac_policy r;
		r.service = "api";
		policy::schema::rbac_rule rule;
		rule.match = policy::schema::path_match::glob;
		rule.path = "/v1/*/items/?";
		rule.methods = {"GET"};
		rule.claims = {{"role", "reader"}, {"tenant", "t1"}};
		r.rules.push_back(rule);
		p.rbac.push_back(r);
		policy::schema::ratelimit_config l;
		l.service = "api";
		l.key = policy::schema::ratelimit_key::claim;
		l.claim = "sub";
		l.rate = 1000;
		l.burst = 10;
		p.rate_limits.push_back(l);
		l.key = policy::schema::ratelimit_key::source;
		p.rate_limits.push_back(l);
		policy::schema::breaker_config b;
		b.service = "api";
		p.circuit_breakers.push_back(b);
		auto v = jwt_verifier::create(j, {"sub", "role", "roles", "tenant"});
		auto e = engine::create(p);
		if (!v || !e)
			std::abort();
		verifier = std::move(v).value();
		eng = std::move(e).value();
	}
};

world &w()
{
	static world x;
	return x;
}

void check_token(jwt_error e, const verified_token *t)
{
	if (e == jwt_error::ok && !t)
		std::abort();
	if (static_cast<uint8_t>(e) >= static_cast<uint8_t>(jwt_error::count))
		std::abort();
}

void auth_value(std::string_view in)
{
	const verified_token *t1 = nullptr, *t2 = nullptr;
	jwt_error e1 = w().verifier->verify_header(in, unix_now, &t1);
	check_token(e1, t1);
	jwt_error e2 = w().verifier->verify_header(in, unix_now, &t2);
	if (e1 != e2)
		std::abort(); /* a cache hit must agree with a full verification */
}

void signed_json(std::string_view in)
{
	size_t nul = in.find('\0');
	std::string_view hdr = in.substr(0, nul);
	std::string_view payload = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
	std::string tok = test::make_jwt(*w().hs, hdr, payload);
	const verified_token *t = nullptr;
	jwt_error e = w().verifier->verify_token(tok, unix_now, &t);
	check_token(e, t);
	/* we signed it with the only HS256 key: any refusal is about the JSON, not the bytes */
	if (e == jwt_error::bad_base64 || (e == jwt_error::too_long) != (tok.size() > jwt_max_token) ||
	    (e == jwt_error::malformed && !hdr.empty() && !payload.empty()))
		std::abort();
	if (e == jwt_error::ok) {
		for (unsigned i = 0; i < w().verifier->claim_names().size(); i++)
			t->claims.for_each(i, [](std::string_view v) {
				if (v.size() > 255)
					std::abort();
			});
	}
}

void l7_request(std::string_view in)
{
	std::vector<uint8_t> buf(in.begin(), in.end());
	wire::l7_view v;
	if (wire::l7_decode(buf.data(), buf.size(), &v) != wire::l7_error::ok ||
	    v.kind != wire::l7_kind::request)
		return;
	static uint64_t now_ns = 1000000000;
	now_ns += 1000000;
	verdict d = w().eng->check_request(v, buf.size(), now_ns, unix_now);
	if (d.status != reason_status(d.why))
		std::abort();
	if (d.allowed())
		w().eng->on_response("api", buf.size() % 2 ? 200 : 500, now_ns);
}

void text(std::string_view in)
{
	std::vector<uint8_t> out(in.size());
	ptrdiff_t n = base64url_decode(in, out.data(), out.size());
	if (n >= 0) {
		std::string back = base64url_encode({reinterpret_cast<char *>(out.data()), size_t(n)});
		if (back != in)
			std::abort(); /* canonical: exactly one text per byte string */
	}
	/* the JWT JSON scanner and jansson agree, where their limits allow */
	policy::json::value jv;
	const bool ours = policy::json::validate(in, &jv);
	json_error_t err;
	json_t *j = json_loadb(in.data(), in.size(), JSON_DECODE_ANY, &err);
	size_t brackets = 0;
	for (char c : in)
		brackets += c == '[' || c == '{';
	/* (jansson stops reading at a NUL byte; we refuse it) */
	if (j && !ours && brackets < policy::json::max_depth && in.find('\0') == std::string_view::npos)
		std::abort(); /* jansson took it, we did not */
	if (ours && !j && in.find_first_of("0123456789") == std::string_view::npos)
		std::abort(); /* we took it, jansson did not (number ranges differ by design) */
	json_decref(j);
	size_t nul = in.find('\0');
	if (nul != std::string_view::npos) {
		std::string_view pat = in.substr(0, std::min<size_t>(nul, 64));
		std::string_view s = in.substr(nul + 1);
		bool m = glob_match(pat, s);
		if (pat.find_first_of("*?") == std::string_view::npos && m != (pat == s))
			std::abort();
		(void)path_is_normal(s);
	}
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	std::string in(reinterpret_cast<const char *>(data + 1), size - 1); /* exact-size copy */
	switch (data[0] % 4) {
	case 0: auth_value(in); break;
	case 1: signed_json(in); break;
	case 2: l7_request(in); break;
	case 3: text(in); break;
	}
	return 0;
}
