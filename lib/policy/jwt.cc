// SPDX-License-Identifier: BSD-3-Clause
// JWT verification (compact JWS, HS256/RS256/ES256 through OpenSSL) and the verified-token cache.
#include "dpumesh/policy/jwt.h"

#include "internal/json_scan.h"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>

namespace dpumesh::policy {

const char *jwt_error_name(jwt_error e) noexcept
{
	switch (e) {
	case jwt_error::ok: return "jwt_ok";
#define DPUMESH_JWT_ERROR_NAME(n, s, d)                                                  \
	case jwt_error::n: return s;
		DPUMESH_FOREACH_JWT_ERROR(DPUMESH_JWT_ERROR_NAME)
#undef DPUMESH_JWT_ERROR_NAME
	case jwt_error::count: break;
	}
	return "jwt_unknown";
}

const char *jwt_error_help(jwt_error e) noexcept
{
	switch (e) {
	case jwt_error::ok: return "verified";
#define DPUMESH_JWT_ERROR_HELP(n, s, d)                                                  \
	case jwt_error::n: return d;
		DPUMESH_FOREACH_JWT_ERROR(DPUMESH_JWT_ERROR_HELP)
#undef DPUMESH_JWT_ERROR_HELP
	case jwt_error::count: break;
	}
	return "?";
}

/* ---- claims ---- */

std::string_view token_claims::first(unsigned i) const noexcept
{
	if (!present(i))
		return {};
	const char *p = _blob + _off[i];
	return {p + 1, static_cast<uint8_t>(*p)};
}

void token_claims::clear() noexcept
{
	std::memset(_len, 0, sizeof(_len));
	_used = 0;
}

bool token_claims::add(unsigned i, std::string_view v) noexcept
{
	if (i >= jwt_max_claims || v.size() > 255 || _used + 1 + v.size() > blob_size)
		return false;
	if (_len[i] == 0)
		_off[i] = _used;
	else if (_off[i] + _len[i] != _used)
		return false; /* another claim was added in between */
	_blob[_used] = static_cast<char>(v.size());
	std::memcpy(_blob + _used + 1, v.data(), v.size());
	_used = static_cast<uint16_t>(_used + 1 + v.size());
	_len[i] = static_cast<uint16_t>(_len[i] + 1 + v.size());
	return true;
}

namespace {

/* bearer_token(), inline in verify_header() */
[[gnu::always_inline]] inline bool bearer_of(std::string_view h, std::string_view *token) noexcept
{
	/* the scheme's six letters in any case, as one word: each of b, e, a, r has the 0x20
	 * bit, so a byte with it set is one of them exactly when it is that letter in either
	 * case (a loop folding one byte at a time was ~50 instructions of a JWT request) */
	constexpr uint64_t scheme = 0x726572616562ull; /* "bearer", little-endian */
	constexpr uint64_t lower = 0x202020202020ull;
	if (h.size() <= 6)
		return false;
	uint32_t lo;
	uint16_t hi;
	std::memcpy(&lo, h.data(), 4); /* two loads (GCC 12 left six bytes' shifts unmerged) */
	std::memcpy(&hi, h.data() + 4, 2);
	const uint64_t w = std::endian::native == std::endian::little
				   ? lo | uint64_t(hi) << 32
				   : uint64_t(__builtin_bswap32(lo)) | uint64_t(__builtin_bswap16(hi)) << 32;
	if ((w | lower) != scheme || (h[6] != ' ' && h[6] != '\t'))
		return false;
	h.remove_prefix(7);
	while (!h.empty() && (h.front() == ' ' || h.front() == '\t'))
		h.remove_prefix(1);
	while (!h.empty() && (h.back() == ' ' || h.back() == '\t'))
		h.remove_suffix(1);
	if (h.empty())
		return false;
	*token = h;
	return true;
}

} // namespace

bool bearer_token(std::string_view h, std::string_view *token) noexcept
{
	return bearer_of(h, token);
}

/* ---- the verifier ---- */

namespace {

struct key_entry {
	std::string kid;
	schema::jwt_alg alg = schema::jwt_alg::hs256;
	EVP_MAC_CTX *mac = nullptr; /* HS256, keyed once; re-initialised per token */
	EVP_PKEY *pkey = nullptr;   /* RS256/ES256 */
	size_t sig_len = 0;         /* bytes of a raw signature */
};

struct cache_entry {
	uint64_t tag = 0;
	uint16_t len = 0; /* token length; 0: empty */
	verified_token tok;
	char token[jwt_max_cached_token];
};

constexpr unsigned cache_ways = 4;

inline uint64_t load64(const char *p) noexcept
{
	uint64_t v;
	std::memcpy(&v, p, sizeof(v));
	return v;
}

inline uint64_t mix64(uint64_t x) noexcept
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* A string token unescaped into buf; empty view if it does not fit. */
std::string_view string_of(const json::value &v, char *buf, size_t cap) noexcept
{
	ptrdiff_t n = json::unescape(v.raw, buf, cap);
	return n < 0 ? std::string_view() : std::string_view(buf, static_cast<size_t>(n));
}

} // namespace

struct jwt_verifier::impl {
	std::vector<key_entry> keys;
	std::optional<std::string> issuer;
	std::vector<std::string> audiences;
	int64_t skew = 0;
	std::vector<std::string> claim_names;
	EVP_MD *sha256 = nullptr;
	EVP_MD_CTX *md = nullptr;
	std::unique_ptr<cache_entry[]> cache;
	uint32_t nb_sets = 0; /* power of two; 0: no cache */
	uint64_t seed = 0;
	jwt_stats stats;
	verified_token scratch_tok;
	uint8_t scratch[jwt_max_token];

