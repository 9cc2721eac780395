#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# A small client of DPDK's telemetry v2 socket (SOCK_SEQPACKET, JSON), as dpdk-telemetry.py.
#   tel.py get SOCK CMD...                      one snapshot as JSON: {"t": ..., "data": {CMD: ...}}
#   tel.py sample SOCK WARMUP DURATION OUT CMD... two snapshots DURATION s apart -> OUT
#   tel.py wait SOCK CMD KEY N [TIMEOUT]        until len(CMD[KEY]) >= N
#   tel.py waitn SOCK CMD KEY N [TIMEOUT]       until len(CMD[KEY]) == N
#   tel.py watch SOCK PERIOD OUT CMD...         a snapshot (plus every mempool's info, and
#                                               $TEL_PID's RSS) per PERIOD s, one JSON line
#                                               each, until killed or the socket goes away
import json
import os
import signal
import socket
import sys
import time


def connect(path, timeout=20.0):
    end = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(path)
            json.loads(s.recv(1 << 16).decode())
            return s
        except OSError:
            s.close()
            if time.monotonic() > end:
                sys.exit("tel.py: no telemetry socket at %s" % path)
            time.sleep(0.1)


def _exporter():
    """scripts/dpumesh-exporter.py as a module (its name has a hyphen)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                        "dpumesh-exporter.py")
    spec = importlib.util.spec_from_file_location("dpumesh_exporter", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_query_paged = _exporter().query_paged


def query(s, cmd):
    """A command's value; a paged /dpumesh/ reply read to its end and put together (the
    exporter's query_paged)."""
    return _query_paged(s, cmd)


def rss_kb(pid):
    try:
        for line in open("/proc/%s/status" % pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def proc_cpu(pid):
    """A process's CPU now: each thread's [name, ns on a CPU] (/proc/PID/task/*/schedstat:
    user and kernel, not time it waited) and the process's utime + stime in clock ticks
    (proccpu.stat_times(), the /proc stat reader the CPU windows use)."""
    import proccpu  # perf/lib/proccpu.py (which imports this module in its functions)
    threads = []
    try:
        tids = os.listdir("/proc/%s/task" % pid)
    except OSError:
        tids = []
    for tid in tids:
        t = proccpu.stat_times("/proc/%s/task/%s/stat" % (pid, tid))
        try:
            with open("/proc/%s/task/%s/schedstat" % (pid, tid)) as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended
        if t:
            threads.append([t[0], ns])
    p = proccpu.stat_times("/proc/%s/stat" % pid)
    return {"threads": threads, "ticks": p[1] + p[2] if p else 0}


def snapshot(s, cmds, mempools=False, pid=None):
    data = {c: query(s, c) for c in cmds}
    # TEL_CPU_PID: that process's CPU read with each snapshot, so that CPU and counters
    # cover the same window (read around a `tel.py sample` run, the CPU's window held the
    # sampler's start-up and exit too: the forward suite's cycles per message read 8-24%
    # high)
    if os.environ.get("TEL_CPU_PID"):
        data["cpu"] = proc_cpu(os.environ["TEL_CPU_PID"])
    if pid:
        data["rss_kb"] = rss_kb(pid)
    if mempools:
        for name in query(s, "/mempool/list") or []:
            data["/mempool/info," + name] = query(s, "/mempool/info," + name)
    return {"t": time.monotonic(), "wall": time.time(), "data": data}


def window_delta(run, cmd, key):
    """KEY of CMD between a `tel.py sample` file's two snapshots (lists are summed)."""
    a, b = run["start"]["data"][cmd], run["end"]["data"][cmd]
    va, vb = a.get(key, 0), b.get(key, 0)
    if isinstance(va, list):
        return sum(vb) - sum(va)
    return vb - va


def window_secs(run):
    """Seconds between a `tel.py sample` file's two snapshots."""
    return run["end"]["t"] - run["start"]["t"]


def main():
    op, path = sys.argv[1], sys.argv[2]
    if op == "get":
        s = connect(path)
        print(json.dumps(snapshot(s, sys.argv[3:])))
    elif op == "sample":
        s = connect(path)
        warmup, duration, out, cmds = float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6:]
        time.sleep(warmup)
        a = snapshot(s, cmds)
        time.sleep(duration)
        b = snapshot(s, cmds)
        with open(out, "w") as f:
            json.dump({"start": a, "end": b}, f)
    elif op in ("wait", "waitn"):
        s = connect(path)
        cmd, key, n = sys.argv[3], sys.argv[4], int(sys.argv[5])
        timeout = float(sys.argv[6]) if len(sys.argv) > 6 else 30.0
        end = time.monotonic() + timeout
        done = (lambda k: k >= n) if op == "wait" else (lambda k: k == n)
        while not done(len((query(s, cmd) or {}).get(key, []))):
            if time.monotonic() > end:
                sys.exit("tel.py: %s: not %d %s after %.0f s" % (cmd, n, key, timeout))
            time.sleep(0.1)
    elif op == "watch":
        s = connect(path)
        period, out, cmds = float(sys.argv[3]), sys.argv[4], sys.argv[5:]
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        with open(out, "a") as f:
            while True:
                try:
                    f.write(json.dumps(snapshot(s, cmds, True, os.environ.get("TEL_PID"))) + "\n")
                    f.flush()
                except (OSError, ValueError):
                    return  # dpumesh went away
                time.sleep(period)
    else:
        sys.exit("tel.py: unknown operation " + op)


if __name__ == "__main__":
    main()
