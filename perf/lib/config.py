#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Writes a dpumesh node config (docs/config.md) for a perf suite on stdout.
#   config.py --sock PATH [--port DEV] [--services echo:16,client:4] [--idle busy|adaptive]
#             [--worker LCORE] [--mbufs N] [--body-slots N] [--body-size B]
#             [--timeout-ms MS] [--from conf/default.json] [--relay SVC,...]
#             [--policy FILE] [--admit-beyond-slots N]
#             [--dest-queue-share N]
# Every service gets a local route, except those named by --relay: they are served by the
# peer "p2" (192.168.50.3), so requests for them from the network are relayed there (the
# forward suite). --policy merges a JSON object into /policy (JWT, RBAC, rate limits). --from starts from an existing config (footprint: the
# defaults) and only replaces the control socket (and the port device when given).
import argparse
import json
import os

p = argparse.ArgumentParser()
p.add_argument("--sock", required=True)
p.add_argument("--port")
p.add_argument("--services", default="echo:16,client:4")
p.add_argument("--idle", default="adaptive")
p.add_argument("--worker", type=int, default=1)
p.add_argument("--mbufs", type=int, default=8191)
p.add_argument("--body-slots", type=int, default=256)
p.add_argument("--body-size", type=int, default=65536)
p.add_argument("--header-slots", type=int, default=256)
p.add_argument("--timeout-ms", type=int, default=5000)
p.add_argument("--from", dest="base")
p.add_argument("--relay", default="")
p.add_argument("--policy")
p.add_argument("--dest-queue-share", type=int,
               help="pools.dest_queue.per_destination (a build without admit_beyond_slots)")
p.add_argument("--admit-beyond-slots", type=int,
               help="pools.dest_queue.admit_beyond_slots: requests a pod may have in "
                    "flight beyond its RX slots (the overload suite)")
p.add_argument("--queues", type=int, default=1,
               help="the port's rx_queues and tx_queues (a node of N workers: N, with a "
                    "generator that sends on as many: dpumesh-replay --queues N)")
p.add_argument("--requests-per-source", type=int,
               help="pools.quota.requests_per_source: pending requests per network address "
                    "(the forward suite's one client address relays far more than the default)")
a = p.parse_args()

if a.base:
    cfg = json.load(open(a.base))
    cfg["node"]["control_socket"] = a.sock
    if a.port:
        cfg["ports"][0]["dev"] = a.port
    print(json.dumps(cfg, indent=2))
    raise SystemExit(0)

services = []
for s in a.services.split(","):
    name, _, n = s.partition(":")
    services.append({"name": name, "max_pods": int(n or 16)})
w = a.worker
relay = set(x for x in a.relay.split(",") if x)
cfg = {
    "version": 1,
    # the node's addresses are the ones dpumesh-pcapgen's captures are sent to
    "node": {"name": "perf", "mac": "02:00:00:00:00:01", "ipv4": "192.168.50.1",
             "ipv6": "fd00:50::1", "mesh_port": 7000, "control_socket": a.sock},
    "ports": [dict({"name": "uplink", "dev": a.port, "role": "external"},
                   **({"rx_queues": a.queues, "tx_queues": a.queues} if a.queues > 1 else {}))]
             if a.port else [],
    "mempool": {"mbufs": a.mbufs, "cache": 256, "data_room": 2176},
    # DPUMESH_PERF_SPIN_US: lcores.spin_us (a build that knows the key: not with --baseline
    # of an older one)
    "lcores": dict({"idle": a.idle,
                    "stages": dict({"sidecar": w, "dpa": w},
                                   **({"port_rx": w, "port_tx": w} if a.port else {}))},
                   **({"spin_us": int(os.environ["DPUMESH_PERF_SPIN_US"])}
                      if os.environ.get("DPUMESH_PERF_SPIN_US") else {})),
    "pools": {
        "tx_header": {"slots": a.header_slots, "slot_size": 1024},
        "tx_body": {"slots": a.body_slots, "slot_size": a.body_size},
        "rx_header": {"slots": a.header_slots, "slot_size": 1024},
        "rx_body": {"slots": a.body_slots, "slot_size": a.body_size},
        "sq_depth": 256,
    },
    "services": services,
    "routes": [{"service": s["name"], "to": "p2" if s["name"] in relay else "local"}
               for s in services],
    "policy": dict({"default_timeout_ms": a.timeout_ms},
                   **(json.load(open(a.policy)) if a.policy else {})),
    "dpa": {"backend": "emu", "threads": 1},
    "dma": {"backend": "cpu"},  # dpumesh --dma picks the engine
}
if a.admit_beyond_slots is not None:
    cfg["pools"].setdefault("dest_queue", {})["admit_beyond_slots"] = a.admit_beyond_slots
if a.dest_queue_share is not None:
    cfg["pools"].setdefault("dest_queue", {})["per_destination"] = a.dest_queue_share
if a.requests_per_source is not None:
    cfg["pools"].setdefault("quota", {})["requests_per_source"] = a.requests_per_source
if relay:
    cfg["peers"] = [{"name": "p2", "mac": "02:00:00:00:00:03", "ipv4": "192.168.50.3",
                     "ipv6": "fd00:50::3", "mesh_port": 7000}]
if not a.port:
    del cfg["ports"]
print(json.dumps(cfg, indent=2))
