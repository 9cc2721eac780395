# SPDX-License-Identifier: BSD-3-Clause
"""dpumesh: pods in Python with asyncio, over libdpumesh (docs/host-api.md "Python").

    import asyncio, dpumesh

    async def main():
        pod = dpumesh.Pod("/run/dpumesh/node1.sock", "front")
        async def handler(req):                 # each request in its own task
            r = await pod.call("echo", req.body, path=req.path)
            await req.respond(200 if r.ok else 502, r.body if r.ok else r.reason)
        pod.serve(handler)
        await asyncio.Event().wait()

The doorbell fd is registered with the running loop (add_reader). Bodies are memoryviews
of the RX slots (zero copy), valid until the Reply/Request is released (release(), `with`,
or garbage collection). A mesh error is a value: Reply.status, .reason, .hop. Sends that
find the TX SQ or a pool full wait for a TX completion; nothing raises EAGAIN. Every call
has a deadline (504 "deadline", hop "pod", when it passes).
"""

import asyncio
import collections
import errno

from . import _dpumesh

__all__ = ["Pod", "Reply", "Request", "fnv1a"]

fnv1a = _dpumesh.fnv1a

_OP_ERROR = _dpumesh.OP_ERROR
_AGAIN = (-_dpumesh.EAGAIN, -_dpumesh.ENOBUFS)
_MESH = {  # DPUMESH_STATUS_* of an error descriptor -> (HTTP status, reason)
    1: (503, "bad_descriptor"), 2: (503, "bad_address"), 3: (413, "too_large"),
    4: (503, "no_route"), 5: (503, "no_live_pod"), 6: (503, "dest_full"),
    7: (502, "dest_gone"), 8: (504, "timeout"), 9: (503, "policy"),
    10: (503, "dma_error"), 11: (503, "no_match"), 12: (503, "src_gone"),
}


def _mesh_error(st):
    return _MESH.get(st, (503, "mesh_error"))


class _Held:
    """A received message: zero-copy body, released once."""

    __slots__ = ("_msg", "body")

    def __init__(self, msg):
        self._msg = msg
        self.body = memoryview(msg) if msg is not None else memoryview(b"")

    def field(self, name):
        """A header field (str) or None."""
        return self._msg.field(name) if self._msg is not None and not self._msg.released else None

    def release(self):
        """Gives the RX slots back (the body memoryview is released too)."""
        if self._msg is not None:
            try:
                self.body.release()
            except BufferError:
                pass  # slices of it are alive: the slots go back when the last one does
            self._msg.release()
            self._msg = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class Reply(_Held):
    """The answer to a call, or an error as a value (status, reason, hop)."""

    __slots__ = ("status", "reason", "hop", "mesh_status")

    def __init__(self, msg=None, status=0, reason="", hop="", mesh_status=0):
        super().__init__(msg)
        self.status, self.reason, self.hop, self.mesh_status = status, reason, hop, mesh_status

    @property
    def ok(self):
        return 200 <= self.status < 300

    @classmethod
    def _from_msg(cls, msg):
        if msg.flags & _OP_ERROR:
            mesh_status = msg.mesh_status
            status, reason = _mesh_error(mesh_status)
            msg.release()
            return cls(None, status, reason, "mesh", mesh_status)
        if not msg.header_ok:
            msg.release()
            return cls(None, 502, "bad_header", "pod")
        return cls(msg, msg.http_status, msg.reason or "", msg.hop or "")


class Request(_Held):
    """A received request, handled in its own task."""

    __slots__ = ("_pod", "service", "method", "path", "req_id", "responded", "_deadline_at")

    def __init__(self, pod, msg):
        super().__init__(msg)
        self._pod = pod
        self.service, self.method, self.path = msg.service, msg.method, msg.path
        self.req_id = msg.req_id
        self.responded = False
        ms = msg.deadline_ms
        self._deadline_at = pod._loop.time() + ms / 1000.0 if ms else None

    def time_left(self):
        """Seconds left of the caller's deadline (its header's budget, from when this pod
        read the request), 0 once passed; None when the caller gave none, or once answered."""
        if self._deadline_at is None or self.responded:
            return None
        return max(0.0, self._deadline_at - self._pod._loop.time())

    async def respond(self, status, body=b"", fields=()):
        """Sends the response once (waits while TX is full); 0 or a negative errno."""
        if self.responded or self._msg is None:
            return -114  # EALREADY
        if isinstance(body, str):
            body = body.encode()
        rc = await self._pod._send(lambda: self._pod._c.send_response(self._msg, status, fields, body))
        if rc == 0:
            self.responded = True
            self.release()
        return rc


