#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# perf/run.sh --baseline: the old and the new build's runs of the same suites, side by side.
# Reads RESULTS/old-1 .. old-N and new-1 .. new-N (each a full run.sh results directory) and
# writes RESULTS/summary.md: per suite and row, new ÷ old for each figure (the mean of the
# repeats), the old runs' own spread (noise: the same binary run twice), and a verdict that
# calls a row worse or better only beyond that noise (and at least MIN_EFFECT).
#   compare.py RESULTS REPEAT
import csv
import os
import sys

R, N = sys.argv[1], int(sys.argv[2])
MIN_EFFECT = 0.05  # a change smaller than 5% is never called, whatever the noise

# file -> (key columns, [(metric, direction, label)]); direction +1: more is better, -1: less
# is better. Metrics built from two columns are "a+b". Unknown files (a suite added later) are
# compared generically: every non-numeric column is a key, every numeric one a metric.
KNOWN = {
    "pod2pod.csv": (["system", "size", "outstanding"], [
        ("rps", +1, "round trips/s"), ("p50_us", -1, "p50 µs"), ("p99_us", -1, "p99 µs"),
        ("dp_cpu_us_rt", -1, "dpumesh CPU µs/rt"), ("dp_sys_us_rt", -1, "dpumesh kernel µs/rt"),
        ("pods_cpu_us_rt", -1, "pods CPU µs/rt"),
        ("doorbells_per_rt", -1, "doorbells/rt"), ("cycles_per_rt", -1, "TSC cycles/rt")]),
    "replay.csv": (["capture", "system"], [
        ("rx_mpps", +1, "Mpps"), ("cpu_cycles_per_frame", -1, "CPU cycles/frame"),
        ("cycles_per_frame", -1, "TSC cycles/frame"), ("answered_per_s", +1, "answered/s")]),
    "replay_stages.csv": (["capture", "stage"], [
        ("cpu_cycles_per_unit", -1, "CPU cycles/unit"), ("cycles_per_frame", -1, "TSC cycles/frame")]),
    "replay_latency.csv": (["condition"], [
        ("p50_us", -1, "p50 µs"), ("p99_us", -1, "p99 µs"), ("rps", +1, "round trips/s")]),
    "scaling.csv": (["dimension", "n"], [
        ("rps", +1, "round trips/s"), ("p50_us", -1, "p50 µs"),
        ("dp_cpu_us_rt", -1, "dpumesh CPU µs/rt"), ("pods_cpu_us_rt", -1, "pods CPU µs/rt"),
        ("doorbells_per_rt", -1, "doorbells/rt"), ("doorbell_us_rt", -1, "DPA doorbell µs/rt"),
        ("cycles_per_rt", -1, "TSC cycles/rt"), ("work_only_us_rt", -1, "work-only CPU µs/rt"),
        ("work_only_timed_us_rt", -1, "work-only, writes timed, µs/rt"),
        ("work_us_rt", -1, "lcore work-poll CPU µs/rt"), ("lcore_us_rt", -1, "lcore CPU µs/rt"),
        ("epoll_waits_per_rt", -1, "DPA epoll_waits/rt"), ("tx_rings_per_rt", -1, "pods' TX doorbells/rt")]),
    "ndr.csv": (["capture", "system"], [("ndr_pps", +1, "NDR pps"), ("pdr_pps", +1, "PDR pps")]),
    "footprint.csv": (["what"], [("rss_kb", -1, "RSS KiB"), ("pss_kb", -1, "PSS KiB")]),
    "memcpy.csv": (["size"], [("memcpy_gbps", +1, "memcpy GB/s")]),
    "forward_instructions.csv": (["capture", "variant", "stage"], [
        ("instructions_per_msg", -1, "instructions/msg")]),
}
SKIP = {"profile.csv", "soak_series.csv", "ndr_trials.csv", "forward_instructions_top.csv"}
# files whose figures do not move between runs of one binary (counted, not timed): a change
# of more than this is called, not MIN_EFFECT (their noise column still shows the spread)
EXACT = {"forward_instructions.csv": 0.005}
# files compared generically but keyed on these columns alone (a target row whose "met"
# changed is still one row), and whose "value" column's direction is its row's bound:
# "<= x" less is better, ">= x" more is better, none (info rows) not called
KEYED = {"overload.csv": (["phase"], "target")}