	~impl()
	{
		for (auto &k : keys) {
			EVP_MAC_CTX_free(k.mac);
			EVP_PKEY_free(k.pkey);
		}
		EVP_MD_CTX_free(md);
		EVP_MD_free(sha256);
	}

	uint64_t hash(std::string_view t) const noexcept
	{
		/* the tail is the signature, effectively random; the bytes are compared anyway:
		 * its last 16 bytes folded into one word through one finaliser (two were ~11
		 * instructions more a lookup) */
		uint64_t h = seed ^ (t.size() * 0x9e3779b97f4a7c15ULL);
		if (t.size() >= 16) {
			h = mix64(h ^ load64(t.data() + t.size() - 8) ^
				  std::rotl(load64(t.data() + t.size() - 16), 32));
		} else {
			for (char c : t)
				h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
			h = mix64(h);
		}
		return h | 1; /* 0 marks nothing */
	}

	cache_entry *lookup(std::string_view t, uint64_t tag) noexcept
	{
		cache_entry *set = &cache[(tag & (nb_sets - 1)) * cache_ways];
		for (unsigned w = 0; w < cache_ways; w++) {
			cache_entry &e = set[w];
			if (e.tag == tag && e.len == t.size() && std::memcmp(e.token, t.data(), t.size()) == 0)
				return &e;
		}
		return nullptr;
	}

	cache_entry *victim(uint64_t tag, int64_t now) noexcept
	{
		cache_entry *set = &cache[(tag & (nb_sets - 1)) * cache_ways];
		cache_entry *best = &set[0];
		for (unsigned w = 0; w < cache_ways; w++) {
			cache_entry &e = set[w];
			if (e.len == 0 || now - skew >= e.tok.exp)
				return &e;
			if (e.tok.exp < best->tok.exp)
				best = &e;
		}
		stats.cache_evictions.inc();
		return best;
	}

	jwt_error time_check(const verified_token &t, int64_t now) const noexcept
	{
		if (t.exp != INT64_MAX && now - skew >= t.exp)
			return jwt_error::expired;
		if (t.nbf != INT64_MIN && now + skew < t.nbf)
			return jwt_error::not_yet_valid;
		return jwt_error::ok;
	}

	bool hmac_ok(key_entry &k, const uint8_t *sig, size_t sig_len, std::string_view tbs) noexcept
	{
		uint8_t mac[EVP_MAX_MD_SIZE];
		size_t mac_len = 0;
		/* a NULL key re-initialises with the key set at create */
		if (EVP_MAC_init(k.mac, nullptr, 0, nullptr) != 1 ||
		    EVP_MAC_update(k.mac, reinterpret_cast<const uint8_t *>(tbs.data()), tbs.size()) != 1 ||
		    EVP_MAC_final(k.mac, mac, &mac_len, sizeof(mac)) != 1)
			return false;
		return mac_len == sig_len && CRYPTO_memcmp(mac, sig, sig_len) == 0;
	}

