#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# One capture's replay results: testpmd's and dpumesh's telemetry windows (tel.py sample)
# -> rows of replay.csv and replay_stages.csv, and anomaly lines ("WARN ..."/"ERROR ...") on
# stdout for run.sh.
#   replay_row.py RESULTS CAPTURE "SUMMARY LINE" testpmd.json dpumesh.json [testpmd.cpu.json
#                 dpumesh.cpu.json]
# The optional files are /proc CPU windows (proccpu.py): the process CPU (user + kernel,
# every thread) per frame, in TSC-rate cycles, next to the TSC busy cycles.
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proccpu  # noqa: E402
import tel  # noqa: E402

results, capture, summary, tp_path, dm_path = sys.argv[1:6]
tp_cpu_path = sys.argv[6] if len(sys.argv) > 6 else ""
dm_cpu_path = sys.argv[7] if len(sys.argv) > 7 else ""
cap = dict(kv.split("=") for kv in summary.split()[1:])
tp, dm = json.load(open(tp_path)), json.load(open(dm_path))


delta, secs = tel.window_delta, tel.window_secs


e = "/ethdev/stats,0"
T, D = secs(tp), secs(dm)
frame_bytes = int(cap["bytes"]) / int(cap["frames"])
msg_per_frame = int(cap["valid_messages"]) / int(cap["frames"])
rows = []
anomalies = []
tp_rx, dm_rx = delta(tp, e, "ipackets"), delta(dm, e, "ipackets")
rows.append({"capture": capture, "system": "testpmd-5tswap", "frame_bytes": round(frame_bytes),
             "rx_mpps": tp_rx / T / 1e6, "rx_gbps": delta(tp, e, "ibytes") * 8 / T / 1e9,
             "tx_mpps": delta(tp, e, "opackets") / T / 1e6,
             "offered_msgs_per_s": tp_rx * msg_per_frame / T, "reassembled_per_s": "",
             "delivered_per_s": "", "answered_per_s": "", "shed_pct": 0.0, "wire_drop_pct": 0.0,
             "cycles_per_frame": ""})
for k in ("imissed", "ierrors", "rx_nombuf", "oerrors"):
    if delta(tp, e, k):
        anomalies.append("WARN replay %s: testpmd port %s=%d" % (capture, k, delta(tp, e, k)))

d = "/dpumesh/drops"
# refused_overloaded, refused_saturated: requests port RX refused (among "messages");
# refused_frag: later frames of requests refused at their first (not malformed);
# rx_msgs_in_use, ingress_queued: gauges; reserve_empty: not even refused (shed)
flow = {"frames", "bytes", "accepted", "messages", "in_reassembly", "duplicates",
        "refused_overloaded", "refused_saturated", "refused_frag", "rx_msgs_in_use",
        "ingress_queued"}
handoff = {"no_consumer", "ring_full", "msg_pool_empty", "reserve_empty"}
keys = dm["end"]["data"][d].keys()
shed = sum(delta(dm, d, k) for k in handoff if k in keys)
reasm = delta(dm, d, "messages") + shed
wire = sum(delta(dm, d, k) for k in keys if k not in flow and k not in handoff)
expected_wire = (int(cap["malformed"]) + int(cap["other"])) / int(cap["frames"])
# TSC Hz from the worker lcore's busy + idle cycles over the window
st0, st = dm["start"]["data"]["/dpumesh/stages"], dm["end"]["data"]["/dpumesh/stages"]
lc0, lc = dm["start"]["data"]["/dpumesh/lcores"], dm["end"]["data"]["/dpumesh/lcores"]
w = lc["lcore"].index(st["lcore"][0])
hz = (lc["busy_cycles"][w] + lc["idle_cycles"][w] - lc0["busy_cycles"][w] - lc0["idle_cycles"][w]) / D
busy = [b - a for a, b in zip(st0["busy_cycles"], st["busy_cycles"])]
rows.append({"capture": capture, "system": "dpumesh", "frame_bytes": round(frame_bytes),
             "rx_mpps": dm_rx / D / 1e6, "rx_gbps": delta(dm, e, "ibytes") * 8 / D / 1e9,
             "tx_mpps": delta(dm, e, "opackets") / D / 1e6,
             "offered_msgs_per_s": dm_rx * msg_per_frame / D,
             "reassembled_per_s": reasm / D,
             "delivered_per_s": delta(dm, "/dpumesh/dpa", "rx_delivered") / D,
             "answered_per_s": delta(dm, "/dpumesh/pods", "tx_taken") / D,
             "shed_pct": 100.0 * shed / reasm if reasm else 0.0,
             "wire_drop_pct": 100.0 * wire / dm_rx if dm_rx else 0.0,
             "cycles_per_frame": sum(busy) / dm_rx if dm_rx else 0})
# testpmd's forwarding lcore never finds its queue empty with infinite_rx: all its cycles
# are per-frame cycles
rows[0]["cycles_per_frame"] = hz * T / tp_rx if tp_rx else 0


