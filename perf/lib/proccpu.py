#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# CPU time of processes over a benchmark's measured window, from /proc (utime and stime:
# user and kernel, every thread), so that a suite can say what a message or a round trip
# cost in CPU, not in TSC cycles (a TSC delta on a shared vCPU includes the time the thread
# was descheduled). docs/benchmarks.md, "CPU per message".
#
#   proccpu.py window DELAY DURATION OUT ROLE=PID...   sleep DELAY s, snapshot, sleep DURATION s,
#                                                      snapshot; both to OUT (JSON). Run in the
#                                                      background next to a client whose
#                                                      measured window it brackets.
#   proccpu.py snap OUT ROLE=PID...                    one snapshot appended to OUT (JSON lines);
#   proccpu.py delta FILE [RATE]                       key=value words: CPU per role (ROLE_cpu_s:
#                                                      exact on-CPU time of every thread, from
#                                                      schedstat; ROLE_user_s, ROLE_sys_s: that
#                                                      time split as utime/stime's clock ticks
#                                                      split it, absent when no tick fell), per
#                                                      dpumesh thread (thread.NAME.TID=user/sys s
#                                                      in ticks), and per unit of work (ROLE_cpu_us,
#                                                      ROLE_user_us, ROLE_sys_us: a round trip, a
#                                                      message) when RATE (units/s over the
#                                                      window) > 0: units = RATE x wall.
# ROLE "dpumesh" has its threads listed one by one; roles named pod* or client* are summed as
# "pods"; any other role (testpmd) is reported under its own name. A "tel=SOCKET" argument
# also reads dpumesh's telemetry (/dpumesh/pods, /dpumesh/dpa) at both snapshots: the delta of
# /dpumesh/dpa's "doorbells" (eventfd writes to pods) gives doorbells and doorbells_per_unit,
# and of its "doorbell_cycles" doorbell_us (µs per unit the DPA threads spent writing them),
# over the same window and while the client pod is still registered; "n/a" without it; and
# /dpumesh/stages and /dpumesh/lcore_cpu give the worker lcores' CPU split (lcore_split:
# lcore_us, work_us, stage.NAME_us, rest_us, sleeps_per_unit, doorbell_cpu_us (doorbell_us
# scaled by the DPA stages' CPU/TSC) and work_only_us = work_us less doorbell_cpu_us;
# doorbell_timed_us, the writes' CPU from the DPA's flushes timed on the thread clock (one in
# 32 that wrote) times the writes, and work_only_timed_us = work_us less that, where the build
# counts doorbell_timed_ns), and
# tx_ring_checks_per_unit, tx_rings_per_unit (the DPA's epoll_wait looks, the pods' TX
# doorbell writes). With
# "waitnew=1" (started before the client) the DELAY starts once a new pod registered (the
# client's window starts after its registration, which a loaded machine delays); a PID given
# as @FILE is read from FILE then.
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
TEL_CMDS = ("/dpumesh/pods", "/dpumesh/dpa", "/dpumesh/stages", "/dpumesh/lcore_cpu")

TICK = os.sysconf("SC_CLK_TCK")


def stat_times(path):
    """(comm, utime, stime) in ticks from a /proc stat file, or None when it is gone."""
    try:
        with open(path) as f:
            s = f.read()
    except OSError:
        return None
    close = s.rindex(")")
    comm = s[s.index("(") + 1:close]
    f = s[close + 2:].split()
    # f[0] is field 3 (state); utime is field 14, stime field 15
    return comm, int(f[11]), int(f[12])


def tel_read(sock):
    """The telemetry families in TEL_CMDS, or {} when dpumesh does not answer."""
    if not sock:
        return {}
    try:
        import tel  # perf/lib/tel.py
        s = tel.connect(sock, timeout=2.0)
        out = {c: tel.query(s, c) for c in TEL_CMDS}
        s.close()
        return out
    except (OSError, ValueError, SystemExit):
        return {}


def dpa_sum(t, name):
    """The sum over DPA threads of a /dpumesh/dpa column, None when absent (an older build).
    /dpumesh/pods counts the same doorbells per pod: summing both counted each one twice
    (the figures in docs/benchmarks-log.md before 2026-11-24 06:40 UTC are doubled)."""
    fam = t.get("/dpumesh/dpa")
    v = fam.get(name) if isinstance(fam, dict) else None
    if v is None:
        return None
    return sum(v) if isinstance(v, list) else v


def doorbells(t):
    """Eventfd writes to pods (every DPA thread), None when the build does not count them."""
    return dpa_sum(t, "doorbells")


def doorbell_seconds(t):
    """Seconds of TSC the DPA threads spent writing those eventfds, None when not counted."""
    cyc = dpa_sum(t, "doorbell_cycles")
    fam = t.get("/dpumesh/dpa")
    hz = fam.get("tsc_hz") if isinstance(fam, dict) else None
    if cyc is None or not hz:
        return None
    hz = hz[0] if isinstance(hz, list) else hz
    return cyc / hz if hz else None