def fnum(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def value(row, metric):
    if "+" in metric:
        parts = [fnum(row.get(m)) for m in metric.split("+")]
        return None if any(p is None for p in parts) else sum(parts)
    return fnum(row.get(metric))


def read(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def guess_direction(col):
    c = col.lower()
    if any(w in c for w in ("rps", "pps", "mpps", "gbps", "per_s", "rate", "ratio_to", "x_testpmd")):
        return +1
    if any(w in c for w in ("us", "cycles", "kb", "ns", "drop", "err", "lost")):
        return -1
    return 0


def spec_for(name, rows):
    if name in KNOWN:
        return KNOWN[name]
    cols = list(rows[0].keys()) if rows else []
    keys = [c for c in cols if not all(fnum(r[c]) is not None for r in rows if r[c] != "")]
    mets = [(c, guess_direction(c), c) for c in cols if c not in keys]
    if name in KEYED:
        keys = KEYED[name][0]
        mets = [(c, 0 if c == "value" else d, label) for c, d, label in mets if c not in keys]
    return keys, mets


def row_direction(name, rows, keys, key, metric, direction):
    """the direction of a KEYED file's "value" in the row KEY: from its bound column."""
    if name not in KEYED or metric != "value":
        return direction
    bound = next((r.get(KEYED[name][1], "") for r in rows
                  if tuple(r.get(c, "") for c in keys) == key), "")
    return -1 if bound.startswith("<=") else +1 if bound.startswith(">=") else 0


def mean(v):
    return sum(v) / len(v) if v else None


def runs(side):
    return [os.path.join(R, "%s-%d" % (side, i)) for i in range(1, N + 1)]


def collect(name, dirs, keys, metric):
    """key tuple -> list (one per run) of the run's mean value (rows with the same key, e.g.
    ndr repeats, averaged)."""
    out = {}
    for d in dirs:
        per = {}
        for r in read(os.path.join(d, name)):
            v = value(r, metric)
            if v is None:
                continue
            per.setdefault(tuple(r.get(k, "") for k in keys), []).append(v)
        for k, v in per.items():
            out.setdefault(k, []).append(mean(v))
    return out


def spread(v):
    m = mean(v)
    return (max(v) - min(v)) / m if v and len(v) > 1 and m else None


def machine(d):
    m = {}
    p = os.path.join(d, "machine.txt")
    if os.path.exists(p):
        for line in open(p):
            k, _, v = line.rstrip("\n").partition("=")
            m[k] = v
    return m


info = {}
if os.path.exists(os.path.join(R, "compare.txt")):
    for w in open(os.path.join(R, "compare.txt")).read().split():
        k, _, v = w.partition("=")
        info[k] = v
olds, news = runs("old"), runs("new")
out = []
mo, mn = machine(olds[0]), machine(news[0])
out.append("# dpumesh: old build vs new build, same run, %s" % mo.get("date", "?"))
out.append("")
out.append("old = %s, new = %s; suites: %s; %d run(s) of each, alternating (old, new, old, new, ...); "
           "%s CPUs (%s)." % (mo.get("commit", "?"), mn.get("commit", "?"), mo.get("suites", "?"), N,
                              mo.get("cpus", "?"), mo.get("cpu", "?")))
out.append("")
out.append("Load average at each run's start → end: " + "; ".join(
    "%s: %s → %s" % (os.path.basename(d), machine(d).get("load_start", "?"), machine(d).get("load_end", "?"))
    for pair in zip(olds, news) for d in pair) + ".")
out.append("")
out.append("**new ÷ old** is the mean of the new runs over the mean of the old runs. **noise** is "
           "the spread (max − min) ÷ mean of the old runs, the same binary run %d times "
           "(— with one run: use --repeat 2 or more). A row is called **worse** or **better** only "
           "when the change is larger than the noise (of the old runs and of the new runs) and "
           "than %d%% (%s for instruction counts, which do not move between runs of one "
           "binary), and every new run is beyond every old one; otherwise **=**. Lower is "
           "better for µs, cycles, instructions and KiB; higher for rates."
           % (N, int(MIN_EFFECT * 100), "/".join("%g%%" % (100 * v) for v in sorted(set(EXACT.values())))))
out.append("")

verdicts = []
baseline_moves = []  # how far the same-binary baselines moved: a second noise measure
BASELINES = ("tcp-loopback", "haproxy-http", "testpmd-5tswap", "testpmd")


def is_baseline(key):
    return any(k in BASELINES for k in key)


files = []
for d in olds + news:
    if os.path.isdir(d):
        for fname in sorted(os.listdir(d)):
            if fname.endswith(".csv") and fname not in SKIP and fname not in files:
                files.append(fname)
for name in files:
    allrows = [r for d in olds + news for r in read(os.path.join(d, name))]
    if not allrows:
        continue
    keys, mets = spec_for(name, allrows)
    mets = [m for m in mets if any(value(r, m[0]) is not None for r in allrows)]
    if not mets:
        continue
    out.append("## %s" % name)
    out.append("")
    order = []
    for r in allrows:
        k = tuple(r.get(c, "") for c in keys)
        if k not in order:
            order.append(k)
    cols = {m[0]: (collect(name, olds, keys, m[0]), collect(name, news, keys, m[0])) for m in mets}
    worse = better = 0
    ratio_rows, abs_rows = [], []
    for k in order:
        base = is_baseline(k)
        rrow = list(k) + (["baseline (same binary)"] if base else [""])
        arow = list(k)
        for metric, direction, label in mets:
            direction = row_direction(name, allrows, keys, k, metric, direction)
            o, n = cols[metric][0].get(k, []), cols[metric][1].get(k, [])
            mo_, mn_ = mean(o), mean(n)
            if mo_ is None or mn_ is None:
                rrow.append("n/a")
                arow.append("%s → %s" % ("%.4g" % mo_ if mo_ is not None else "n/a",
                                          "%.4g" % mn_ if mn_ is not None else "n/a"))
                continue
            arow.append("%.4g → %.4g" % (mo_, mn_))
            ratio = mn_ / mo_ if mo_ else None
            noise = spread(o)
            cell = "**%.3f**" % ratio if ratio is not None else "—"
            if ratio is not None and direction:
                band = max(EXACT.get(name, MIN_EFFECT), noise or 0, spread(n) or 0)
                change = (ratio - 1) * direction
                # and the runs do not overlap: every new run beyond every old one
                apart_worse = (max(n) < min(o)) if direction > 0 else (min(n) > max(o))
                apart_better = (min(n) > max(o)) if direction > 0 else (max(n) < min(o))
                if base:
                    baseline_moves.append(abs(ratio - 1))
                    cell += " (same binary)"
                elif change < -band and apart_worse:
                    cell += " worse"
                    worse += 1
                    verdicts.append("%s %s: %s %.3f" % (name, "/".join(k), label, ratio))
                elif change > band and apart_better:
                    cell += " better"
                    better += 1
                else:
                    cell += " ="
            cell += " ±%.1f%%" % (100 * noise) if noise is not None else ""
            rrow.append(cell)
        ratio_rows.append(rrow)
        abs_rows.append(arow)
    out.append("%d figure(s) worse beyond the noise, %d better. new ÷ old (±noise: the old runs' "
               "spread):" % (worse, better))
    out.append("")
    hdr = keys + [""] + [label for _, _, label in mets]
    out.append("| " + " | ".join(hdr) + " |")
    out.append("|" + "|".join("---" if i <= len(keys) else "---:" for i in range(len(hdr))) + "|")
    for r in ratio_rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    out.append("")
    out.append("Means, old → new:")
    out.append("")
    hdr = keys + [label for _, _, label in mets]
    out.append("| " + " | ".join(hdr) + " |")
    out.append("|" + "|".join("---" if i < len(keys) else "---:" for i in range(len(hdr))) + "|")
    for r in abs_rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    out.append("")

out.insert(6, (("**Verdict: %d figure(s) worse than the old build beyond the noise:** %s" %
                (len(verdicts), "; ".join(verdicts))) if verdicts else
               "**Verdict: no figure worse than the old build beyond the noise.**") +
           (" The baselines (tcp-loopback, HAProxy, testpmd: the same binary on both sides) "
            "moved by up to %.1f%% between the old and the new runs: another measure of the "
            "noise." % (100 * max(baseline_moves)) if baseline_moves else ""))
out.insert(7, "")
out.append("## Runs")
out.append("")
for d in [x for pair in zip(olds, news) for x in pair]:
    errs = 0
    p = os.path.join(d, "anomalies.txt")
    if os.path.exists(p):
        errs = sum(1 for line in open(p) if line.startswith("ERROR"))
    out.append("- [%s](%s/summary.md): %s, %d error(s)" % (os.path.basename(d), os.path.basename(d),
                                                          machine(d).get("commit", "?"), errs))
out.append("")
with open(os.path.join(R, "summary.md"), "w") as fh:
    fh.write("\n".join(out))
