// SPDX-License-Identifier: BSD-3-Clause
// The console's command table: one row per command, from which console.cc generates the
// librte_cmdline instances, the help text and the error hints.
//
// Syntax of a row: words separated by single spaces; "a|b|c" is a keyword with choices
// (tab-completed), "<name>" is any one word that the handler validates (port ids, numbers,
// log types), of any length, and "<name...>" (last token only) is the rest of the line,
// blanks included (a JSON value, a PEM key). Values are limited only by the console's line
// (max_line_bytes), not by cmdline's 128-byte string tokens. Rows must not overlap (cmdline
// reports two full matches as ambiguous).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dpumesh/control/control.h"
#include "dpumesh/common/status.h"

namespace dpumesh::console {

struct invocation {
	control::node &node;
	std::vector<std::string> words; /**< one per syntax token */
	std::string out;                /**< what the command prints */
	bool quit = false;              /**< set by `quit` */
};

using handler_fn = status (*)(invocation &inv);

struct command_spec {
	const char *syntax;
	const char *help;
	handler_fn run;
};

/** Every command, in help order. */
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

} // namespace dpumesh::console
