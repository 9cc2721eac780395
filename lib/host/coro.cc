// SPDX-License-Identifier: BSD-3-Clause
// The coroutine layer of libdpumesh: frame pool, event loop (epoll + timerfd + timer heap),
// pods with call/respond awaitables and a coroutine per received request.
#include "dpumesh/host/coro.h"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "send.h"

namespace dpumesh::host {

/* ---- frame pool ---- */

namespace {

constexpr size_t class_size = 64;
constexpr size_t nb_classes = 64; /* up to 4 KiB */

struct frame_cache {
	struct node {
		node *next;
	};
	node *free[nb_classes] = {};
	frame_stats st = {};
	~frame_cache()
	{
		for (node *&head : free)
			while (head)
				::operator delete(std::exchange(head, head->next));
	}
};

thread_local frame_cache t_frames;

size_t class_of(size_t n) { return (n + class_size - 1) / class_size; }

} // namespace

void *frame_alloc(size_t n)
{
	frame_cache &c = t_frames;
	const size_t k = class_of(n);
	c.st.live++;
	if (k < nb_classes && c.free[k]) {
		c.st.pool_allocs++;
		return std::exchange(c.free[k], c.free[k]->next);
	}
	c.st.heap_allocs++;
	return ::operator new(k < nb_classes ? k * class_size : n);
}

void frame_free(void *p, size_t n) noexcept
{
	frame_cache &c = t_frames;
	const size_t k = class_of(n);
	c.st.live--;
	if (k >= nb_classes) {
		::operator delete(p);
		return;
	}
	auto *nd = static_cast<frame_cache::node *>(p);
	nd->next = c.free[k];
	c.free[k] = nd;
}

frame_stats frame_pool_stats() noexcept { return t_frames.st; }

void detail::finish_detached(promise_base *p, std::coroutine_handle<> h) noexcept
{
	p->loop->unlink_root(p);
	h.destroy();
}

/* ---- event loop ---- */

event_loop::event_loop()
{
	_ep = ::epoll_create1(EPOLL_CLOEXEC);
	_tfd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (_ep < 0 || _tfd < 0) {
		std::perror("dpumesh event_loop: epoll/timerfd");
		std::abort(); /* out of fds at start-up: nothing sensible to run */
	}
	epoll_event ev = {};
	ev.events = EPOLLIN;
	ev.data.ptr = nullptr;
	::epoll_ctl(_ep, EPOLL_CTL_ADD, _tfd, &ev);
	_heap.reserve(1024);
	_ready_raw.reserve(256);
	_ready_tmp.reserve(256);
}

event_loop::~event_loop()
{
	while (_roots) {
		detail::promise_base *p = _roots;
		unlink_root(p);
		p->self.destroy();
	}
	::close(_tfd);
	::close(_ep);
}

void event_loop::attach(int fd, void *owner)
{
	epoll_event ev = {};
	ev.events = EPOLLIN;
	ev.data.ptr = owner;
	::epoll_ctl(_ep, EPOLL_CTL_ADD, fd, &ev);
}

void event_loop::detach(int fd) noexcept { ::epoll_ctl(_ep, EPOLL_CTL_DEL, fd, nullptr); }

void event_loop::spawn(task<void> t, void *owner)
{
	auto h = t.release();
	detail::promise_base &p = h.promise();
	p.loop = this;
	p.owner = owner;
	p.self = h;
	p.root_prev = nullptr;
	p.root_next = _roots;
	if (_roots)
		_roots->root_prev = &p;
	_roots = &p;
	_ready_raw.push_back(h);
}

void event_loop::unlink_root(detail::promise_base *p) noexcept
{
	if (p->root_prev)
		p->root_prev->root_next = p->root_next;
	else if (_roots == p)
		_roots = p->root_next;
	if (p->root_next)
		p->root_next->root_prev = p->root_prev;
	p->root_prev = p->root_next = nullptr;
}

void event_loop::cancel_owned(void *owner) noexcept
{
	for (detail::promise_base *p = _roots; p;) {
		detail::promise_base *next = p->root_next;
		if (p->owner == owner) {
			/* not started yet: drop it from the first-resumption queues too (the one
			 * resume_ready() is going through included) */
			for (auto *q : {&_ready_raw, &_ready_tmp})
				for (auto &h : *q)
					if (h == p->self)
						h = {};
			unlink_root(p);
			p->self.destroy();
			next = _roots; /* destroying may have finished or unlinked others: restart */
		}
		p = next;
	}
}

void event_loop::heap_up(uint32_t i) noexcept
{
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (_heap[parent]->at <= _heap[i]->at)
			break;
		std::swap(_heap[parent], _heap[i]);
		_heap[parent]->heap_index = parent;
		_heap[i]->heap_index = i;
		i = parent;
	}
}

