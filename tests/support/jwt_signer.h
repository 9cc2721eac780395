// SPDX-License-Identifier: BSD-3-Clause
// Makes signed JWTs for tests and benchmarks: keys generated in process with OpenSSL.
//
//   auto rsa = dpumesh::test::signing_key::rsa(2048);
//   std::string tok = dpumesh::test::make_jwt(*rsa, R"({"alg":"RS256","kid":"r1"})",
//                                             R"({"sub":"alice","exp":2000000000})");
//   cfg.keys.push_back({"r1", jwt_alg::rs256, "", rsa->public_pem()});
#pragma once

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "dpumesh/policy/jwt.h"

namespace dpumesh::test {

class signing_key {
public:
	~signing_key() { EVP_PKEY_free(_pkey); }
	signing_key(const signing_key &) = delete;
	signing_key &operator=(const signing_key &) = delete;

	static std::unique_ptr<signing_key> rsa(unsigned bits = 2048)
	{
		return wrap(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(bits)), false);
	}
	/** An EC key on `curve` ("P-256" for ES256). */
	static std::unique_ptr<signing_key> ec(const char *curve = "P-256")
	{
		return wrap(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve), true);
	}
	/** An HMAC secret (HS256). */
	static std::unique_ptr<signing_key> hmac(std::string secret)
	{
		std::unique_ptr<signing_key> k(new signing_key());
		k->_secret = std::move(secret);
		return k;
	}

	std::string public_pem() const
	{
		BIO *b = BIO_new(BIO_s_mem());
		PEM_write_bio_PUBKEY(b, _pkey);
		char *p = nullptr;
		long n = BIO_get_mem_data(b, &p);
		std::string s(p, static_cast<size_t>(n));
		BIO_free(b);
		return s;
	}
	const std::string &secret() const { return _secret; }

	/** Raw JWS signature of `data` (ES256: R||S, 64 bytes). */
	std::string sign(std::string_view data) const
	{
		if (!_pkey) {
			unsigned char mac[EVP_MAX_MD_SIZE];
			unsigned int len = 0;
			HMAC(EVP_sha256(), _secret.data(), static_cast<int>(_secret.size()),
			     reinterpret_cast<const unsigned char *>(data.data()), data.size(), mac, &len);
			return std::string(reinterpret_cast<char *>(mac), len);
		}
		EVP_MD_CTX *md = EVP_MD_CTX_new();
		size_t len = 0;
		std::string sig;
		if (EVP_DigestSignInit(md, nullptr, EVP_sha256(), nullptr, _pkey) != 1 ||
		    EVP_DigestSign(md, nullptr, &len, reinterpret_cast<const unsigned char *>(data.data()),
				   data.size()) != 1)
			throw std::runtime_error("EVP_DigestSign");
		sig.resize(len);
		if (EVP_DigestSign(md, reinterpret_cast<unsigned char *>(sig.data()), &len,
				   reinterpret_cast<const unsigned char *>(data.data()), data.size()) != 1)
			throw std::runtime_error("EVP_DigestSign");
		sig.resize(len);
		EVP_MD_CTX_free(md);
		if (!_ec)
			return sig;
		/* DER ECDSA-Sig-Value -> R||S */
		const unsigned char *p = reinterpret_cast<const unsigned char *>(sig.data());
		ECDSA_SIG *es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
		std::string raw(64, '\0');
		BN_bn2binpad(ECDSA_SIG_get0_r(es), reinterpret_cast<unsigned char *>(raw.data()), 32);
		BN_bn2binpad(ECDSA_SIG_get0_s(es), reinterpret_cast<unsigned char *>(raw.data()) + 32, 32);
		ECDSA_SIG_free(es);
		return raw;
	}

private:
	signing_key() = default;
	static std::unique_ptr<signing_key> wrap(EVP_PKEY *k, bool ec)
	{
		if (!k)
			throw std::runtime_error("key generation failed");
		std::unique_ptr<signing_key> s(new signing_key());
		s->_pkey = k;
		s->_ec = ec;
		return s;
	}
	EVP_PKEY *_pkey = nullptr;
	bool _ec = false;
	std::string _secret;
};

/** header.payload.signature with both JSON texts taken as given. */
inline std::string make_jwt(const signing_key &k, std::string_view header_json,
			    std::string_view payload_json)
{
	std::string tbs = policy::base64url_encode(header_json) + "." +
			  policy::base64url_encode(payload_json);
	return tbs + "." + policy::base64url_encode(k.sign(tbs));
}

} // namespace dpumesh::test