	bool pkey_ok(key_entry &k, const uint8_t *sig, size_t sig_len, std::string_view tbs) noexcept
	{
		uint8_t der[128];
		if (k.alg == schema::jwt_alg::es256) {
			/* JWS carries R||S (RFC 7518 §3.4); OpenSSL verifies DER ECDSA-Sig-Value */
			ECDSA_SIG *es = ECDSA_SIG_new();
			BIGNUM *r = BN_bin2bn(sig, 32, nullptr);
			BIGNUM *s = BN_bin2bn(sig + 32, 32, nullptr);
			if (!es || !r || !s || ECDSA_SIG_set0(es, r, s) != 1) {
				ECDSA_SIG_free(es);
				BN_free(r);
				BN_free(s);
				return false;
			}
			int n = i2d_ECDSA_SIG(es, nullptr);
			uint8_t *p = der;
			if (n <= 0 || static_cast<size_t>(n) > sizeof(der) || i2d_ECDSA_SIG(es, &p) != n) {
				ECDSA_SIG_free(es);
				return false;
			}
			ECDSA_SIG_free(es);
			sig = der;
			sig_len = static_cast<size_t>(n);
		}
		EVP_MD_CTX_reset(md);
		if (EVP_DigestVerifyInit(md, nullptr, sha256, nullptr, k.pkey) != 1)
			return false;
		return EVP_DigestVerify(md, sig, sig_len, reinterpret_cast<const uint8_t *>(tbs.data()),
					tbs.size()) == 1;
	}

	/* The decoded text of a base64url part (in scratch). */
	jwt_error decode_part(std::string_view part, std::string_view *text) noexcept
	{
		ptrdiff_t n = base64url_decode(part, scratch, sizeof(scratch));
		if (n < 0)
			return jwt_error::bad_base64;
		*text = {reinterpret_cast<const char *>(scratch), static_cast<size_t>(n)};
		return jwt_error::ok;
	}

	/* Reads alg/kid/crit from the header and picks the key. */
	jwt_error select_key(std::string_view hdr, key_entry **out) noexcept
	{
		json::value alg{}, kid{};
		bool has_alg = false, has_kid = false, has_crit = false;
		bool ok = json::scan_object(hdr, [&](std::string_view k, const json::value &v) {
			bool *seen = k == "alg" ? &has_alg : k == "kid" ? &has_kid : k == "crit" ? &has_crit : nullptr;
			if (!seen)
				return true;
			if (*seen)
				return false; /* a repeated member we read: refuse the token */
			*seen = true;
			if (seen == &has_alg)
				alg = v;
			else if (seen == &has_kid)
				kid = v;
			return true;
		});
		if (!ok)
			return jwt_error::bad_json;
		if (!has_alg || alg.type != json::kind::string)
			return jwt_error::bad_claims;
		char abuf[16];
		std::string_view a = string_of(alg, abuf, sizeof(abuf));
		if (a.size() == 4 && (a[0] | 0x20) == 'n' && (a[1] | 0x20) == 'o' &&
		    (a[2] | 0x20) == 'n' && (a[3] | 0x20) == 'e')
			return jwt_error::alg_none;
		schema::jwt_alg want;
		if (a == "HS256")
			want = schema::jwt_alg::hs256;
		else if (a == "RS256")
			want = schema::jwt_alg::rs256;
		else if (a == "ES256")
			want = schema::jwt_alg::es256;
		else
			return jwt_error::alg_unsupported;
		if (has_crit)
			return jwt_error::crit_unsupported;
		if (has_kid) {
			if (kid.type != json::kind::string)
				return jwt_error::bad_claims;
			char kbuf[256];
			ptrdiff_t kl = json::unescape(kid.raw, kbuf, sizeof(kbuf));
			if (kl < 0)
				return jwt_error::unknown_kid; /* longer than any configured kid */
			std::string_view k(kbuf, static_cast<size_t>(kl));
			for (auto &e : keys)
				if (e.kid == k) {
					if (e.alg != want)
						return jwt_error::alg_mismatch;
					*out = &e;
					return jwt_error::ok;
				}
			return jwt_error::unknown_kid;
		}
		key_entry *found = nullptr;
		unsigned nb = 0;
		for (auto &e : keys)
			if (e.alg == want) {
				found = &e;
				nb++;
			}
		if (nb == 0)
			return jwt_error::alg_mismatch;
		if (nb > 1)
			return jwt_error::unknown_kid;
		*out = found;
		return jwt_error::ok;
	}

