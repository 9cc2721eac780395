// SPDX-License-Identifier: BSD-3-Clause
// base64url (RFC 4648 §5) for the whole tree, with the strictness each use needs named.
//
//   uint8_t sig[64];
//   ptrdiff_t n = dpumesh::base64url_decode(part, sig, sizeof(sig));   // canonical: tokens
//   auto key = dpumesh::base64url_decode(text, dpumesh::base64url_form::lenient); // config
//
// Tokens from the network must be canonical, so that one byte string has one text (a
// verified-token cache keyed by text cannot be fooled by a second spelling). Keys that an
// operator pastes into a config file are often plain base64 with padding: the lenient form
// takes them, and still refuses anything that is not base64 at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dpumesh {

enum class base64url_form {
	/** RFC 7515 §2 (JWS): URL alphabet only, no '=', the unused bits of the last
	 *  character zero. One text per byte string. */
	canonical,
	/** Operator input: the URL or the standard alphabet ('-' '_' or '+' '/'), up to two
	 *  '=' at the very end, unused bits ignored. A length of 1 mod 4 is still refused (it
	 *  would drop bits). */
	lenient,
};

/**
 * Decodes `in` into out (no allocation: the data path uses it).
 * @return bytes written, or -1 if the text is invalid in `form` or does not fit in cap
 */
ptrdiff_t base64url_decode(std::string_view in, uint8_t *out, size_t cap,
			   base64url_form form = base64url_form::canonical) noexcept;

/** Control-path form: the decoded bytes, or nullopt if invalid. */
std::optional<std::string> base64url_decode(std::string_view in, base64url_form form);

/** Encodes as unpadded base64url (canonical). */
std::string base64url_encode(std::string_view in);

} // namespace dpumesh
