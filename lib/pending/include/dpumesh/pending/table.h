// SPDX-License-Identifier: BSD-3-Clause
// The Arm's pending-request table: matches responses to requests and times requests out.
//
// When the sidecar forwards a request it takes a slot and rewrites the request's req_id
// (towards a local pod) or the frame's correlation (towards a peer) to the slot's token.
// The answer must come back with that token, from the party the request went to, with the
// same step_id; anything else matches nothing and is dropped and counted. The origin's own
// (req_id, step_id) are restored on the response. A request with no answer by its
// deadline is handed to the expiry callback (which answers 504).
//
// One table per sidecar lcore, not thread-safe, no allocation after create: fixed slot
// array, free list, a FIFO of deadlines per timeout class and a hashed timing wheel of
// 1 ms ticks for the rest. An entry's timeout class is its deadline minus its start: the
// deadlines of one class come in the order the entries were inserted, so its FIFO is read
// from the head, due entries only, with the next slots prefetched from the FIFO itself (no
// list to chase, nothing not yet due visited twice). A FIFO's item of an entry removed or
// re-armed stays behind and is skipped when it comes up; re-armed entries (retries), other
// timeouts (a request's own shorter deadline) and a FIFO that is full go to the wheel.
// Each FIFO has a slot's room per table slot (16 B each, touched only as far as used).
// The sidecar's request table (lib/sidecar/internal/request_table.h) keeps its own typed
// context per slot next to each entry (token & 0xffff).
//
//   table t(65536, tsc_hz);
//   uint32_t token = t.insert(entry, now + timeout);          // 0: table full
//   ...
//   entry *e = t.match(token, responder, step_id);    // nullptr: no match
//   ... restore e->origin_req_id, answer the origin ...
//   t.remove(token);
//   t.expire(now, [](uint32_t token, entry &e) { send 504 to e.origin; });
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "dpumesh/common/huge_array.h"

namespace dpumesh::pending {

/** Who a request came from or went to. */
struct party {
	enum class kind : uint8_t { none, pod, peer };
	kind type = kind::none;
	uint32_t pod_handle = 0; /**< kind::pod: pod id + generation (abi.h pod handle) */
	uint16_t peer = 0;       /**< kind::peer: index into the node's peers */
	bool operator==(const party &o) const noexcept
	{
		return type == o.type && pod_handle == o.pod_handle && peer == o.peer;
	}
};

struct entry {
	party origin;              /**< who asked */
	party dest;                /**< who must answer */
	uint32_t origin_req_id;    /**< restored on the response */
	uint32_t step_id;          /**< must come back unchanged */
	uint64_t origin_correlation; /**< origin peer's correlation (Case 2 requests) */
	uint64_t deadline_tsc;
	uint64_t start_tsc;        /**< for latency histograms */
	uint32_t service;          /**< service index */
	uint16_t attempt;          /**< 0 first try, then retries */
	uint32_t route;            /**< sidecar: route metrics index in policy `version` */
	uint32_t version;          /**< sidecar: policy version the request was admitted under */
	uint32_t backoff_ms;       /**< sidecar: base delay before a retry */
	uint16_t retries_left;     /**< sidecar: retries this request may still take */
};

class table {
public:
	/**
	 * @param capacity slots (rounded up to a power of two, at most 65536)
	 * @param tsc_hz TSC frequency, for the 1 ms wheel ticks
	 */
	table(uint32_t capacity, uint64_t tsc_hz, uint32_t wheel_ticks = 4096);
	/** Timeout classes with a FIFO each (the first ones seen; an empty one takes the next
	 *  new class); entries of other classes go to the wheel. */
	static constexpr unsigned nb_fifos = 4;
	~table();
	table(const table &) = delete;
	table &operator=(const table &) = delete;

	/** Takes a slot; returns its token (never 0), or 0 when the table is full. */
	uint32_t insert(const entry &e) noexcept;
	/**
	 * The entry the next insert takes, to be written where it is (nullptr: the table is
	 * full), then taken as written with insert_written(): an entry made aside and copied
	 * in was read back in 16-byte loads behind its narrow stores (a store-forwarding
	 * stall). Writing it takes nothing: an entry written and not taken is no entry.
	 */
	entry *next_entry() noexcept { return _free_head == nil ? nullptr : &_slots[_free_head].e; }
	/** Takes the slot of next_entry() as written: its token, or 0 when the table is full. */
	uint32_t insert_written() noexcept;