	/* Adds a claim's value (or an array's values) to t. */
	void add_claim(unsigned i, const json::value &v, verified_token *t) noexcept
	{
		auto add = [&](const json::value &x) {
			char buf[256];
			switch (x.type) {
			case json::kind::string: {
				ptrdiff_t n = json::unescape(x.raw, buf, sizeof(buf));
				if (n >= 0)
					t->claims.add(i, {buf, static_cast<size_t>(n)});
				break;
			}
			case json::kind::number: t->claims.add(i, x.raw); break;
			case json::kind::true_: t->claims.add(i, "true"); break;
			case json::kind::false_: t->claims.add(i, "false"); break;
			default: break;
			}
		};
		if (v.type == json::kind::array)
			json::for_each_element(v.raw, add);
		else
			add(v);
	}

	jwt_error check_claims(std::string_view payload, int64_t now, verified_token *t) noexcept
	{
		enum { exp_m, nbf_m, iss_m, aud_m, nb_std };
		static constexpr std::string_view std_names[nb_std] = {"exp", "nbf", "iss", "aud"};
		json::value std_v[nb_std]{};
		uint32_t seen = 0; /* bits: registered claims, then policy claims */
		t->claims.clear();
		bool ok = json::scan_object(payload, [&](std::string_view k, const json::value &v) {
			for (unsigned m = 0; m < nb_std; m++)
				if (k == std_names[m]) {
					if (seen & (1u << m))
						return false;
					seen |= 1u << m;
					std_v[m] = v;
				}
			for (unsigned i = 0; i < claim_names.size(); i++)
				if (k == claim_names[i]) {
					uint32_t bit = 1u << (nb_std + i);
					if (seen & bit)
						return false;
					seen |= bit;
					add_claim(i, v, t);
				}
			return true;
		});
		if (!ok)
			return jwt_error::bad_json;
		t->exp = INT64_MAX;
		t->nbf = INT64_MIN;
		if ((seen & (1u << exp_m)) && (std_v[exp_m].type != json::kind::number ||
					       !json::to_seconds(std_v[exp_m].raw, &t->exp)))
			return jwt_error::bad_claims;
		if ((seen & (1u << nbf_m)) && (std_v[nbf_m].type != json::kind::number ||
					       !json::to_seconds(std_v[nbf_m].raw, &t->nbf)))
			return jwt_error::bad_claims;
		if (jwt_error e = time_check(*t, now); e != jwt_error::ok)
			return e;
		char buf[1024];
		if (issuer) {
			if (!(seen & (1u << iss_m)))
				return jwt_error::bad_issuer;
			if (std_v[iss_m].type != json::kind::string)
				return jwt_error::bad_claims;
			ptrdiff_t n = json::unescape(std_v[iss_m].raw, buf, sizeof(buf));
			if (n < 0 || std::string_view(buf, static_cast<size_t>(n)) != *issuer)
				return jwt_error::bad_issuer;
		}
		if (!audiences.empty()) {
			bool found = false;
			auto listed = [&](const json::value &s) {
				if (s.type != json::kind::string)
					return;
				std::string_view a = string_of(s, buf, sizeof(buf));
				if (!a.empty() && std::find(audiences.begin(), audiences.end(), a) != audiences.end())
					found = true;
			};
			if (seen & (1u << aud_m)) {
				if (std_v[aud_m].type == json::kind::array)
					json::for_each_element(std_v[aud_m].raw, listed);
				else
					listed(std_v[aud_m]);
			}
			if (!found)
				return jwt_error::bad_audience;
		}
		return jwt_error::ok;
	}

