// SPDX-License-Identifier: BSD-3-Clause
// JWT verification: the token matrix (each refusal with its reason), keys, the cache.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "dpumesh/policy/jwt.h"
#include "internal/json_scan.h"
#include "jwt_signer.h"

using namespace dpumesh;
using namespace dpumesh::policy;
using dpumesh::test::make_jwt;
using dpumesh::test::signing_key;

namespace {

constexpr int64_t now = 1900000000; /* the tests' wall clock */
const std::string secret = "0123456789abcdef0123456789abcdef-hs256-test-secret";

struct keys {
	std::unique_ptr<signing_key> hs = signing_key::hmac(secret);
	std::unique_ptr<signing_key> rs = signing_key::rsa(2048);
	std::unique_ptr<signing_key> es = signing_key::ec("P-256");
	std::unique_ptr<signing_key> other_rs = signing_key::rsa(2048);
};

keys &k()
{
	static keys ks; /* RSA key generation is slow: once per test program */
	return ks;
}

policy::schema::jwt_config make_config(uint32_t cache = 64)
{
	policy::schema::jwt_config c;
	c.issuer = "https://issuer.example";
	c.audiences = {"mesh", "api"};
	c.clock_skew_s = 30;
	c.cache_entries = cache;
	c.keys.push_back({"h1", policy::schema::jwt_alg::hs256, secret, ""});
	c.keys.push_back({"r1", policy::schema::jwt_alg::rs256, "", k().rs->public_pem()});
	c.keys.push_back({"e1", policy::schema::jwt_alg::es256, "", k().es->public_pem()});
	return c;
}

std::unique_ptr<jwt_verifier> make_verifier(uint32_t cache = 64)
{
	auto v = jwt_verifier::create(make_config(cache), {"sub", "role", "roles", "tenant"});
	EXPECT_TRUE(v) << v.error().message();
	return std::move(v).value();
}

std::string claims(const std::string &extra = "", int64_t exp = now + 3600)
{
	std::string s = R"({"iss":"https://issuer.example","aud":"mesh","sub":"alice","exp":)" +
			std::to_string(exp);
	if (!extra.empty())
		s += "," + extra;
	return s + "}";
}

jwt_error verify(jwt_verifier &v, const std::string &tok, int64_t t = now)
{
	const verified_token *out = nullptr;
	jwt_error e = v.verify_token(tok, t, &out);
	if (e == jwt_error::ok) {
		EXPECT_NE(out, nullptr);
	}
	return e;
}

} // namespace

TEST(base64url, round_trip_and_canonical)
{
	for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar", "\xff\xfe\x00\x01"}) {
		std::string e = base64url_encode(s);
		EXPECT_EQ(e.find('='), std::string::npos);
		uint8_t out[16];
		ptrdiff_t n = base64url_decode(e, out, sizeof(out));
		ASSERT_EQ(n, static_cast<ptrdiff_t>(s.size())) << e;
		EXPECT_EQ(std::string(reinterpret_cast<char *>(out), s.size()), s);
	}
	uint8_t out[16];
	EXPECT_EQ(base64url_decode("Zg", out, sizeof(out)), 1);
	EXPECT_EQ(base64url_decode("Zh", out, sizeof(out)), -1);   /* non-zero unused bits */
	EXPECT_EQ(base64url_decode("Zg==", out, sizeof(out)), -1); /* padding */
	EXPECT_EQ(base64url_decode("Z", out, sizeof(out)), -1);    /* 1 mod 4 */
	EXPECT_EQ(base64url_decode("ab+/", out, sizeof(out)), -1); /* plain base64 alphabet */
	EXPECT_EQ(base64url_decode("abcd", out, 2), -1);           /* does not fit */
	EXPECT_EQ(base64url_decode("a-_b", out, sizeof(out)), 3);
}

