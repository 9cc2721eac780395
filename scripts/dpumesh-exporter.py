#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Prometheus exporter for dpumesh: reads /dpumesh/... over DPDK telemetry, serves /metrics.

    scripts/dpumesh-exporter.py --file-prefix node1 --port 9464
    curl -s http://127.0.0.1:9464/metrics

It connects to the telemetry socket of a running dpumesh (the same one dpdk-telemetry.py
uses: <runtime dir>/dpdk_telemetry.v2, i.e. /var/run/dpdk/<file-prefix>/ as root) for each
scrape, so it may start before dpumesh and survives restarts. Standard library only.
"""
import argparse
import json
import os
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def runtime_dir(prefix):
    if os.getuid() == 0:
        base = "/var/run/dpdk"
    else:
        base = os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")
    return os.path.join(base, prefix)


def query_paged(sock, cmd, max_len=1 << 20):
    """The value of a command's reply on a telemetry v2 socket. A /dpumesh/ reply too long
    for one DPDK reply comes in pages (docs/console.md, "Long listings"): each says where the
    next starts ("next"); the pages are read to the end and put together (a table's columns
    extended, listed entries merged). perf/lib/tel.py reads its replies with this too."""
    base = cmd.split(",")[0]
    whole, page = None, cmd
    for _ in range(65536):  # a bound: every page moves on by one entry at least
        sock.send(page.encode())
        reply = json.loads(sock.recv(max_len).decode()).get(base)
        if not isinstance(reply, dict):
            return reply if whole is None else whole
        nxt = reply.get("next")
        if isinstance(nxt, int):  # the pages' own key (an entry is never keyed "next")
            del reply["next"]
        else:
            nxt = None
        if whole is None:
            whole = reply
        else:
            for k, v in reply.items():
                if isinstance(v, list) and isinstance(whole.get(k), list):
                    whole[k].extend(v)
                else:
                    whole[k] = v
        if nxt is None:
            break
        page = "%s,%d" % (base, nxt)
    return whole


class Telemetry:
    """One connection to a DPDK telemetry v2 socket (SOCK_SEQPACKET, JSON replies)."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(5)
        self.sock.connect(path)
        hello = json.loads(self.sock.recv(4096).decode())
        self.max_len = int(hello.get("max_output_len", 16384))

    def query(self, cmd):
        return query_paged(self.sock, cmd, self.max_len)

    def close(self):
        self.sock.close()


def esc(v):
    return str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Exposition:
    """Prometheus text format 0.0.4: HELP/TYPE once per family, then samples."""

    def __init__(self):
        self.lines = []
        self.seen = set()

    def add(self, name, kind, help_text, value, labels=None):
        if name not in self.seen:
            self.seen.add(name)
            self.lines.append("# HELP %s %s" % (name, help_text))
            self.lines.append("# TYPE %s %s" % (name, kind))
        lab = ""
        if labels:
            lab = "{" + ",".join('%s="%s"' % (k, esc(v)) for k, v in labels.items()) + "}"
        self.lines.append("%s%s %s" % (name, lab, value))

    def text(self):
        return "\n".join(self.lines) + "\n"


PORT_COUNTERS = [
    ("rx_packets", "packets received"), ("rx_bytes", "bytes received"),
    ("rx_missed", "packets missed by the NIC"), ("rx_errors", "erroneous received packets"),
    ("rx_nombuf", "RX mbuf allocation failures"), ("tx_packets", "packets sent"),
    ("tx_bytes", "bytes sent"), ("tx_errors", "failed transmissions"),
]
STAGE_COUNTERS = [
    ("calls", "poll calls"), ("work", "units of work (packets, descriptors)"),
    ("busy_cycles", "TSC cycles in polls that did work"),
    ("idle_cycles", "TSC cycles in polls that found nothing"),
]


def collect(path):
    t = Telemetry(path)
    try:
        ports = t.query("/dpumesh/ports") or {}
        stages = t.query("/dpumesh/stages") or {}
        drops = t.query("/dpumesh/drops") or {}
        cfg = t.query("/dpumesh/config") or {}
        policy = t.query("/dpumesh/policy") or {}
        metrics = t.query("/dpumesh/metrics") or {}
        latency = t.query("/dpumesh/latency") or {}
    finally:
        t.close()
    e = Exposition()
    node = cfg.get("node", "")
    e.add("dpumesh_up", "gauge", "1 when the telemetry socket answered", 1, {"node": node})
    e.add("dpumesh_forwarding", "gauge", "1 while data-path lcores poll (console start/stop)",
          cfg.get("forwarding", 0), {"node": node})
    for i, pid in enumerate(ports.get("port_id", [])):
        labels = {"port": pid, "name": ports["name"][i]}
        for key, text in PORT_COUNTERS:
            e.add("dpumesh_port_%s_total" % key, "counter", text, ports[key][i], labels)
        e.add("dpumesh_port_link_up", "gauge", "1 when the link is up", ports["link_up"][i],
              labels)
    for i, name in enumerate(stages.get("name", [])):
        labels = {"stage": name, "lcore": stages["lcore"][i]}
        for key, text in STAGE_COUNTERS:
            e.add("dpumesh_stage_%s_total" % key, "counter", text, stages[key][i], labels)
    for key in ("frames", "bytes", "accepted", "messages"):
        e.add("dpumesh_port_rx_stage_%s_total" % key, "counter",
              "port_rx stage: %s seen" % key, drops.get(key, 0))
    for reason, value in drops.items():
        if reason in ("frames", "bytes", "accepted", "messages", "in_reassembly"):
            continue
        e.add("dpumesh_port_rx_drops_total", "counter", "port_rx drops by reason", value,
              {"reason": reason})
    add_policy(e, policy, metrics, latency)
    return e.text()


