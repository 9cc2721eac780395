# SPDX-License-Identifier: BSD-3-Clause
"""The dpumesh asyncio package against a mesh process (dpumesh-test-mesh: registrar and
CPU-copy mover) and C pods (dpumesh-pod): round trips with memoryview bodies, parallel calls,
errors as values, deadlines, back-pressure with tiny pools, handlers that fail, and the
docs' Python example run as written. Run by CTest (python_test) after `pip install .`."""

import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time

import pytest

import dpumesh

MESH = os.environ["DPUMESH_TEST_MESH"]
POD = os.environ["DPUMESH_POD"]
DOCS = os.environ["DPUMESH_DOCS"]


def _wait_line(proc, word, limit=20.0):
    end = time.time() + limit
    while time.time() < end:
        line = proc.stdout.readline()
        if word in line:
            return line
        if not line and proc.poll() is not None:
            break
    raise AssertionError("no %s from %s" % (word, proc.args))


@pytest.fixture()
def mesh():
    with tempfile.TemporaryDirectory(prefix="dpumesh-py-") as d:
        sock = os.path.join(d, "mesh.sock")
        p = subprocess.Popen([MESH, sock, "echo", "client", "slow", "nobody", "cecho", "front"],
                             stdout=subprocess.PIPE, text=True)
        _wait_line(p, "READY")
        yield sock
        p.terminate()
        p.wait(10)


@pytest.fixture()
def sock_dir():
    with tempfile.TemporaryDirectory(prefix="dpumesh-py-") as d:
        yield d


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def echo_handler(pod):
    async def handler(req):
        assert isinstance(req.body, memoryview)
        await req.respond(200, req.body, [("x-tag", req.field("x-tag") or "-")])
    return handler


async def late_echo(req):
    """Answers with the body after the seconds the body says."""
    await asyncio.sleep(float(bytes(req.body)))
    await req.respond(200, req.body)


def test_round_trip_with_memoryview_bodies(mesh):
    async def main():
        server = dpumesh.Pod(mesh, "echo")
        server.serve(echo_handler(server))
        client = dpumesh.Pod(mesh, "client")
        for i in range(30):
            body = b"hello %d" % i
            with await client.call("echo", body, path="/e", fields=[("x-tag", "t%d" % i)]) as r:
                assert r.status == 200, r.reason
                assert isinstance(r.body, memoryview)
                assert bytes(r.body) == body
                assert r.field("x-tag") == "t%d" % i
        assert server.stats["requests"] == 30
        client.close()
        server.close()
    run(main())


def test_parallel_calls_and_a_c_pod(mesh):
    cpod = subprocess.Popen([POD, "echo", mesh], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, DPUMESH_POD_SERVICE="cecho"))
    try:
        _wait_line(cpod, "READY")

        async def main():
            client = dpumesh.Pod(mesh, "client")
            bodies = [os.urandom(n) for n in (0, 1, 100, 4096, 8000)]
            replies = await asyncio.gather(*(client.call("cecho", b) for b in bodies))
            for b, r in zip(bodies, replies):
                assert r.status == 200 and bytes(r.body) == b
                assert r.field("x-sum") is not None  # the C echo's checksum field
                r.release()
            client.close()
        run(main())
    finally:
        cpod.terminate()
        cpod.wait(10)


def test_errors_are_values_and_deadlines(mesh):
    async def main():
        slow = dpumesh.Pod(mesh, "slow")
        slow.serve(late_echo)
        client = dpumesh.Pod(mesh, "client")
        r = await client.call("nobody", b"x")
        assert (r.status, r.reason, r.hop) == (503, "no_live_pod", "mesh")
        r = await client.call("echo", b"x" * 9000)  # over the 8 KiB TX body slot
        assert (r.status, r.reason, r.hop) == (413, "too_large", "pod")
        t0 = time.monotonic()
        r = await client.call("slow", b"0.5", deadline=0.05)
        assert (r.status, r.reason, r.hop) == (504, "deadline", "pod")
        assert time.monotonic() - t0 < 0.4
        await asyncio.sleep(0.6)  # the late answer arrives and is dropped
        assert client.stats["late"] == 1
        r = await client.call("slow", b"0")
        assert r.status == 200
        client.close()
        slow.close()
    run(main())