	/** The entry a response with this token from `responder` with `step_id` answers. */
	entry *match(uint32_t token, const party &responder, uint32_t step_id) noexcept;

	/** The entry behind a token, whoever asks (for retries and diagnostics). */
	entry *find(uint32_t token) noexcept;

	/** Frees a slot; the token stops matching. */
	void remove(uint32_t token) noexcept;

	/** Moves a live entry to a new deadline (retry). */
	void rearm(uint32_t token, uint64_t deadline_tsc) noexcept;

	/**
	 * Calls fn(token, entry) for every entry whose deadline has passed. The entry is
	 * removed after fn returns, unless fn moved it to a later deadline with rearm()
	 * (a retry). fn must not insert or remove other entries. At most `max` entries are
	 * handed over per call (callers whose output queues are bounded); the rest stay due.
	 * An fn that returns bool says it: true, the entry is removed (fn did not re-arm it);
	 * false, fn re-armed it. The table then does not look at the slot again to find out
	 * (~10 instructions an expiry).
	 * @return number of entries handed to fn
	 */
	template <typename Fn>
	uint32_t expire(uint64_t now_tsc, Fn &&fn, uint32_t max = UINT32_MAX)
	{
		return expire(now_tsc, fn, max, [](uint32_t) {});
	}

	/**
	 * The same; ahead(slot) is called for the next slot of the walk while fn runs on this
	 * one (slot = token & 0xffff), for a caller's per-slot data to be prefetched: a
	 * bucket is a linked list over slots all over the table, each one a cache miss.
	 */
	template <typename Fn, typename Ahead>
	uint32_t expire(uint64_t now_tsc, Fn &&fn, uint32_t max, Ahead &&ahead)
	{
		uint32_t n = 0;
		/* FIFOs and the wheel take turns at going first, so that none waits behind
		 * the others' expiries when a call's `max` is reached */
		const unsigned first = _expire_turn++ % (nb_fifos + 1);
		for (unsigned k = 0; k <= nb_fifos && n < max; k++) {
			const unsigned src = (first + k) % (nb_fifos + 1);
			n += src < nb_fifos ? expire_fifo(_fifos[src], now_tsc, fn, max - n, ahead)
					    : expire_wheel(now_tsc, fn, max - n, ahead);
		}
		return n;
	}

	/** The slot (token & 0xffff) the next insert() takes, or UINT32_MAX: a caller with
	 *  per-slot data of its own prefetches it. */
	uint32_t next_slot() const noexcept { return _free_head; }

	/** Entries in use; read by control while the owner lcore writes it (relaxed). */
	uint32_t size() const noexcept { return _nb_used.load(std::memory_order_relaxed); }
	uint32_t capacity() const noexcept { return _capacity; }

	/** Calls fn(token, entry) for every live entry (the owner: teardown). */
	template <typename Fn>
	void for_each(Fn &&fn) const
	{
		for_each_in(0, _capacity, fn);
	}
	/** for_each() over slots [first, first + count) alone, for a walk in steps (the
	 *  owner: `show pending`'s listing between two polls). */
	template <typename Fn>
	void for_each_in(uint32_t first, uint32_t count, Fn &&fn) const
	{
		const uint32_t end = first + count < _capacity ? first + count : _capacity;
		for (uint32_t i = first; i < end; i++)
			if (_slots[i].used)
				fn(token_of(i), _slots[i].e);
	}