TEST(base64url, lenient_form_for_operator_keys)
{
	using dpumesh::base64url_form;
	uint8_t out[16];
	const auto lenient = base64url_form::lenient;
	EXPECT_EQ(base64url_decode("Zg==", out, sizeof(out), lenient), 1); /* padding at the end */
	EXPECT_EQ(base64url_decode("Zh", out, sizeof(out), lenient), 1);   /* unused bits ignored */
	EXPECT_EQ(base64url_decode("ab+/", out, sizeof(out), lenient), 3); /* standard alphabet */
	EXPECT_EQ(std::string(reinterpret_cast<char *>(out), 3),
		  std::string(reinterpret_cast<const char *>("\x69\xbf\xbf"), 3));
	EXPECT_EQ(base64url_decode("Z", out, sizeof(out), lenient), -1);       /* 1 mod 4 */
	EXPECT_EQ(base64url_decode("Zg===", out, sizeof(out), lenient), -1);   /* 3 '=' */
	EXPECT_EQ(base64url_decode("Zg==Zg==", out, sizeof(out), lenient), -1); /* '=' inside */
	EXPECT_EQ(base64url_decode("ab c", out, sizeof(out), lenient), -1);
	EXPECT_EQ(base64url_decode("abcd", out, 2, lenient), -1);
	auto s = base64url_decode("Zm9vYmFy", lenient);
	ASSERT_TRUE(s.has_value());
	EXPECT_EQ(*s, "foobar");
	EXPECT_FALSE(base64url_decode("Zm9vYmFy!", lenient).has_value());
	EXPECT_EQ(base64url_decode("", base64url_form::canonical), std::string());
}

TEST(bearer, scheme_and_spaces)
{
	std::string_view t;
	EXPECT_TRUE(bearer_token("Bearer abc", &t));
	EXPECT_EQ(t, "abc");
	EXPECT_TRUE(bearer_token("bearer   abc.def  ", &t));
	EXPECT_EQ(t, "abc.def");
	EXPECT_TRUE(bearer_token("BEARER\tx", &t));
	EXPECT_FALSE(bearer_token("Bearer", &t));
	EXPECT_FALSE(bearer_token("Bearer    ", &t));
	EXPECT_FALSE(bearer_token("Bearerabc", &t));
	EXPECT_FALSE(bearer_token("Basic dXNlcjpwYXNz", &t));
	EXPECT_FALSE(bearer_token("", &t));
}

/* The scheme is read as one word: every byte value at each of its six places and at the
 * separator's is taken exactly when a byte-at-a-time, case-folding reading takes it. */
TEST(bearer, every_byte_of_the_scheme_as_the_plain_reading)
{
	const auto plain = [](std::string_view h) {
		if (h.size() <= 6)
			return false;
		for (size_t i = 0; i < 6; i++) {
			char c = h[i];
			if (c >= 'A' && c <= 'Z')
				c = static_cast<char>(c - 'A' + 'a');
			if (c != "bearer"[i])
				return false;
		}
		return h[6] == ' ' || h[6] == '\t';
	};
	std::string_view t;
	for (size_t at = 0; at < 7; at++)
		for (unsigned b = 0; b < 256; b++) {
			std::string h = "Bearer tok";
			h[at] = static_cast<char>(b);
			EXPECT_EQ(bearer_token(h, &t), plain(h)) << at << " " << b;
		}
}

