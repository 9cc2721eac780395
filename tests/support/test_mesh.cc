// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-test-mesh: the DPU side of tests/support/cpu_mesh.h as a process (registrar and
// CPU-copy mover), for pods that are not C++ tests: the Python binding's pytest suite and
// perf/coro_bench. Usage: dpumesh-test-mesh SOCK SERVICE...   Prints "READY" once listening;
// SIGTERM/SIGINT: prints "DONE delivered=N" and exits.
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "cpu_mesh.h"

namespace {
volatile std::sig_atomic_t g_stop = 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		std::fprintf(stderr, "usage: dpumesh-test-mesh SOCK SERVICE...\n");
		return 64;
	}
	std::vector<dpumesh::config::service_config> svcs;
	for (int i = 2; i < argc; i++)
		svcs.push_back({argv[i], 16});
	dpumesh::test::cpu_mesh mesh(argv[1], svcs);
	std::signal(SIGTERM, [](int) { g_stop = 1; });
	std::signal(SIGINT, [](int) { g_stop = 1; });
	std::printf("READY\n");
	std::fflush(stdout);
	unsigned idle = 0;
	while (!g_stop) {
		if (mesh.step() != 0) {
			idle = 0;
			continue;
		}
		/* busy for a while after traffic (latency), then sleep (2-core machines) */
		if (++idle > 2000)
			std::this_thread::sleep_for(std::chrono::microseconds(50));
	}
	std::printf("DONE delivered=%llu\n", static_cast<unsigned long long>(mesh.delivered));
	return 0;
}