void event_loop::heap_down(uint32_t i) noexcept
{
	const uint32_t n = static_cast<uint32_t>(_heap.size());
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && _heap[l]->at < _heap[m]->at)
			m = l;
		if (r < n && _heap[r]->at < _heap[m]->at)
			m = r;
		if (m == i)
			break;
		std::swap(_heap[m], _heap[i]);
		_heap[m]->heap_index = m;
		_heap[i]->heap_index = i;
		i = m;
	}
}

void event_loop::add_timer(detail::timer *t)
{
	t->heap_index = static_cast<uint32_t>(_heap.size());
	_heap.push_back(t);
	heap_up(t->heap_index);
	/* re-arm only when this deadline comes first: calls with one deadline length arm once */
	if (t->at < _armed_at)
		arm_timerfd(t->at);
}

void event_loop::cancel_timer(detail::timer *t) noexcept
{
	if (!t->armed())
		return;
	const uint32_t i = t->heap_index;
	t->heap_index = UINT32_MAX;
	detail::timer *last = _heap.back();
	_heap.pop_back();
	if (last == t)
		return;
	_heap[i] = last;
	last->heap_index = i;
	heap_up(i);
	heap_down(last->heap_index);
	/* the timerfd may fire early for a cancelled deadline: fire_timers re-arms then */
}

void event_loop::arm_timerfd(clock::time_point at)
{
	_armed_at = at;
	itimerspec its = {};
	auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
	if (ns <= 0)
		ns = 1;
	its.it_value.tv_sec = ns / 1000000000;
	its.it_value.tv_nsec = ns % 1000000000;
	/* steady_clock is CLOCK_MONOTONIC on Linux */
	::timerfd_settime(_tfd, TFD_TIMER_ABSTIME, &its, nullptr);
}

void event_loop::fire_timers()
{
	if (_armed_at == clock::time_point::max())
		return;
	const auto now = clock::now();
	if (_armed_at > now)
		return;
	uint64_t n;
	(void)!::read(_tfd, &n, sizeof(n));
	_armed_at = clock::time_point::max();
	while (!_heap.empty() && _heap.front()->at <= now) {
		detail::timer *t = _heap.front();
		cancel_timer(t);
		_stats.timers_fired++;
		t->fire(t);
	}
	if (!_heap.empty())
		arm_timerfd(_heap.front()->at);
}

void event_loop::resume_ready()
{
	for (;;) {
		if (!_ready_raw.empty()) {
			_ready_tmp.swap(_ready_raw);
			for (size_t i = 0; i < _ready_tmp.size(); i++)
				if (auto h = std::exchange(_ready_tmp[i], {})) {
					_stats.resumed++;
					h.resume();
				}
			_ready_tmp.clear();
			continue;
		}
		if (_ready.empty())
			break;
		detail::waiter *w = _ready.front();
		detail::waiter_list::unlink(w);
		_stats.resumed++;
		w->h.resume();
	}
}

void event_loop::run_pass()
{
	_stats.dispatches++;
	_pass_at = clock::now();
	bool work = false;
	for (pod *p : _pods)
		work |= p->progress();
	/* a wake-up with nothing for any pod: a timer, or a node that closed its pod's channel
	 * (the node fds are in the set; one recv per pod, on these passes only) */
	if (!work)
		for (pod *p : _pods)
			p->check_node();
	fire_timers();
	resume_ready();
}

bool event_loop::prepare_wait() noexcept
{
	bool work = !_ready.empty() || !_ready_raw.empty();
	for (pod *p : _pods)
		work |= p->_h.prepare_wait();
	return work;
}