METRIC_COUNTERS = [
    ("requests", "requests the sidecar took"), ("refused", "requests refused by the mesh here"),
    ("mesh_generated", "answers made by the mesh"), ("retries", "attempts after the first"),
    ("timeouts", "504 timeouts made here"),
]


def add_policy(e, policy, metrics, latency):
    """L7 policy verdicts, breaker states, request metrics and latency histograms."""
    if policy:
        e.add("dpumesh_policy_version", "gauge", "published routing and policy version",
              policy.get("version", 0))
    for key, value in policy.items():
        if key.startswith("verdict_"):
            e.add("dpumesh_policy_verdicts_total", "counter",
                  "policy verdicts by reason (this policy version)", value,
                  {"reason": key[len("verdict_"):]})
        elif key.startswith("breaker/") and isinstance(value, dict):
            for state in ("closed", "open", "half_open"):
                e.add("dpumesh_breaker_state", "gauge", "1 for the breaker's current state",
                      int(value.get("state") == state),
                      {"service": value.get("service", key[len("breaker/"):]), "state": state})
        elif key != "version":
            e.add("dpumesh_policy_%s_total" % key, "counter",
                  "policy engine counter (this policy version)", value)
    # the names come from each entry: a key is the name made a telemetry key (docs/console.md)
    routes = set()
    for name, m in metrics.items():
        if "route" in m:
            route = m["route"]
            if (m["service"], route) in routes:  # prefixes alike in their first 127 bytes
                route = "%s [%s]" % (route, name)
            routes.add((m["service"], route))
            labels, family = {"service": m["service"], "route": route}, "dpumesh_route"
        else:
            labels, family = {"service": m.get("service", name)}, "dpumesh_service"
        for key, text in METRIC_COUNTERS:
            e.add("%s_%s_total" % (family, key), "counter", text, m.get(key, 0), labels)
        for cls in ("1xx", "2xx", "3xx", "4xx", "5xx"):
            e.add("%s_answers_total" % family, "counter", "answers to the origin by status class",
                  m.get(cls, 0), dict(labels, code=cls))
    if latency:
        e.lines.append("# HELP dpumesh_service_latency_seconds request taken -> answer passed "
                       "on, by service (log2 buckets)")
        e.lines.append("# TYPE dpumesh_service_latency_seconds histogram")
    for key, buckets in latency.items():
        m = metrics.get(key, {})  # the same key as the service's metrics
        service = m.get("service", key)
        total = 0
        for k, count in enumerate(buckets):
            total += count
            le = "+Inf" if k == len(buckets) - 1 else "%g" % ((1 << k) / 1e6)
            e.lines.append('dpumesh_service_latency_seconds_bucket{service="%s",le="%s"} %d'
                           % (esc(service), le, total))
        e.lines.append('dpumesh_service_latency_seconds_sum{service="%s"} %g'
                       % (esc(service), m.get("latency_sum_us", 0) / 1e6))
        e.lines.append('dpumesh_service_latency_seconds_count{service="%s"} %d' % (esc(service), total))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True,
                    help="HTTP port to serve /metrics on (0: pick a free one)")
    ap.add_argument("--bind", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    ap.add_argument("--file-prefix", default="rte", help="dpumesh's EAL --file-prefix")
    ap.add_argument("--socket", help="telemetry socket path (overrides --file-prefix)")
    args = ap.parse_args()
    path = args.socket or os.path.join(runtime_dir(args.file_prefix), "dpdk_telemetry.v2")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics is served")
                return
            try:
                body = collect(path).encode()
                code = 200
            except (OSError, ValueError) as err:
                body = ("# dpumesh telemetry at %s: %s\ndpumesh_up 0\n" % (path, err)).encode()
                code = 503
            except Exception as err:  # a reply not of the shape read here: say so, answer
                body = ("# dpumesh telemetry at %s: unexpected reply: %s: %s\ndpumesh_up 0\n"
                        % (path, type(err).__name__, err)).encode()
                code = 503
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *a):
            pass

    srv = ThreadingHTTPServer((args.bind, args.port), Handler)
    host, port = srv.server_address[:2]
    print("dpumesh-exporter: serving http://%s:%d/metrics from %s" % (host, port, path),
          flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
