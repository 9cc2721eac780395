#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The ingress gateway alone, side by side across builds: what it holds and what it costs.

A benchmark, not a test (docs/benchmarks.md, "The gateway alone"). Root: each run is a
dpumesh-gateway in a network namespace of its own, with one node address where nothing
listens, so a request routed to the mesh waits for the gateway's 504.

  flood      CLIENTS clients post a BODY-byte body each at once, every request waiting for
             its 504: the answers, the time, the gateway's resident memory before and at its
             peak (VmHWM), and its buffered-bytes peak and waits where the build has them.
  keepalive  8 keep-alive connections pipeline 4000 POSTs of 1 KiB each to a path with no
             route (the gateway's own 404): the gateway's CPU a request (utime + stime).

  perf/gateway-limits.py flood BIN[:BOUND] ... [--clients 200] [--body 1048576] [--rounds 1]
  perf/gateway-limits.py keepalive BIN ... [--rounds 3]

BIN is a dpumesh-gateway (an old and a new build's, say); BOUND sets limits.max_buffered_bytes
(a build that does not know the key refuses it).
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

NS = "dpmgl-%d" % (os.getpid() % 100000)


def netns(*args):
    subprocess.run(["ip", "netns"] + list(args), check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def in_ns():
    """Moves this process into NS (Python 3.11 has no os.setns: libc's setns)."""
    import ctypes
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    fd = os.open("/var/run/netns/" + NS, os.O_RDONLY)
    if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
        sys.exit("setns: %s" % os.strerror(ctypes.get_errno()))
    os.close(fd)


def exchange(port, data, timeout=None):
    """Sends data to 127.0.0.1:port and reads until the peer closes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
    s.close()
    return out


class gateway:
    def __init__(self, binary, limits, request_ms):
        cfg = {"listen": "127.0.0.1:8080", "admin": "127.0.0.1:9901",
               "mesh": {"bind": "127.0.0.1:0"},
               "nodes": [{"name": "n1", "address": "127.0.0.1:7000"}],
               "routes": [{"prefix": "/s0", "service": "s0", "nodes": ["n1"]}],
               "limits": limits,
               "timeouts": {"request_ms": request_ms, "read_ms": 120000, "idle_ms": 120000}}
        self.cfg = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(cfg, self.cfg)
        self.cfg.close()
        self.proc = subprocess.Popen([binary, "--config", self.cfg.name],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        if "READY" not in line:
            sys.exit("%s: %s%s" % (binary, line, self.proc.stdout.read()))

    def status(self, key):
        st = open("/proc/%d/status" % self.proc.pid).read()
        return int(re.search(key + r":\s+(\d+)", st).group(1)) // 1024

    def cpu_ticks(self):
        f = open("/proc/%d/stat" % self.proc.pid).read().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])

    def metrics(self):
        return exchange(9901, b"GET /metrics HTTP/1.0\r\n\r\n").decode()

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        os.unlink(self.cfg.name)


def metric(text, name):
    m = re.search(r"\n" + re.escape(name) + r" (\d+)", text)
    return int(m.group(1)) if m else None


def flood(spec, clients, body):
    binary, _, bound = spec.partition(":")
    limits = {"max_body_bytes": body}
    if bound:
        limits["max_buffered_bytes"] = int(bound)
    gw = gateway(binary, limits, 2000)
    rss0 = gw.status("VmRSS")
    req = ("POST /s0/upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
           % body).encode() + b"x" * body
    codes, lock = [], threading.Lock()

    def client():
        code = "none"
        try:
            code = exchange(8080, req, timeout=300)[9:12].decode() or "closed"
        except OSError as e:
            code = type(e).__name__
        with lock:
            codes.append(code)

    t0 = time.time()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - t0
    m = gw.metrics()
    peak, waits = metric(m, "dpumesh_ingress_buffered_bytes_peak"), metric(m, "dpumesh_ingress_read_paused_total")
    tally = {c: codes.count(c) for c in sorted(set(codes))}
    print("%s%s: %d clients x %d B: answers %s in %.1f s; resident %d MiB before, peak %d MiB; "
          "buffered peak %s, waits %s" % (
              binary, (" bound=%s" % bound) if bound else "", clients, body, tally, took, rss0,
              gw.status("VmHWM"), "-" if peak is None else "%.1f MiB" % (peak / 1048576),
              "-" if waits is None else waits), flush=True)
    gw.stop()


def keepalive(binary, conns=8, per=4000):
    gw = gateway(binary, {}, 2000)
    req = b"POST /none HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\n" + b"y" * 1024

    def client():
        s = socket.create_connection(("127.0.0.1", 8080))
        got = 0

        def reader():
            nonlocal got
            while got < per:
                d = s.recv(1 << 16)
                if not d:
                    break
                got += d.count(b"HTTP/1.1 404")
        t = threading.Thread(target=reader)
        t.start()
        for _ in range(0, per, 50):
            s.sendall(req * 50)
        t.join()
        s.close()

    t0, w0 = gw.cpu_ticks(), time.time()
    threads = [threading.Thread(target=client) for _ in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ticks, wall = gw.cpu_ticks() - t0, time.time() - w0
    n = conns * per
    hz = os.sysconf("SC_CLK_TCK")
    print("%s: %d requests in %.2f s, gateway CPU %.2f s = %.1f us a request, peak resident %d MiB"
          % (binary, n, wall, ticks / hz, ticks / hz * 1e6 / n, gw.status("VmHWM")), flush=True)
    gw.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["flood", "keepalive"])
    ap.add_argument("gateways", nargs="+", metavar="BIN[:BOUND]")
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--body", type=int, default=1 << 20)
    ap.add_argument("--rounds", type=int, default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("gateway-limits.py: needs root (a network namespace)")
    netns("del", NS)
    netns("add", NS)
    subprocess.run(["ip", "-n", NS, "link", "set", "lo", "up"], check=True)
    try:
        in_ns()
        print("host: %d CPUs; load %s" % (os.cpu_count(), open("/proc/loadavg").read().split()[0]))
        for _ in range(a.rounds or (1 if a.mode == "flood" else 3)):
            for g in a.gateways:
                if a.mode == "flood":
                    flood(g, a.clients, a.body)
                else:
                    keepalive(g.partition(":")[0])
    finally:
        netns("del", NS)


if __name__ == "__main__":
    main()
