// SPDX-License-Identifier: BSD-3-Clause
// libdpumesh as a library people link: `cmake --install` into a temporary prefix, then the
// two examples of docs/host-api.md (a C pod and a C++ coroutine pod), taken from the document
// as written, built outside the tree through pkg-config only, and run on a mesh (the
// registrar and CPU-copy mover of tests/support/cpu_mesh.h) with calls from this process.
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "cpu_mesh.h"
#include "dpumesh/host/coro.h"
#include "subprocess.h"

namespace {

using namespace dpumesh::host;
using namespace std::chrono_literals;
using dpumesh::test::run_command;
using dpumesh::test::subprocess;
using dpumesh::test::temp_dir;

/* The fenced block after "<!-- example: NAME -->" in docs/host-api.md. */
std::string example(const std::string &name)
{
	std::ifstream in(std::string(DPUMESH_SOURCE_DIR) + "/docs/host-api.md");
	std::stringstream ss;
	ss << in.rdbuf();
	const std::string doc = ss.str();
	size_t at = doc.find("<!-- example: " + name + " -->");
	if (at == std::string::npos)
		return {};
	size_t open = doc.find("```", at);
	size_t start = doc.find('\n', open) + 1;
	size_t end = doc.find("\n```", start);
	return doc.substr(start, end - start + 1);
}

/* Runs a shell command line; returns {status, output}. */
std::pair<int, std::string> sh(const std::string &cmd)
{
	return run_command({"/bin/sh", "-c", cmd + " 2>&1"}, 180s);
}

TEST(install, pods_build_outside_the_tree_with_pkg_config_and_run)
{
	temp_dir tmp;
	const std::string prefix = tmp.file("prefix");
	auto [irc, iout] = sh("cmake --install " + std::string(DPUMESH_BINARY_DIR) + " --prefix " + prefix);
	ASSERT_EQ(irc, 0) << iout;

	/* what a user sees: the pkg-config file and the CMake package */
	const std::string pc = "PKG_CONFIG_PATH=" + prefix + "/lib/pkgconfig pkg-config";
	auto [prc, flags] = sh(pc + " --cflags --libs dpumesh");
	ASSERT_EQ(prc, 0) << flags;
	EXPECT_NE(flags.find("-ldpumesh"), std::string::npos) << flags;
	EXPECT_TRUE(std::ifstream(prefix + "/lib/cmake/dpumesh/dpumeshConfig.cmake").good());
	EXPECT_TRUE(std::ifstream(prefix + "/include/dpumesh/host/coro.h").good());

	const std::string c_src = example("minimal_pod.c"), cc_src = example("coro_pod.cc");
	ASSERT_FALSE(c_src.empty());
	ASSERT_FALSE(cc_src.empty());
	std::ofstream(tmp.file("minimal_pod.c")) << c_src;
	std::ofstream(tmp.file("coro_pod.cc")) << cc_src;
	const std::string extra = DPUMESH_EXAMPLE_FLAGS; /* the sanitizers, in sanitizer builds */
	const std::string libs = "$(" + pc + " --cflags --libs dpumesh)";
	auto [crc, cout_] = sh("cc -std=c11 -Wall -Wextra -Werror " + extra + " " + tmp.file("minimal_pod.c") +
			       " -o " + tmp.file("c_pod") + " " + libs);
	ASSERT_EQ(crc, 0) << cout_;
	auto [xrc, xout] = sh("c++ -std=c++20 -Wall -Wextra -Werror " + extra + " " + tmp.file("coro_pod.cc") +
			      " -o " + tmp.file("coro_pod") + " " + libs);
	ASSERT_EQ(xrc, 0) << xout;

	/* run them: the library from the prefix only */
	const std::string sock = tmp.file("mesh.sock");
	dpumesh::test::cpu_mesh mesh(sock, {{"echo", 2}, {"front", 2}, {"client", 2}});
	std::atomic<bool> stop{false};
	std::thread mover([&] {
		while (!stop)
			if (mesh.step() == 0)
				std::this_thread::sleep_for(50us);
	});
	::setenv("LD_LIBRARY_PATH", (prefix + "/lib").c_str(), 1);
	subprocess c_pod({tmp.file("c_pod"), sock});
	subprocess coro_pod({tmp.file("coro_pod"), sock});
	::unsetenv("LD_LIBRARY_PATH");
	auto ready = [](const std::string &o) { return o.find("READY") != std::string::npos; };
	EXPECT_TRUE(c_pod.wait_output(ready, 20s)) << c_pod.output();
	EXPECT_TRUE(coro_pod.wait_output(ready, 20s)) << coro_pod.output();

	event_loop loop;
	std::string err;
	auto client = pod::open(loop, {.socket = sock, .service = "client"}, &err);
	ASSERT_TRUE(client) << err;
	int good = 0;
	auto calls = [&]() -> task<void> {
		for (int i = 0; i < 20; i++) {
			std::string body = "payload " + std::to_string(i);
			reply direct = co_await client->call("echo", {.path = "/e", .body = as_bytes(body)});
			reply via = co_await client->call("front", {.path = "/f", .body = as_bytes(body)});
			EXPECT_EQ(direct.status(), 200) << direct.reason();
			EXPECT_EQ(via.status(), 200) << via.reason();
			good += direct.body_view() == body && via.body_view() == body;
		}
	};
	loop.run(calls());
	EXPECT_EQ(good, 20);
	client.reset();
	c_pod.signal(SIGTERM);
	coro_pod.signal(SIGTERM);
	c_pod.wait(5s);
	coro_pod.wait(5s);
	stop = true;
	mover.join();
}

} // namespace