class Pod:
    """A pod on the running asyncio loop."""

    def __init__(self, socket, service, *, max_calls=1024, deadline=5.0, tx_slots=64,
                 body_slots=None, body_slot=8192, rx_slots=64, depth=256):
        """Registers. Pools: tx_slots TX header slots, body_slots (default tx_slots) slots of
        body_slot bytes in each body pool, rx_slots RX header slots, SQ depth."""
        self._c = _dpumesh.Pod(socket, service, tx_slots,
                               tx_slots if body_slots is None else body_slots, body_slot,
                               rx_slots, depth)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._c.fd(), self._progress)
        # the node's channel: readable when the node stops or dies (_node_check)
        self._node_fd = self._c.node_fd()
        if self._node_fd >= 0:
            self._loop.add_reader(self._node_fd, self._node_check)
        self.node_lost = False
        self._arm()
        self._deadline = deadline
        self._calls = {}  # slot -> (seq, future)
        self._free = list(range(max_calls - 1, -1, -1))
        self._seq = 0
        self._slot_wait = collections.deque()
        self._tx_wait = collections.deque()  # futures of senders waiting for TX room
        self._handler = None
        self._tasks = set()
        self.stats = collections.Counter()

    @property
    def pod_id(self):
        return self._c.pod_id()

    def close(self):
        """Cancels the server tasks, ends calls in flight with 503 pod_closed, unregisters."""
        if self._c is None:
            return
        for t in list(self._tasks):
            t.cancel()
        self._loop.remove_reader(self._c.fd())
        if self._node_fd >= 0 and not self.node_lost:
            self._loop.remove_reader(self._node_fd)
        self._fail_calls("pod_closed")
        c, self._c = self._c, None
        c.close()

    def _fail_calls(self, why):
        """Ends calls in flight with 503 `why`; senders waiting for TX room look again."""
        for _, fut in self._calls.values():
            if not fut.done():
                fut.set_result(Reply(None, 503, why, "pod"))
        self._calls.clear()
        while self._tx_wait:
            f = self._tx_wait.popleft()
            if not f.done():
                f.set_result(None)

    def _node_check(self):
        if self._c is None or self._c.node_check() == 0:
            return
        # the node closed our channel (stopped or died): nothing more comes, nothing
        # outstanding is answered, and every later call ends 503 node_lost at once
        self.node_lost = True
        self._loop.remove_reader(self._node_fd)
        self._fail_calls("node_lost")

    def serve(self, handler):
        """Runs `await handler(request)` for each request in its own task; a request the
        handler leaves unanswered gets 500 no_response."""
        self._handler = handler

    async def call(self, service, body=b"", *, path="/", method="POST", fields=(), deadline=None,
                   within=None):
        """Calls a service; returns a Reply (never raises for mesh errors). within: the
        Request this call is made for; the call's deadline is then at most what is left of
        the request's (1 ms once it has passed)."""
        if isinstance(body, str):
            body = body.encode()
        deadline = self._deadline if deadline is None else deadline
        left = within.time_left() if within is not None else None
        if left is not None:
            deadline = min(deadline, max(0.001, left))
        if self.node_lost:
            return Reply(None, 503, "node_lost", "pod")
        end = self._loop.time() + deadline
        while not self._free:
            fut = self._loop.create_future()
            self._slot_wait.append(fut)
            try:
                await asyncio.wait_for(fut, max(0.0, end - self._loop.time()))
            except asyncio.TimeoutError:
                self.stats["deadlines"] += 1
                return Reply(None, 504, "deadline", "pod")
        slot = self._free.pop()
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        seq = self._seq
        fut = self._loop.create_future()
        self._calls[slot] = (seq, fut)
        try:
            ms = max(1, int(deadline * 1000))
            rc = await self._send(lambda: self._c.send_request(
                service, method, path, fields, body, 0x80000000 | slot, seq, ms))
            if rc == -_dpumesh.ENOTCONN:
                return Reply(None, 503, "node_lost", "pod")
            if rc == -errno.ESHUTDOWN:
                return Reply(None, 503, "pod_closed", "pod")
            if rc != 0:
                return Reply(None, 413 if rc == -_dpumesh.EMSGSIZE else 400,
                             "too_large" if rc == -_dpumesh.EMSGSIZE else "bad_request", "pod")
            self.stats["calls"] += 1
            try:
                return await asyncio.wait_for(asyncio.shield(fut), max(0.0, end - self._loop.time()))
            except asyncio.TimeoutError:
                self.stats["deadlines"] += 1
                return Reply(None, 504, "deadline", "pod")
        finally:
            if self._calls.get(slot, (None,))[0] == seq:
                del self._calls[slot]
            self._free.append(slot)
            while self._slot_wait:
                w = self._slot_wait.popleft()
                if not w.done():
                    w.set_result(None)
                    break

    async def _send(self, attempt):
        """Runs attempt() (a send) until it is not "try again", waiting for TX completions."""
        if not self._tx_wait:
            rc = attempt()
            if rc not in _AGAIN:
                return rc
        while True:
            fut = self._loop.create_future()
            self._tx_wait.append(fut)
            self.stats["tx_waits"] += 1
            await fut
            if self._c is None:  # closed meanwhile (close() wakes the waiters)
                return -errno.ESHUTDOWN
            if self.node_lost:
                return -_dpumesh.ENOTCONN
            rc = attempt()
            if rc not in _AGAIN:
                self._wake_tx()  # the next waiter may fit too
                return rc

    def _wake_tx(self):
        while self._tx_wait:
            f = self._tx_wait.popleft()
            if not f.done():
                f.set_result(None)
                return

    def _progress(self):
        if self._c is None:
            return
        tx_done = False
        for ev in self._c.progress():
            kind = ev[0]
            if kind == 0:
                self.stats["requests"] += 1
                t = self._loop.create_task(self._serve_one(ev[1]))
                self._tasks.add(t)
                t.add_done_callback(self._tasks.discard)
            elif kind == 1:
                msg = ev[1]
                slot, seq = msg.req_id & 0x7FFFFFFF, msg.step_id
                entry = self._calls.get(slot) if msg.req_id & 0x80000000 else None
                if entry and entry[0] == seq and not entry[1].done():
                    entry[1].set_result(Reply._from_msg(msg))
                else:
                    self.stats["late"] += 1
                    msg.release()
            else:
                tx_done = True
                _, req_id, step_id, status = ev
                entry = self._calls.get(req_id & 0x7FFFFFFF) if req_id & 0x80000000 else None
                if status and entry and entry[0] == step_id and not entry[1].done():
                    st, reason = _mesh_error(status)
                    entry[1].set_result(Reply(None, st, reason, "mesh", status))
        if tx_done:
            self._wake_tx()
        self._arm()

    def _arm(self):
        # Doorbells only for sleepers: asyncio has no hook right before it blocks, so the
        # pod arms its need-wakeup flag at the end of every progress (the loop blocks later
        # in this iteration at the earliest); work already queued runs on the next one.
        if self._c is not None and self._c.prepare_wait():
            self._loop.call_soon(self._progress)

    async def _serve_one(self, msg):
        req = Request(self, msg)
        try:
            if self._handler is not None:
                await self._handler(req)
        except asyncio.CancelledError:
            req.release()
            raise
        except Exception as e:  # a handler's bug still gets its request answered
            self.stats["handler_errors"] += 1
            if not req.responded:
                await req.respond(500, '{"error":"handler","detail":%r}\n' % type(e).__name__)
        if not req.responded:
            self.stats["no_response"] += 1
            await req.respond(500 if self._handler else 503, '{"error":"no_response"}\n')
        req.release()
