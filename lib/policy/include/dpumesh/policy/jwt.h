// SPDX-License-Identifier: BSD-3-Clause
// JWT verification for the Arm's L7 policy: "Authorization: Bearer <compact JWS>".
//
// Signatures are checked by OpenSSL (HS256: HMAC-SHA256, RS256: RSASSA-PKCS1-v1_5 SHA-256,
// ES256: ECDSA P-256 SHA-256); base64url, the JSON (a strict RFC 8259 scanner that
// allocates nothing, internal/json_scan.h) and the claim rules are ours. A repeated
// member that the policy reads (alg, kid, crit, exp, nbf, iss, aud, a rule's claim)
// refuses the token. A verified token is cached (fixed table, no allocation after create): a
// repeated token costs a lookup and a compare of its bytes, and a cache hit still checks
// exp/nbf against the caller's clock. Unsigned tokens ("alg": "none") are never accepted;
// the token's alg must equal its key's alg (no HS/RS confusion).
//
// One verifier is used by one lcore at a time (the cache and the OpenSSL contexts are its
// own); control builds a new one for a new config.
//
//   auto v = dpumesh::policy::jwt_verifier::create(cfg.policy.jwt.value(), {"sub", "role"});
//   const dpumesh::policy::verified_token *tok;
//   jwt_error e = (*v)->verify_header("Bearer eyJhbGciOi...", time(nullptr), &tok);
//   if (e == jwt_error::ok && tok->claims.contains(role_idx, "admin")) ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dpumesh/policy/schema.h"
#include "dpumesh/common/base64url.h"
#include "dpumesh/common/copy.h"
#include "dpumesh/common/counter.h"
#include "dpumesh/common/status.h"

namespace dpumesh::policy {

/** Longest token accepted at all (longer: jwt_too_long). */
inline constexpr size_t jwt_max_token = 8192;
/** Longest token kept in the cache (an RS256 token with a 2048-bit key is ~700 bytes). */
inline constexpr size_t jwt_max_cached_token = 1024;
/** Most distinct claims a policy can look at (sub, role, tenant, rule and limit claims). */
inline constexpr unsigned jwt_max_claims = 16;

/**
 * Why a token was refused; the second column is the reason string a refusal carries.
 * `ok` is not in the list: jwt_error::ok is 0 and the list follows it.
 */
#define DPUMESH_FOREACH_JWT_ERROR(_)                                                     \
	_(missing, "jwt_missing", "no Authorization header")                            \
	_(bad_scheme, "jwt_bad_scheme", "Authorization is not 'Bearer <token>'")        \
	_(too_long, "jwt_too_long", "token longer than 8192 bytes")                     \
	_(malformed, "jwt_malformed", "not three dot-separated parts (header, payload non-empty)") \
	_(bad_base64, "jwt_bad_base64", "a part is not canonical unpadded base64url")   \
	_(bad_json, "jwt_bad_json", "header or payload is not a JSON object, or repeats a key") \
	_(bad_claims, "jwt_bad_claims", "alg missing, or kid/exp/nbf/iss of the wrong type") \
	_(alg_none, "jwt_alg_none", "alg is none: unsigned tokens are never accepted")  \
	_(alg_unsupported, "jwt_alg_unsupported", "alg is not HS256, RS256 or ES256")   \
	_(crit_unsupported, "jwt_crit_unsupported", "the header has crit (no extension is understood)") \
	_(unknown_kid, "jwt_unknown_kid", "kid names no key, or no kid and several keys fit") \
	_(alg_mismatch, "jwt_alg_mismatch", "alg differs from the key's (e.g. HS256 for an RSA key)") \
	_(bad_signature, "jwt_bad_signature", "the signature does not verify")           \
	_(expired, "jwt_expired", "now is at or past exp + clock skew")                  \
	_(not_yet_valid, "jwt_not_yet_valid", "now is before nbf - clock skew")          \
	_(bad_issuer, "jwt_bad_issuer", "iss missing or not the configured issuer")      \
	_(bad_audience, "jwt_bad_audience", "aud missing or names none of the audiences")

enum class jwt_error : uint8_t {
	ok,
#define DPUMESH_JWT_ERROR_ENUM(n, s, d) n,
	DPUMESH_FOREACH_JWT_ERROR(DPUMESH_JWT_ERROR_ENUM)
#undef DPUMESH_JWT_ERROR_ENUM
	count
};

/** "jwt_expired" (the reason string), "jwt_ok" for ok. */
const char *jwt_error_name(jwt_error e) noexcept;
/** One line of help for telemetry and docs. */
const char *jwt_error_help(jwt_error e) noexcept;

/**
 * The values of the claims a policy looks at, copied out of a verified token into a fixed
 * buffer. A claim may hold several values (an array claim such as "roles"); numbers and
 * booleans are kept as their JSON text. Values that do not fit are dropped, so a rule can
 * only fail to match (never match wrongly) on an oversized token.
 */
class token_claims {
public:
	static constexpr size_t blob_size = 512;

