#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# A `perf record -g` profile of dpumesh, attributed to its stages: for each sample, the
# outermost stage entry point in its call chain names the stage (the lcore runner calls each
# stage's poll through a function pointer, so the poll is always a frame of its own); then the
# top self symbols within each stage. docs/benchmarks.md, "Per-stage profile".
#
#   profile.py perf-script.txt SUITE TAG OUT_CSV [TOP_N]
#
# perf-script.txt is `perf script -F comm,tid,ip,sym,dso` output (callchains indented
# under each sample). OUT_CSV gets one row per (stage, symbol) for the top TOP_N symbols of
# each stage, and one row per stage with symbol "(all)":
#   suite,tag,stage,rank,symbol,dso,samples,pct_of_stage,pct_of_process
import csv
import os
import re
import sys

# stage entry points (demangled names as perf prints them) -> stage; the first match from
# the root of the chain wins. Names from lib/port/rx.cc, lib/port/tx.cc,
# lib/sidecar/sidecar.cc (stage::poll), lib/dpa/emulator.cc (pair_poll, pair_poll_rx);
# a stage added later shows up under "lcore: chain broken" or its caller until listed here.
STAGES = [
    (re.compile(r"dpumesh::port::.*\brx_poll\b"), "port_rx"),
    (re.compile(r"dpumesh::port::.*\btx_poll\b"), "port_tx"),
    (re.compile(r"dpumesh::sidecar::.*\bpoll\b"), "sidecar"),
    (re.compile(r"dpumesh::dpa::.*\bpair_poll_rx\b"), "dpa_rx"),
    (re.compile(r"dpumesh::dpa::.*\bpair_poll\b"), "dpa_tx"),
    (re.compile(r"\brx_poll\b"), "port_rx"),
    (re.compile(r"\btx_poll\b"), "port_tx"),
    (re.compile(r"\bpair_poll_rx\b"), "dpa_rx"),
    (re.compile(r"\bpair_poll\b"), "dpa_tx"),
    (re.compile(r"sidecar::stage::poll"), "sidecar"),
]
RUNNER = re.compile(r"dpumesh::lcore::runner::(loop|lcore_main)")

FRAME = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$")


def stage_of(frames, comm):
    """frames: leaf first. The outermost stage entry point names the stage."""
    for sym, _ in reversed(frames):
        for rx, name in STAGES:
            if rx.search(sym):
                return name
    if any(RUNNER.search(s) for s, _ in frames):
        return "lcore: runner loop"  # the loop itself, the idle back-off, the clock samples
    if comm.startswith("lcore-worker") or comm.startswith("rte-worker"):
        # a leaf in a DPDK library without frame pointers (a PMD's burst, rte_hash) whose
        # chain the unwinder could not follow: the stage is unknown, the library is listed
        return "lcore: chain broken"
    return "thread " + re.sub(r"[-_]?\d+$", "", comm)


def clean(sym):
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
    return sym if sym and sym != "[unknown]" else "[unknown]"


def parse(path):
    """-> list of (comm, period, frames[(sym, dso)]) leaf first."""
    samples = []
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                if cur:
                    samples.append(cur)
                cur = None
                continue
            if not line[0].isspace():
                if cur:
                    samples.append(cur)
                # "comm  tid" (a comm may hold spaces: the tid is the last number)
                parts = line.split()
                while len(parts) > 1 and parts[-1].rstrip(":").isdigit():
                    parts.pop()
                cur = [" ".join(parts), 1, []]
                continue
            m = FRAME.match(line)
            if m and cur is not None:
                cur[2].append((clean(m.group(2)), os.path.basename(m.group(3))))
    if cur:
        samples.append(cur)
    return samples


def main(argv):
    if len(argv) < 5:
        sys.exit("usage: profile.py perf-script.txt SUITE TAG OUT_CSV [TOP_N]")
    path, suite, tag, out = argv[1:5]
    top = int(argv[5]) if len(argv) > 5 else 8
    samples = parse(path)
    total = sum(1 for _, _, fr in samples if fr) or 1
    by_stage = {}
    for comm, _, frames in samples:
        if not frames:
            continue
        st = stage_of(frames, comm)
        d = by_stage.setdefault(st, {})
        sym, dso = frames[0]
        if sym == "[unknown]":
            sym = "[unknown in %s]" % dso  # DPDK's and libc's own objects carry no symbols here
        key = (sym, dso)
        d[key] = d.get(key, 0) + 1
    new = not os.path.exists(out)
    with open(out, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["suite", "tag", "stage", "rank", "symbol", "dso", "samples", "pct_of_stage",
                        "pct_of_process"])
        order = sorted(by_stage.items(), key=lambda kv: -sum(kv[1].values()))
        for st, syms in order:
            n = sum(syms.values())
            w.writerow([suite, tag, st, 0, "(all)", "", n, "100.0", "%.1f" % (100.0 * n / total)])
            for i, ((sym, dso), c) in enumerate(sorted(syms.items(), key=lambda kv: -kv[1])[:top]):
                w.writerow([suite, tag, st, i + 1, sym, dso, c, "%.1f" % (100.0 * c / n),
                            "%.1f" % (100.0 * c / total)])
    print("profile %s %s: %d samples, %d stages" % (suite, tag, len(samples), len(by_stage)))


if __name__ == "__main__":
    main(sys.argv)