	/* the cache's part of verify(), inline in verify_header(): a cached token costs no
	 * call and no frame of verify_signed()'s size (~20 instructions of a JWT request) */
	[[gnu::always_inline]] jwt_error verify(std::string_view tok, int64_t now,
						const verified_token **out, jwt_path *how) noexcept
	{
		*how = jwt_path::neither;
		if (tok.size() > jwt_max_token)
			return jwt_error::too_long;
		const bool cacheable = nb_sets != 0 && tok.size() <= jwt_max_cached_token;
		uint64_t tag = 0;
		if (cacheable) {
			tag = hash(tok);
			if (cache_entry *e = lookup(tok, tag)) {
				stats.cache_hits.inc();
				*how = jwt_path::cache_hit;
				jwt_error r = time_check(e->tok, now);
				if (r == jwt_error::ok)
					*out = &e->tok;
				return r;
			}
			stats.cache_misses.inc();
		}
		return verify_signed(tok, now, out, how, cacheable, tag);
	}

	[[gnu::noinline]] jwt_error verify_signed(std::string_view tok, int64_t now,
						  const verified_token **out, jwt_path *how,
						  bool cacheable, uint64_t tag) noexcept
	{
		size_t d1 = tok.find('.');
		if (d1 == std::string_view::npos)
			return jwt_error::malformed;
		size_t d2 = tok.find('.', d1 + 1);
		if (d2 == std::string_view::npos || tok.find('.', d2 + 1) != std::string_view::npos ||
		    d1 == 0 || d2 == d1 + 1)
			return jwt_error::malformed;
		std::string_view h64 = tok.substr(0, d1), p64 = tok.substr(d1 + 1, d2 - d1 - 1);
		std::string_view s64 = tok.substr(d2 + 1);

		std::string_view text;
		if (jwt_error e = decode_part(h64, &text); e != jwt_error::ok)
			return e;
		key_entry *key = nullptr;
		if (jwt_error e = select_key(text, &key); e != jwt_error::ok)
			return e;
		/* the signature: canonical base64url of exactly the key's raw length */
		ptrdiff_t sl = base64url_decode(s64, scratch, sizeof(scratch));
		if (sl < 0)
			return jwt_error::bad_base64;
		if (static_cast<size_t>(sl) != key->sig_len)
			return jwt_error::bad_signature;
		stats.signatures.inc();
		*how = jwt_path::signature;
		std::string_view tbs = tok.substr(0, d2);
		bool good = key->alg == schema::jwt_alg::hs256
				    ? hmac_ok(*key, scratch, key->sig_len, tbs)
				    : pkey_ok(*key, scratch, key->sig_len, tbs);
		if (!good)
			return jwt_error::bad_signature;

		if (jwt_error e = decode_part(p64, &text); e != jwt_error::ok)
			return e;
		verified_token &t = scratch_tok;
		if (jwt_error e = check_claims(text, now, &t); e != jwt_error::ok)
			return e;
		if (!cacheable) {
			if (nb_sets != 0)
				stats.uncacheable.inc();
			*out = &t;
			return jwt_error::ok;
		}
		cache_entry *e = victim(tag, now);
		e->tag = tag;
		e->len = static_cast<uint16_t>(tok.size());
		std::memcpy(e->token, tok.data(), tok.size());
		e->tok = t;
		*out = &e->tok;
		return jwt_error::ok;
	}
};

jwt_verifier::jwt_verifier(std::unique_ptr<impl> p) : _impl(std::move(p)) {}
jwt_verifier::~jwt_verifier() = default;

result<std::unique_ptr<jwt_verifier>> jwt_verifier::create(const schema::jwt_config &cfg,
							   std::vector<std::string> claim_names)
{
	auto p = std::make_unique<impl>();
	if (claim_names.size() > jwt_max_claims)
		return errorf("/policy: the policy looks at %zu distinct JWT claims; at most %u are "
			      "supported",
			      claim_names.size(), jwt_max_claims);
	p->claim_names = std::move(claim_names);
	p->issuer = cfg.issuer;
	p->audiences = cfg.audiences;
	p->skew = cfg.clock_skew_s;
	if (cfg.keys.empty())
		return errorf("/policy/jwt/keys: no keys");
	p->sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
	p->md = EVP_MD_CTX_new();
	if (!p->sha256 || !p->md)
		return errorf("/policy/jwt: OpenSSL has no SHA-256");
	for (size_t i = 0; i < cfg.keys.size(); i++) {
		const schema::jwt_key &ck = cfg.keys[i];
		std::string where = "/policy/jwt/keys/" + std::to_string(i) + " (kid \"" + ck.kid + "\")";
		key_entry k;
		k.kid = ck.kid;
		k.alg = ck.alg;
		if (ck.alg == schema::jwt_alg::hs256) {
			if (ck.secret.size() < 32)
				return status::error(where + ": HS256 secret is " +
						     std::to_string(ck.secret.size()) +
						     " bytes; at least 32 are required");
			EVP_MAC *mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
			k.mac = mac ? EVP_MAC_CTX_new(mac) : nullptr;
			EVP_MAC_free(mac);
			char digest[] = "SHA256";
			OSSL_PARAM params[] = {
				OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
				OSSL_PARAM_construct_end()};
			if (!k.mac ||
			    EVP_MAC_init(k.mac, reinterpret_cast<const uint8_t *>(ck.secret.data()),
					 ck.secret.size(), params) != 1) {
				EVP_MAC_CTX_free(k.mac);
				return status::error(where + ": OpenSSL could not set up HMAC-SHA256");
			}
			k.sig_len = 32;
			p->keys.push_back(k);
			continue;
		}
		BIO *bio = BIO_new_mem_buf(ck.pem.data(), static_cast<int>(ck.pem.size()));
		k.pkey = bio ? PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr) : nullptr;
		BIO_free(bio);
		if (!k.pkey)
			return status::error(where + ": \"pem\" is not a readable PEM public key");
		p->keys.push_back(k); /* owned by impl from here on (freed on error too) */
		key_entry &kk = p->keys.back();
		if (ck.alg == schema::jwt_alg::rs256) {
			if (!EVP_PKEY_is_a(kk.pkey, "RSA"))
				return status::error(where + ": an RS256 key must be RSA, this is " +
						     EVP_PKEY_get0_type_name(kk.pkey));
			int bits = EVP_PKEY_get_bits(kk.pkey);
			if (bits < 2048)
				return status::error(where + ": RSA key of " + std::to_string(bits) +
						     " bits; at least 2048 are required");
			kk.sig_len = static_cast<size_t>(EVP_PKEY_get_size(kk.pkey));
		} else {
			char group[64] = {};
			size_t glen = 0;
			if (!EVP_PKEY_is_a(kk.pkey, "EC") ||
			    EVP_PKEY_get_group_name(kk.pkey, group, sizeof(group), &glen) != 1 ||
			    (std::string_view(group) != "prime256v1" && std::string_view(group) != "P-256"))
				return status::error(where + ": an ES256 key must be EC on P-256 (prime256v1)");
			kk.sig_len = 64;
		}
	}
	if (cfg.cache_entries > 0) {
		uint32_t sets = 1;
		while (sets * cache_ways < cfg.cache_entries)
			sets <<= 1;
		p->nb_sets = sets;
		p->cache = std::make_unique<cache_entry[]>(size_t(sets) * cache_ways);
	}
	std::random_device rd;
	p->seed = (uint64_t(rd()) << 32) | rd();
	return std::unique_ptr<jwt_verifier>(new jwt_verifier(std::move(p)));
}

