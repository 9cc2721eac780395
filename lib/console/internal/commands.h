// SPDX-License-Identifier: BSD-3-Clause
// The console's command table: one row per command, from which console.cc generates the
// librte_cmdline instances, the help text and the error hints.
//
// The rows' syntax is described in dpumesh/console/commands.h (registration by modules).
// Values are limited only by the console's line (max_line_bytes), not by cmdline's 128-byte
// string tokens. Rows must not overlap (cmdline reports two full matches as ambiguous).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dpumesh/console/commands.h"
#include "dpumesh/control/control.h"
#include "dpumesh/common/status.h"

namespace dpumesh::console {

/** Every command: the console's own rows, then the registered ones, in help order. */
std::span<const command_spec> commands();

/** Splits on blanks. */
std::vector<std::string> split_words(std::string_view line);

/** The longest line the console runs (a file line, run_line); longer ones are refused. */
inline constexpr size_t max_line_bytes = 64 * 1024;

/** A syntax token: the choices of a keyword, or no choices for a "<name>" placeholder. */
struct syntax_token {
	std::vector<std::string> choices;
	std::string text;
	bool rest = false; /**< "<name...>": the rest of the line */
	bool matches(const std::string &w) const;
};

std::vector<syntax_token> parse_syntax(const char *syntax);

/**
 * Two rows that can both match one line ("show <x>" and "show drops") would make cmdline
 * answer "Ambiguous command". Returns "ROW1 / ROW2" for the first such pair, or "".
 */
std::string first_overlap(std::span<const command_spec> table);

/**
 * `show pending`'s first line: the table's size (`total`, at the end of its shards' walks)
 * and capacity, and how the `listed` entries below it relate: "the oldest 32:" when `most`
 * of more are listed, "N listed (the others came in during the listing):" when the walks
 * missed some that came in behind them, nothing more when every one is listed.
 */
std::string pending_header(uint32_t total, uint32_t capacity, size_t listed, size_t most);

} // namespace dpumesh::console
