#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# The forward suite's instruction count (perf/run.sh --instructions): a dpumesh run under
# valgrind's callgrind, instructions counted only inside the worker lcore's runner loop
# (--toggle-collect), divided by the messages port RX took. Instruction counts do not move
# with the box's load or the process's memory placement, so old and new builds compare in
# one run each (docs/benchmarks.md, "Instructions per message").
#
#   instructions.py RESULTS CAPTURE VARIANT CALLGRIND_OUT FINAL_COUNTERS [TOP_N
#                   [TESTPMD_CALLGRIND_OUT TESTPMD_LOG]]
#
# Appends to RESULTS/forward_instructions.csv (capture,variant,stage,instructions_per_msg)
# one row per stage: the loop, port RX, port TX, the sidecar and its request path, and
# `net_pcap`: what of the loop is the net_pcap PMD's own code (its RX from the capture, its
# TX that drops, and the TLS lookups its per-lcore mempool cache makes from a dlopen'd
# object), the same for dpumesh and testpmd; and RESULTS/forward_instructions_top.csv
# (capture,variant,rank,function,object,instructions_per_msg): the TOP_N functions by their
# own (self) instructions. With testpmd's callgrind files (--separate-threads, the prefix)
# and its log, two more stages: `testpmd_loop` (dpdk-testpmd 5tswap's forwarding lcore, its
# instructions a frame on the same capture) and `testpmd_net_pcap` (of which net_pcap's).
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


# the PMD's share of a thread's own instructions: net_pcap (no symbols: by its object) and
# the dynamic TLS lookups of a dlopen'd object (ld.so's __tls_get_addr: only the PMD makes
# them on these paths; dpumesh and testpmd reach their lcore id through initial-exec TLS)
def pmd_share(rows):
    return sum(n for n, fn, obj in rows
               if "librte_net_pcap" in obj or fn.endswith("__tls_get_addr"))


def testpmd_counts(prefix, log_path):
    """(instructions a frame, net_pcap's of them) of testpmd's forwarding lcore, or None.
    Thread 1 is the main thread (EAL and port start-up, the statistics); the forwarding
    lcore is the largest of the others (the interrupt and telemetry threads wait)."""
    d = os.path.dirname(prefix) or "."
    base = os.path.basename(prefix)
    best = None
    for f in os.listdir(d):
        m = re.fullmatch(re.escape(base) + r"-(\d+)", f)
        if not m or int(m.group(1)) == 1:
            continue
        path = os.path.join(d, f)
        total = 0
        for line in open(path, errors="replace"):
            if line.startswith("totals:"):
                total = int(line.split()[1])
                break
        if best is None or total > best[0]:
            best = (total, path)
    frames = 0
    for line in open(log_path, errors="replace"):
        m = re.search(r"RX-packets:\s*(\d+)", line)
        if m:
            frames = int(m.group(1))  # the last: the statistics printed at exit
    if best is None or frames < 10000:
        return None
    return best[0] / frames, pmd_share(annotate(best[1], False)) / frames


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
    own = annotate(cg, False)
    rows.append([capture, variant, "net_pcap", "%.1f" % (pmd_share(own) / msgs)])
    if len(sys.argv) > 8 and sys.argv[7] and sys.argv[8]:
        tp = testpmd_counts(sys.argv[7], sys.argv[8])
        if tp is None:
            print("ERROR forward %s-%s: no forwarding lcore or frames in testpmd's callgrind "
                  "run (%s)" % (capture, variant, os.path.basename(sys.argv[8])))
        else:
            rows.append([capture, variant, "testpmd_loop", "%.1f" % tp[0]])
            rows.append([capture, variant, "testpmd_net_pcap", "%.1f" % tp[1]])
    append(os.path.join(results, "forward_instructions.csv"),
           ["capture", "variant", "stage", "instructions_per_msg"], rows)
    top = []
    for rank, (n, fn, obj) in enumerate(own[:top_n], 1):
        fn = re.sub(r"\((?!anonymous namespace\)).*$", "", fn)  # without its parameters
        top.append([capture, variant, rank, fn, os.path.basename(obj), "%.1f" % (n / msgs)])
    append(os.path.join(results, "forward_instructions_top.csv"),
           ["capture", "variant", "rank", "function", "object", "instructions_per_msg"], top)


main()