def col_delta(a, b, fam, name):
    """Per row, the delta of one column of a telemetry family between two snapshots (rows
    matched by position: stages and lcores do not change while a node runs); None when
    either lacks it (an older build)."""
    fa, fb = a.get(fam), b.get(fam)
    if not isinstance(fa, dict) or not isinstance(fb, dict) or name not in fa or name not in fb:
        return None
    va, vb = fa[name], fb[name]
    if not isinstance(va, list):
        va, vb = [va], [vb]
    return [y - x for x, y in zip(va, vb)]


def lcore_split(a, b, units):
    """The worker lcores' thread CPU per unit, split (docs/benchmarks.md "What the scaling
    target is judged on"): lcore_us, the on-CPU time of every worker lcore thread
    (/dpumesh/lcore_cpu, schedstat); work_us, its polls that did work: per stage, the thread
    CPU per unit of work over the runner's sampled busy polls (its thread-clock samples, which
    leave out descheduled time) times the stage's units of work; stage.NAME_us, the same per
    stage; rest_us = lcore_us - work_us: its empty polls, its sleeps and wake-ups
    (prepare_sleep, ppoll, the switches) and the loop itself; sleeps, the lcore's voluntary
    context switches (each one a sleep it woke from) per unit."""
    out = {}
    if units <= 0:
        return out
    oncpu = col_delta(a, b, "/dpumesh/lcore_cpu", "oncpu_ns")
    names = (b.get("/dpumesh/stages") or {}).get("name")
    work = col_delta(a, b, "/dpumesh/stages", "work")
    cns = col_delta(a, b, "/dpumesh/stages", "cpu_ns")
    cwork = col_delta(a, b, "/dpumesh/stages", "cpu_work")
    if oncpu is None or work is None or cns is None or cwork is None or not names:
        return out
    lcore_ns = sum(oncpu)
    out["lcore_us"] = lcore_ns / 1e3 / units
    fam = b.get("/dpumesh/stages")
    # cumulative figures when the window holds no sample of a stage
    cum_ns, cum_work = fam["cpu_ns"], fam["cpu_work"]
    work_ns = 0.0
    stages = {}
    for i, name in enumerate(names):
        per = cns[i] / cwork[i] if cwork[i] else (cum_ns[i] / cum_work[i] if cum_work[i] else 0.0)
        ns = work[i] * per
        work_ns += ns
        stages[name] = stages.get(name, 0.0) + ns
    out["work_us"] = work_ns / 1e3 / units
    for name, ns in stages.items():
        out["stage.%s_us" % name] = ns / 1e3 / units
    out["rest_us"] = max(lcore_ns - work_ns, 0.0) / 1e3 / units
    vol = col_delta(a, b, "/dpumesh/lcore_cpu", "voluntary_switches")
    if vol is not None:
        out["sleeps_per_unit"] = sum(vol) / units
    return out


def schedstat_ns(pid):
    """The process's on-CPU ns, every thread (/proc/PID/task/*/schedstat: exact, where stat's
    utime and stime are whole clock ticks, which a process using a few ms loses)."""
    total = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def snapshot(procs, sock=None):
    snap = {"t": time.monotonic(), "procs": []}
    if sock:
        snap["tel"] = tel_read(sock)
    for role, pid in procs:
        p = stat_times("/proc/%d/stat" % pid)
        entry = {"role": role, "pid": pid, "alive": p is not None}
        if p:
            entry["comm"], entry["utime"], entry["stime"] = p
            entry["oncpu_ns"] = schedstat_ns(pid)
        if role == "dpumesh" and p:
            threads = {}
            try:
                tids = os.listdir("/proc/%d/task" % pid)
            except OSError:
                tids = []
            for tid in tids:
                t = stat_times("/proc/%d/task/%s/stat" % (pid, tid))
                if t:
                    threads[tid] = {"comm": t[0], "utime": t[1], "stime": t[2]}
            entry["threads"] = threads
        snap["procs"].append(entry)
    return snap


def parse_procs(args):
    """ROLE=PID, ROLE=@FILE (the pid read from FILE when the window starts: a process started
    after this one), tel=SOCKET, waitnew=1."""
    out, sock, waitnew = [], None, False
    for a in args:
        role, _, pid = a.partition("=")
        if role == "tel":
            sock = pid
        elif role == "waitnew":
            waitnew = pid == "1"
        elif pid.isdigit() or pid.startswith("@"):
            out.append((role, pid))
    return out, sock, waitnew


def resolve(procs):
    out = []
    for role, pid in procs:
        if pid.startswith("@"):
            try:
                with open(pid[1:]) as f:
                    pid = f.read().strip()
            except OSError:
                continue
        if pid.isdigit():
            out.append((role, int(pid)))
    return out


