// SPDX-License-Identifier: BSD-3-Clause
// C++20 coroutine API over libdpumesh: an event loop driven by the pods' doorbell fds, pods
// whose calls, answers and sleeps are awaitables, and a server that runs each received
// request in its own coroutine (docs/host-api.md "Coroutines").
//
//   dpumesh::host::event_loop loop;
//   auto pod = dpumesh::host::pod::open(loop, {.socket = sock, .service = "front"}, &err);
//   pod->serve([&](request &req) -> task<void> {
//       reply r = co_await pod->call("back", {.path = req.path(), .body = req.body()});
//       if (r.ok())                     // a mesh error is a value: status, reason, hop
//           co_await req.respond(200, r.body());
//       else
//           co_await req.respond(502, r.reason());
//   });
//   loop.run();                          // or: add loop.fd() to your own epoll, call dispatch()
//
// One thread runs the loop and every coroutine of it; a pod sends on one TX SQ (its worker,
// 0 unless pod_options say otherwise). No EAGAIN in user code: a send that finds the TX SQ or
// a pool full suspends until a TX completion frees room. Every call has a deadline (the
// header carries it to the mesh too); when it passes the call ends with 504 "deadline", hop
// "pod", and a late answer is dropped and counted. Destroying a suspended coroutine cancels
// what it waits for. Received headers and bodies are views of the RX slots, released when the
// reply or request that holds them is destroyed. In steady state nothing is allocated per
// call: call state lives in the caller's frame, frames come from the per-thread frame pool.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dpumesh/dpumesh.hpp"
#include "dpumesh/host/dpumesh.h"
#include "dpumesh/host/task.h"

namespace dpumesh::host {

using clock = std::chrono::steady_clock;
using bytes = std::span<const uint8_t>;

inline bytes as_bytes(std::string_view s) noexcept
{
	return {reinterpret_cast<const uint8_t *>(s.data()), s.size()};
}

class pod;

namespace detail {

/* An intrusive list node: a coroutine waiting in one of the loop's or pod's queues. */
struct waiter {
	waiter *prev = nullptr, *next = nullptr;
	std::coroutine_handle<> h;
	bool linked() const noexcept { return prev != nullptr; }
};

class waiter_list {
public:
	waiter_list() noexcept { _head.prev = _head.next = &_head; }
	waiter_list(const waiter_list &) = delete;
	waiter_list &operator=(const waiter_list &) = delete;
	bool empty() const noexcept { return _head.next == &_head; }
	waiter *front() noexcept { return _head.next; }
	void push_back(waiter *w) noexcept
	{
		w->prev = _head.prev;
		w->next = &_head;
		_head.prev->next = w;
		_head.prev = w;
	}
	static void unlink(waiter *w) noexcept
	{
		if (!w->linked())
			return;
		w->prev->next = w->next;
		w->next->prev = w->prev;
		w->prev = w->next = nullptr;
	}

private:
	waiter _head;
};

/* A deadline in the loop's timer heap. */
struct timer {
	clock::time_point at;
	uint32_t heap_index = UINT32_MAX;
	void (*fire)(timer *) = nullptr;
	bool armed() const noexcept { return heap_index != UINT32_MAX; }
};

} // namespace detail

/**
 * The event loop: one epoll fd watching every attached pod's doorbell and a timerfd for
 * deadlines. run() blocks until stop(); to embed it in a loop you already have, watch fd()
 * for EPOLLIN and call dispatch() when it is readable (it never blocks).
 */
class event_loop {
public:
	event_loop();
	~event_loop();
	event_loop(const event_loop &) = delete;
	event_loop &operator=(const event_loop &) = delete;

	/** Readable when dispatch() has work (pod doorbells, expired deadlines). */
	int fd() const noexcept { return _ep; }
	/**
	 * Progress every pod, fire expired deadlines, resume ready coroutines; never blocks.
	 * It returns with every pod armed for a wait on fd() (dpumesh_prepare_wait), fd()
	 * readable if work arrived meanwhile, so an outer loop may block on fd() right after.
	 */
	void dispatch();
	/**
	 * About to block on fd(): arms every pod's need-wakeup flag (the DPU rings a pod's
	 * doorbell only while it is armed) and re-checks their RX SQs.
	 * @return true when work is queued already (ready coroutines, RX descriptors): call
	 *         dispatch() without blocking
	 */
	bool prepare_wait() noexcept;
	/** Waits up to timeout_ms (-1: until something happens) for fd(), then dispatch(). */
	void run_once(int timeout_ms);
	/** run_once() until stop(). */
	void run();
	void stop() noexcept { _stop = true; }
	bool stopped() const noexcept { return _stop; }

