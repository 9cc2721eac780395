// SPDX-License-Identifier: BSD-3-Clause
// C++20 coroutine task for pods: a lazy task<T>, frames from a per-thread pool, and
// when_all / when_any for parallel fan-out (docs/host-api.md "Coroutines").
//
//   task<int> twice(int x) { co_return 2 * x; }
//   task<void> f() {
//       task<int> a = twice(1), b = twice(2);
//       co_await when_all(a, b);              // both run; a.take() == 2, b.take() == 4
//       size_t first = co_await when_any(a2, b2); // the others are cancelled (destroyed)
//   }
//
// A task starts when awaited (or spawned on an event_loop) and owns its frame: destroying a
// task destroys a suspended frame, which runs the destructors of everything it holds — that
// is how cancellation works (an in-flight call's awaiter gives up its slot). No exceptions:
// an exception leaving a task terminates the program (the hot path has none).
#pragma once

#include <array>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>

namespace dpumesh::host {

/** Coroutine frame allocator: per-thread free lists in 64-byte size classes up to 4 KiB (a
 * frame freed is kept for the next one of its class); bigger frames use the heap. */
struct frame_stats {
	uint64_t heap_allocs;  /**< frames that had to come from operator new */
	uint64_t pool_allocs;  /**< frames reused from the free lists */
	uint64_t live;         /**< frames not freed yet */
};
void *frame_alloc(size_t n);
void frame_free(void *p, size_t n) noexcept;
/** This thread's counters. */
frame_stats frame_pool_stats() noexcept;

class event_loop;

namespace detail {

/* Shared state of a when_all / when_any while its children run. */
struct join_state {
	uint32_t remaining = 0;
	int32_t winner = -1; /* when_any: first child done */
	bool any = false;
	bool armed = false; /* false while the children are being started */
	std::coroutine_handle<> parent;

	std::coroutine_handle<> child_done(uint32_t index) noexcept
	{
		remaining--;
		if (any) {
			if (winner >= 0)
				return std::noop_coroutine();
			winner = static_cast<int32_t>(index);
			return armed ? parent : std::noop_coroutine();
		}
		return armed && remaining == 0 ? parent : std::noop_coroutine();
	}
};

struct promise_base {
	std::coroutine_handle<> continuation;
	join_state *join = nullptr;
	uint32_t join_index = 0;
	bool done = false;
	/* spawned on a loop (detached): the loop owns the frame, it frees itself when done */
	event_loop *loop = nullptr;
	void *owner = nullptr; /* the pod a server coroutine belongs to */
	std::coroutine_handle<> self;
	promise_base *root_prev = nullptr, *root_next = nullptr;

	static void *operator new(size_t n) { return frame_alloc(n); }
	static void operator delete(void *p, size_t n) noexcept { frame_free(p, n); }

