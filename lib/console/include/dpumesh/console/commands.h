// SPDX-License-Identifier: BSD-3-Clause
// The console's shared command table: rows that modules register at start-up.
//
// The console knows its own rows (ports, lcores, stages, pods, ...); a feature module adds
// its rows before any console is built, without the console knowing the feature by name:
//
//   static const dpumesh::console::command_spec rows[] = {
//     {"show policy", "L7 policy: version, counters and rules", &cmd_show_policy},
//   };
//   dpumesh::console::register_commands(rows);   // e.g. from policy::cli::register_module()
//
// Syntax of a row: words separated by single spaces; "a|b|c" is a keyword with choices
// (tab-completed), "<name>" is any one word that the handler validates, of any length, and
// "<name...>" (last token only) is the rest of the line, blanks included (a JSON value, a
// PEM key). Rows must not overlap (a console refuses to start with two rows that can match
// one line).
#pragma once

#include <span>
#include <string>
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

/**
 * Appends rows to the table (their strings must outlive the program: static tables).
 * Registering the same row (syntax and handler) again is a no-op, so a module may register
 * from every entry point. Consoles built before a registration do not see its rows.
 */
void register_commands(std::span<const command_spec> rows);

/** printf into a command's output. */
void appendf(std::string &s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

} // namespace dpumesh::console