	/** Runs t to completion on this loop (run_once until done) and returns its result. */
	template <typename T> T run(task<T> t)
	{
		auto h = t.raw();
		_ready_raw.push_back(h);
		while (!t.done())
			run_once(-1);
		if constexpr (!std::is_void_v<T>)
			return t.take();
	}
	/** Starts t detached: the loop owns it; its frame is freed when it finishes, or when the
	 * loop is destroyed (cancelled). */
	void spawn(task<void> t, void *owner = nullptr);
	/** Destroys (cancels) every coroutine spawned with this owner (pods own their server
	 * coroutines). */
	void cancel_owned(void *owner) noexcept;

	/** Suspends the caller for d. */
	auto sleep(clock::duration d) noexcept;

	/** Counters. */
	struct stats {
		uint64_t dispatches, resumed, timers_fired;
	};
	stats counters() const noexcept { return _stats; }

	/* for pods and awaiters */
	/** When the pass under way began (what a request read in it counts from). */
	clock::time_point pass_time() const noexcept { return _pass_at; }
	void ready(detail::waiter *w) noexcept { _ready.push_back(w); }
	void add_timer(detail::timer *t);
	void cancel_timer(detail::timer *t) noexcept;
	void attach(int fd, void *owner);
	void detach(int fd) noexcept;
	void unlink_root(detail::promise_base *p) noexcept;

private:
	void run_pass();
	void fire_timers();
	void arm_timerfd(clock::time_point at);
	void heap_up(uint32_t i) noexcept;
	void heap_down(uint32_t i) noexcept;
	void resume_ready();

	int _ep = -1, _tfd = -1;
	bool _stop = false;
	clock::time_point _armed_at = clock::time_point::max();
	clock::time_point _pass_at{};
	std::vector<detail::timer *> _heap;
	/* first resumptions (spawn, run): two vectors swapped, so steady state allocates nothing */
	std::vector<std::coroutine_handle<>> _ready_raw, _ready_tmp;
	detail::waiter_list _ready;
	detail::promise_base *_roots = nullptr;
	std::vector<pod *> _pods;
	stats _stats = {};
	friend class pod;
};

namespace detail {
struct sleep_awaiter : waiter, timer {
	event_loop *loop;
	clock::duration d;
	bool await_ready() const noexcept { return d <= clock::duration::zero(); }
	void await_suspend(std::coroutine_handle<> c) noexcept
	{
		h = c;
		at = clock::now() + d;
		fire = [](timer *t) {
			auto *s = static_cast<sleep_awaiter *>(t);
			s->loop->ready(s);
		};
		loop->add_timer(this);
	}
	void await_resume() const noexcept {}
	~sleep_awaiter()
	{
		loop->cancel_timer(this);
		waiter_list::unlink(this);
	}
};
} // namespace detail

inline auto event_loop::sleep(clock::duration d) noexcept
{
	detail::sleep_awaiter a;
	a.loop = this;
	a.d = d;
	return a;
}

/** A header field to send. */
struct field {
	std::string_view name, value;
};

/**
 * The answer to a call: a response (zero-copy view of its RX slots, released when the reply
 * is destroyed) or an error as a value. status() is the HTTP status (a mesh error without a
 * header maps its DPUMESH_STATUS_*: 502 dest_gone, 504 timeout, 503 otherwise); reason() and
 * hop() say who made an error ("deadline"/"pod" for the local deadline). Move-only.
 */
class reply {
public:
	reply() = default;
	reply(reply &&) noexcept = default;
	reply &operator=(reply &&) noexcept = default;

	bool ok() const noexcept { return _status >= 200 && _status < 300; }
	uint16_t status() const noexcept { return _status; }
	/** DPUMESH_STATUS_* of a mesh error descriptor, 0 otherwise. */
	uint32_t mesh_status() const noexcept { return _mesh_status; }
	std::string_view reason() const noexcept { return _reason; }
	std::string_view hop() const noexcept { return _hop; }
	bytes body() const noexcept;
	std::string_view body_view() const noexcept
	{
		bytes b = body();
		return {reinterpret_cast<const char *>(b.data()), b.size()};
	}
	/** A header field of the response ("" when absent). */
	std::string_view field(const char *name) const noexcept;