	/** Entries waiting in the timeout classes' FIFOs (the rest are on the wheel). */
	uint32_t nb_in_fifos() const noexcept { return _nb_in_fifos; }

private:
	static constexpr uint32_t nil = UINT32_MAX;
	/** How many FIFO items ahead of the one expiring have their slots prefetched: the
	 *  sidecar's callback only lists an expiry (~20-40 cycles), so 4 ahead left most of a
	 *  cold slot's miss in the walk (the forward profile's `expire`). */
	static constexpr uint32_t fifo_ahead = 16;
	/* 96 bytes, 32-aligned: always two cache lines, the two the walk prefetches (from a
	 * 16-aligned array a slot could span three, its liveness fields in the third) */
	struct alignas(32) slot {
		entry e;
		uint32_t prev, next; /* wheel bucket list, or free list through next */
		uint32_t bucket;
		uint16_t gen;
		bool used;
		bool in_fifo; /* its deadline is in a FIFO (else on the wheel, while used) */
	};
	/* An entry's deadline in its class's FIFO: live while its slot is used with this token,
	 * in_fifo and this deadline (a removed or re-armed entry's item is skipped). */
	struct fifo_item {
		uint32_t token;
		uint64_t deadline;
	};
	static constexpr uint32_t items_per_line = 64 / sizeof(fifo_item);
	/** How many cache lines of a FIFO's items ahead of its tail (for the inserts' stores)
	 *  and of the item the sweep reads ahead (for the walk's loads) are prefetched. */
	static constexpr uint32_t fifo_lines_ahead = 4;
	struct fifo {
		uint64_t timeout = 0;  /* the class: deadline - start */
		uint64_t last = 0;     /* the newest deadline (items are in deadline order) */
		uint32_t head = 0, tail = 0; /* free-running; tail - head items */
		huge_array<fifo_item> items; /* _capacity of them */
	};

	bool fifo_live(const fifo_item &it) const noexcept
	{
		return fifo_live(_slots[it.token & 0xffff], it);
	}
	/* the same, of its slot s */
	static bool fifo_live(const slot &s, const fifo_item &it) noexcept
	{
		return s.used && s.in_fifo && token_of(s, it.token & 0xffff) == it.token &&
		       s.e.deadline_tsc == it.deadline;
	}
	/* fifo_live() in the sweep's walk: the slot's generation, used and in_fifo (adjacent)
	 * compared as one word with (the token's generation, true, true): the three tests were
	 * ~8 instructions an expiry, the word ~4 (the inserts' to_fifo() keeps the tests: the
	 * word there moved the relay by +1) */
	static bool fifo_live_word(const slot &s, const fifo_item &it) noexcept
	{
		return live_word(s) == live_word(static_cast<uint16_t>(it.token >> 16), true) &&
		       s.e.deadline_tsc == it.deadline;
	}
	/* the word of gen, used and in_fifo: a slot's, or the one of (gen, used, used) */
	struct live_fields {
		uint16_t gen;
		bool used;
		bool in_fifo;
	};
	static_assert(sizeof(live_fields) == 4);
	static uint32_t live_word(const slot &s) noexcept
	{
		static_assert(offsetof(slot, used) == offsetof(slot, gen) + 2 &&
			      offsetof(slot, in_fifo) == offsetof(slot, gen) + 3,
			      "gen, used and in_fifo: one word");
		uint32_t w;
		std::memcpy(&w, reinterpret_cast<const char *>(&s) + offsetof(slot, gen), sizeof(w));
		return w;
	}
	static uint32_t live_word(uint16_t gen, bool used) noexcept
	{
		const live_fields f{gen, used, used};
		uint32_t w;
		std::memcpy(&w, &f, sizeof(w));
		return w;
	}

	/* Whether an expiry callback says if its entry is removed (returns bool: expire()). */
	template <typename Fn>
	static constexpr bool says_removed =
		std::is_same_v<std::invoke_result_t<Fn &, uint32_t, entry &>, bool>;