def pod_ids(sock):
    return set((tel_read(sock).get("/dpumesh/pods") or {}).get("pod_id", []))


def wait_new_pod(sock, before, timeout=60.0):
    """Until a pod not in BEFORE registers (the client: on a loaded machine its registration
    can take longer than the warm-up, and its window starts after it)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pod_ids(sock) - before:
            return
        time.sleep(0.01)


def cmd_window(delay, duration, out, procs, sock, waitnew=False):
    started = any(p.startswith("@") and os.path.exists(p[1:]) for _, p in procs)
    if sock and waitnew and not started:
        # started before the client (its pid file is not there yet): the pods registered now
        # are not it
        wait_new_pod(sock, pod_ids(sock), timeout=10.0)
    procs = resolve(procs)
    time.sleep(float(delay))
    a = snapshot(procs, sock)
    time.sleep(float(duration))
    b = snapshot(procs, sock)
    with open(out, "w") as f:
        json.dump({"before": a, "after": b}, f)


def delta(a, b):
    """Per role: [user s, sys s (clock ticks), on-CPU s (exact)] between two snapshots;
    dpumesh's threads by name."""
    roles = {}
    threads = {}
    before = {(e["role"], e["pid"]): e for e in a["procs"]}
    for e in b["procs"]:
        e0 = before.get((e["role"], e["pid"]))
        if not e0 or not e0.get("alive") or not e.get("alive"):
            continue
        r = roles.setdefault(e["role"], [0.0, 0.0, 0.0])
        r[0] += (e["utime"] - e0["utime"]) / TICK
        r[1] += (e["stime"] - e0["stime"]) / TICK
        if e.get("oncpu_ns") is not None and e0.get("oncpu_ns") is not None:
            r[2] += (e["oncpu_ns"] - e0["oncpu_ns"]) / 1e9
        else:
            r[2] += (e["utime"] - e0["utime"] + e["stime"] - e0["stime"]) / TICK
        if e["role"] == "dpumesh":
            for tid, t in e.get("threads", {}).items():
                t0 = e0.get("threads", {}).get(tid)
                if not t0:
                    continue
                name = "%s.%s" % (t["comm"].replace(" ", "_").replace("=", "_"), tid)
                threads[name] = ((t["utime"] - t0["utime"]) / TICK,
                                 (t["stime"] - t0["stime"]) / TICK)
    return roles, threads


def is_pod(role):
    return role.startswith("pod") or role.startswith("client")