TEST(jwt, valid_tokens_of_each_alg)
{
	auto v = make_verifier();
	const verified_token *out = nullptr;
	std::string hs = make_jwt(*k().hs, R"({"alg":"HS256","kid":"h1","typ":"JWT"})",
				  claims(R"("role":"admin","roles":["dev","ops"],"tenant":7)"));
	ASSERT_EQ(v->verify_token(hs, now, &out), jwt_error::ok);
	int sub = v->claim_index("sub"), role = v->claim_index("role"), roles = v->claim_index("roles"),
	    tenant = v->claim_index("tenant");
	EXPECT_EQ(out->claims.first(static_cast<unsigned>(sub)), "alice");
	EXPECT_TRUE(out->claims.contains(static_cast<unsigned>(role), "admin"));
	EXPECT_TRUE(out->claims.contains(static_cast<unsigned>(roles), "ops"));
	EXPECT_FALSE(out->claims.contains(static_cast<unsigned>(roles), "admin"));
	EXPECT_EQ(out->claims.first(static_cast<unsigned>(tenant)), "7");
	EXPECT_EQ(out->exp, now + 3600);

	EXPECT_EQ(verify(*v, make_jwt(*k().rs, R"({"alg":"RS256","kid":"r1"})", claims())), jwt_error::ok);
	EXPECT_EQ(verify(*v, make_jwt(*k().es, R"({"alg":"ES256","kid":"e1"})", claims())), jwt_error::ok);
	/* no kid: the only key of that alg */
	EXPECT_EQ(verify(*v, make_jwt(*k().rs, R"({"alg":"RS256"})", claims())), jwt_error::ok);
	/* aud as an array; exp as a real */
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"alg":"HS256"})",
				      R"({"iss":"https://issuer.example","aud":["x","api"],"exp":1900003600.5})")),
		  jwt_error::ok);
	EXPECT_EQ(v->verify_header("Bearer " + hs, now, &out), jwt_error::ok);
	EXPECT_EQ(v->verify_header("Basic " + hs, now, &out), jwt_error::bad_scheme);
}

TEST(jwt, time_claims_with_skew)
{
	auto v = make_verifier(0); /* no cache: every call parses */
	auto tok = [&](const std::string &c) {
		return make_jwt(*k().hs, R"({"alg":"HS256"})",
				R"({"iss":"https://issuer.example","aud":"mesh",)" + c + "}");
	};
	std::string exp = tok(R"("exp":)" + std::to_string(now));
	EXPECT_EQ(verify(*v, exp, now - 31), jwt_error::ok);
	EXPECT_EQ(verify(*v, exp, now + 29), jwt_error::ok);       /* within skew */
	EXPECT_EQ(verify(*v, exp, now + 30), jwt_error::expired);  /* at exp + skew */
	EXPECT_EQ(verify(*v, exp, now + 3600), jwt_error::expired);
	std::string nbf = tok(R"("nbf":)" + std::to_string(now));
	EXPECT_EQ(verify(*v, nbf, now - 30), jwt_error::ok);        /* within skew */
	EXPECT_EQ(verify(*v, nbf, now - 31), jwt_error::not_yet_valid);
	EXPECT_EQ(verify(*v, tok(R"("exp":"tomorrow")")), jwt_error::bad_claims);
	EXPECT_EQ(verify(*v, tok(R"("nbf":null)")), jwt_error::bad_claims);
	EXPECT_EQ(verify(*v, tok(R"("sub":"no exp at all")")), jwt_error::ok);
}

TEST(jwt, refusals_each_with_its_reason)
{
	auto v = make_verifier();
	const std::string hdr = R"({"alg":"HS256","kid":"h1"})";
	const std::string good = make_jwt(*k().hs, hdr, claims());
	ASSERT_EQ(verify(*v, good), jwt_error::ok);

	/* wrong signature: a key we do not know, and one flipped signature byte */
	auto other = signing_key::hmac("another-secret-another-secret-another-secret");
	EXPECT_EQ(verify(*v, make_jwt(*other, hdr, claims())), jwt_error::bad_signature);
	std::string flipped = good;
	size_t mid = flipped.rfind('.') + 10;
	flipped[mid] = flipped[mid] == 'A' ? 'B' : 'A';
	EXPECT_EQ(verify(*v, flipped), jwt_error::bad_signature);
	EXPECT_EQ(verify(*v, make_jwt(*k().other_rs, R"({"alg":"RS256","kid":"r1"})", claims())),
		  jwt_error::bad_signature);
	/* a signature of the wrong length */
	EXPECT_EQ(verify(*v, good.substr(0, good.rfind('.') + 1) + "AAAA"), jwt_error::bad_signature);
	/* payload swapped under a valid signature */
	std::string swapped = base64url_encode(hdr) + "." +
			      base64url_encode(claims(R"("role":"admin")")) +
			      good.substr(good.rfind('.'));
	EXPECT_EQ(verify(*v, swapped), jwt_error::bad_signature);

	/* alg none, in any spelling, signed or not */
	std::string none_tbs = base64url_encode(R"({"alg":"none"})") + "." + base64url_encode(claims());
	EXPECT_EQ(verify(*v, none_tbs + "."), jwt_error::alg_none);
	EXPECT_EQ(verify(*v, none_tbs + "." + base64url_encode("x")), jwt_error::alg_none);
	EXPECT_EQ(verify(*v, base64url_encode(R"({"alg":"NoNe"})") + "." + base64url_encode(claims()) + "."),
		  jwt_error::alg_none);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"alg":"HS512"})", claims())), jwt_error::alg_unsupported);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"kid":"h1"})", claims())), jwt_error::bad_claims);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"alg":"HS256","crit":["exp"]})", claims())),
		  jwt_error::crit_unsupported);

	/* HS/RS confusion: HMAC keyed with the RSA public key's PEM, naming the RSA key */
	auto confused = signing_key::hmac(k().rs->public_pem());
	EXPECT_EQ(verify(*v, make_jwt(*confused, R"({"alg":"HS256","kid":"r1"})", claims())),
		  jwt_error::alg_mismatch);
	EXPECT_EQ(verify(*v, make_jwt(*k().rs, R"({"alg":"RS256","kid":"h1"})", claims())),
		  jwt_error::alg_mismatch);
	EXPECT_EQ(verify(*v, make_jwt(*k().es, R"({"alg":"ES256","kid":"r1"})", claims())),
		  jwt_error::alg_mismatch);

	/* kids */
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"alg":"HS256","kid":"nope"})", claims())),
		  jwt_error::unknown_kid);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"alg":"HS256","kid":7})", claims())),
		  jwt_error::bad_claims);

	/* issuer and audience */
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, hdr, R"({"iss":"https://evil.example","aud":"mesh"})")),
		  jwt_error::bad_issuer);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, hdr, R"({"aud":"mesh"})")), jwt_error::bad_issuer);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, hdr, R"({"iss":"https://issuer.example","aud":"web"})")),
		  jwt_error::bad_audience);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, hdr, R"({"iss":"https://issuer.example","aud":["web",1]})")),
		  jwt_error::bad_audience);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, hdr, R"({"iss":"https://issuer.example"})")),
		  jwt_error::bad_audience);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, hdr, claims("", now - 100))), jwt_error::expired);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, hdr, claims(R"("nbf":1900001000)"))), jwt_error::not_yet_valid);
}