	/* library use */
	static reply local_error(uint16_t status, std::string_view reason) noexcept;
	static reply mesh_error(uint32_t dpumesh_status) noexcept;
	static reply from(dpumesh_t *h, dpumesh_msg *m) noexcept;

private:
	received_msg _msg{nullptr, nullptr};
	uint16_t _status = 0;
	uint32_t _mesh_status = 0;
	std::string_view _reason, _hop;
};

class request;

/** What to call: path, method, fields, body (views: they must live until co_await ends). */
struct call_spec {
	std::string_view path = "/";
	bytes body = {};
	std::span<const host::field> fields = {};
	std::string_view method = "POST";
	/** 0: the pod's default_deadline */
	std::chrono::milliseconds deadline{0};
	/** The request this call is made for, or nullptr: the call's deadline is then at most
	 *  what is left of that request's (request::time_left(); 1 ms once it has passed), so a
	 *  callee does not work on after its caller has given up. */
	const request *within = nullptr;
};

struct pod_options {
	std::string socket;  /**< the node's control socket */
	std::string service; /**< the service to register as */
	dpumesh_geometry geometry = dpumesh_default_geometry();
	uint32_t worker = 0;      /**< the TX SQ this pod's loop sends on */
	uint32_t nb_workers = 1;  /**< TX SQs to register (other workers: the C API) */
	uint32_t max_calls = 1024; /**< calls in flight at once (more wait their turn) */
	std::chrono::milliseconds default_deadline{5000};
};

class pod;

/** A received request, handled in its own coroutine; released when destroyed, or when its
 *  response is sent: from then on its views (service, method, path, body, fields) are empty
 *  and req_id() is 0. */
class request {
public:
	request(pod &p, dpumesh_msg *m) noexcept;
	request(const request &) = delete;
	request &operator=(const request &) = delete;
	~request() = default;

	std::string_view service() const noexcept;
	std::string_view method() const noexcept;
	std::string_view path() const noexcept;
	bytes body() const noexcept;
	std::string_view body_view() const noexcept
	{
		bytes b = body();
		return {reinterpret_cast<const char *>(b.data()), b.size()};
	}
	std::string_view field(const char *name) const noexcept;
	uint32_t req_id() const noexcept { return _msg.get() ? _msg->req_id : 0; }
	/** What is left of the caller's deadline: the budget its header carries, less the time
	 *  since the loop's pass that read this request; zero once passed. None when the caller
	 *  gave no deadline, and once the response is sent. */
	std::optional<std::chrono::milliseconds> time_left() const noexcept;
	bool responded() const noexcept { return _responded; }
	const dpumesh_msg *raw() const noexcept { return _msg.get(); }

	class respond_awaiter;
	/** co_await: sends the response (once; later calls give -EALREADY), suspending while the
	 * TX SQ or a pool is full; 0 or a negative errno (-EMSGSIZE: too large for a slot). The
	 * views must live until the co_await ends. */
	respond_awaiter respond(uint16_t status, bytes body = {},
				std::span<const host::field> fields = {}) noexcept;
	respond_awaiter respond(uint16_t status, std::string_view body,
				std::span<const host::field> fields = {}) noexcept;

private:
	int send_now(uint16_t status, bytes body, std::span<const host::field> fields) noexcept;

	pod &_pod;
	received_msg _msg;
	clock::time_point _received;
	bool _responded = false;
};

/** A pod on an event loop. */
class pod {
public:
	using handler = std::function<task<void>(request &)>;

	/** Registers; nullptr and *err on failure. */
	static std::unique_ptr<pod> open(event_loop &loop, const pod_options &o, std::string *err);
	~pod();
	pod(const pod &) = delete;
	pod &operator=(const pod &) = delete;

	/** Every received request runs h in its own coroutine; one the handler leaves unanswered
	 * gets 500 "no_response". */
	void serve(handler h) { _handler = std::move(h); }

	class call_awaiter;
	/** co_await: the reply (never an exception). */
	call_awaiter call(std::string_view service, const call_spec &spec) noexcept;

	dpumesh_t *get() const noexcept { return _h.get(); }
	event_loop &loop() const noexcept { return _loop; }
	uint32_t pod_id() const noexcept { return dpumesh_pod_id(_h.get()); }
	uint32_t worker() const noexcept { return _worker; }
	/** The node closed this pod's channel (stopped or died): every call ends 503 node_lost. */
	bool node_lost() const noexcept { return _node_lost; }

	struct stats {
		uint64_t calls, replies, deadlines, late, tx_waits, requests, no_response, cancelled;
	};
	stats counters() const noexcept { return _stats; }