def summarize(path, rate=0.0):
    """A window file -> dict: wall_s, per role (dpumesh, pods = every pod/client role summed,
    any other role by name) user_s, sys_s and, with RATE units/s, user/sys us per unit;
    threads: dpumesh's threads with CPU, (user s, sys s)."""
    with open(path) as f:
        d = json.load(f)
    roles, threads = delta(d["before"], d["after"])
    wall = d["after"]["t"] - d["before"]["t"]
    units = float(rate) * wall
    merged = {"dpumesh": roles.get("dpumesh", [0.0, 0.0, 0.0]),
              "pods": [sum(v[i] for k, v in roles.items() if is_pod(k)) for i in range(3)]}
    for k, v in roles.items():
        if k != "dpumesh" and not is_pod(k):
            merged[k] = v
    out = {"wall_s": wall, "units": units, "threads": {k: v for k, v in threads.items() if v[0] or v[1]},
           # processes that ended inside the window: left out (their CPU is lost), counted here
           "procs_gone": sum(1 for e in d["after"]["procs"] if not e.get("alive"))}
    for k, (u, s, t) in merged.items():
        # the exact on-CPU time, split into user and kernel as the ticks split it (the ticks
        # alone lose up to one per process and thread: pods that each use a few ms)
        out[k + "_cpu_s"] = t
        out[k + "_user_ticks_s"], out[k + "_sys_ticks_s"] = u, s
        if u + s > 0:
            out[k + "_user_s"], out[k + "_sys_s"] = t * u / (u + s), t * s / (u + s)
        if units > 0:
            out[k + "_cpu_us"] = t * 1e6 / units
            if u + s > 0:
                out[k + "_user_us"] = out[k + "_user_s"] * 1e6 / units
                out[k + "_sys_us"] = out[k + "_sys_s"] * 1e6 / units
    da, db = doorbells(d["before"].get("tel", {})), doorbells(d["after"].get("tel", {}))
    if da is not None and db is not None:
        out["doorbells"] = db - da
        if units > 0:
            out["doorbells_per_unit"] = (db - da) / units
    # the emulated DPA's share of dpumesh's CPU: the time its threads spent writing pods'
    # eventfds (TSC; on a BlueField-3 the DPA rings a pod, not an Arm core)
    sa = doorbell_seconds(d["before"].get("tel", {}))
    sb = doorbell_seconds(d["after"].get("tel", {}))
    if sa is not None and sb is not None and units > 0:
        out["doorbell_us"] = (sb - sa) * 1e6 / units
    looks = [dpa_sum(x.get("tel", {}), "tx_sq_looks") for x in (d["before"], d["after"])]
    calls = [dpa_sum(x.get("tel", {}), "tx_ready_calls") for x in (d["before"], d["after"])]
    if None not in looks and None not in calls and calls[1] > calls[0]:
        # what a DPA TX pass costs: SQ heads loaded per look for SQs with work
        out["sq_heads_per_look"] = (looks[1] - looks[0]) / (calls[1] - calls[0])
    for name in ("tx_ring_checks", "tx_rings"):
        v = [dpa_sum(x.get("tel", {}), name) for x in (d["before"], d["after"])]
        if None not in v and units > 0:
            # syscalls of the pod -> DPA doorbells per unit: the DPA's epoll_wait looks, and
            # the pods' TX doorbell writes it took
            out[name + "_per_unit"] = (v[1] - v[0]) / units
    split = lcore_split(d["before"].get("tel", {}), d["after"].get("tel", {}), units)
    out.update(split)
    if "work_us" in split and "doorbell_us" in out:
        # the work itself: polls that did work, less the emulated DPA's eventfd writes. Those
        # are counted in TSC, which includes the time the lcore was descheduled inside them
        # (a loaded box preempts it there, at the syscall's exit): scaled by CPU/TSC over the
        # DPA stages' sampled busy polls, as the work figure leaves descheduled time out
        ra, rb = d["before"].get("tel", {}), d["after"].get("tel", {})
        names = (rb.get("/dpumesh/stages") or {}).get("name") or []
        cns = col_delta(ra, rb, "/dpumesh/stages", "cpu_ns") or []
        ctsc = col_delta(ra, rb, "/dpumesh/stages", "cpu_tsc") or []
        hz = (rb.get("/dpumesh/dpa") or {}).get("tsc_hz")
        hz = hz[0] if isinstance(hz, list) and hz else hz
        ns = sum(cns[i] for i, n in enumerate(names) if n.startswith("dpa") and i < len(cns))
        tsc = sum(ctsc[i] for i, n in enumerate(names) if n.startswith("dpa") and i < len(ctsc))
        r = ns / (tsc * 1e9 / hz) if tsc and hz else 1.0
        out["doorbell_cpu_us"] = out["doorbell_us"] * min(r, 1.0)
        out["work_only_us"] = max(split["work_us"] - out["doorbell_cpu_us"], 0.0)
    tn = [dpa_sum(x.get("tel", {}), "doorbell_timed_ns") for x in (d["before"], d["after"])]
    tw = [dpa_sum(x.get("tel", {}), "doorbell_timed_writes") for x in (d["before"], d["after"])]
    if "work_us" in split and "doorbells" in out and None not in tn and None not in tw and tw[1] > 0:
        # the same, with the writes' CPU from the DPA's timed flushes (one in 32 that wrote,
        # on the thread clock: no descheduled time in it) times the writes in the window;
        # the whole run's figure when the window holds too few timed flushes
        per = (tn[1] - tn[0]) / (tw[1] - tw[0]) if tw[1] - tw[0] >= 16 else tn[1] / tw[1]
        out["doorbell_timed_us"] = out["doorbells"] * per / 1e3 / units
        out["work_only_timed_us"] = max(split["work_us"] - out["doorbell_timed_us"], 0.0)
    return out


def cmd_delta(path, rate):
    s = summarize(path, float(rate))
    words = []
    for k, v in s.items():
        if k == "threads":
            continue
        words.append("%s=%.4g" % (k, v) if k.startswith("doorbells") else "%s=%.3f" % (k, v))
    if "doorbells" not in s:
        words += ["doorbells=n/a", "doorbells_per_unit=n/a"]
    for name, (u, st) in sorted(s["threads"].items()):
        words.append("thread.%s=%.3f/%.3f" % (name, u, st))
    print(" ".join(words))


def main(argv):
    if len(argv) >= 5 and argv[1] == "window":
        cmd_window(argv[2], argv[3], argv[4], *parse_procs(argv[5:]))
    elif len(argv) >= 3 and argv[1] == "snap":
        procs, sock, _ = parse_procs(argv[3:])
        with open(argv[2], "a") as f:
            f.write(json.dumps(snapshot(resolve(procs), sock)) + "\n")
    elif len(argv) in (3, 4) and argv[1] == "delta":
        cmd_delta(argv[2], argv[3] if len(argv) == 4 else 0)
    else:
        sys.exit(__doc__ if __doc__ else "usage: proccpu.py window|snap|delta ...")


if __name__ == "__main__":
    main(sys.argv)
