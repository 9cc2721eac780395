#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# The soak's verdict: telemetry samples over time (tel.py watch), the client runs and the
# final snapshot -> soak.csv (one row per watched quantity), soak_series.csv (for the plot)
# and anomaly lines on stdout.
#   soak_check.py RESULTS telemetry.jsonl clients.txt final.json soak.final HELD_MBUFS [tenants.txt
#                 [replay-summary.json]]
# HELD_MBUFS: mbufs net_pcap still holds at exit (infinite_rx keeps the capture in mbufs of
# dpumesh's pool until the port closes, after the final lines).
# replay-summary.json: the Case 2 generator's (dpumesh-replay --out): every request it sent
# must have had exactly one answer (lost 0, duplicates 0).
# DPDK 22.11's /mempool/info has no in-use count: buffers in use come from /dpumesh/dpa
# (hbufs_in_use) and /dpumesh/drops (in_reassembly) over time, and from dpumesh's own
# "final mempool" line at exit (every mbuf and message object must be back).
import json
import os
import sys

import soak_growth

R, series_path, clients_path, final_path, exit_path = sys.argv[1:6]
held = int(sys.argv[6]) if len(sys.argv) > 6 else 0
tenants_path = sys.argv[7] if len(sys.argv) > 7 else ""
replay_path = sys.argv[8] if len(sys.argv) > 8 else ""
samples = [json.loads(l) for l in open(series_path) if l.strip()]
out = []
if len(samples) < 8:
    print("ERROR soak: only %d telemetry samples (dpumesh stopped answering?)" % len(samples))
    sys.exit(0)
t0 = samples[0]["t"]


series = {"dpumesh RSS (KiB)": [s["data"].get("rss_kb", 0) for s in samples],
          "DPA hbufs in use": [max(s["data"]["/dpumesh/dpa"]["hbufs_in_use"] or [0]) for s in samples],
          "messages in reassembly": [s["data"]["/dpumesh/drops"].get("in_reassembly", 0) for s in samples],
          "port RX rx_msgs in use": [s["data"]["/dpumesh/drops"].get("rx_msgs_in_use", 0) for s in samples],
          "rx_msgs on the ring to the sidecar": [s["data"]["/dpumesh/drops"].get("ingress_queued", 0) for s in samples],
          "pods registered": [len(s["data"]["/dpumesh/pods"]["pod_id"]) for s in samples]}

rows = []
# "grows without bound": the last quarter's floor well above the second quarter's
# (soak_growth.py: a leak raises the floor; a gauge's single-sample peaks do not say)
for name, v in series.items():
    slack = 16384 if "RSS" in name else 256
    up, early, late = soak_growth.grows(v, slack)
    # rx_msgs: bounded by their pools by construction (shown for where they are held)
    up = up and name != "pods registered" and "rx_msgs" not in name
    rows.append([name, v[0], v[-1], min(v), max(v), "GROWS" if up else "bounded"])
    if up:
        out.append("ERROR soak: %s grows: lower quartile %d in the 2nd quarter, %d in the last"
                   % (name, early, late))

with open(os.path.join(R, "soak_series.csv"), "w") as f:
    f.write("seconds,rss_kb,in_reassembly,hbufs_in_use,pods\n")
    for i, s in enumerate(samples):
        f.write("%.1f,%d,%d,%d,%d\n" % (s["t"] - t0, series["dpumesh RSS (KiB)"][i],
                                         series["messages in reassembly"][i], series["DPA hbufs in use"][i],
                                         series["pods registered"][i]))

# counters over the whole soak
first, last = samples[0]["data"], samples[-1]["data"]
# never expected; responses_lost: a response the mesh dropped, whose requester waits forever
never = ("backlog_overflow", "bad_header", "header_dma_error", "responses_lost", "held_lost")
for k in sorted(last["/dpumesh/sidecar"]):
    d = last["/dpumesh/sidecar"][k] - first["/dpumesh/sidecar"].get(k, 0)
    rows.append(["sidecar " + k, first["/dpumesh/sidecar"].get(k, 0), last["/dpumesh/sidecar"][k], "", "", "+%d" % d])
    if d and k in never:
        out.append("ERROR soak: sidecar %s grew by %d" % (k, d))
    elif d and k in ("timeouts", "park_expired", "no_match", "dest_gone", "src_gone",
                     "responses_failed", "policy_refused", "retry_budget", "trace_no_room",
                     "answers_deferred", "hbuf_empty"):
        out.append("WARN soak: sidecar %s +%d" % (k, d))