	/* library use */
	struct call_slot {
		class call_awaiter *owner = nullptr;
		uint32_t seq = 0;
	};
	/* A send waiting for TX room, FIFO */
	struct tx_waiter : detail::waiter {
		int (*try_send)(tx_waiter *) = nullptr;
		int rc = 0;
	};
	void wait_tx(tx_waiter *w) noexcept
	{
		_stats.tx_waits++;
		_tx_wait.push_back(w);
		if (_node_lost) /* nothing will ever free TX room: it ends now, as the others did */
			fail_outstanding("node_lost");
	}
	bool tx_queue_empty() noexcept { return _tx_wait.empty(); }

private:
	pod(event_loop &loop, const pod_options &o);
	bool progress(); /* true: it handled something */
	void check_node();
	void fail_outstanding(const char *why);
	void retry_sends();
	static void on_request(dpumesh_t *h, dpumesh_msg *m, void *u);
	static void on_response(dpumesh_t *h, dpumesh_msg *m, void *u);
	static void on_tx_done(dpumesh_t *h, uint32_t req_id, uint32_t step_id, uint32_t status,
			       void *u);
	task<void> serve_one(dpumesh_msg *m);
	void complete(uint32_t slot, reply &&r);

	event_loop &_loop;
	dpumesh::pod _h;
	uint32_t _worker = 0;
	std::chrono::milliseconds _default_deadline;
	handler _handler;
	std::vector<call_slot> _slots;
	std::vector<uint32_t> _free_slots;
	detail::waiter_list _slot_wait; /* calls waiting for a free slot */
	detail::waiter_list _tx_wait;   /* sends waiting for TX room */
	uint32_t _seq = 0;
	bool _starved = false; /* progress found every message object held */
	bool _node_lost = false; /* the node closed our channel: every call ends 503 node_lost */
	stats _stats = {};
	friend class call_awaiter;
	friend class event_loop;
	friend class request;
	friend class request::respond_awaiter;
};

class request::respond_awaiter : public pod::tx_waiter {
public:
	respond_awaiter(request &r, uint16_t status, bytes body, std::span<const host::field> fields) noexcept
		: _r(r), _status(status), _body(body), _fields(fields)
	{
	}
	respond_awaiter(const respond_awaiter &) = delete;
	~respond_awaiter() { detail::waiter_list::unlink(this); }
	bool await_ready() noexcept;
	void await_suspend(std::coroutine_handle<> c) noexcept
	{
		h = c;
		_r._pod.wait_tx(this);
	}
	int await_resume() noexcept;

private:
	static int try_send_cb(pod::tx_waiter *w);
	request &_r;
	uint16_t _status;
	bytes _body;
	std::span<const host::field> _fields;
};

inline request::respond_awaiter request::respond(uint16_t status, bytes body,
						 std::span<const host::field> fields) noexcept
{
	return respond_awaiter(*this, status, body, fields);
}
inline request::respond_awaiter request::respond(uint16_t status, std::string_view body,
						 std::span<const host::field> fields) noexcept
{
	return respond_awaiter(*this, status, as_bytes(body), fields);
}

/** The awaitable of pod::call(): lives in the caller's frame; destroying it cancels. */
class pod::call_awaiter : public pod::tx_waiter, public detail::timer {
public:
	call_awaiter(pod &p, std::string_view service, const call_spec &spec) noexcept
		: _pod(p), _loop(p.loop()), _service(service), _spec(spec)
	{
	}
	call_awaiter(const call_awaiter &) = delete;
	~call_awaiter();

	bool await_ready() const noexcept { return false; }
	bool await_suspend(std::coroutine_handle<> c) noexcept;
	reply await_resume() noexcept { return std::move(_result); }

private:
	enum class state : uint8_t { idle, wait_slot, wait_tx, in_flight, done };
	int send() noexcept;
	std::chrono::milliseconds deadline() const noexcept;
	void finish(reply &&r) noexcept;
	void release_slot() noexcept;
	static int try_send_cb(tx_waiter *w);
	bool start() noexcept;

	pod &_pod;
	event_loop &_loop;
	std::string_view _service;
	call_spec _spec;
	state _state = state::idle;
	uint32_t _slot = UINT32_MAX;
	reply _result;
	friend class pod;
};

inline pod::call_awaiter pod::call(std::string_view service, const call_spec &spec) noexcept
{
	return call_awaiter(*this, service, spec);
}

} // namespace dpumesh::host
