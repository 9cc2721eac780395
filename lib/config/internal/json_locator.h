// SPDX-License-Identifier: BSD-3-Clause
// Source positions of JSON values, keyed by JSON pointer.
//
// jansson parses and validates the text but keeps no positions per value, and every
// config error must name its line and column. This scanner walks text that jansson has
// already accepted and records where each value (and each object key) starts. It is
// written by hand because no Debian JSON library exposes per-value positions.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "dpumesh/config/config.h"

namespace dpumesh::config::internal {

struct located {
	std::map<std::string, position> values; /**< pointer -> start of the value */
	std::map<std::string, position> keys;   /**< pointer -> start of the key naming it */
};

/** Scans syntactically valid JSON. Positions are 1-based; columns count bytes. */
located locate(std::string_view text);

/** Appends one reference token to a JSON pointer, escaping '~' and '/'. */
std::string pointer_append(const std::string &base, std::string_view token);

} // namespace dpumesh::config::internal