TEST(jwt, malformed_tokens)
{
	auto v = make_verifier();
	const std::string good = make_jwt(*k().hs, R"({"alg":"HS256"})", claims());
	size_t d1 = good.find('.'), d2 = good.rfind('.');
	EXPECT_EQ(verify(*v, ""), jwt_error::malformed);
	EXPECT_EQ(verify(*v, "abc"), jwt_error::malformed);
	EXPECT_EQ(verify(*v, good.substr(0, d2)), jwt_error::malformed);   /* one dot */
	EXPECT_EQ(verify(*v, good + ".x"), jwt_error::malformed);          /* three dots */
	EXPECT_EQ(verify(*v, good.substr(d1)), jwt_error::malformed);      /* empty header */
	EXPECT_EQ(verify(*v, good.substr(0, d1 + 1) + good.substr(d2)), jwt_error::malformed);
	EXPECT_EQ(verify(*v, "..."), jwt_error::malformed);
	/* bad base64: characters, padding, a non-canonical tail */
	EXPECT_EQ(verify(*v, "e*J." + good.substr(d1 + 1)), jwt_error::bad_base64);
	EXPECT_EQ(verify(*v, good.substr(0, d1) + "=" + good.substr(d1)), jwt_error::bad_base64);
	EXPECT_EQ(verify(*v, good.substr(0, d2 + 1) + "!!!!"), jwt_error::bad_base64);
	/* bad JSON: not JSON, not an object, a repeated key, trailing garbage */
	EXPECT_EQ(verify(*v, base64url_encode("{alg:HS256}") + good.substr(d1)), jwt_error::bad_json);
	EXPECT_EQ(verify(*v, base64url_encode(R"(["HS256"])") + good.substr(d1)), jwt_error::bad_json);
	EXPECT_EQ(verify(*v, base64url_encode(R"({"alg":"none","alg":"HS256"})") + good.substr(d1)),
		  jwt_error::bad_json);
	EXPECT_EQ(verify(*v, base64url_encode(R"({"alg":"HS256"} x)") + good.substr(d1)),
		  jwt_error::bad_json);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"alg":"HS256"})", "not json")), jwt_error::bad_json);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"alg":"HS256"})", R"({"aud":1,"aud":2})")),
		  jwt_error::bad_json);
	/* huge */
	std::string huge = make_jwt(*k().hs, R"({"alg":"HS256"})",
				    claims(R"("pad":")" + std::string(9000, 'x') + "\""));
	EXPECT_EQ(verify(*v, huge), jwt_error::too_long);
	std::string big_ok = make_jwt(*k().hs, R"({"alg":"HS256"})",
				      claims(R"("pad":")" + std::string(3000, 'x') + "\""));
	EXPECT_EQ(verify(*v, big_ok), jwt_error::ok); /* verified, too long to cache */
	EXPECT_EQ(v->stats().uncacheable.get(), 1u);
}