# port RX: what it refused for want of an rx_msg (503 overloaded, from its reserve) and what
# it could not even refuse (reserve_empty: dropped, no answer) or dropped as an answer
for k in ("refused_saturated", "refused_overloaded", "reserve_empty", "msg_pool_empty", "ring_full"):
    if k in last["/dpumesh/drops"]:
        d = last["/dpumesh/drops"][k] - first["/dpumesh/drops"].get(k, 0)
        rows.append(["port RX " + k, first["/dpumesh/drops"].get(k, 0), last["/dpumesh/drops"][k], "", "", "+%d" % d])
        if d and k in ("reserve_empty", "ring_full"):
            out.append("WARN soak: port RX %s +%d (network requests dropped without an answer)" % (k, d))
dma = last.get("/dpumesh/dma") or {}
if sum(dma.get("errors", [0])):
    out.append("ERROR soak: DMA errors %d" % sum(dma["errors"]))

# client runs
runs = ok = sent = mesh_err = refused = bad = hung = failed = dup = unaccounted = 0
stalls = []
for line in open(clients_path) if os.path.exists(clients_path) else []:
    kv = dict(w.split("=", 1) for w in line.split() if "=" in w)
    runs += 1
    if kv.get("rc") == "124" or "STALL" in line:
        hung += 1
        if "STALL" in line:
            stalls.append("run %s: %s of %s answered, requests %s" % (
                kv.get("run"), kv.get("answered"), kv.get("sent"), kv.get("req_ids")))
        continue
    if "ok" not in kv:
        failed += 1
        continue
    ok += int(kv["ok"]); sent += int(kv["sent"]); mesh_err += int(kv["mesh_err"])
    refused += int(kv["refused"]); bad += int(kv["bad"]); dup += int(kv.get("dup", 0))
    # exactly one answer each: sent = ok + refused + mesh errors (a bad or second answer
    # is counted in bad, reported below)
    if int(kv["bad"]) == 0 and int(kv["sent"]) != int(kv["ok"]) + int(kv["refused"]) + int(kv["mesh_err"]):
        unaccounted += 1
rows.append(["client runs", "", runs, "", "", "%d answered, %d mesh errors, %d refused of %d sent" % (ok, mesh_err, refused, sent)])
if runs == 0:
    out.append("ERROR soak: no client run finished")
if hung:
    out.append("ERROR soak: %d client run(s) never got all their answers (nothing back for 20 s, "
               "no 504 either: lost)%s" % (hung, "; " + "; ".join(stalls[:4]) if stalls else ""))
if failed:
    out.append("ERROR soak: %d client run(s) failed to start or register" % failed)
if bad:
    out.append("ERROR soak: %d answers with a wrong body or status" % bad)
if dup:
    out.append("ERROR soak: %d requests answered twice" % dup)
if unaccounted:
    out.append("ERROR soak: %d client run(s) whose sent != ok + refused + mesh_err" % unaccounted)

# the Case 2 client (dpumesh-replay): the network's requests, each answered exactly once
if replay_path:
    try:
        summary = json.load(open(replay_path))
        t = summary["fixed"]
        gport = summary.get("port", {})  # the generator's own port: what it could not take in
        rows.append(["Case 2 requests (network client)", "", t["expected"], "", "",
                     "%d answered (2xx %d, 4xx %d, 5xx %d, mesh errors %d), %d lost, %d duplicates, "
                     "%d stale, %.0f frames/s" % (t["answered"], t["answers"]["2xx"], t["answers"]["4xx"],
                                                  t["answers"]["5xx"], t["answers"]["mesh_error"], t["lost"],
                                                  t["duplicates"], t["stale"], t["tx_pps"])])
        if t["expected"] == 0:
            out.append("ERROR soak: the Case 2 generator sent no request")
        if t["lost"]:
            # where the node let them go without an answer (its final counters)
            why = []
            try:
                for line in open(exit_path):
                    w = dict(x.split("=", 1) for x in line.split() if "=" in x)
                    if line.startswith("final stage=port_rx"):
                        why += ["port RX msg_pool_empty %s" % w.get("msg_pool_empty", "?"),
                                "msg_ring_full %s" % w.get("msg_ring_full", "?"),
                                "reserve_empty %s" % w.get("reserve_empty", "?"),
                                # requests that never completed: reassemblies timed out
                                # (those with their first frame held answered 408), or
                                # frames that met an older message's slot
                                "reassemblies timed out %s (%s answered 408)"
                                % (w.get("drop_timeout", "?"), w.get("refused_incomplete", "?")),
                                "drop_mismatch %s frames" % w.get("drop_mismatch", "?")]
                    elif line.startswith("final stage=port_tx"):
                        # dropped: its backlog full for the give-up time (a dead peer);
                        # backlog: owed when the node stopped (freed, never sent)
                        why.append("port TX dropped %s frames, %s owed at the stop"
                                   % (w.get("dropped", "?"), w.get("backlog", "?")))
            except OSError:
                pass
            why += ["generator port %s %s" % (k, gport[k]) for k in ("rx_missed", "rx_nombuf", "rx_errors")
                    if k in gport]
            out.append("ERROR soak: %d of %d Case 2 requests never answered (no answer, refusal or "
                       "timeout; %d frames matched nothing; node: %s; raw/soak-replay/)"
                       % (t["lost"], t["expected"], t["rx_other"], ", ".join(why) or "?"))
        if t["duplicates"]:
            out.append("ERROR soak: %d Case 2 requests answered twice" % t["duplicates"])
    except (OSError, ValueError, KeyError) as e:
        out.append("ERROR soak: no Case 2 generator summary (%s)" % e)