	std::suspend_always initial_suspend() const noexcept { return {}; }
	void unhandled_exception() const noexcept { std::terminate(); }
};

/* Finishing a detached task: unlinks it from its loop and frees the frame. */
void finish_detached(promise_base *p, std::coroutine_handle<> h) noexcept;

struct final_awaiter {
	bool await_ready() const noexcept { return false; }
	template <typename P> std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept
	{
		promise_base &p = h.promise();
		p.done = true;
		if (p.loop) {
			finish_detached(&p, h);
			return std::noop_coroutine();
		}
		if (p.join)
			return p.join->child_done(p.join_index);
		return p.continuation ? p.continuation : std::noop_coroutine();
	}
	void await_resume() const noexcept {}
};

} // namespace detail

template <typename T = void> class task;

namespace detail {

template <typename T> struct promise : promise_base {
	std::optional<T> value;
	task<T> get_return_object() noexcept;
	final_awaiter final_suspend() const noexcept { return {}; }
	template <typename U> void return_value(U &&v) { value.emplace(std::forward<U>(v)); }
};

template <> struct promise<void> : promise_base {
	task<void> get_return_object() noexcept;
	final_awaiter final_suspend() const noexcept { return {}; }
	void return_void() const noexcept {}
};

} // namespace detail

template <typename T> class [[nodiscard]] task {
public:
	using promise_type = detail::promise<T>;
	using handle = std::coroutine_handle<promise_type>;

	task() noexcept = default;
	explicit task(handle h) noexcept : _h(h) {}
	task(task &&o) noexcept : _h(std::exchange(o._h, {})) {}
	task &operator=(task &&o) noexcept
	{
		if (this != &o) {
			reset();
			_h = std::exchange(o._h, {});
		}
		return *this;
	}
	task(const task &) = delete;
	task &operator=(const task &) = delete;
	~task() { reset(); }

	/** Destroys the frame (a suspended task is cancelled). */
	void reset() noexcept
	{
		if (_h)
			std::exchange(_h, {}).destroy();
	}
	bool valid() const noexcept { return static_cast<bool>(_h); }
	bool done() const noexcept { return _h && _h.promise().done; }
	/** The result of a finished task<T> (moved out). */
	T take()
		requires(!std::is_void_v<T>)
	{
		return std::move(*_h.promise().value);
	}

	auto operator co_await() noexcept
	{
		struct awaiter {
			handle h;
			bool await_ready() const noexcept { return !h || h.promise().done; }
			std::coroutine_handle<> await_suspend(std::coroutine_handle<> parent) noexcept
			{
				h.promise().continuation = parent;
				return h;
			}
			T await_resume()
			{
				if constexpr (!std::is_void_v<T>)
					return std::move(*h.promise().value);
			}
		};
		return awaiter{_h};
	}

	/* for when_all / when_any / event_loop */
	detail::promise_base &base() noexcept { return _h.promise(); }
	std::coroutine_handle<> raw() const noexcept { return _h; }
	handle release() noexcept { return std::exchange(_h, {}); }

private:
	handle _h;
};

namespace detail {
template <typename T> task<T> promise<T>::get_return_object() noexcept
{
	return task<T>(task<T>::handle::from_promise(*this));
}
inline task<void> promise<void>::get_return_object() noexcept
{
	return task<void>(task<void>::handle::from_promise(*this));
}

/* One entry per child: its promise and its frame. */
struct child {
	promise_base *p;
	std::coroutine_handle<> h;
};

template <size_t N> struct join_awaiter {
	std::array<child, N> kids;
	size_t n; /* used entries (N is a bound for the span forms) */
	join_state js;

	bool await_ready() const noexcept { return n == 0; }
	bool await_suspend(std::coroutine_handle<> parent) noexcept
	{
		js.parent = parent;
		js.remaining = static_cast<uint32_t>(n);
		for (size_t i = 0; i < n; i++) {
			kids[i].p->join = &js;
			kids[i].p->join_index = static_cast<uint32_t>(i);
		}
		for (size_t i = 0; i < n; i++) {
			if (kids[i].p->done) { /* awaited before: counts as finished */
				js.child_done(static_cast<uint32_t>(i));
				continue;
			}
			kids[i].h.resume();
			if (js.any && js.winner >= 0)
				break;
		}
		js.armed = true;
		if (js.any)
			return js.winner < 0;
		return js.remaining != 0;
	}
};

template <typename... T> auto make_kids(task<T> &...ts)
{
	return std::array<child, sizeof...(T)>{child{&ts.base(), ts.raw()}...};
}

} // namespace detail

/** Runs every task at once; resumes when all have finished (results: t.take()). */
template <typename... T> auto when_all(task<T> &...ts)
{
	struct awaiter : detail::join_awaiter<sizeof...(T)> {
		void await_resume() const noexcept {}
	};
	return awaiter{{detail::make_kids(ts...), sizeof...(T), {}}};
}

/** Runs every task at once; resumes with the index of the first to finish. The others are
 * cancelled: their frames are destroyed (task::valid() turns false). */
template <typename... T> auto when_any(task<T> &...ts)
{
	struct awaiter : detail::join_awaiter<sizeof...(T)> {
		std::array<void (*)(void *), sizeof...(T)> resets;
		std::array<void *, sizeof...(T)> objs;
		size_t await_resume() noexcept
		{
			const size_t w = static_cast<size_t>(this->js.winner);
			for (size_t i = 0; i < this->n; i++)
				if (i != w)
					resets[i](objs[i]);
			return w;
		}
	};
	awaiter a{{detail::make_kids(ts...), sizeof...(T), {}}, {}, {}};
	a.js.any = true;
	size_t i = 0;
	((a.resets[i] = [](void *t) { static_cast<task<T> *>(t)->reset(); }, a.objs[i++] = &ts), ...);
	return a;
}

/** when_all over a span of tasks of one type (up to 64 at once). */
template <typename T> auto when_all(std::span<task<T>> ts)
{
	struct awaiter : detail::join_awaiter<64> {
		void await_resume() const noexcept {}
	};
	awaiter a{};
	a.n = ts.size() < 64 ? ts.size() : 64;
	for (size_t i = 0; i < a.n; i++)
		a.kids[i] = {&ts[i].base(), ts[i].raw()};
	return a;
}

/** when_any over a span of tasks of one type (up to 64): index of the first; others cancelled. */
template <typename T> auto when_any(std::span<task<T>> ts)
{
	struct awaiter : detail::join_awaiter<64> {
		std::span<task<T>> all;
		size_t await_resume() noexcept
		{
			const size_t w = static_cast<size_t>(this->js.winner);
			for (size_t i = 0; i < this->n; i++)
				if (i != w)
					all[i].reset();
			return w;
		}
	};
	awaiter a{};
	a.n = ts.size() < 64 ? ts.size() : 64;
	a.all = ts;
	a.js.any = true;
	for (size_t i = 0; i < a.n; i++)
		a.kids[i] = {&ts[i].base(), ts[i].raw()};
	return a;
}

} // namespace dpumesh::host