def test_a_call_made_for_a_request_gets_what_is_left_of_its_deadline(mesh):
    """within=req: the middle pod's call to a server that takes 2 s ends with its 504 when
    the 150 ms its caller gave it run out, not at its own default of 5 s."""
    async def main():
        slow = dpumesh.Pod(mesh, "slow")
        slow.serve(late_echo)
        middle = dpumesh.Pod(mesh, "echo")
        seen = {}

        async def relay(req):
            seen["left"] = req.time_left()
            t0 = time.monotonic()
            r = await middle.call("slow", b"2", within=req)
            seen["took"] = time.monotonic() - t0
            seen["status"] = (r.status, r.reason, r.hop)
            await req.respond(r.status)
            seen["after"] = req.time_left()
        middle.serve(relay)
        client = dpumesh.Pod(mesh, "client")
        r = await client.call("echo", b"x", deadline=0.15)
        assert r.status == 504
        for _ in range(100):
            if "after" in seen:
                break
            await asyncio.sleep(0.02)
        assert 0.1 < seen["left"] <= 0.15, seen
        assert seen["status"] == (504, "deadline", "pod"), seen
        assert 0.09 <= seen["took"] < 1.0, seen
        assert seen["after"] is None
        client.close()
        middle.close()
        slow.close()
    run(main())


def test_a_node_that_goes_away_ends_calls_with_node_lost(sock_dir):
    """The mesh process killed while a call waits: the call ends 503 node_lost at once (not
    at its 30 s deadline), later calls too, and the pod says so (node_lost)."""
    sock = os.path.join(sock_dir, "mesh.sock")
    p = subprocess.Popen([MESH, sock, "slow", "client"], stdout=subprocess.PIPE, text=True)
    _wait_line(p, "READY")

    async def main():
        slow = dpumesh.Pod(sock, "slow")

        async def never(req):
            await asyncio.sleep(60)
        slow.serve(never)
        client = dpumesh.Pod(sock, "client")
        call = asyncio.ensure_future(client.call("slow", b"x", deadline=30))
        await asyncio.sleep(0.3)
        assert not call.done()
        p.kill()
        p.wait(10)
        t0 = time.monotonic()
        r = await asyncio.wait_for(call, 5)
        assert (r.status, r.reason, r.hop) == (503, "node_lost", "pod")
        assert time.monotonic() - t0 < 2
        assert client.node_lost and slow.node_lost
        r = await client.call("slow", b"y", deadline=30)
        assert (r.status, r.reason) == (503, "node_lost")
        client.close()
        slow.close()
    try:
        run(main())
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)


def test_handler_errors_and_missing_answers_still_answer_once(mesh):
    async def main():
        server = dpumesh.Pod(mesh, "echo")

        async def handler(req):
            if bytes(req.body) == b"boom":
                raise RuntimeError("boom")
            # "quiet": returns without answering
        server.serve(handler)
        client = dpumesh.Pod(mesh, "client")
        r = await client.call("echo", b"boom")
        assert r.status == 500 and b"handler" in bytes(r.body)
        r = await client.call("echo", b"quiet")
        assert r.status == 500 and b"no_response" in bytes(r.body)
        assert server.stats["handler_errors"] == 1
        assert server.stats["no_response"] == 1
        client.close()
        server.close()
    run(main())


def test_tiny_pools_wait_for_tx_room_and_answer_every_request_once(mesh):
    async def main():
        # 2 TX header slots, 8 body slots (each body pool: RX too, so 8 requests can be in)
        server = dpumesh.Pod(mesh, "echo", tx_slots=2, body_slots=8)
        echo = echo_handler(server)
        gate = asyncio.Event()

        async def handler(req):
            # the first answers wait until 4 requests are in, so 4 replies meet 2 TX slots
            # at once; left to timing, each reply may find a slot come back
            if not gate.is_set():
                if server.stats["requests"] >= 4:
                    gate.set()
                else:
                    await gate.wait()
            await echo(req)
        server.serve(handler)
        client = dpumesh.Pod(mesh, "client", tx_slots=4, max_calls=48)
        bodies = [b"req-%d" % i for i in range(150)]

        async def one(b):  # copy out and release: a held reply holds its RX slots
            with await client.call("echo", b) as r:
                return r.status, bytes(r.body)
        replies = await asyncio.gather(*(one(b) for b in bodies))
        assert replies == [(200, b) for b in bodies]
        assert server.stats["requests"] == 150
        assert client.stats["tx_waits"] > 0 and server.stats["tx_waits"] > 0
        client.close()
        server.close()
    run(main())


def test_the_docs_python_example_runs_as_written(mesh, tmp_path):
    doc = open(DOCS).read()
    m = re.search(r"<!-- example: front_pod.py -->\n```python\n(.*?)```", doc, re.S)
    assert m, "docs/host-api.md: no front_pod.py example"
    src = tmp_path / "front_pod.py"
    src.write_text(m.group(1))
    front = subprocess.Popen([sys.executable, str(src), mesh], stdout=subprocess.PIPE, text=True)
    try:
        _wait_line(front, "READY")

        async def main():
            server = dpumesh.Pod(mesh, "echo")
            server.serve(echo_handler(server))
            client = dpumesh.Pod(mesh, "client")
            r = await client.call("front", b"via python", path="/x")
            assert r.status == 200 and bytes(r.body) == b"via python"
            r = await client.call("front", b"", path="/x")
            assert r.status == 200
            client.close()
            server.close()
        run(main())
    finally:
        front.terminate()
        front.wait(10)
