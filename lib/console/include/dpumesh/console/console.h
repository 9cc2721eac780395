// SPDX-License-Identifier: BSD-3-Clause
// The dpumesh console: testpmd-style commands on librte_cmdline, on the main lcore.
//
// Commands come from one table (internal/commands.h); the console turns each row into a
// cmdline_parse_inst_t at start-up and calls the control action functions. It runs either
// interactively (prompt "dpumesh> ", completion, history) or from a file:
//
//   console::console con(node);
//   con.run_file("start.cmds");          // echoes each command and its output
//   con.open_interactive();
//   while (con.poll(20)) { ... periodic work, con.print_async(text) ... }
//   con.close_interactive();
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "dpumesh/control/control.h"
#include "dpumesh/common/status.h"

namespace dpumesh::console {

inline constexpr const char *prompt = "dpumesh> ";

class console {
public:
	explicit console(control::node &n);
	~console();
	console(const console &) = delete;
	console &operator=(const console &) = delete;

	/**
	 * Runs every line of a file as a command, echoing "dpumesh> LINE" and the output.
	 * Errors are printed as "FILE:LINE: message" and do not stop the file.
	 * @return the number of commands that failed, or an error if the file cannot be read.
	 */
	result<unsigned> run_file(const std::string &path);

	/** Runs one command line (no echo); returns its status (errors are also printed). */
	status run_line(std::string_view line);

	/** Starts the prompt on stdin/stdout (raw terminal mode when stdin is a tty). */
	status open_interactive();
	/**
	 * Handles pending keyboard input, waiting up to timeout_ms for some.
	 * @return false once the console is done (quit, Ctrl-D, end of input).
	 */
	bool poll(int timeout_ms);
	/** Prints text above the prompt and redraws the line being typed. */
	void print_async(const std::string &text);
	/** Restores the terminal. Idempotent. */
	void close_interactive();

	struct impl;

private:
	std::unique_ptr<impl> _impl;
};

} // namespace dpumesh::console
