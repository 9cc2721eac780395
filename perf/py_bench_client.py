# SPDX-License-Identifier: BSD-3-Clause
"""The Python side of perf/api-bench.sh: WINDOW asyncio tasks each call SERVICE in a loop (a
SIZE-byte body and an x-ts field) until N calls are done; prints
"PERF rps=.. rtt_p50_us=.. rtt_p99_us=.. ok=..". Usage: py_bench_client.py SOCK N SIZE WINDOW"""
import asyncio
import sys
import time

import dpumesh


async def main(sock, n, size, window, service="echo"):
    pod = dpumesh.Pod(sock, "client", tx_slots=64)
    body = b"b" * size
    rtt, state = [], {"started": 0, "ok": 0}

    async def worker():
        while state["started"] < n:
            state["started"] += 1
            t0 = time.monotonic_ns()
            with await pod.call(service, body, path="/echo", fields=[("x-ts", str(t0))]) as r:
                state["ok"] += r.ok and len(r.body) == size
            rtt.append((time.monotonic_ns() - t0) / 1e3)

    t0 = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(window)))
    secs = time.monotonic() - t0
    rtt.sort()
    pct = lambda q: rtt[min(len(rtt) - 1, int(q * len(rtt)))] if rtt else 0.0
    print("PERF rps=%.0f rtt_p50_us=%.1f rtt_p99_us=%.1f ok=%d n=%d secs=%.3f"
          % (state["ok"] / secs, pct(0.5), pct(0.99), state["ok"], n, secs), flush=True)
    pod.close()
    return 0 if state["ok"] == n else 1


if __name__ == "__main__":
    s, n, size, w = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    sys.exit(asyncio.run(main(s, n, size, w, *sys.argv[5:6])))
