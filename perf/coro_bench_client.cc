// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-coro-bench-client: the coroutine API's side of perf/api-bench.sh. WINDOW coroutines
// each call SERVICE in a loop (a SIZE-byte body and an x-ts field, as dpumesh-pod client
// sends) until N calls are done; prints "PERF rps=.. rtt_p50_us=.. rtt_p99_us=.. ok=..".
// Usage: dpumesh-coro-bench-client SOCK N SIZE WINDOW [SERVICE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dpumesh/common/numbers.h"
#include "dpumesh/host/coro.h"

using namespace dpumesh::host;

int main(int argc, char **argv)
{
	if (argc < 5) {
		std::fprintf(stderr, "usage: dpumesh-coro-bench-client SOCK N SIZE WINDOW [SERVICE]\n");
		return 64;
	}
	const char *prog = "dpumesh-coro-bench-client";
	using dpumesh::whole_arg;
	const auto n = static_cast<uint32_t>(whole_arg(prog, "N", argv[2], 1, UINT32_MAX, 64));
	const auto size = static_cast<size_t>(whole_arg(prog, "SIZE", argv[3], 0, 1u << 20, 64));
	const auto window = static_cast<uint32_t>(whole_arg(prog, "WINDOW", argv[4], 1, 4096, 64));
	const std::string service = argc > 5 ? argv[5] : "echo";
	event_loop loop;
	std::string err;
	pod_options o;
	o.socket = argv[1];
	o.service = "client";
	o.geometry = dpumesh_geometry{{64, 1024}, {64, 8192}, {64, 1024}, {64, 8192}, 256, 0};
	auto p = pod::open(loop, o, &err);
	if (!p) {
		std::printf("OPEN FAILED %s\n", err.c_str());
		return 2;
	}
	const std::string body(size, 'b');
	std::vector<double> rtt;
	rtt.reserve(n);
	uint32_t started = 0, ok = 0, done_workers = 0;
	auto worker = [&]() -> task<void> {
		char ts[24];
		while (started < n) {
			started++;
			auto t0 = clock::now();
			std::snprintf(ts, sizeof(ts), "%lld",
				      static_cast<long long>(t0.time_since_epoch().count()));
			field f[1] = {{"x-ts", ts}};
			reply r = co_await p->call(service, {.path = "/echo", .body = as_bytes(body), .fields = f});
			rtt.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
			ok += r.ok() && r.body().size() == size;
		}
		done_workers++;
	};
	std::vector<task<void>> ws;
	for (uint32_t i = 0; i < window; i++)
		ws.push_back(worker());
	const auto t0 = clock::now();
	for (auto &w : ws)
		loop.spawn(std::move(w));
	while (done_workers < window)
		loop.run_once(100);
	const double secs = std::chrono::duration<double>(clock::now() - t0).count();
	std::sort(rtt.begin(), rtt.end());
	auto pct = [&](double q) { return rtt.empty() ? 0.0 : rtt[std::min(rtt.size() - 1, static_cast<size_t>(q * rtt.size()))]; };
	std::printf("PERF rps=%.0f rtt_p50_us=%.1f rtt_p99_us=%.1f ok=%u n=%u secs=%.3f heap_frames=%llu\n",
		    ok / secs, pct(0.5), pct(0.99), ok, n, secs,
		    static_cast<unsigned long long>(frame_pool_stats().heap_allocs));
	return ok == n ? 0 : 1;
}
