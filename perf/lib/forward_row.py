#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# One forward-suite run (capture x policy variant): testpmd's and dpumesh's telemetry windows
# and dpumesh's CPU time over its window -> a row of forward.csv, rows of forward_stages.csv,
# and anomaly lines ("WARN ..."/"ERROR ...") on stdout for run.sh.
#   forward_row.py RESULTS CAPTURE VARIANT "SUMMARY" testpmd.json dpumesh.json \
#                  "THREAD_NS0 TICKS0" "THREAD_NS1 TICKS1" CLK_TCK
# Frame rates: testpmd's RX (5tswap sends every frame back); dpumesh's RX of frames it
# took all the way (relayed or answered here; frames shed at the ingress ring are not
# counted). Cycles: the worker lcore thread's CPU time (schedstat, user + kernel, not time it
# was descheduled) over the telemetry window (read with its snapshots) at the TSC rate; per
# stage, the lcore runner's sampled thread-CPU clock (cpu_ns / cpu_work of /dpumesh/stages:
# cycles per unit of work, times the stage's units per message), or where the runner has no
# such columns, the thread's CPU split by the stages' share of the lcore's TSC cycles; per
# message taken. The sidecar is also shown split in two (sidecar_relay, sidecar_expiry) by
# its expiry_cycles counter: the deadline walk and the 504s it makes for every relayed
# request (nothing answers in this suite) apart from the relay.
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tel  # noqa: E402

results, capture, variant, summary, tp_path, dm_path, c0, c1, tck = sys.argv[1:10]
cap = dict(kv.split("=") for kv in summary.split()[1:])
tp, dm = json.load(open(tp_path)), json.load(open(dm_path))
thr0, ticks0 = (int(x) for x in c0.split())
thr1, ticks1 = (int(x) for x in c1.split())
tck = int(tck)


def snapshot_cpu(snap, lcore):
    """The worker lcore thread's ns and the process's ticks as the sampler read them with a
    snapshot (tel.py, TEL_CPU_PID), or None: the same window as the counters."""
    cpu = snap["data"].get("cpu")
    if not cpu:
        return None
    ns = [n for comm, n in cpu["threads"] if comm.endswith("worker-%d" % lcore)]
    return (ns[0], cpu["ticks"]) if len(ns) == 1 else None


delta, secs = tel.window_delta, tel.window_secs


e, sc, d = "/ethdev/stats,0", "/dpumesh/sidecar", "/dpumesh/drops"
T, D = secs(tp), secs(dm)
anomalies = []
tp_rx = delta(tp, e, "ipackets")
dm_rx = delta(dm, e, "ipackets")
keys = dm["end"]["data"][d].keys()
shed = sum(delta(dm, d, k) for k in ("no_consumer", "ring_full", "msg_pool_empty", "reserve_empty")
           if k in keys)
relayed = delta(dm, sc, "relayed")
refused = sum(delta(dm, sc, k) for k in ("policy_refused", "overloaded", "no_route", "misrouted",
                                         "bad_header", "net_header_too_large"))
timeouts = delta(dm, sc, "timeouts")
taken = relayed + refused  # single-frame messages: one frame each
# TSC Hz from the worker lcore's busy + idle cycles over the window
st0, st = dm["start"]["data"]["/dpumesh/stages"], dm["end"]["data"]["/dpumesh/stages"]
lc0, lc = dm["start"]["data"]["/dpumesh/lcores"], dm["end"]["data"]["/dpumesh/lcores"]
w = lc["lcore"].index(st["lcore"][0])
lcore_cycles = lc["busy_cycles"][w] + lc["idle_cycles"][w] - lc0["busy_cycles"][w] - lc0["idle_cycles"][w]
hz = lcore_cycles / D
a, b = snapshot_cpu(dm["start"], st["lcore"][0]), snapshot_cpu(dm["end"], st["lcore"][0])
if a and b:
    (thr0, ticks0), (thr1, ticks1) = a, b
else:
    anomalies.append("WARN forward %s/%s: no CPU read with the telemetry snapshots; the "
                     "thread's CPU is from around the sampler's run (a longer window)"
                     % (capture, variant))