def cpu(path, rate):
    try:
        return proccpu.summarize(path, rate) if path and os.path.exists(path) else None
    except (OSError, ValueError, KeyError):
        return None


# process CPU per frame (user + kernel, every thread) in TSC-rate cycles; the pods' CPU per
# message delivered
for r, path, role, frames, secs in ((rows[0], tp_cpu_path, "testpmd", tp_rx, T),
                                    (rows[1], dm_cpu_path, "dpumesh", dm_rx, D)):
    c = cpu(path, frames / secs if secs else 0)
    r["cpu_cycles_per_frame"] = (c[role + "_cpu_us"] * hz / 1e6 if c and role + "_cpu_us" in c else "")
    r["sys_share"] = (c[role + "_sys_s"] / c[role + "_cpu_s"]
                      if c and role + "_sys_s" in c and c[role + "_cpu_s"] else "")
c = cpu(dm_cpu_path, rows[1]["delivered_per_s"])
rows[1]["pods_cpu_us_per_msg"] = c["pods_cpu_us"] if c and "pods_cpu_us" in c else ""
rows[0]["pods_cpu_us_per_msg"] = ""
rows[1]["doorbells_per_msg"] = c.get("doorbells_per_unit", "n/a") if c else "n/a"
rows[0]["doorbells_per_msg"] = ""

path = os.path.join(results, "replay.csv")
new = not os.path.exists(path)
with open(path, "a", newline="") as f:
    wr = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    if new:
        wr.writeheader()
    for r in rows:
        wr.writerow({k: ("%.4g" % v if isinstance(v, float) else v) for k, v in r.items()})

path = os.path.join(results, "replay_stages.csv")
new = not os.path.exists(path)
with open(path, "a") as f:
    if new:
        f.write("capture,stage,lcore,cycles_per_frame,busy_share,cpu_cycles_per_unit,tsc_cycles_per_unit,cpu_tsc_ratio\n")
    # the sampled thread CPU of each stage (lcore::runner) over the window; absent (empty)
    # from a build without it
    def col(k):
        return [b - a for a, b in zip(st0[k], st[k])] if k in st and k in st0 else None
    cns, cwork, ctsc, work = col("cpu_ns"), col("cpu_work"), col("cpu_tsc"), col("work")
    for i, (name, lcore, b) in enumerate(zip(st["name"], st["lcore"], busy)):
        cpu_u = "%.1f" % (cns[i] * hz / 1e9 / cwork[i]) if cns and cwork[i] else ""
        tsc_u = "%.1f" % (b / work[i]) if work and work[i] else ""
        ratio_ = "%.3f" % (cns[i] * hz / 1e9 / ctsc[i]) if cns and ctsc[i] else ""
        f.write("%s,%s,%d,%.1f,%.3f,%s,%s,%s\n" % (capture, name, lcore, b / dm_rx if dm_rx else 0,
                                                 b / (hz * D) if hz else 0, cpu_u, tsc_u, ratio_))

# anomalies: every drop, by reason
for k in ("imissed", "ierrors", "rx_nombuf", "oerrors"):
    v = delta(dm, e, k)
    if v:
        anomalies.append("WARN replay %s: dpumesh port %s=%d (%.2f%% of RX)" % (capture, k, v, 100.0 * v / dm_rx))
for k in handoff:
    v = delta(dm, d, k) if k in keys else 0
    if v:
        anomalies.append("WARN replay %s: dpumesh shed %d messages at port RX (%s, %.1f%% of reassembled): "
                         "the pod cannot keep up (overload, counted)" % (capture, v, k, 100.0 * v / reasm))
if abs(100.0 * wire / dm_rx - 100 * expected_wire) > 1.0 if dm_rx else False:
    anomalies.append("WARN replay %s: wire drops %.2f%% of RX, the capture has %.2f%% bad frames"
                     % (capture, 100.0 * wire / dm_rx, 100 * expected_wire))
sc = "/dpumesh/sidecar"
bad = {"backlog_overflow": "ERROR", "bad_header": "ERROR", "header_dma_error": "ERROR",
       "held_lost": "ERROR", "policy_refused": "WARN", "trace_no_room": "WARN", "retry_budget": "WARN",
       "responses_lost": "WARN", "responses_failed": "WARN", "park_expired": "WARN", "timeouts": "WARN", "no_match": "WARN",
       "egress_no_mbuf": "WARN", "egress_ring_full": "WARN", "hbuf_empty": "WARN", "no_route": "WARN",
       "misrouted": "WARN", "overloaded": "WARN", "net_header_too_large": "WARN"}
for k, level in bad.items():
    v = delta(dm, sc, k)
    if v:
        anomalies.append("%s replay %s: sidecar %s=%d" % (level, capture, k, v))
for k in ("rx_no_slot", "rx_sq_full", "tx_refused"):
    v = delta(dm, "/dpumesh/pods", k)
    if v:
        anomalies.append("WARN replay %s: pods %s=%d" % (capture, k, v))
if dm_rx == 0:
    anomalies.append("ERROR replay %s: dpumesh received no frame" % capture)
print("\n".join(anomalies))
