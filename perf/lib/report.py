#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# perf/run.sh's report: reads a results directory's CSVs, writes summary.md (every dpumesh
# figure next to its baseline from the same run, ratios first, absolute numbers second,
# anomalies listed) and PNG plots through gnuplot.
#   report.py RESULTS_DIR
import csv
import os
import re
import subprocess
import sys

R = sys.argv[1]
out = []
plots = []


def read(name):
    p = os.path.join(R, name)
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return list(csv.DictReader(f))


def f(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def ratio(a, b):
    a, b = f(a), f(b)
    if a is None or b is None or b == 0:
        return "—"
    return "%.2f" % (a / b)


def num(x, fmt="%.3g"):
    v = f(x)
    if v is None:
        return "—"
    if abs(v) >= 1000:
        return "%.0f" % v
    return fmt % v


def cpu_total(r, who):
    """WHO's CPU µs per round trip: the exact on-CPU column, else user + sys."""
    t = f(r.get(who + "_cpu_us_rt"))
    if t is None:
        u, k = f(r.get(who + "_user_us_rt")), f(r.get(who + "_sys_us_rt"))
        t = u + k if u is not None and k is not None else None
    return t


def cpu_cell(r, who):
    """'total (user+sys)': the exact on-CPU time per round trip, split as the clock ticks
    split it; — when absent."""
    t = cpu_total(r, who)
    if t is None:
        return "—"
    u, k = f(r.get(who + "_user_us_rt")), f(r.get(who + "_sys_us_rt"))
    if u is None or k is None:
        return "%.2f (no tick)" % t
    return "%.2f (%.2f+%.2f)" % (t, u, k)


def doorbell_cell(r, system):
    v = r.get("doorbells_per_rt")
    if not system.startswith("dpumesh"):
        return "—"
    if v is None or v == "" or v == "n/a":
        return "n/a"
    return num(v)


def doorbell_cpu(r):
    """The emulated DPA's doorbell writes, CPU µs per round trip: their TSC scaled by the DPA
    stages' CPU/TSC where the row has it (TSC alone counts the time the lcore was descheduled
    inside the write, and on a loaded box came to more than dpumesh's whole CPU), else TSC."""
    d = f(r.get("doorbell_cpu_us_rt"))
    return d if d is not None else f(r.get("doorbell_us_rt"))


def arm_total(r):
    """dpumesh's CPU µs per round trip without the emulated DPA's doorbell writes: what the
    Arm's own stages cost; None when not counted."""
    t, d = cpu_total(r, "dp"), doorbell_cpu(r)
    return t - d if t is not None and d is not None else None


def size_name(s):
    s = int(s)
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if s >= n and s % n == 0:
            return "%d %s" % (s // n, unit)
    return "%d B" % s


def table(header, rows):
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    out.append("")


machine = {}
if os.path.exists(os.path.join(R, "machine.txt")):
    for line in open(os.path.join(R, "machine.txt")):
        k, _, v = line.rstrip("\n").partition("=")
        machine[k] = v
anoms = [l.rstrip("\n") for l in open(os.path.join(R, "anomalies.txt"))] if os.path.exists(
    os.path.join(R, "anomalies.txt")) else []
errors = [a for a in anoms if a.startswith("ERROR")]
warns = [a for a in anoms if a.startswith("WARN")]

out.append("# dpumesh benchmarks, %s" % machine.get("date", "?"))
out.append("")
out.append("%s, %s CPUs, %s, DPDK %s, HAProxy %s; dpumesh %s; suites: %s; load average %s at the "
           "start, %s at the end; %s s in all." % (
               machine.get("cpu", "?"), machine.get("cpus", "?"), machine.get("os", "?"),
               machine.get("dpdk", "?"), machine.get("haproxy", "?"), machine.get("commit", "?"),
               machine.get("suites", "?"), machine.get("load_start", "?"),
               machine.get("load_end", "?"), machine.get("elapsed_s", "?")))
out.append("")
if errors:
    out.append("**Status: %d ERROR(s), %d warning(s): see Anomalies at the end. Numbers next to "
               "an error are not to be trusted.**" % (len(errors), len(warns)))
else:
    out.append("**Status: no errors** (%d warning(s), listed under Anomalies)." % len(warns))
out.append("")
out.append("Ratios first: the machine is shared and noisy, so compare within this run. "
           "A ratio is dpumesh ÷ baseline: above 1 means more (rate) or longer (latency, cycles).")
out.append("")

# ---- ndr ----
nd = read("ndr.csv")
if nd:
    out.append("## NDR/PDR: dpumesh-replay over net_memif, dpdk-testpmd 5tswap vs dpumesh (Case 2, echo pod)")
    out.append("")
    caps = []
    for r in nd:
        if r["capture"] not in caps:
            caps.append(r["capture"])

    def runs(c, system, key):
        # verified results only: a search whose final trial failed has no rate
        vkey = key.replace("_pps", "_verified")
        return [f(r[key]) for r in nd if r["capture"] == c and r["system"] == system
                and f(r[key]) and r.get(vkey) == "1"]

    def failed(c, system, key):
        vkey = key.replace("_pps", "_verified")
        n = sum(1 for r in nd if r["capture"] == c and r["system"] == system and r.get(vkey) != "1")
        return " (+%d unverified)" % n if n else ""

    def spread(v):
        # the repeats' agreement: (max - min) / mean, in percent
        if len(v) < 2:
            return "—"
        m = sum(v) / len(v)
        return "%.1f%%" % (100.0 * (max(v) - min(v)) / m) if m else "—"

    def mean(v):
        return sum(v) / len(v) if v else None

    rows = []
    for c in caps:
        tn, dn = runs(c, "testpmd-5tswap", "ndr_pps"), runs(c, "dpumesh", "ndr_pps")
        tp, dp = runs(c, "testpmd-5tswap", "pdr_pps"), runs(c, "dpumesh", "pdr_pps")
        rows.append([c, ratio(mean(dn), mean(tn)), ratio(mean(dp), mean(tp)),
                     (" / ".join(num(x) for x in tn) or "—") + failed(c, "testpmd-5tswap", "ndr_pps"),
                     (" / ".join(num(x) for x in dn) or "—") + failed(c, "dpumesh", "ndr_pps"),
                     (" / ".join(num(x) for x in tp) or "—") + failed(c, "testpmd-5tswap", "pdr_pps"),
                     (" / ".join(num(x) for x in dp) or "—") + failed(c, "dpumesh", "pdr_pps"),
                     spread(tn), spread(dn), spread(tp), spread(dp)])
    table(["capture", "**NDR ÷ testpmd**", "**PDR ÷ testpmd**", "testpmd NDR pps (runs)",
           "dpumesh NDR msgs/s (runs)", "testpmd PDR pps", "dpumesh PDR msgs/s",
           "testpmd NDR spread", "dpumesh NDR spread", "testpmd PDR spread", "dpumesh PDR spread"], rows)
    out.append("")
    out.append("Latency at NDR_LOADS (50%) of each run's NDR (TX burst to RX burst, us):")
    out.append("")
    rows = []
    for r in nd:
        if not f(r["lat_rate_pps"]):
            continue
        rows.append([r["capture"], r["system"] + " #" + r["repeat"], num(r["lat_rate_pps"]), num(r["lat_p50_us"]),
                     num(r["lat_p90_us"]), num(r["lat_p99_us"]), num(r["lat_p999_us"]),
                     num(r["lat_max_us"])])
    table(["capture", "system", "offered pps", "p50", "p90", "p99", "p99.9", "max"], rows)
    out.append("")
    out.append("Every trial (search, verification, latency) is in ndr_trials.csv; a verified "
               "column of 0 in ndr.csv means the search's final trial failed.")
    out.append("")

# ---- replay ----
rep = read("replay.csv")
if rep:
    out.append("## Replay: captures through net_pcap (infinite_rx=1), dpumesh vs dpdk-testpmd 5tswap")
    out.append("")
    caps = []
    for r in rep:
        if r["capture"] not in caps:
            caps.append(r["capture"])
    by = {(r["capture"], r["system"]): r for r in rep}
    rows = []
    for c in caps:
        t, d = by.get((c, "testpmd-5tswap")), by.get((c, "dpumesh"))
        if not t or not d:
            continue
        rows.append([c, t["frame_bytes"], ratio(d["rx_mpps"], t["rx_mpps"]),
                     ratio(d["cycles_per_frame"], t["cycles_per_frame"]),
                     num(t["rx_mpps"]), num(d["rx_mpps"]), num(t["rx_gbps"]), num(d["rx_gbps"]),
                     num(t["cycles_per_frame"]), num(d["cycles_per_frame"]),
                     num(d["reassembled_per_s"]), num(d["delivered_per_s"]), num(d["answered_per_s"]),
                     num(d["shed_pct"], "%.1f"), num(d["wire_drop_pct"], "%.2f"),
                     ratio(d.get("cpu_cycles_per_frame"), t.get("cpu_cycles_per_frame")),
                     num(t.get("cpu_cycles_per_frame")), num(d.get("cpu_cycles_per_frame")),
                     num(d.get("sys_share"), "%.2f"), num(d.get("pods_cpu_us_per_msg")),
                     d.get("doorbells_per_msg") if d.get("doorbells_per_msg") in ("n/a", None)
                     else num(d.get("doorbells_per_msg"))])
    table(["capture", "frame B", "**Mpps ÷ testpmd**", "**cycles/frame ÷ testpmd**",
           "testpmd Mpps", "dpumesh Mpps", "testpmd Gbps", "dpumesh Gbps", "testpmd cycles/frame",
           "dpumesh cycles/frame", "msgs reassembled/s", "delivered to pod/s", "answered/s",
           "shed at port %", "wire drops %", "**process CPU/frame ÷ testpmd**",
           "testpmd process CPU cycles/frame", "dpumesh process CPU cycles/frame",
           "dpumesh kernel share", "pods CPU µs/msg", "doorbells per msg"], rows)
    out.append("cycles/frame: TSC busy cycles of the forwarding lcore (testpmd: all of its "
               "cycles) per frame received. Process CPU cycles/frame: /proc user + kernel time of "
               "every thread over the window, at the TSC rate, per frame: what descheduling does "
               "not inflate.")
    out.append("")
    st = read("replay_stages.csv")
    if st:
        stages = []
        for r in st:
            if r["stage"] not in stages:
                stages.append(r["stage"])
        sb = {(r["capture"], r["stage"]): r for r in st}
        table(["capture"] + ["%s cycles/frame (lcore share)" % s for s in stages],
              [[c] + ["%s (%s)" % (num(sb[(c, s)]["cycles_per_frame"]), num(sb[(c, s)]["busy_share"], "%.2f"))
                      if (c, s) in sb else "—" for s in stages] for c in caps])
        if any(r.get("cpu_cycles_per_unit") for r in st):
            out.append("Per stage, thread CPU from the lcore's own clock (sampled polls, "
                       "CLOCK_THREAD_CPUTIME_ID) per unit of the stage's work (port_rx: frames; "
                       "sidecar, DPA: messages or descriptors), then the TSC cycles per unit of "
                       "all its busy polls, and CPU ÷ TSC over the sampled polls (1 = on the CPU "
                       "throughout; below 1: the lcore was descheduled or slept):")
            out.append("")
            table(["capture"] + ["%s CPU / TSC cycles per unit (CPU÷TSC)" % s for s in stages],
                  [[c] + ["%s / %s (%s)" % (num(sb[(c, s)].get("cpu_cycles_per_unit")),
                                           num(sb[(c, s)].get("tsc_cycles_per_unit")),
                                           num(sb[(c, s)].get("cpu_tsc_ratio"), "%.2f"))
                          if (c, s) in sb else "—" for s in stages] for c in caps])
    lat = {r["condition"]: r for r in read("replay_latency.csv")}
    if lat:
        q, l = lat.get("quiet"), lat.get("loaded")
        out.append("Latency mode: a client pod's 64 B round trips to its own echo pod (service "
                   "`lat`, one outstanding), timestamps carried in the messages (x-ts), with "
                   "the port quiet and while the mix capture replays:")
        out.append("")
        rows = []
        for k in ("p50_us", "p90_us", "p99_us", "p999_us"):
            rows.append([k.replace("_us", "").replace("p999", "p99.9"),
                         ratio(l[k], q[k]) if q and l else "—",
                         num(q[k]) if q else "—", num(l[k]) if l else "—"])
        rows.append(["round trips/s", ratio(l["rps"], q["rps"]) if q and l else "—",
                     num(q["rps"]) if q else "—", num(l["rps"]) if l else "—"])
        table(["µs", "**loaded ÷ quiet**", "quiet", "under replay"], rows)
    plots.append(("replay_mpps.png", "replay"))

# ---- forward ----
def forward_section():
    fw = read("forward.csv")
    if not fw:
        return
    out.append("## Forward: the Arm network path alone (relay to a peer), dpumesh vs dpdk-testpmd 5tswap")
    out.append("")
    out.append("Captures of network clients' requests through net_pcap (infinite_rx=1), out of the same "
               "port (TX dropped); one worker lcore; dpumesh frames/s are messages taken all the way "
               "(relayed, or answered here). Targets: ≥ 0.5× testpmd with routes only, ≥ 0.4× with "
               "RBAC + rate limits, ≥ 0.3× with a cached JWT; CPU per message from the worker "
               "thread's own clock.")
    out.append("")
    table(["capture", "policy", "frame B", "**frames/s ÷ testpmd**", "testpmd Mpps", "dpumesh Mpps",
           "relayed/s", "refused/s", "504/s", "shed %", "testpmd cycles/frame", "**dpumesh CPU cycles/msg**",
           "process CPU s/s"],
          [[r["capture"], r["variant"], r["frame_bytes"], num(r["ratio"], "%.2f"), num(r["testpmd_mpps"]),
            num(r["dpumesh_mpps"]), num(r["relayed_per_s"]), num(r["refused_per_s"]),
            num(r["timeouts_per_s"]), num(r["shed_pct"], "%.1f"), num(r["testpmd_cycles_per_frame"]),
            num(r["thread_cycles_per_msg"]), num(r["process_cpu_s_per_s"], "%.2f")] for r in fw])
    st = read("forward_stages.csv")
    if st:
        stages = []
        for r in st:
            if r["stage"] not in stages:
                stages.append(r["stage"])
        sb = {(r["capture"], r["variant"], r["stage"]): r for r in st}
        runs = []
        for r in st:
            if (r["capture"], r["variant"]) not in runs:
                runs.append((r["capture"], r["variant"]))
        out.append("Per stage, CPU cycles per message taken (the runner's sampled thread-CPU clock: "
                   "cycles per unit of the stage's work × its units per message; TSC busy cycles "
                   "per message in brackets, which include time the lcore was descheduled):")
        out.append("")
        table(["capture", "policy"] + stages,
              [[c, v] + ["%s (%s)" % (num(sb[(c, v, s)]["cpu_cycles_per_msg"]),
                                      num(sb[(c, v, s)]["tsc_cycles_per_msg"]))
                         if (c, v, s) in sb else "—" for s in stages] for c, v in runs])
    ins = read("forward_instructions.csv")
    if ins:
        stages = []
        for r in ins:
            if r["stage"] not in stages:
                stages.append(r["stage"])
        ib = {(r["capture"], r["variant"], r["stage"]): r["instructions_per_msg"] for r in ins}
        runs = []
        for r in ins:
            if (r["capture"], r["variant"]) not in runs:
                runs.append((r["capture"], r["variant"]))
        out.append("Instructions per message, counted by valgrind's callgrind in a second run of each "
                   "row (inside the worker lcore's loop only; exact between runs of one binary, "
                   "whatever the box's load: the figure to compare builds by; docs/benchmarks.md, "
                   "\"Instructions per message\"). `sidecar_relay` is the requests' path, "
                   "`sidecar_expiry` the deadline sweep, `sidecar_expired` the 504s'; `net_pcap` "
                   "what of the loop is the net_pcap PMD's own code (its RX and TX); "
                   "`testpmd_loop` dpdk-testpmd 5tswap's forwarding lcore on the same capture, "
                   "instructions a frame, and `testpmd_net_pcap` the PMD's part of it:")
        out.append("")
        # dpumesh's loop over testpmd's, all in and outside the PMD (the application's own)
        def over(c, v, pmd):
            try:
                a = float(ib[(c, v, "loop")]) - (float(ib[(c, v, "net_pcap")]) if pmd else 0)
                b = float(ib[(c, v, "testpmd_loop")]) - (
                    float(ib[(c, v, "testpmd_net_pcap")]) if pmd else 0)
                return "%.2f×" % (a / b) if b > 0 else "—"
            except (KeyError, ValueError):
                return "—"
        ratio = any(s == "testpmd_loop" for s in stages)
        table(["capture", "policy"] + stages +
              (["loop ÷ testpmd's", "outside net_pcap ÷ testpmd's"] if ratio else []),
              [[c, v] + [num(ib.get((c, v, s)), "%.1f") for s in stages] +
               ([over(c, v, False), over(c, v, True)] if ratio else []) for c, v in runs])
        top = read("forward_instructions_top.csv")
        for c, v in runs:
            rows = [r for r in top if r["capture"] == c and r["variant"] == v][:15]
            if rows:
                out.append("Top functions by their own instructions per message, %s %s:" % (c, v))
                out.append("")
                table(["#", "function", "object", "instructions/msg"],
                      [[r["rank"], "`%s`" % r["function"], r["object"],
                        num(r["instructions_per_msg"], "%.1f")] for r in rows])


forward_section()

# ---- pod-to-pod and baselines ----
p2p = read("pod2pod.csv")
if p2p:
    out.append("## Pod to pod (Case 3) next to TCP loopback and two HAProxy sidecars")
    out.append("")
    by = {(r["system"], r["size"], r["outstanding"]): r for r in p2p}
    systems = []
    for r in p2p:
        if r["system"] not in systems:
            systems.append(r["system"])
    sizes = sorted({r["size"] for r in p2p}, key=int)
    wins = sorted({r["outstanding"] for r in p2p}, key=int)
    base = [s for s in ("tcp-loopback", "haproxy-http") if s in systems]
    mesh = [s for s in systems if s.startswith("dpumesh")]
    if mesh and base:
        for m in mesh:
            out.append("**%s ÷ baselines** (round trips/s: above 1 is faster; latency: below 1 is faster):" % m)
            out.append("")
            rows = []
            for s in sizes:
                for w in wins:
                    d = by.get((m, s, w))
                    if not d:
                        continue
                    row = [size_name(s), w]
                    for b in base:
                        x = by.get((b, s, w))
                        row += [ratio(d["rps"], x["rps"]) if x else "—",
                                ratio(d["p50_us"], x["p50_us"]) if x else "—",
                                ratio(d["p99_us"], x["p99_us"]) if x else "—"]
                    rows.append(row)
            hdr = ["body", "outstanding"]
            for b in base:
                hdr += ["rps ÷ %s" % b, "p50 ÷ %s" % b, "p99 ÷ %s" % b]
            table(hdr, rows)
    out.append("Absolute numbers (round trips/s; latency in µs; errors = refused, mesh error "
               "responses, bad bodies, non-2xx or failed connections; retries = try-again "
               "(dpumesh) or resent requests (TCP); CPU µs/rt = on-CPU time from /proc (schedstat, "
               "every thread) over the measured window per round trip, split into user + kernel "
               "as utime/stime's clock ticks split it (\"no tick\": none fell); dpumesh, and "
               "pods = the echo pod and the client; doorbells = eventfd writes to pods per round trip; TSC cycles = "
               "dpumesh stage busy TSC cycles per round trip, descheduled time included):")
    out.append("")
    rows = []
    for s in sizes:
        for w in wins:
            for sy in systems:
                r = by.get((sy, s, w))
                if r:
                    rows.append([size_name(s), w, sy, num(r["rps"]), num(r["p50_us"]), num(r["p90_us"]),
                                 num(r["p99_us"]), num(r["p999_us"]), r["errors"], r["retries"],
                                 cpu_cell(r, "dp"), cpu_cell(r, "pods"), doorbell_cell(r, sy),
                                 num(r["cycles_per_rt"]) if r.get("cycles_per_rt") else "—"])
    table(["body", "outstanding", "system", "round trips/s", "p50", "p90", "p99", "p99.9", "errors",
           "retries", "dpumesh CPU µs/rt (user+sys)", "pods CPU µs/rt (user+sys)", "doorbells per rt",
           "TSC cycles/rt"], rows)
    mem = {r["size"]: r for r in read("memcpy.csv")}
    if mem:
        out.append("Body bandwidth at 64 outstanding (request and response bodies, GB/s) against a "
                   "plain memcpy of the same size on this machine (dpumesh-dma-bench, same run):")
        out.append("")
        rows = []
        for s in sizes:
            m = mem.get(s)
            row = [size_name(s)]
            for sy in systems:
                r = by.get((sy, s, wins[-1]))
                g = f(r["rps"]) * int(s) * 2 / 1e9 if r and f(r["rps"]) is not None else None
                row += [ratio(g, m["memcpy_gbps"]) if m and g is not None else "—",
                        "%.3f" % g if g is not None else "—"]
            row.append(num(m["memcpy_gbps"]) if m else "—")
            rows.append(row)
        hdr = ["body"]
        for sy in systems:
            hdr += ["**%s ÷ memcpy**" % sy, "%s GB/s" % sy]
        table(hdr + ["memcpy GB/s"], rows)
    plots.append(("pod2pod_rps.png", "p2p_rps"))
    plots.append(("pod2pod_latency.png", "p2p_lat"))

# ---- scaling ----
sc = read("scaling.csv")
if sc:
    out.append("## Scaling: 64 B round trips, 64 outstanding, as pods and services grow")
    out.append("")
    out.append("Ratios against the first point of each series (1 pod, 1 service); flat mesh "
               "cycles per round trip mean the per-message cost does not grow with pods or services. "
               "`idle-pods`: the client to one pod while n pods are registered (n − 1 idle): what "
               "idle pods cost a round trip. "
               "\"Without DPA doorbells\": dpumesh's CPU less the CPU its emulated DPA threads spent "
               "writing pods' eventfds (their TSC scaled by the DPA stages' CPU/TSC; each pod that "
               "sleeps is woken by one; on a BlueField-3 the DPA rings it, not an Arm core). \"Work only\": the worker lcore's polls that did work "
               "(per stage: its thread CPU per unit of work over the sampled busy polls × its units) less those "
               "eventfd writes, "
               "without its empty polls and sleeps; the target is judged on both figures side by side "
               "(docs/benchmarks.md, \"What the scaling target is judged on\"). The second table splits "
               "the worker lcore's CPU per round trip:")
    out.append("")
    first = {}
    rows = []
    for r in sc:
        first.setdefault(r["dimension"], r)
        b = first[r["dimension"]]
        rows.append([r["dimension"], r["n"], ratio(cpu_total(r, "dp"), cpu_total(b, "dp")),
                     ratio(arm_total(r), arm_total(b)),
                     ratio(f(r.get("work_only_us_rt")), f(b.get("work_only_us_rt"))),
                     ratio(f(r.get("work_only_timed_us_rt")), f(b.get("work_only_timed_us_rt"))),
                     ratio(r["cycles_per_rt"], b["cycles_per_rt"]),
                     ratio(r["rps"], b["rps"]), ratio(r["p50_us"], b["p50_us"]),
                     cpu_cell(r, "dp"), num(doorbell_cpu(r), "%.2f") if doorbell_cpu(r) is not None else "n/a",
                     cpu_cell(r, "pods"), doorbell_cell(r, "dpumesh"),
                     num(r["cycles_per_rt"]), num(r["rps"]), num(r["p50_us"]), num(r["p99_us"]),
                     r["answering_pods"], "%.1f" % (int(r["dpumesh_rss_kb"]) / 1024),
                     "%.1f" % (int(r["pods_rss_kb"]) / 1024), r["errors"]])
    table(["grows", "n", "**dpumesh CPU/rt ÷ n=1**", "**without DPA doorbells ÷ n=1**",
           "**work only ÷ n=1**", "**work only, writes timed ÷ n=1**",
           "**mesh TSC cycles/rt ÷ n=1**", "**rps ÷ n=1**",
           "**p50 ÷ n=1**", "dpumesh CPU µs/rt (user+sys)", "of which DPA doorbells µs/rt",
           "pods CPU µs/rt (user+sys)",
           "doorbells per rt", "mesh TSC cycles/rt", "round trips/s", "p50 µs", "p99 µs",
           "pods answering", "dpumesh RSS MiB", "pods RSS MiB (sum)", "errors"], rows)
    rows = []
    for r in sc:
        cell = lambda k: num(r.get(k), "%.2f") if f(r.get(k)) is not None else "n/a"
        rows.append([r["dimension"], r["n"], cell("lcore_us_rt"), cell("work_us_rt"),
                     cell("doorbell_cpu_us_rt"), cell("work_only_us_rt"),
                     cell("doorbell_timed_us_rt"), cell("work_only_timed_us_rt"), cell("dpa_tx_us_rt"),
                     cell("dpa_rx_us_rt"), cell("sidecar_us_rt"), cell("rest_us_rt"),
                     cell("sleeps_per_rt"), cell("sq_heads_per_look"), cell("epoll_waits_per_rt"),
                     cell("tx_rings_per_rt")])
    table(["grows", "n", "worker lcore CPU µs/rt", "polls with work", "of which DPA doorbells",
           "**work only**", "DPA doorbells, timed", "**work only, writes timed**", "dpa_tx", "dpa_rx", "sidecar", "empty polls, sleeps, loop",
           "lcore sleeps per rt", "SQ heads per DPA look", "DPA epoll_waits per rt",
           "pods' TX doorbells per rt"], rows)
    plots.append(("scaling.png", "scaling"))

# ---- footprint ----
fp = read("footprint.csv")
if fp:
    out.append("## Footprint (resident memory)")
    out.append("")

    def pick(prefix):
        return next((r for r in fp if r["what"].startswith(prefix)), None)
    dm, ha = pick("dpumesh idle"), pick("haproxy idle")
    dt, ht = pick("dpumesh after"), pick("haproxy after")
    pe, se = pick("echo pod after"), pick("dpumesh-http-echo after")
    rows = []
    if dm and ha:
        rows.append(["dpumesh ÷ one HAProxy sidecar, idle", ratio(dm["rss_kb"], ha["rss_kb"]),
                     ratio(dm["pss_kb"], ha["pss_kb"])])
    if dt and ht:
        rows.append(["dpumesh ÷ one HAProxy sidecar, after traffic", ratio(dt["rss_kb"], ht["rss_kb"]),
                     ratio(dt["pss_kb"], ht["pss_kb"])])
    if pe and se:
        rows.append(["echo pod (default pools) ÷ the baselines' echo server, after traffic",
                     ratio(pe["rss_kb"], se["rss_kb"]), ratio(pe["pss_kb"], se["pss_kb"])])
    if rows:
        out.append("One dpumesh serves every pod of a node; an L7 sidecar mesh runs one proxy per pod:")
        out.append("")
        table(["ratio", "**RSS**", "**PSS**"], rows)
    table(["process", "RSS MiB", "PSS MiB", "note"],
          [[r["what"], "%.1f" % (int(r["rss_kb"]) / 1024), "%.1f" % (int(r["pss_kb"]) / 1024), r["note"]]
           for r in fp])

# ---- soak ----
so = read("soak.csv")
if so:
    out.append("## Soak")
    out.append("")
    table(list(so[0].keys()), [list(r.values()) for r in so])
    plots.append(("soak.png", "soak"))

# ---- overload ----
# info:TAG_rN_FIELD: a paired isolation round's figure (perf/suites/overload.sh ovl_iso_rounds);
# PHASE-quiet-rN and PHASE-rN: its two client rows
ROUND_ROW = re.compile(r"^info:([a-z_]+?)_r([0-9]+)_((?:quiet|flood)_(?:p50_us|p99_us|samples|"
                       r"runq_per_answer_us|worker_runq_pct)|p50_over_quiet|p99_over_quiet)$")
ROUND_CLIENT = re.compile(r"^[a-z-]+-(quiet-)?r[0-9]+$")


def overload_section():
    ov = read("overload.csv")
    if not ov:
        return
    out.append("## Overload: one service offered 10× what its pods answer")
    out.append("")
    targets = [r for r in ov if r["phase"].startswith("target:")]
    if targets:
        out.append("Targets (issue 16), as overload.csv's `target:` rows have them:")
        out.append("")
        table(["target", "value", "bound", "met"],
              [[r["phase"][len("target:"):], r["value"], r["target"],
                "yes" if r["met"] == "yes" else "**%s**" % (r["met"] or "—")] for r in targets])
    # the paired isolation rounds (info:TAG_rN_FIELD rows): one table row per phase and round
    rounds = {}
    for r in ov:
        m = ROUND_ROW.match(r["phase"])
        if m:
            rounds.setdefault((m.group(1), int(m.group(2))), {})[m.group(3)] = r["value"]
    if rounds:
        out.append("Isolation, paired (docs/benchmarks.md \"overload\"): each round is a quiet "
                   "measurement followed at once by the same one beside the flood; a target is the "
                   "median of its rounds' ratios. Round trips to `quiet`, window 1; samples = round "
                   "trips measured; run-queue wait = the client's, per answer; worker run-queue % = "
                   "the share of the client's window the worker lcore waited for its CPU:")
        out.append("")
        table(["phase", "round", "quiet p50 µs", "quiet p99 µs", "flood p50 µs", "flood p99 µs",
               "p50 ÷ quiet", "p99 ÷ quiet", "samples quiet / flood", "run-queue µs quiet / flood",
               "worker run-queue % quiet / flood"],
              [[tag.replace("_", "-"), str(n), num(v.get("quiet_p50_us")), num(v.get("quiet_p99_us")),
                num(v.get("flood_p50_us")), num(v.get("flood_p99_us")), num(v.get("p50_over_quiet")),
                num(v.get("p99_over_quiet")),
                "%s / %s" % (v.get("quiet_samples", "—"), v.get("flood_samples", "—")),
                "%s / %s" % (num(v.get("quiet_runq_per_answer_us")),
                             num(v.get("flood_runq_per_answer_us"))),
                "%s / %s" % (num(v.get("quiet_worker_runq_pct")), num(v.get("flood_worker_runq_pct")))]
               for (tag, n), v in rounds.items()])
    # the rounds' own client rows are in the table above; their floods' rows stay below
    phases = [r for r in ov if ":" not in r["phase"] and "per-message" not in r["phase"]
              and not ROUND_CLIENT.match(r["phase"])]
    if phases:
        out.append("Per phase (latencies of the 200s where the phase has them, else of every answer; "
                   "sidecar thread CPU per delivered round trip and per refused request in the "
                   "per-message rows below):")
        out.append("")
        table(["phase", "offered/s", "200s/s", "answers/s", "p50 µs", "p99 µs", "sent", "200s", "refused"],
              [[r["phase"], num(r["offered_rps"]), num(r["ok_rps"]), num(r["answers_rps"]),
                num(r["ok_p50_us"] if f(r["ok"]) else r["p50_us"]),
                num(r["ok_p99_us"] if f(r["ok"]) else r["p99_us"]),
                r["sent"], r["ok"], r["refused"]] for r in phases])
    per = [r for r in ov if "per-message" in r["phase"] or r["phase"].startswith("stage:")]
    if per:
        out.append("CPU per message (thread clock, ns; TSC cycles beside it; `stage:` rows from the "
                   "unpaced network flood, value = refused ÷ delivered):")
        out.append("")
        table(["row", "ns per delivered", "ns per refused", "cycles per delivered",
               "cycles per refused", "value"],
              [[r["phase"], num(r["cpu_ns_per_ok"]), num(r["cpu_ns_per_refused"]),
                num(r["cycles_per_ok"]), num(r["cycles_per_refused"]), num(r["value"])] for r in per])
    info = [r for r in ov if r["phase"].startswith("info:") and not ROUND_ROW.match(r["phase"])]
    if info:
        out.append("; ".join("%s %s" % (r["phase"][len("info:"):], r["value"]) for r in info) + ".")
        out.append("")


overload_section()

# ---- fill and drain ----
fd = read("filldrain.csv")
if fd:
    out.append("## Fill and drain (1 M requests, destinations full again and again)")
    out.append("")
    table(list(fd[0].keys()), [list(r.values()) for r in fd])

# ---- per-stage profiles ----
prof = read("profile.csv")
if prof:
    out.append("## Per-stage profile (perf record -g on dpumesh, one measured window per suite)")
    out.append("")
    out.append("Each sample goes to the stage whose entry point is the outermost stage frame of "
               "its call chain (port rx_poll, tx_poll, sidecar stage::poll, DPA pair_poll); "
               "`lcore: runner loop` is the loop itself (idle back-off, clock samples); "
               "`lcore: chain broken`: a leaf in a DPDK library without frame pointers whose "
               "chain was lost (stage unknown); other threads by name. Within a stage, the top symbols by self samples: % of the "
               "stage, then % of every dpumesh sample. perf.data and `perf report` text are in "
               "raw/profile-SUITE.*.gz.")
    out.append("")
    suites_seen = []
    for r in prof:
        if (r["suite"], r["tag"]) not in suites_seen:
            suites_seen.append((r["suite"], r["tag"]))
    for suite, tag in suites_seen:
        rows_ = [r for r in prof if r["suite"] == suite and r["tag"] == tag]
        totals = [r for r in rows_ if r["symbol"] == "(all)"]
        out.append("**%s** (%s, %d samples): %s" % (suite, tag, sum(int(t["samples"]) for t in totals),
                                                  ", ".join("%s %s%%" % (t["stage"], t["pct_of_process"])
                                                            for t in totals)))
        out.append("")
        tr = []
        for t in totals:
            syms = [r for r in rows_ if r["stage"] == t["stage"] and r["symbol"] != "(all)"]
            for r in syms:
                tr.append([t["stage"] if r["rank"] == "1" else "", r["rank"],
                           "`%s`" % r["symbol"][:90], r["dso"], r["pct_of_stage"], r["pct_of_process"]])
        table(["stage", "#", "symbol (self)", "object", "% of stage", "% of dpumesh"], tr)

# ---- plots ----
def gp(png, script):
    full = "set terminal pngcairo size 1000,600 noenhanced font 'DejaVu Sans,10'\nset output '%s'\n%s" % (
        os.path.join(R, png), script)
    with open(os.path.join(R, "raw", png.replace(".png", ".gp")), "w") as fh:
        fh.write(full)
    r = subprocess.run(["gnuplot"], input=full, text=True, capture_output=True)
    if r.returncode != 0:
        anoms.append("WARN plot %s: %s" % (png, r.stderr.strip()[:200]))
        return False
    return True


def dat(name, lines):
    p = os.path.join(R, "raw", name)
    with open(p, "w") as fh:
        fh.write("# " + "\n".join(lines) + "\n")  # the first line names the columns
    return p


made = []
if rep:
    lines = ["capture testpmd dpumesh"]
    rb = {(r["capture"], r["system"]): r for r in rep}
    for c in caps:
        t, d = rb.get((c, "testpmd-5tswap")), rb.get((c, "dpumesh"))
        lines.append('"%s" %s %s' % (c, t["rx_mpps"] if t else 0, d["rx_mpps"] if d else 0))
    p = dat("replay_mpps.dat", lines)
    if gp("replay_mpps.png", """
set title 'Replay through net_pcap (infinite_rx=1): frames received per second'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel 'Mpps'
set grid ytics
set key top right
plot '%s' using 2:xtic(1) title 'dpdk-testpmd 5tswap', '' using 3 title 'dpumesh + echo pod'
""" % p):
        made.append("replay_mpps.png")
if p2p:
    def series(sy, s, col):
        return [("%s %s" % (r["outstanding"], r[col])) for r in p2p if r["system"] == sy and r["size"] == s]
    parts, files = [], {}
    for sy in systems:
        for s in sizes:
            files[(sy, s)] = dat("p2p_%s_%s.dat" % (sy, s), ["outstanding rps"] + series(sy, s, "rps"))
    script = "set multiplot layout 2,2 title 'Round trips per second by outstanding requests (log scale)'\n"
    script += "set logscale y\nset logscale x 2\nset grid\nset xlabel 'outstanding'\nset key bottom right font ',8'\n"
    for s in sizes:
        script += "set title 'body %s'\nplot %s\n" % (size_name(s), ", ".join(
            "'%s' using 1:2 with linespoints title '%s'" % (files[(sy, s)], sy) for sy in systems))
    script += "unset multiplot\n"
    if gp("pod2pod_rps.png", script):
        made.append("pod2pod_rps.png")
    files = {}
    for sy in systems:
        files[sy] = dat("lat_%s.dat" % sy, ["size p50 p99"] + [
            "%s %s %s" % (r["size"], r["p50_us"], r["p99_us"]) for r in p2p
            if r["system"] == sy and r["outstanding"] == wins[0]])
    script = ("set title 'Latency at %s outstanding by body size: p50 (solid) and p99 (dashed), log-log'\n"
              "set logscale xy\nset xrange [32:2097152]\nset grid\nset xlabel 'body bytes'\nset ylabel 'µs'\nset key top left\n" % wins[0])
    script += "plot " + ", ".join(
        "'%s' using 1:2 with linespoints lc %d dt 1 title '%s p50', '' using 1:3 with linespoints lc %d dt 2 title '%s p99'"
        % (files[sy], i + 1, sy, i + 1, sy) for i, sy in enumerate(systems)) + "\n"
    if gp("pod2pod_latency.png", script):
        made.append("pod2pod_latency.png")
if sc:
    files = {}
    dims = []
    for r in sc:
        if r["dimension"] not in dims:
            dims.append(r["dimension"])
    for dname in dims:
        files[dname] = dat("scaling_%s.dat" % dname, ["n rps cycles"] + [
            "%s %s %s" % (r["n"], r["rps"], r["cycles_per_rt"]) for r in sc if r["dimension"] == dname])
    script = ("set multiplot layout 1,2 title 'Scaling: 64 B, 64 outstanding'\nset logscale x 2\nset grid\n"
              "set xlabel 'pods or services'\nset yrange [0:*]\n")
    script += "set title 'round trips per second'\nplot " + ", ".join(
        "'%s' using 1:2 with linespoints title '%s'" % (files[dn], dn) for dn in dims) + "\n"
    script += "set title 'mesh stage cycles per round trip'\nplot " + ", ".join(
        "'%s' using 1:3 with linespoints title '%s'" % (files[dn], dn) for dn in dims) + "\n"
    script += "unset multiplot\n"
    if gp("scaling.png", script):
        made.append("scaling.png")
if so and os.path.exists(os.path.join(R, "soak_series.csv")):
    script = ("set multiplot layout 2,1 title 'Soak: over time'\nset datafile separator ','\nset grid\n"
              "set key autotitle columnhead\nset xlabel 'seconds'\n"
              "set title 'RSS (MiB)'\nplot '%s' using 1:($2/1024) with lines title 'dpumesh RSS'\n"
              "set title 'in use'\nplot '%s' using 1:3 with lines title 'messages in reassembly', "
              "'' using 1:4 with lines title 'DPA hbufs in use', '' using 1:5 with lines title 'pods'\n"
              "unset multiplot\n" % ((os.path.join(R, "soak_series.csv"),) * 2))
    if gp("soak.png", script):
        made.append("soak.png")

if made:
    out.append("## Plots")
    out.append("")
    for m in made:
        out.append("![%s](%s)" % (m, m))
    out.append("")

out.append("## Anomalies")
out.append("")
if anoms:
    for a in anoms:
        level, _, text = a.partition(" ")
        out.append("- **%s** %s" % (level, text))
else:
    out.append("None: no drops, errors, retries, mesh error responses or non-2xx answers were seen.")
out.append("")
with open(os.path.join(R, "summary.md"), "w") as fh:
    fh.write("\n".join(out))