void event_loop::dispatch()
{
	run_pass();
	/* the caller blocks on fd() next: arm, and make fd() readable if work is queued */
	if (prepare_wait() && !_pods.empty()) {
		uint64_t one = 1; /* one readable member makes fd() readable */
		ssize_t rc = ::write(_pods.front()->_h.fd(), &one, sizeof(one));
		(void)rc;
	}
}

void event_loop::run_once(int timeout_ms)
{
	bool starved = false;
	for (pod *p : _pods)
		starved |= p->_starved;
	if (prepare_wait())
		timeout_ms = 0;
	else if (starved && (timeout_ms < 0 || timeout_ms > 1))
		timeout_ms = 1; /* every message object held: look again soon */
	epoll_event ev[8];
	(void)::epoll_wait(_ep, ev, 8, timeout_ms);
	run_pass();
}

void event_loop::run()
{
	_stop = false;
	while (!_stop)
		run_once(-1);
}

/* ---- reply ---- */

namespace {

const char *status_reason(uint32_t st)
{
	switch (st) {
	case DPUMESH_STATUS_BAD_DESCRIPTOR: return "bad_descriptor";
	case DPUMESH_STATUS_BAD_ADDRESS: return "bad_address";
	case DPUMESH_STATUS_TOO_LARGE: return "too_large";
	case DPUMESH_STATUS_NO_ROUTE: return "no_route";
	case DPUMESH_STATUS_NO_POD: return "no_live_pod";
	case DPUMESH_STATUS_DEST_FULL: return "dest_full";
	case DPUMESH_STATUS_DEST_GONE: return "dest_gone";
	case DPUMESH_STATUS_TIMEOUT: return "timeout";
	case DPUMESH_STATUS_POLICY: return "policy";
	case DPUMESH_STATUS_DMA_ERROR: return "dma_error";
	case DPUMESH_STATUS_NO_MATCH: return "no_match";
	case DPUMESH_STATUS_SRC_GONE: return "src_gone";
	default: return "mesh_error";
	}
}

uint16_t status_http(uint32_t st)
{
	switch (st) {
	case DPUMESH_STATUS_DEST_GONE: return 502;
	case DPUMESH_STATUS_TIMEOUT: return 504;
	case DPUMESH_STATUS_TOO_LARGE: return 413;
	default: return 503;
	}
}


std::string_view sv(const char *p, size_t n) { return p ? std::string_view(p, n) : std::string_view(); }

std::string_view msg_field(const dpumesh_msg *m, const char *name)
{
	const char *v;
	size_t len;
	if (m && dpumesh_msg_field(m, name, &v, &len) == 0)
		return {v, len};
	return {};
}

bool again(int rc) { return rc == -EAGAIN || rc == -ENOBUFS; }

} // namespace

reply reply::local_error(uint16_t status, std::string_view reason) noexcept
{
	reply r;
	r._status = status;
	r._reason = reason;
	r._hop = "pod";
	return r;
}

reply reply::mesh_error(uint32_t st) noexcept
{
	reply r;
	r._status = status_http(st);
	r._reason = status_reason(st);
	r._hop = "mesh";
	r._mesh_status = st;
	return r;
}

reply reply::from(dpumesh_t *h, dpumesh_msg *m) noexcept
{
	reply r;
	if (m->flags & DPUMESH_OP_ERROR) {
		r = mesh_error(m->status);
	} else if (!m->header_ok) {
		r._status = 502;
		r._reason = "bad_header";
		r._hop = "pod";
	} else {
		r._status = m->http_status;
		r._reason = sv(m->reason, m->reason_len);
		r._hop = sv(m->hop, m->hop_len);
	}
	r._msg = received_msg(h, m);
	return r;
}

bytes reply::body() const noexcept
{
	const dpumesh_msg *m = _msg.get();
	return m && m->body ? bytes(m->body, m->body_len) : bytes();
}

std::string_view reply::field(const char *name) const noexcept { return msg_field(_msg.get(), name); }

/* ---- request ---- */

request::request(pod &p, dpumesh_msg *m) noexcept
	: _pod(p), _msg(p.get(), m), _received(p.loop().pass_time())
{
}