TEST(jwt, several_keys_of_one_alg_need_a_kid)
{
	auto c = make_config();
	c.keys.push_back({"r2", policy::schema::jwt_alg::rs256, "", k().other_rs->public_pem()});
	auto v = jwt_verifier::create(c, {"sub"});
	ASSERT_TRUE(v) << v.error().message();
	EXPECT_EQ(verify(**v, make_jwt(*k().other_rs, R"({"alg":"RS256"})", claims())), jwt_error::unknown_kid);
	EXPECT_EQ(verify(**v, make_jwt(*k().other_rs, R"({"alg":"RS256","kid":"r2"})", claims())), jwt_error::ok);
	EXPECT_EQ(verify(**v, make_jwt(*k().other_rs, R"({"alg":"RS256","kid":"r1"})", claims())),
		  jwt_error::bad_signature);
	/* ES256 with no kid: one ES key, so it is used */
	EXPECT_EQ(verify(**v, make_jwt(*k().es, R"({"alg":"ES256"})", claims())), jwt_error::ok);
}

TEST(jwt, cache_hits_still_check_time)
{
	auto v = make_verifier(8);
	EXPECT_EQ(v->cache_capacity(), 8u);
	std::string tok = make_jwt(*k().rs, R"({"alg":"RS256","kid":"r1"})", claims("", now + 100));
	EXPECT_EQ(verify(*v, tok), jwt_error::ok);
	EXPECT_EQ(v->stats().signatures.get(), 1u);
	EXPECT_EQ(v->stats().cache_misses.get(), 1u);
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(verify(*v, tok, now + i), jwt_error::ok);
	EXPECT_EQ(v->stats().signatures.get(), 1u);
	EXPECT_EQ(v->stats().cache_hits.get(), 5u);
	EXPECT_EQ(verify(*v, tok, now + 130), jwt_error::expired); /* a hit, but expired now */
	EXPECT_EQ(v->stats().cache_hits.get(), 6u);
	EXPECT_EQ(verify(*v, tok, now + 129), jwt_error::ok);

	/* a tampered copy of a cached token is not a hit */
	std::string t2 = tok;
	t2[t2.size() - 5] = t2[t2.size() - 5] == 'A' ? 'B' : 'A';
	EXPECT_EQ(verify(*v, t2), jwt_error::bad_signature);

	/* many tokens through a small cache: always the right answer, evictions counted */
	std::vector<std::string> toks;
	for (int i = 0; i < 40; i++)
		toks.push_back(make_jwt(*k().hs, R"({"alg":"HS256"})",
					claims(R"("n":)" + std::to_string(i), now + 1000 + i)));
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 40; i++) {
			const verified_token *out = nullptr;
			ASSERT_EQ(v->verify_token(toks[i], now, &out), jwt_error::ok);
			EXPECT_EQ(out->exp, now + 1000 + i);
		}
	EXPECT_GT(v->stats().cache_evictions.get(), 0u);
}

