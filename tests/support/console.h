// SPDX-License-Identifier: BSD-3-Clause
// Typing a line into a dpumesh console on a pty and reading its answer, for tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "subprocess.h"

namespace dpumesh::test {

/** Types a console line; returns what came back up to the next prompt. */
inline std::string console_cmd(subprocess &p, const std::string &line)
{
	using namespace std::chrono_literals;
	size_t from = p.output().size();
	EXPECT_TRUE(p.write(line + "\n"));
	EXPECT_TRUE(p.wait_output(
		[from](const std::string &o) {
			size_t nl = o.find('\n', from);
			return nl != std::string::npos && o.find("dpumesh> ", nl) != std::string::npos;
		},
		20s))
		<< line << ":\n"
		<< p.output().substr(from);
	std::string out = p.output().substr(from);
	return out.substr(0, out.rfind("dpumesh> "));
}

} // namespace dpumesh::test