jwt_error jwt_verifier::verify_header(std::string_view authorization, int64_t unix_s,
				      const verified_token **out) noexcept
{
	jwt_path how;
	return verify_header(authorization, unix_s, out, &how);
}

jwt_error jwt_verifier::verify_header(std::string_view authorization, int64_t unix_s,
				      const verified_token **out, jwt_path *how) noexcept
{
	std::string_view tok;
	if (!bearer_of(authorization, &tok)) {
		*how = jwt_path::neither;
		return jwt_error::bad_scheme;
	}
	return _impl->verify(tok, unix_s, out, how);
}

jwt_error jwt_verifier::verify_token(std::string_view token, int64_t unix_s,
				     const verified_token **out) noexcept
{
	jwt_path how;
	return _impl->verify(token, unix_s, out, &how);
}

int jwt_verifier::claim_index(std::string_view name) const noexcept
{
	for (size_t i = 0; i < _impl->claim_names.size(); i++)
		if (_impl->claim_names[i] == name)
			return static_cast<int>(i);
	return -1;
}

const std::vector<std::string> &jwt_verifier::claim_names() const noexcept
{
	return _impl->claim_names;
}

uint32_t jwt_verifier::cache_capacity() const noexcept { return _impl->nb_sets * cache_ways; }

const jwt_stats &jwt_verifier::stats() const noexcept { return _impl->stats; }

} // namespace dpumesh::policy