TEST(jwt, claim_values_that_do_not_fit_are_dropped)
{
	auto v = make_verifier();
	std::string many = "[";
	for (int i = 0; i < 100; i++)
		many += std::string(i ? "," : "") + "\"role-" + std::string(20, 'x') + std::to_string(i) + "\"";
	many += "]";
	const verified_token *out = nullptr;
	std::string tok = make_jwt(*k().hs, R"({"alg":"HS256"})",
				   claims(R"("roles":)" + many + R"(,"role":")" + std::string(300, 'y') + "\""));
	ASSERT_EQ(v->verify_token(tok, now, &out), jwt_error::ok);
	unsigned roles = static_cast<unsigned>(v->claim_index("roles"));
	EXPECT_TRUE(out->claims.contains(roles, "role-" + std::string(20, 'x') + "0"));
	EXPECT_FALSE(out->claims.contains(roles, "role-" + std::string(20, 'x') + "99"));
	EXPECT_FALSE(out->claims.present(static_cast<unsigned>(v->claim_index("role"))));
	EXPECT_EQ(out->claims.first(static_cast<unsigned>(v->claim_index("sub"))), "alice");
}

TEST(jwt, unusable_keys_are_refused_with_context)
{
	auto with = [](policy::schema::jwt_key key) {
		policy::schema::jwt_config c;
		c.keys.push_back(std::move(key));
		return jwt_verifier::create(c, {});
	};
	auto r = with({"x", policy::schema::jwt_alg::rs256, "", "-----BEGIN PUBLIC KEY-----\ngarbage\n"});
	ASSERT_FALSE(r);
	EXPECT_NE(r.error().message().find("/policy/jwt/keys/0 (kid \"x\")"), std::string::npos)
		<< r.error().message();
	r = with({"x", policy::schema::jwt_alg::rs256, "", k().es->public_pem()});
	ASSERT_FALSE(r);
	EXPECT_NE(r.error().message().find("must be RSA"), std::string::npos) << r.error().message();
	r = with({"x", policy::schema::jwt_alg::rs256, "", signing_key::rsa(1024)->public_pem()});
	ASSERT_FALSE(r);
	EXPECT_NE(r.error().message().find("1024 bits"), std::string::npos) << r.error().message();
	r = with({"x", policy::schema::jwt_alg::es256, "", signing_key::ec("P-384")->public_pem()});
	ASSERT_FALSE(r);
	EXPECT_NE(r.error().message().find("P-256"), std::string::npos) << r.error().message();
	r = with({"x", policy::schema::jwt_alg::hs256, "short", ""});
	ASSERT_FALSE(r);
	EXPECT_NE(r.error().message().find("at least 32"), std::string::npos) << r.error().message();

	policy::schema::jwt_config c = make_config();
	std::vector<std::string> names;
	for (unsigned i = 0; i <= jwt_max_claims; i++)
		names.push_back("c" + std::to_string(i));
	auto too_many = jwt_verifier::create(c, names);
	ASSERT_FALSE(too_many);
	EXPECT_NE(too_many.error().message().find("at most 16"), std::string::npos);
}

TEST(jwt, error_names_are_distinct)
{
	std::set<std::string> seen;
	for (int i = 0; i < static_cast<int>(jwt_error::count); i++) {
		std::string n = jwt_error_name(static_cast<jwt_error>(i));
		EXPECT_EQ(n.rfind("jwt_", 0), 0u) << n;
		EXPECT_TRUE(seen.insert(n).second) << n;
	}
	EXPECT_STREQ(jwt_error_name(jwt_error::expired), "jwt_expired");
	EXPECT_STREQ(jwt_error_name(jwt_error::bad_signature), "jwt_bad_signature");
}

