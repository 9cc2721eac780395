#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# The forward suite's instruction count (perf/run.sh --instructions): a dpumesh run under
# valgrind's callgrind, instructions counted only inside the worker lcore's runner loop
# (--toggle-collect), divided by the messages port RX took. Instruction counts do not move
# with the box's load or the process's memory placement, so old and new builds compare in
# one run each (docs/benchmarks.md, "Instructions per message").
#
#   instructions.py RESULTS CAPTURE VARIANT CALLGRIND_OUT FINAL_COUNTERS [TOP_N]
#
# Appends to RESULTS/forward_instructions.csv (capture,variant,stage,instructions_per_msg)
# one row per stage: the loop, port RX, port TX, the sidecar and its request path, and
# RESULTS/forward_instructions_top.csv (capture,variant,rank,function,object,
# instructions_per_msg): the TOP_N functions by their own (self) instructions.
import csv
import os
import re
import subprocess
import sys

# stage -> the function whose inclusive count is the stage's (demangled, as callgrind names
# them). "sidecar_relay" is every message the sidecar took from the network (here requests,
# each relayed); "sidecar_expiry" the deadline sweep that finds the requests net_null never
# answers, "sidecar_expired" the 504s it makes of them. What scales with time rather than
# messages would count ~50x more under valgrind than at full speed (a poll lasts that much
# longer); the wheel's walk of every tick elapsed was such a cost until 2a294b3.
STAGES = [
    ("loop", "dpumesh::lcore::runner::loop("),
    ("port_rx", "dpumesh::port::rx_poll("),
    ("port_tx", "dpumesh::port::tx_poll("),
    ("sidecar", "dpumesh::sidecar::stage::poll("),
    ("sidecar_relay", "dpumesh::sidecar::stage::from_network_sources("),
    ("sidecar_expiry", "dpumesh::sidecar::request_table::expire("),
    ("sidecar_expired", "dpumesh::sidecar::stage::expired("),
]

LINE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*?)(?: \[(.*)\])?\s*$")


def annotate(path, inclusive):
    """[(instructions, function, object)] from callgrind_annotate, largest first."""
    args = ["callgrind_annotate", "--threshold=100"]
    if inclusive:
        args.append("--inclusive=yes")
    text = subprocess.run(args + [path], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        fn = m.group(2)
        # "file:function": callgrind names a function by its source file when it has one
        if ":" in fn and not fn.startswith(("dpumesh::", "std::")):
            fn = fn.split(":", 1)[1]
        rows.append((int(m.group(1).replace(",", "")), fn, m.group(3) or ""))
    return rows


def messages(final_path):
    for line in open(final_path, errors="replace"):
        if line.startswith("final stage=port_rx "):
            m = re.search(r"\bmessages=(\d+)", line)
            if m:
                return int(m.group(1))
    return 0


def append(path, header, rows):
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(header)
        w.writerows(rows)


def main():
    results, capture, variant, cg, final = sys.argv[1:6]
    top_n = int(sys.argv[6]) if len(sys.argv) > 6 else 25
    msgs = messages(final)
    if msgs < 10000:
        print("ERROR forward %s-%s: callgrind run took %d messages (raw/%s)"
              % (capture, variant, msgs, os.path.basename(final)))
        return
    incl = annotate(cg, True)
    rows = []
    for stage, prefix in STAGES:
        n = next((n for n, fn, _ in incl if fn.startswith(prefix)), None)
        if n is not None:
            rows.append([capture, variant, stage, "%.1f" % (n / msgs)])
    if not any(r[2] == "loop" for r in rows):
        print("ERROR forward %s-%s: no runner loop in the callgrind profile (%s)"
              % (capture, variant, os.path.basename(cg)))
        return
    append(os.path.join(results, "forward_instructions.csv"),
           ["capture", "variant", "stage", "instructions_per_msg"], rows)
    top = []
    for rank, (n, fn, obj) in enumerate(annotate(cg, False)[:top_n], 1):
        fn = re.sub(r"\((?!anonymous namespace\)).*$", "", fn)  # without its parameters
        top.append([capture, variant, rank, fn, os.path.basename(obj), "%.1f" % (n / msgs)])
    append(os.path.join(results, "forward_instructions_top.csv"),
           ["capture", "variant", "rank", "function", "object", "instructions_per_msg"], top)


main()
