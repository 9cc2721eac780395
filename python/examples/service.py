# SPDX-License-Identifier: BSD-3-Clause
"""service.py: the muBench-style sample service of app/services (dpumesh-service) in Python
on asyncio: CPU work, then the graph's stages in series with the calls of each stage in
parallel (asyncio.gather); the same arguments, fields (x-visited, x-nodes, x-digest), body
checks, 502 JSON on a downstream failure, and READY/DONE lines.

Usage: python3 service.py --socket SOCK --graph FILE --service NAME [--node NAME]
       [--body-slot BYTES] [--deadline-ms MS]
"""

import argparse
import asyncio
import json
import signal
import sys
import time

import dpumesh


def load_graph(path, name):
    """(cpu_us, stages) of `name`, or raises ValueError with the place that is wrong."""
    def no_dups(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("%s: duplicate key" % path)
        return dict(pairs)
    with open(path) as f:
        root = json.load(f, object_pairs_hook=no_dups)
    svcs = root.get("services", {}) if isinstance(root, dict) else {}
    me = svcs.get(name)
    if not isinstance(me, dict):
        raise ValueError("%s: /services/%s: not defined" % (path, name))
    cpu = me.get("cpu_us", 0)
    if not isinstance(cpu, int) or isinstance(cpu, bool) or not 0 <= cpu <= 10000000:
        raise ValueError("%s: /services/%s/cpu_us: 0-10000000 expected" % (path, name))
    stages = me.get("calls", [])
    if not isinstance(stages, list):
        raise ValueError("%s: /services/%s/calls: an array of arrays expected" % (path, name))
    for i, st in enumerate(stages):
        if not isinstance(st, list) or not st:
            raise ValueError("%s: /services/%s/calls/%d: a non-empty array of service names "
                             "expected" % (path, name, i))
        for j, c in enumerate(st):
            if not isinstance(c, str) or c not in svcs:
                raise ValueError("%s: /services/%s/calls/%d/%d: not a service of the graph"
                                 % (path, name, i, j))
    return cpu, stages


def burn(us):
    end = time.perf_counter() + us / 1e6
    x = 1
    while time.perf_counter() < end:
        for _ in range(64):
            x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF


async def main(a):
    try:
        cpu_us, stages = load_graph(a.graph, a.service)
    except (OSError, ValueError) as e:
        print("service.py: graph: %s" % e, file=sys.stderr)
        return 1
    counts = {"served": 0, "failed": 0, "calls": 0, "bad_bodies": 0}
    pod = dpumesh.Pod(a.socket, a.service, tx_slots=64, body_slots=16, body_slot=a.body_slot,
                      deadline=a.deadline_ms / 1000.0)

    async def call_one(svc, req, fields):
        counts["calls"] += 1
        with await pod.call(svc, req.body, path=req.path, fields=fields, within=req) as r:
            status = r.status
            if r.ok and bytes(r.body) != bytes(req.body):  # every service echoes its body
                counts["bad_bodies"] += 1
                status = 502
            visited = (r.field("x-visited") or "") if status == 200 else "%s!%d" % (svc, status)
            return svc, status, visited, r.field("x-nodes") or ""

    async def handler(req):
        burn(cpu_us)
        rid = req.field("x-request-id")
        fields = [("x-request-id", rid)] if rid else []
        done, failed = [], None
        for stage in stages:
            done += await asyncio.gather(*(call_one(s, req, fields) for s in stage))
            failed = next((c for c in done if c[1] != 200), None)
            if failed:
                break
        visited, nodes = a.service, "%s@%s" % (a.service, a.node)
        if done:
            visited += "(" + ",".join(c[2] for c in done) + ")"
            nodes += "".join(" " + c[3] for c in done if c[3])
        f = [("x-visited", visited), ("x-nodes", nodes),
             ("x-digest", "%08x" % dpumesh.fnv1a(req.body)),
             ("content-type", "application/octet-stream")]
        if failed:
            counts["failed"] += 1
            f[3] = ("content-type", "application/json")
            body = '{"error":"downstream","service":"%s","status":%d}\n' % (failed[0], failed[1])
            await req.respond(502, body, f)
        else:
            counts["served"] += 1
            await req.respond(200, req.body, f)

    pod.serve(handler)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("READY service=%s pod=%d node=%s stages=%d cpu_us=%d python=1"
          % (a.service, pod.pod_id, a.node, len(stages), cpu_us), flush=True)
    await stop.wait()
    print("DONE service=%s served=%d failed=%d calls=%d bad_bodies=%d"
          % (a.service, counts["served"], counts["failed"], counts["calls"], counts["bad_bodies"]),
          flush=True)
    pod.close()
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--socket", required=True)
    p.add_argument("--graph", required=True)
    p.add_argument("--service", required=True)
    p.add_argument("--node", default="-")
    p.add_argument("--body-slot", type=int, default=1114112)
    p.add_argument("--deadline-ms", type=int, default=10000)
    sys.exit(asyncio.run(main(p.parse_args())))