	/* The due entries at the head of one FIFO, in order (it is sorted by deadline). */
	template <typename Fn, typename Ahead>
	uint32_t expire_fifo(fifo &q, uint64_t now_tsc, Fn &fn, uint32_t max, Ahead &ahead)
	{
		/* the arrays and the FIFO's ends in registers for the walk: fn's stores (bytes
		 * among them, which may alias anything) made each be loaded again per entry
		 * (~15 instructions of the sweep's ~140 a 504). fn moves neither: it inserts
		 * and removes no other entry, and a re-armed one leaves its item behind */
		slot *const slots = _slots.get();
		const fifo_item *const items = q.items.get();
		const uint32_t mask = _capacity - 1;
		const uint32_t tail = q.tail;
		uint32_t head = q.head;
		uint32_t n = 0, kept = 0; /* kept: re-armed by fn (says_removed) */
		while (head != tail) {
			const fifo_item it = items[head & mask];
			if (it.deadline > now_tsc)
				break;
			if (n == max)
				break; /* the rest on the next call */
			if (tail - head > fifo_ahead) {
				/* the items a few lines further: the walk's loads of them missed
				 * once a line, as the inserts' stores did (to_fifo()) */
				if (((head + fifo_ahead) & (items_per_line - 1)) == 0)
					__builtin_prefetch(&items[(head + fifo_ahead +
								   fifo_lines_ahead * items_per_line) &
								  mask]);
				const uint32_t next = items[(head + fifo_ahead) & mask].token & 0xffff;
				__builtin_prefetch(&slots[next]);
				__builtin_prefetch(reinterpret_cast<const char *>(&slots[next]) + 64);
				ahead(next);
			}
			head++;
			const uint32_t idx = it.token & 0xffff;
			slot &s = slots[idx];
			if (!fifo_live_word(s, it))
				continue; /* removed or re-armed since */
			n++;
			if constexpr (says_removed<Fn>) {
				if (fn(it.token, s.e))
					free_fifo_slot(s, idx, it.token);
				else
					kept++;
			} else {
				fn(it.token, s.e);
				/* fn may have re-armed it (then on the wheel, in_fifo cleared) */
				if (s.used && s.in_fifo && token_of(s, idx) == it.token)
					free_slot(idx);
			}
		}
		q.head = head;
		if constexpr (says_removed<Fn>) {
			/* the counts free_fifo_slot() leaves: once a walk (nothing in it reads
			 * them; a re-armed entry's rearm() took its own out of _nb_in_fifos) */
			const uint32_t freed = n - kept;
			_nb_in_fifos -= freed;
			_nb_used.store(_nb_used.load(std::memory_order_relaxed) - freed,
				       std::memory_order_relaxed);
		}
		return n;
	}

	template <typename Fn, typename Ahead>
	uint32_t expire_wheel(uint64_t now_tsc, Fn &fn, uint32_t max, Ahead &ahead)
	{
		uint32_t n = 0;
		const uint64_t tick = now_tsc / _tick_tsc;
		/* nothing on the wheel (every deadline in a FIFO): no bucket to look at. Else a
		 * gap longer than the wheel is one revolution: each bucket is looked at once and
		 * every due entry is in one. The first sweep after start walked every tick since
		 * the TSC's zero otherwise, one per millisecond of the host's uptime (30 M
		 * iterations on a host up 8 hours: a stall of tens of ms, seconds after months) */
		if (_nb_used.load(std::memory_order_relaxed) == _nb_in_fifos) {
			_cur_tick = std::max(_cur_tick, tick);
			return 0;
		}
		if (tick > _cur_tick + _wheel_mask)
			_cur_tick = tick - _wheel_mask;
		for (;;) {
			uint32_t b = static_cast<uint32_t>(_cur_tick & _wheel_mask);
			uint32_t idx = _buckets[b];
			while (idx != nil) {
				slot &s = _slots[idx];
				uint32_t next = s.next;
				if (next != nil) {
					__builtin_prefetch(&_slots[next]);
					__builtin_prefetch(reinterpret_cast<const char *>(&_slots[next]) + 64);
					ahead(next);
				}
				if (n == max)
					return n; /* the rest of this tick on the next call */
				if (s.e.deadline_tsc <= now_tsc) {
					uint32_t tok = token_of(idx);
					uint64_t before = s.e.deadline_tsc;
					n++;
					if constexpr (says_removed<Fn>) {
						if (fn(tok, s.e))
							free_slot(idx);
					} else {
						fn(tok, s.e);
						if (s.used && token_of(idx) == tok &&
						    s.e.deadline_tsc == before)
							free_slot(idx);
					}
				}
				idx = next;
			}
			if (_cur_tick >= tick)
				break;
			_cur_tick++;
		}
		return n;
	}

	uint32_t token_of(uint32_t idx) const noexcept { return token_of(_slots[idx], idx); }
	/* the token of slot s, at idx */
	static uint32_t token_of(const slot &s, uint32_t idx) noexcept
	{
		return (uint32_t(s.gen) << 16) | idx;
	}
	uint32_t index_of(uint32_t token) const noexcept;
	void link(uint32_t idx) noexcept;
	void unlink(uint32_t idx) noexcept;
	bool to_fifo(uint32_t idx, uint32_t token) noexcept;

	/* Off the wheel or out of its FIFO (whose item stays behind, no longer live). */
	void leave(uint32_t idx) noexcept
	{
		slot &s = _slots[idx];
		if (s.in_fifo) {
			s.in_fifo = false;
			_nb_in_fifos--;
		} else {
			unlink(idx);
		}
	}