std::optional<std::chrono::milliseconds> request::time_left() const noexcept
{
	const uint32_t budget = _msg.get() ? dpumesh_msg_deadline_ms(_msg.get()) : 0;
	if (budget == 0)
		return std::nullopt;
	const auto spent =
		std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - _received);
	return std::max(std::chrono::milliseconds(budget) - spent, std::chrono::milliseconds(0));
}

/* Once the response is sent the message's slots have gone back (respond_awaiter): its
 * views are empty then, not reads of a released message. */
std::string_view request::service() const noexcept
{
	return _msg.get() ? sv(_msg->service, _msg->service_len) : std::string_view();
}
std::string_view request::method() const noexcept
{
	return _msg.get() ? sv(_msg->method, _msg->method_len) : std::string_view();
}
std::string_view request::path() const noexcept
{
	return _msg.get() ? sv(_msg->path, _msg->path_len) : std::string_view();
}
bytes request::body() const noexcept
{
	return _msg.get() && _msg->body ? bytes(_msg->body, _msg->body_len) : bytes();
}
std::string_view request::field(const char *name) const noexcept { return msg_field(_msg.get(), name); }

int request::send_now(uint16_t status, bytes body, std::span<const host::field> fields) noexcept
{
	if (_responded || !_msg.get())
		return -EALREADY;
	if (body.size() > UINT32_MAX) /* the descriptor's length is 32 bits: never cut short */
		return -EMSGSIZE;
	return detail::send_response(_pod.get(), _pod._worker, _msg.get(), status, fields,
				     body.data(), static_cast<uint32_t>(body.size()));
}

bool request::respond_awaiter::await_ready() noexcept
{
	try_send = try_send_cb;
	if (!_r._pod.tx_queue_empty())
		return false; /* others wait for TX room first: keep their order */
	rc = _r.send_now(_status, _body, _fields);
	return !again(rc);
}

int request::respond_awaiter::try_send_cb(pod::tx_waiter *w)
{
	auto *a = static_cast<respond_awaiter *>(w);
	int r = a->_r.send_now(a->_status, a->_body, a->_fields);
	if (again(r))
		return -EAGAIN;
	detail::waiter_list::unlink(a);
	a->rc = r;
	a->_r._pod._loop.ready(a);
	return r;
}

int request::respond_awaiter::await_resume() noexcept
{
	if (rc == 0) {
		_r._responded = true;
		_r._msg.reset(); /* the body was copied into a TX slot: RX slots go back now */
	}
	return rc;
}

/* ---- pod ---- */

pod::pod(event_loop &loop, const pod_options &o)
	: _loop(loop), _worker(o.worker), _default_deadline(o.default_deadline)
{
}

std::unique_ptr<pod> pod::open(event_loop &loop, const pod_options &o, std::string *err)
{
	if (o.max_calls == 0 || o.max_calls > 0x7fffffff || o.worker >= o.nb_workers) {
		if (err)
			*err = "max_calls must be 1..2^31-1 and worker < nb_workers";
		return nullptr;
	}
	std::unique_ptr<pod> p(new pod(loop, o));
	dpumesh_options d = {};
	d.socket_path = o.socket.c_str();
	d.service = o.service.c_str();
	d.nb_workers = o.nb_workers;
	d.geometry = o.geometry;
	d.callbacks.on_request = on_request;
	d.callbacks.on_response = on_response;
	d.callbacks.on_tx_done = on_tx_done;
	d.user = p.get();
	p->_h = dpumesh::pod::open(d);
	if (!p->_h) {
		if (err)
			*err = p->_h.error() + " (" + std::to_string(p->_h.rc()) + ")";
		return nullptr;
	}
	p->_slots.assign(o.max_calls, call_slot{});
	p->_free_slots.reserve(o.max_calls);
	for (uint32_t i = o.max_calls; i-- > 0;)
		p->_free_slots.push_back(i);
	loop.attach(p->_h.fd(), p.get());
	if (p->_h.node_fd() >= 0)
		loop.attach(p->_h.node_fd(), p.get());
	loop._pods.push_back(p.get());
	return p;
}

pod::~pod()
{
	/* server coroutines first: they hold this pod's requests */
	_loop.cancel_owned(this);
	fail_outstanding("pod_closed");
	/* a pod whose open() failed has no handle: nothing attached (its fds were read from a
	 * null handle, a crash when the node was not there) */
	if (_h) {
		_loop.detach(_h.fd());
		if (!_node_lost && _h.node_fd() >= 0)
			_loop.detach(_h.node_fd());
	}
	std::erase(_loop._pods, this);
}