# greedy tenants (docs/quota.md): what they were refused; they never stall the clients above
if tenants_path and os.path.exists(tenants_path):
    tl = [l.split() for l in open(tenants_path) if l.strip()]
    kvs = [dict(w.split("=", 1) for w in t if "=" in w) for t in tl]
    rows.append(["greedy tenant runs", "", len(tl), "", "",
                 "posted %d, refused by quota %d, answers %d" % (
                     sum(int(k.get("posted", 0)) for k in kvs),
                     sum(int(k.get("tx_quota", 0)) for k in kvs),
                     sum(int(k.get("answers", 0)) for k in kvs))])
if mesh_err or refused:
    out.append("WARN soak: %d mesh error responses and %d refusals during pod restarts (%.3f%% of %d requests)"
               % (mesh_err, refused, 100.0 * (mesh_err + refused) / max(sent, 1), sent))

# after the traffic stopped: nothing registered, nothing held
try:
    final = json.load(open(final_path))["data"]
    left = len(final["/dpumesh/pods"]["pod_id"])
    rows.append(["pods registered after the stop", "", left, "", "", "expected 0"])
    if left:
        out.append("ERROR soak: %d pod(s) still registered after every pod stopped" % left)
    h = max(final["/dpumesh/dpa"]["hbufs_in_use"] or [0])
    rows.append(["DPA hbufs in use after the stop", "", h, "", "", "only the port's own traffic"])
except (OSError, ValueError, KeyError):
    out.append("ERROR soak: no final telemetry snapshot")
    final = {}

# the frames each worker's port RX took, and the RX queues it polls (/dpumesh/lcores'
# placement, with several workers): with the generator sending on every queue, each worker
# that polls one takes its share (a worker left without frames: the queues' spread is broken)
stages, lcores = final.get("/dpumesh/stages") or {}, final.get("/dpumesh/lcores") or {}
place = dict(zip(lcores.get("lcore", []), lcores.get("placement", [])))
rx = {}
for name, lc, work in zip(stages.get("name", []), stages.get("lcore", []), stages.get("work", [])):
    if name == "port_rx":
        rx[lc] = rx.get(lc, 0) + work
if rx:
    rows.append(["port RX frames per worker lcore", "", sum(rx.values()), "", "",
                 "; ".join("lcore %d%s: %d" % (lc, " (%s)" % place[lc].split(" shard")[0]
                                              if place.get(lc) else "", n)
                           for lc, n in sorted(rx.items()))])
    if replay_path and len(rx) > 1 and min(rx.values()) == 0:
        out.append("ERROR soak: a worker's port RX took no frame while the generator sent on "
                   "every queue (%s)" % ", ".join("lcore %d: %d" % kv for kv in sorted(rx.items())))

# at exit: every buffer back in its pool
try:
    for line in open(exit_path):
        if line.startswith("final mempool") or line.startswith("final dpa"):
            for w in line.split()[2:]:
                k, _, v = w.partition("=")
                if k.endswith("in_use"):
                    want = held if k == "mbufs_in_use" else 0
                    rows.append(["%s at exit" % k, "", v, "", "", "expected %d" % want])
                    if int(v) != want:
                        out.append("ERROR soak: %s=%s at exit (not returned to its pool)" % (k, v))
except OSError:
    out.append("ERROR soak: no final counters from dpumesh")

with open(os.path.join(R, "soak.csv"), "w") as f:
    f.write("quantity,first,last,min,max,verdict\n")
    for r in rows:
        f.write(",".join(str(c).replace(",", ";") for c in r) + "\n")
print("\n".join(out))