thread_cycles = (thr1 - thr0) * hz / 1e9
proc_s = (ticks1 - ticks0) / tck
row = {"capture": capture, "variant": variant,
       "frame_bytes": round(int(cap["bytes"]) / int(cap["frames"])),
       "testpmd_mpps": tp_rx / T / 1e6,
       "dpumesh_mpps": taken / D / 1e6,
       "ratio": (taken / D) / (tp_rx / T) if tp_rx else 0,
       "dpumesh_rx_mpps": dm_rx / D / 1e6,
       "relayed_per_s": relayed / D, "refused_per_s": refused / D, "timeouts_per_s": timeouts / D,
       "shed_pct": 100.0 * shed / (taken + shed) if taken + shed else 0.0,
       "tx_mpps": delta(dm, e, "opackets") / D / 1e6,
       "testpmd_cycles_per_frame": hz * T / tp_rx if tp_rx else 0,
       "thread_cycles_per_msg": thread_cycles / taken if taken else 0,
       "process_cpu_s_per_s": proc_s / D}
path = os.path.join(results, "forward.csv")
new = not os.path.exists(path)
with open(path, "a", newline="") as f:
    wr = csv.DictWriter(f, fieldnames=list(row.keys()))
    if new:
        wr.writeheader()
    wr.writerow({k: ("%.4g" % v if isinstance(v, float) else v) for k, v in row.items()})

path = os.path.join(results, "forward_stages.csv")
new = not os.path.exists(path)
with open(path, "a") as f:
    if new:
        f.write("capture,variant,stage,tsc_cycles_per_msg,cpu_cycles_per_msg,busy_share\n")
    for i, name in enumerate(st["name"]):
        if st["lcore"][i] != lc["lcore"][w]:
            continue
        busy = st["busy_cycles"][i] - st0["busy_cycles"][i]
        share = busy / lcore_cycles if lcore_cycles else 0
        cpu = share * thread_cycles / taken if taken else 0
        if "cpu_ns" in st:
            # the runner's sampled polls (thread CPU clock): cycles per unit of the stage's
            # work, times its units of work per message taken
            cw = st["cpu_work"][i] - st0["cpu_work"][i]
            cn = st["cpu_ns"][i] - st0["cpu_ns"][i]
            work = st["work"][i] - st0["work"][i]
            if cw and taken:
                cpu = cn * hz / 1e9 / cw * work / taken
        f.write("%s,%s,%s,%.1f,%.1f,%.3f\n" % (capture, variant, name, busy / taken if taken else 0,
                                               cpu, share))
        if name == "sidecar" and "expiry_cycles" in dm["end"]["data"][sc]:
            # the sidecar's cost split: the deadline walk and its 504s (the sidecar's own
            # TSC clock around the walk, a share of the stage's busy cycles) apart from the
            # rest, which is the relay itself (decode, route, policy, frame, send)
            exp = delta(dm, sc, "expiry_cycles")
            part = min(exp / busy, 1.0) if busy else 0
            for sub, p in (("sidecar_relay", 1 - part), ("sidecar_expiry", part)):
                f.write("%s,%s,%s,%.1f,%.1f,%.3f\n" % (capture, variant, sub,
                                                       p * busy / taken if taken else 0,
                                                       p * cpu, p * share))

for k in ("imissed", "ierrors", "rx_nombuf", "oerrors"):
    v = delta(dm, e, k)
    if v:
        anomalies.append("WARN forward %s/%s: dpumesh port %s=%d" % (capture, variant, k, v))
if shed:
    anomalies.append("WARN forward %s/%s: %d messages shed at port RX (%.1f%%)"
                     % (capture, variant, shed, row["shed_pct"]))
for k, level in {"policy_refused": "WARN", "overloaded": "WARN", "bad_header": "ERROR",
                 "egress_no_mbuf": "WARN", "egress_ring_full": "WARN", "hbuf_empty": "WARN",
                 "no_route": "ERROR", "misrouted": "ERROR"}.items():
    v = delta(dm, sc, k)
    if v:
        anomalies.append("%s forward %s/%s: sidecar %s=%d (%.2f%% of messages)"
                         % (level, capture, variant, k, v, 100.0 * v / taken if taken else 0))
if relayed == 0:
    anomalies.append("ERROR forward %s/%s: dpumesh relayed nothing" % (capture, variant))
if thr1 == thr0:
    anomalies.append("WARN forward %s/%s: no CPU time read for the worker lcore thread"
                     % (capture, variant))
print("\n".join(anomalies))