	/** Whether claim `i` (an index into the verifier's claim names) had a usable value. */
	bool present(unsigned i) const noexcept { return i < jwt_max_claims && _len[i] != 0; }
	/** Whether claim `i` is `v`, or is an array holding `v`. Inline, a value of up to 16
	 *  bytes compared as one or two words (out of line with libc's memcmp, ~35 + 18
	 *  instructions of a request whose RBAC rule names a claim; same_bytes()'s loop, set
	 *  up for each value, was more). */
	bool contains(unsigned i, std::string_view v) const noexcept
	{
		if (!present(i))
			return false;
		const char *p = _blob + _off[i], *end = p + _len[i];
		while (p < end) {
			auto n = static_cast<uint8_t>(*p);
			if (n == v.size() && same_value(p + 1, v.data(), n))
				return true;
			p += 1 + n;
		}
		return false;
	}
	/** The first value of claim `i` ("" when absent). */
	std::string_view first(unsigned i) const noexcept;
	/** Calls fn(value) for every value of claim `i`. */
	template <typename Fn>
	void for_each(unsigned i, Fn &&fn) const
	{
		if (!present(i))
			return;
		const char *p = _blob + _off[i], *end = p + _len[i];
		while (p < end) {
			auto n = static_cast<uint8_t>(*p);
			fn(std::string_view(p + 1, n));
			p += 1 + n;
		}
	}

	void clear() noexcept;
	/** Appends a value to claim `i`; values of one claim must be added together. */
	bool add(unsigned i, std::string_view v) noexcept;

private:
	/* n bytes at a and b the same: short_word() up to 8, two overlapping words up to 16 */
	static bool same_value(const char *a, const char *b, size_t n) noexcept
	{
		if (n <= 8)
			return n == 0 || short_word(a, n) == short_word(b, n);
		if (n <= 16)
			return ((load64(a) ^ load64(b)) | (load64(a + n - 8) ^ load64(b + n - 8))) == 0;
		return std::memcmp(a, b, n) == 0;
	}

	uint16_t _off[jwt_max_claims] = {};
	uint16_t _len[jwt_max_claims] = {};
	uint16_t _used = 0;
	char _blob[blob_size] = {};
};

/** What the policy keeps of a verified token. */
struct verified_token {
	int64_t exp = INT64_MAX; /**< unix seconds; INT64_MAX when the token has none */
	int64_t nbf = INT64_MIN; /**< unix seconds; INT64_MIN when the token has none */
	token_claims claims;
};

/** What a verification did, for a caller that counts it (the engine's jwt_cache_hits and
 *  jwt_signatures): found in the cache, a signature checked, or neither (refused first). */
enum class jwt_path : uint8_t { neither, cache_hit, signature };

/** Cache and verification counters (written by the verifier's lcore). */
struct jwt_stats {
	counter cache_hits;
	counter cache_misses;
	counter cache_evictions; /**< live entries replaced by a new token */
	counter signatures;      /**< signature checks made (cache misses that got that far) */
	counter uncacheable;     /**< verified tokens too long to cache */
};

class jwt_verifier {
public:
	/**
	 * Loads the keys (PEM parsing, key type and size checks) and sizes the cache.
	 * @param claim_names claims to copy out of verified tokens (at most jwt_max_claims)
	 * @return the verifier, or an error naming the key ("/policy/jwt/keys/1 (kid \"k2\"):
	 *         RS256 key is EC, expected RSA"), a key under 2048 bits, an EC key not on
	 *         P-256, or too many claim names
	 */
	static result<std::unique_ptr<jwt_verifier>> create(const schema::jwt_config &cfg,
							    std::vector<std::string> claim_names);
	~jwt_verifier();
	jwt_verifier(const jwt_verifier &) = delete;
	jwt_verifier &operator=(const jwt_verifier &) = delete;

	/**
	 * Verifies an Authorization header value ("Bearer <token>", scheme case-insensitive).
	 * @param unix_s the current time, unix seconds
	 * @param out on ok, the token's claims; valid until the next call
	 * @return ok or why the token is refused
	 */
	jwt_error verify_header(std::string_view authorization, int64_t unix_s,
				const verified_token **out) noexcept;
	/** The same, saying in *how what it did (the engine's counters: no reads of the
	 *  verifier's before and after). A cached token is found without a call. */
	jwt_error verify_header(std::string_view authorization, int64_t unix_s,
				const verified_token **out, jwt_path *how) noexcept;
	/** As verify_header, for the bare compact token. */
	jwt_error verify_token(std::string_view token, int64_t unix_s,
			       const verified_token **out) noexcept;

	/** Index of a claim name in claim_names(), or -1. */
	int claim_index(std::string_view name) const noexcept;
	const std::vector<std::string> &claim_names() const noexcept;
	/** Cache capacity in tokens (0: no cache). */
	uint32_t cache_capacity() const noexcept;
	const jwt_stats &stats() const noexcept;

private:
	struct impl;
	explicit jwt_verifier(std::unique_ptr<impl> p);
	std::unique_ptr<impl> _impl;
};

/* base64url lives in dpumesh/common/base64url.h (included above): tokens are decoded in
 * its canonical form (RFC 7515 §2: no '=', unused bits zero). */
using dpumesh::base64url_decode;
using dpumesh::base64url_encode;

/** The token of "Bearer <token>" (scheme case-insensitive, spaces trimmed); false if not. */
bool bearer_token(std::string_view authorization, std::string_view *token) noexcept;

} // namespace dpumesh::policy