/* Calls in flight or waiting end with an error value (503 `why`), their coroutines resumed
 * later; responses waiting for TX room end with -ESHUTDOWN. */
void pod::fail_outstanding(const char *why)
{
	while (!_slot_wait.empty()) {
		auto *a = static_cast<call_awaiter *>(static_cast<tx_waiter *>(_slot_wait.front()));
		a->finish(reply::local_error(503, why));
	}
	while (!_tx_wait.empty()) {
		auto *w = static_cast<tx_waiter *>(_tx_wait.front());
		detail::waiter_list::unlink(w);
		w->rc = -ESHUTDOWN;
		if (w->try_send == call_awaiter::try_send_cb)
			static_cast<call_awaiter *>(w)->finish(reply::local_error(503, why));
		else
			_loop.ready(w);
	}
	for (call_slot &s : _slots)
		if (s.owner)
			s.owner->finish(reply::local_error(503, why));
}

bool pod::progress()
{
	int rc = dpumesh_progress(_h.get());
	_starved = rc == -EBUSY;
	retry_sends();
	return rc > 0;
}

void pod::check_node()
{
	if (_node_lost || _h.node_check() == 0)
		return;
	/* the node closed our channel: nothing more comes, nothing outstanding is answered */
	_node_lost = true;
	_loop.detach(_h.node_fd()); /* readable for good now */
	fail_outstanding("node_lost");
}

void pod::retry_sends()
{
	while (!_tx_wait.empty()) {
		auto *w = static_cast<tx_waiter *>(_tx_wait.front());
		if (w->try_send(w) == -EAGAIN)
			break;
	}
}

void pod::on_request(dpumesh_t *, dpumesh_msg *m, void *u)
{
	auto *p = static_cast<pod *>(u);
	p->_stats.requests++;
	p->_loop.spawn(p->serve_one(m), p);
}

task<void> pod::serve_one(dpumesh_msg *m)
{
	request req(*this, m);
	if (_handler)
		co_await _handler(req);
	if (!req.responded()) {
		_stats.no_response++;
		static constexpr std::string_view why = "{\"error\":\"no_response\"}\n";
		(void)co_await req.respond(_handler ? 500 : 503, why);
	}
}

void pod::on_response(dpumesh_t *h, dpumesh_msg *m, void *u)
{
	auto *p = static_cast<pod *>(u);
	const uint32_t slot = m->req_id & 0x7fffffffu;
	if ((m->req_id & 0x80000000u) && slot < p->_slots.size() && p->_slots[slot].owner &&
	    p->_slots[slot].seq == m->step_id &&
	    p->_slots[slot].owner->_state == call_awaiter::state::in_flight) {
		p->_stats.replies++;
		p->_slots[slot].owner->finish(reply::from(h, m));
		return;
	}
	p->_stats.late++; /* after its deadline, or cancelled: dropped */
	dpumesh_msg_release(h, m);
}

void pod::on_tx_done(dpumesh_t *, uint32_t req_id, uint32_t step_id, uint32_t status, void *u)
{
	if (status == 0 || !(req_id & 0x80000000u))
		return;
	auto *p = static_cast<pod *>(u);
	const uint32_t slot = req_id & 0x7fffffffu;
	if (slot < p->_slots.size() && p->_slots[slot].owner && p->_slots[slot].seq == step_id &&
	    p->_slots[slot].owner->_state == call_awaiter::state::in_flight)
		p->_slots[slot].owner->finish(reply::mesh_error(status));
}

/* ---- call ---- */

pod::call_awaiter::~call_awaiter()
{
	/* a finished call may outlive its pod (closed with the call in flight): touch only the
	 * loop then */
	_loop.cancel_timer(this);
	detail::waiter_list::unlink(this);
	if (_state == state::done || _state == state::idle)
		return;
	_pod._stats.cancelled++;
	release_slot();
}

/* The call's deadline: its own, else the pod's default; one past 2^32 - 1 ms (49 days: the
 * header's field) is that, so that neither the header nor the timer's time point overflows
 * (the mesh's route timeout bounds it anyway). */