	/* remove() of a slot whose token was just checked (the sweep's): inline, without
	 * looking the token up again (index_of() and an out-of-line leave() were two calls per 504) */
	void free_slot(uint32_t idx) noexcept
	{
		leave(idx);
		slot &s = _slots[idx];
		s.used = false;
		/* a new generation per use; 0 is skipped so a token is never 0 */
		const uint16_t gen = static_cast<uint16_t>(s.gen + 1);
		s.gen = gen == 0 ? 1 : gen;
		s.next = _free_head;
		_free_head = idx;
		_nb_used.store(_nb_used.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
	}

	/* free_slot() of a live FIFO entry the sweep just handed over (slot s at idx, its
	 * token `token`: used, in_fifo and of that generation, fifo_live() said): nothing
	 * looked up or tested again, and _nb_in_fifos and _nb_used left to the walk's end
	 * (expire_fifo(): one update for all, ~4 instructions an expiry) */
	void free_fifo_slot(slot &s, uint32_t idx, uint32_t token) noexcept
	{
		/* a new generation per use; 0 is skipped so a token is never 0; not used and
		 * not in a FIFO: the three in one store (live_word()) */
		const uint16_t gen = static_cast<uint16_t>((token >> 16) + 1);
		const uint32_t w = live_word(gen == 0 ? 1 : gen, false);
		std::memcpy(reinterpret_cast<char *>(&s) + offsetof(slot, gen), &w, sizeof(w));
		s.next = _free_head;
		_free_head = idx;
	}

	uint32_t _capacity;
	uint64_t _tick_tsc;
	uint32_t _wheel_mask;
	uint64_t _cur_tick = 0;
	huge_array<slot> _slots; /* on huge pages: the sweep's slots are all over it */
	std::unique_ptr<uint32_t[]> _buckets;
	uint32_t _free_head = 0;
	fifo _fifos[nb_fifos];
	uint32_t _nb_in_fifos = 0;
	unsigned _expire_turn = 0;
	std::atomic<uint32_t> _nb_used{0}; /* single writer: the owner lcore */
};

/* Onto its timeout class's FIFO: false (the wheel then) when no FIFO takes its class, its
 * deadline would come before the FIFO's newest, or the FIFO is full of live entries.
 * `token`: token_of(idx), which the caller has. */
inline bool table::to_fifo(uint32_t idx, uint32_t token) noexcept
{
	slot &s = _slots[idx];
	const uint64_t deadline = s.e.deadline_tsc;
	if (deadline <= s.e.start_tsc)
		return false;
	const uint64_t timeout = deadline - s.e.start_tsc;
	fifo *q = nullptr;
	for (fifo &f : _fifos) {
		if (f.timeout == timeout) {
			q = &f;
			break;
		}
		if (!q && f.head == f.tail)
			q = &f; /* empty: it may take a new class */
	}
	if (!q)
		return false;
	if (q->head == q->tail) {
		q->timeout = timeout;
	} else if (deadline < q->last) {
		return false;
	}
	const uint32_t mask = _capacity - 1;
	if (q->tail - q->head == _capacity) {
		/* full: the items of entries answered since go first */
		while (q->head != q->tail && !fifo_live(q->items[q->head & mask]))
			q->head++;
		if (q->tail - q->head == _capacity)
			return false;
	}
	q->items[q->tail & mask] = {token, deadline};
	q->tail++;
	/* the line the tail reaches fifo_lines_ahead lines from now, for writing, once per
	 * line: the ring (16 B an item, the table's capacity of them) was last touched when
	 * the sweep read it tens of milliseconds ago, and the store of each new line's first
	 * item missed; committed in order, it held up every store behind it (with a fence
	 * after insert, 7% of the forward path's worker waited there). Track side10: the
	 * forward relay 0.85-0.88x, the sidecar 0.85-0.91x main's cycles per message */
	if ((q->tail & (items_per_line - 1)) == 0)
		__builtin_prefetch(&q->items[(q->tail + fifo_lines_ahead * items_per_line) & mask], 1);
	q->last = deadline;
	s.in_fifo = true;
	_nb_in_fifos++;
	return true;
}

/* Inline, with to_fifo(): in the request table's open, where a relayed request's entry
 * goes in (out of line, the two calls' frames were ~30 of its ~175 instructions). */
inline uint32_t table::insert_written() noexcept
{
	if (_free_head == nil)
		return 0;
	uint32_t idx = _free_head;
	slot &s = _slots[idx];
	_free_head = s.next;
	/* the next insert's slot: the free list is LIFO, but a deadline sweep frees a whole
	 * tick's entries at once, and the opens of the next millisecond go deeper than what
	 * the sweep left in cache (the load of its `next` was insert()'s hottest line) */
	if (_free_head != nil) {
		__builtin_prefetch(&_slots[_free_head], 1);
		__builtin_prefetch(reinterpret_cast<const char *>(&_slots[_free_head]) + 64, 1);
	}
	s.used = true;
	s.in_fifo = false;
	/* the token once: read back from the slot after the stores above and the FIFO's (any
	 * of which may alias its generation, to the compiler), twice it was ~8 instructions */
	const uint32_t token = token_of(s, idx);
	if (!to_fifo(idx, token))
		link(idx);
	_nb_used.store(_nb_used.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
	return token;
}

/** The order `show pending` lists requests in: the earlier start first, equal starts by
 *  token (pending::oldest within a shard, control::pending across shards). */
inline bool started_before(uint64_t a_start, uint32_t a_token, uint64_t b_start,
			   uint32_t b_token) noexcept
{
	return a_start != b_start ? a_start < b_start : a_token < b_token;
}

/**
 * The `N` oldest of the entries offered (the smallest start_tsc), each as it was offered:
 * what an operator looking for a stuck request wants first (`show pending`). Offers older
 * than the N-th oldest kept so far are copied into a buffer of 4N, which is cut back to its
 * N oldest (std::nth_element over (start, token, place) items, then the survivors' entries
 * moved down) when full: a copy and a few instructions an offer even when every one is older
 * than all before it (a walk whose slots hold the entries youngest first; a max-heap took ~70
 * cycles an offer there, ~9 us a step of 256). No allocation. Offers may come in any order (a
 * walk of the slots in steps); an entry kept is the copy made when it was offered, so one
 * closed since stays listed (a walk that outlasts the requests still shows what it met).
 */
template <uint32_t N>
class oldest {
	static_assert(N > 0 && 4 * N <= 65536, "places are 16-bit");

public:
	void clear() noexcept
	{
		_n = 0;
		_bound = {UINT64_MAX, UINT32_MAX, 0};
	}
	/** How many it keeps now (at most N). */
	uint32_t size() const noexcept { return _n < N ? _n : N; }
	void offer(uint32_t token, const entry &e) noexcept
	{
		const item it{e.start_tsc, token, static_cast<uint16_t>(_n)};
		if (!older(it, _bound))
			return; /* no older than N kept ones */
		_items[_n] = it;
		_store[_n++] = e;
		if (_n == _items.size())
			cut();
	}
	/** out(token, entry) for the kept ones, oldest first (equal starts by token). */
	template <typename Out>
	void sorted(Out &&out) const
	{
		std::array<item, 4 * N> by_age = _items;
		std::sort(by_age.begin(), by_age.begin() + _n, older);
		for (uint32_t i = 0; i < size(); i++)
			out(by_age[i].token, _store[by_age[i].place]);
	}

private:
	struct item {
		uint64_t start;
		uint32_t token;
		uint16_t place; /* its entry in _store */
	};
	static bool older(const item &a, const item &b) noexcept
	{
		return started_before(a.start, a.token, b.start, b.token);
	}
	/* keeps the N oldest of the buffer, their entries in the store's first N places;
	 * anything not older than the youngest of them can go unseen from now on */
	void cut() noexcept
	{
		std::nth_element(_items.begin(), _items.begin() + (N - 1), _items.begin() + _n,
				 older);
		std::array<bool, N> taken{};
		for (uint32_t i = 0; i < N; i++)
			if (_items[i].place < N)
				taken[_items[i].place] = true;
		uint32_t free_place = 0;
		for (uint32_t i = 0; i < N; i++) {
			if (_items[i].place < N)
				continue;
			while (taken[free_place])
				free_place++;
			_store[free_place] = _store[_items[i].place];
			_items[i].place = static_cast<uint16_t>(free_place);
			taken[free_place] = true;
		}
		_n = N;
		_bound = _items[N - 1];
	}
	uint32_t _n = 0;
	item _bound{UINT64_MAX, UINT32_MAX, 0};
	std::array<item, 4 * N> _items{};
	std::array<entry, 4 * N> _store{};
};

} // namespace dpumesh::pending