TEST(json_scan, validates_strictly)
{
	policy::json::value v;
	for (const char *ok : {"{}", " { \"a\" : [1, -0, 2.5e-3, true, false, null, {}] } ", "[]", "\"x\"",
			       "0", "-1.0E+2", R"("\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t")", "\"\xc3\xa9\"",
			       "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"})
		EXPECT_TRUE(policy::json::validate(ok, &v)) << ok;
	for (const char *bad : {"", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "[1,]", "{a:1}", "'x'",
				"01", "1.", ".5", "-", "1e", "+1", "tru", "nul", "[1] x", "\"\\x\"",
				R"("\u12")", R"("\u0000")", R"("\ud800")", R"("\udc00")", R"("\ud800\u0041")",
				"\"\x01\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xff\"", "\"abc",
				"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"})
		EXPECT_FALSE(policy::json::validate(bad, &v)) << bad;
}

TEST(json_scan, members_strings_numbers)
{
	std::vector<std::string> keys;
	bool ok = policy::json::scan_object(R"({"a":1, "\u0062":"x\ty", "c":[1,"2"], "d":{"e":1}})",
				    [&](std::string_view k, const policy::json::value &v) {
					    keys.emplace_back(k);
					    if (k == "b") {
						    char buf[8];
						    EXPECT_EQ(policy::json::unescape(v.raw, buf, sizeof(buf)), 3);
						    EXPECT_EQ(std::string(buf, 3), "x\ty");
						    EXPECT_EQ(policy::json::unescape(v.raw, buf, 2), -1);
					    }
					    if (k == "c") {
						    int n = 0;
						    policy::json::for_each_element(v.raw, [&](const policy::json::value &) { n++; });
						    EXPECT_EQ(n, 2);
					    }
					    return true;
				    });
	EXPECT_TRUE(ok);
	EXPECT_EQ(keys, (std::vector<std::string>{"a", "b", "c", "d"}));
	EXPECT_FALSE(policy::json::scan_object("[1]", [](std::string_view, const policy::json::value &) { return true; }));
	char buf[8];
	EXPECT_EQ(policy::json::unescape(R"("\ud83d\ude00")", buf, sizeof(buf)), 4);
	EXPECT_EQ(std::string(buf, 4), "\xf0\x9f\x98\x80");
	int64_t s;
	EXPECT_TRUE(policy::json::to_seconds("1900000000", &s));
	EXPECT_EQ(s, 1900000000);
	EXPECT_TRUE(policy::json::to_seconds("1.9e9", &s));
	EXPECT_EQ(s, 1900000000);
	EXPECT_TRUE(policy::json::to_seconds("-0.5", &s));
	EXPECT_EQ(s, -1);
	EXPECT_TRUE(policy::json::to_seconds("99999999999999999999", &s));
	EXPECT_EQ(s, INT64_MAX);
	EXPECT_TRUE(policy::json::to_seconds("-1e400", &s));
	EXPECT_EQ(s, INT64_MIN);
	EXPECT_TRUE(policy::json::to_seconds("1e-400", &s));
	EXPECT_EQ(s, 0);
}

TEST(jwt, escaped_member_names_cannot_smuggle_a_second_alg)
{
	auto v = make_verifier();
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"alg":"HS256","\u0061lg":"none"})", claims())),
		  jwt_error::bad_json);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"\u0061lg":"HS256"})", claims())), jwt_error::ok);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"alg":"HS256"})",
				      claims(R"("\u0065xp":1)"))), jwt_error::bad_json);
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"alg":"HS256"})",
				      claims(R"("sub":"a","sub":"b")"))), jwt_error::bad_json);
	/* repeats of members nobody reads are harmless */
	EXPECT_EQ(verify(*v, make_jwt(*k().hs, R"({"alg":"HS256","x":1,"x":2})", claims())), jwt_error::ok);
}