std::chrono::milliseconds pod::call_awaiter::deadline() const noexcept
{
	auto ms = _spec.deadline.count() > 0 ? _spec.deadline : _pod._default_deadline;
	if (_spec.within)
		if (const auto left = _spec.within->time_left())
			ms = std::min(ms, std::max(*left, std::chrono::milliseconds(1)));
	return std::clamp(ms, std::chrono::milliseconds(0), std::chrono::milliseconds(UINT32_MAX));
}

int pod::call_awaiter::send() noexcept
{
	const auto &s = _spec;
	if (s.body.size() > UINT32_MAX) /* the descriptor's length is 32 bits: never cut short */
		return -EMSGSIZE;
	return detail::send_request(_pod.get(), _pod._worker, _service, s.method, s.path, s.fields,
				    s.body.data(), static_cast<uint32_t>(s.body.size()),
				    0x80000000u | _slot, _pod._slots[_slot].seq,
				    static_cast<uint32_t>(deadline().count()));
}

bool pod::call_awaiter::await_suspend(std::coroutine_handle<> c) noexcept
{
	h = c;
	try_send = try_send_cb;
	at = clock::now() + deadline();
	fire = [](detail::timer *t) {
		auto *a = static_cast<call_awaiter *>(t);
		a->_pod._stats.deadlines++;
		a->finish(reply::local_error(504, "deadline"));
	};
	if (_pod._node_lost) { /* no node to send to: the reply at once */
		finish(reply::local_error(503, "node_lost"));
		return true;
	}
	_pod._loop.add_timer(this);
	if (_pod._free_slots.empty()) {
		_state = state::wait_slot;
		_pod._slot_wait.push_back(this);
		return true;
	}
	return start();
}

/* With a slot free: take it and send (or wait for TX room). false: finished at once. */
bool pod::call_awaiter::start() noexcept
{
	_slot = _pod._free_slots.back();
	_pod._free_slots.pop_back();
	_pod._slots[_slot] = {this, ++_pod._seq};
	int r = _pod._tx_wait.empty() ? send() : -EAGAIN;
	if (r == 0) {
		_pod._stats.calls++;
		_state = state::in_flight;
		return true;
	}
	if (again(r)) {
		_state = state::wait_tx;
		_pod.wait_tx(this);
		return true;
	}
	/* cannot be sent at all (too large, bad arguments): an error value at once */
	_pod._loop.cancel_timer(this);
	release_slot();
	_state = state::done;
	_result = reply::local_error(r == -EMSGSIZE ? 413 : 400, r == -EMSGSIZE ? "too_large" : "bad_request");
	return false;
}

int pod::call_awaiter::try_send_cb(tx_waiter *w)
{
	auto *a = static_cast<call_awaiter *>(w);
	int rc = a->send();
	if (again(rc))
		return -EAGAIN;
	detail::waiter_list::unlink(a);
	if (rc == 0) {
		a->_pod._stats.calls++;
		a->_state = state::in_flight;
	} else {
		a->finish(reply::local_error(rc == -EMSGSIZE ? 413 : 400,
					     rc == -EMSGSIZE ? "too_large" : "bad_request"));
	}
	return rc;
}

void pod::call_awaiter::release_slot() noexcept
{
	if (_slot == UINT32_MAX)
		return;
	_pod._slots[_slot] = {};
	_pod._free_slots.push_back(_slot);
	_slot = UINT32_MAX;
	/* a call waiting for a slot gets this one */
	while (!_pod._slot_wait.empty() && !_pod._free_slots.empty()) {
		auto *nx = static_cast<call_awaiter *>(static_cast<tx_waiter *>(_pod._slot_wait.front()));
		detail::waiter_list::unlink(nx);
		if (!nx->start()) { /* finished at once: resume it */
			nx->_state = state::done;
			_pod._loop.ready(nx);
		}
	}
}

void pod::call_awaiter::finish(reply &&r) noexcept
{
	_pod._loop.cancel_timer(this);
	detail::waiter_list::unlink(this);
	_state = state::done;
	release_slot();
	_result = std::move(r);
	_pod._loop.ready(this);
}

} // namespace dpumesh::host
