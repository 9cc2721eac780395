// SPDX-License-Identifier: BSD-3-Clause
// The DPA emulator: dpa_dev.h implemented on lcores, with DOCA's rules enforced.
#include "dpumesh/dpa/emulator.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_memory.h>

#include "dpumesh/common/log.h"

using namespace dpumesh;

namespace {

/* The handle of the DPU-memory mmap: never an mkey (mkey_table::reserved_mkey). */
constexpr uint32_t dpu_mmap_handle = mkey_table::reserved_mkey;

/* pod_lookup_table of a thread without a registry (solo threads): no pod is active. */
const pod_registry_entry no_pods[DPUMESH_MAX_PODS] = {};

} // namespace

namespace dpumesh::dpa {
namespace {

constexpr const char *rule_names[] = {
#define DPUMESH_DPA_RULE_NAME(n, d) #n,
	DPUMESH_FOREACH_DPA_RULE(DPUMESH_DPA_RULE_NAME)
#undef DPUMESH_DPA_RULE_NAME
};
constexpr const char *rule_descriptions[] = {
#define DPUMESH_DPA_RULE_DESC(n, d) d,
	DPUMESH_FOREACH_DPA_RULE(DPUMESH_DPA_RULE_DESC)
#undef DPUMESH_DPA_RULE_DESC
};
constexpr size_t nb_rules = static_cast<size_t>(rule::count);

bool strict_from_env() noexcept
{
	const char *v = std::getenv("DPUMESH_DPA_STRICT");
	return v && v[0] == '1';
}

} // namespace

const char *rule_name(rule r) noexcept
{
	return static_cast<size_t>(r) < nb_rules ? rule_names[static_cast<size_t>(r)] : "?";
}
const char *rule_description(rule r) noexcept
{
	return static_cast<size_t>(r) < nb_rules ? rule_descriptions[static_cast<size_t>(r)] : "?";
}

namespace detail {

struct hw;

} // namespace detail
} // namespace dpumesh::dpa

/*
 * One emulated DPA thread: its async-ops queue (with the runtime's cookie FIFO), its
 * completion context, its activation state and the rules it is held to. The node parts
 * (registry, queues) are in `pair`, null for a solo thread.
 */
struct dpa_dev {
	/* One post. Indices into the FIFO only grow; slot = index & mask. */
	struct entry {
		uint64_t cookie;
		void *dst;
		const void *src;
		uint32_t len;
		bool reported;
	};
	struct cq_elem {
		uint32_t end; /* FIFO index just past the last copy it covers */
		int32_t status;
	};

	dpa::detail::hw *hw = nullptr;
	unsigned hw_index = 0; /* the cookie the DMA engine carries for this thread's copies */
	const mkey_table *mkeys = nullptr;
	dpa::rules rules;
	bool strict = false;
	uint64_t budget_cycles = 0;
	char name[24] = {};

	std::unique_ptr<entry[]> fifo;
	std::unique_ptr<cq_elem[]> cq;
	uint32_t mask = 0;
	/* head: oldest cookie not taken; covered: end of what taken completions cover;
	 * done: completed by the engine; submitted: given to it; rung: doorbell; tail: posted */
	uint32_t head = 0, covered = 0, done = 0, submitted = 0, rung = 0, tail = 0;
	int32_t run_err = 0; /* first error among unreported copies since the last report */
	uint32_t cq_tail = 0, cq_taken = 0, cq_acked = 0;

	bool notified = false, armed = false, ended = false, finished = false, stop = false;

	counter violations[static_cast<size_t>(dpa::rule::count)];
	counter *violations_total = nullptr;
	bool logged[static_cast<size_t>(dpa::rule::count)] = {};

	/* ranges of DPDK memory found for the DPU mmap (rte_mem_virt2memseg_list is a scan) */
	uintptr_t dpu_lo[4] = {}, dpu_hi[4] = {};
	unsigned dpu_next = 0;

	dpa::emulator::pair *pair = nullptr;

	void init(const char *n, const dpa::rules &r, bool strict_, const mkey_table *m)
	{
		std::snprintf(name, sizeof(name), "%s", n);
		rules = r;
		strict = strict_;
		mkeys = m;
		uint32_t cap = 1;
		while (cap < 2 * std::max<uint32_t>(r.queue_size, 1))
			cap <<= 1;
		fifo.reset(new entry[cap]());
		cq.reset(new cq_elem[cap]());
		mask = cap - 1;
		budget_cycles = r.time_alive_us * rte_get_tsc_hz() / 1000000;
	}

	void violate(dpa::rule r, uint64_t a = 0, uint64_t b = 0) noexcept
	{
		const size_t i = static_cast<size_t>(r);
		violations[i].inc();
		if (violations_total)
			violations_total->inc();
		if (!logged[i] || strict) {
			logged[i] = true;
			DPUMESH_LOG(ERR, dpa, "DPA thread %s broke DOCA rule %s: %s (0x%" PRIx64
				    ", 0x%" PRIx64 ")",
				    name, dpa::rule_name(r), dpa::rule_description(r), a, b);
		}
		/* time alive is wall clock here, and a loaded box preempts lcores: counted and
		 * logged, never fatal (dpa_rules_test proves it is caught) */
		if (strict && r != dpa::rule::time_alive) {
			std::fprintf(stderr, "DPUMESH_DPA_STRICT: DPA thread %s broke rule %s\n", name,
				     dpa::rule_name(r));
			std::abort();
		}
	}

	uint64_t violation_count() const noexcept
	{
		uint64_t n = 0;
		for (const counter &c : violations)
			n += c.get();
		return n;
	}

	/* DPDK memory (not external: pod regions registered with extmem are pods' mmaps) */
	void *dpu_range(uint64_t addr, uint64_t len) noexcept
	{
		for (unsigned i = 0; i < 4; i++)
			if (addr >= dpu_lo[i] && addr < dpu_hi[i] && len <= dpu_hi[i] - addr)
				return reinterpret_cast<void *>(addr);
		const rte_memseg_list *msl = rte_mem_virt2memseg_list(reinterpret_cast<void *>(addr));
		if (!msl || msl->external)
			return nullptr;
		const uintptr_t lo = reinterpret_cast<uintptr_t>(msl->base_va);
		const uintptr_t hi = lo + msl->len;
		if (addr < lo || addr >= hi || len > hi - addr)
			return nullptr;
		dpu_lo[dpu_next] = lo;
		dpu_hi[dpu_next] = hi;
		dpu_next = (dpu_next + 1) % 4;
		return reinterpret_cast<void *>(addr);
	}

	/* (mmap, address, length) -> local pointer, or nullptr: the hardware's range check */
	void *resolve(uint32_t mmap, uint64_t addr, uint64_t len) noexcept
	{
		if (len == 0)
			return nullptr;
		if (mmap == dpu_mmap_handle)
			return dpu_range(addr, len);
		return mkeys ? mkeys->translate(mmap, addr, len) : nullptr;
	}

	/* the engine finished the oldest copy it was given */
	void hw_done(int32_t status) noexcept
	{
		const entry &e = fifo[done & mask];
		done++;
		if (status != 0 && run_err == 0)
			run_err = status;
		if (e.reported) {
			cq[cq_tail & mask] = {done, run_err};
			cq_tail++;
			run_err = 0;
		}
	}

	bool idle() const noexcept { return head == tail; }

	bool due(bool doorbell) const noexcept
	{
		return !finished && (notified || doorbell || (armed && cq_tail != cq_taken));
	}

	/* due because a copy it asked to hear of completed (not merely notified) */
	bool completed() const noexcept { return !finished && armed && cq_tail != cq_taken; }

	/* copies posted and rung that the DMA hardware has not taken yet */
	bool copies_rung() const noexcept { return submitted != rung; }

	void activate(dpa::kernel_fn fn, void *arg) noexcept
	{
		notified = false;
		armed = false; /* arming is one-shot: a kernel re-arms every activation it needs */
		ended = false;
		const uint64_t t0 = rte_rdtsc();
		fn(this, arg);
		const uint64_t took = rte_rdtsc() - t0;
		if (took > budget_cycles)
			violate(dpa::rule::time_alive, took * 1000000 / rte_get_tsc_hz(),
				rules.time_alive_us);
		if (rung != tail)
			violate(dpa::rule::unflushed, tail - rung);
		if (!ended)
			violate(dpa::rule::no_reschedule);
	}
};

namespace dpumesh::dpa::detail {

/* The emulated DMA hardware of one engine: submits rung copies, routes completions. */
struct hw {
	dma::engine *eng = nullptr;
	::dpa_dev *k[2] = {};
	unsigned nb = 0;

	void step() noexcept
	{
		for (unsigned i = 0; i < nb; i++) {
			::dpa_dev *d = k[i];
			while (d->submitted != d->rung) {
				dma::copy_op ops[32];
				uint16_t n = 0;
				for (uint32_t j = d->submitted; j != d->rung && n < 32; j++, n++) {
					const ::dpa_dev::entry &e = d->fifo[j & d->mask];
					ops[n] = {e.dst, e.src, e.len, i};
				}
				uint16_t got = eng->submit(ops, n);
				d->submitted += got;
				if (got < n)
					break; /* the engine is full: the rest on a later step */
			}
		}
		dma::completion c[64];
		uint16_t n = eng->poll(c, 64);
		for (uint16_t i = 0; i < n; i++)
			if (c[i].cookie < nb)
				k[c[i].cookie]->hw_done(c[i].status);
	}
};

} // namespace dpumesh::dpa::detail

/* One emulator thread: the TX and RX kernels' DPA threads, their engine, queues, state. */
struct dpumesh::dpa::emulator::pair {
	static constexpr uint32_t queue_depth = 1024;  /* sidecar TX/RX SQs, notifications */
	/* A hot pod whose SQs stayed empty this long turns cold (swept, not looked at every
	 * pass); the cold pods are looked at sweep_pods per sweep, so a cold pod's post is
	 * seen within ceil(cold / sweep_pods) sweeps. A TX pass sweeps when its hot pods had
	 * nothing after an idle pass (what an idle lcore would find), and at least every
	 * sweep_gap_us while the lcore is busy: a pass in the middle of a message's legs does not
	 * also pay for sweep_pods cold heads more than once per gap. A pod turns cold 20 us
	 * after its last post (50 before track scale6: at 64 pods, each answering once in ~1 ms,
	 * a pod found with its answer was looked at for 50 us more, 10 hot heads of the 18 per
	 * look; now ~4). While some pod is parked (after a sleep,
	 * until the lcore has work again) the doorbells are looked at (one epoll_wait) at most
	 * every ring_gap_us. docs/memory-model.md "Doorbells, pod to DPU" for the trade. */
	static constexpr uint64_t cool_after_us = 20;
	static constexpr uint32_t sweep_pods = 8;
	static constexpr uint64_t sweep_gap_us = 2;
	static constexpr uint64_t ring_gap_us = 5;
	/* Rounds of DMA hardware + kernels a poll runs after its first, while the kernels'
	 * copies complete (poll(): a message's leg in one poll, not one pass per step). */
	static constexpr unsigned follow_ups = 2;

	dpa::emulator *emu = nullptr;
	pod_registry *reg = nullptr;
	unsigned id = 0;
	unsigned nb_threads = 1;
	std::unique_ptr<dma::engine> dma;
	detail::hw hw;
	::dpa_dev tx, rx;

	void *mem_tx = nullptr, *mem_rx = nullptr, *mem_notify = nullptr;
	dpumesh_sq tx_prod{}, rx_cons{}, notify_prod{};
	dpa::arm_queues arm{};
	rte_ring *completions = nullptr; /* tx_completion elements, many producers */

	struct owned_sq {
		uint32_t pod_id;
		uint32_t sq;
		const uint32_t *head; /* its head slot's valid (pod_registry::tx_head), or null */
	};
	owned_sq owned[DPUMESH_MAX_PODS * 16];
	uint32_t nb_owned = 0;
	uint32_t membership = UINT32_MAX; /* the registry's, when owned[] was built */
	uint32_t ready_cursor = 0;        /* where the next look at hot pods starts */
	uint32_t sweep_cursor = 0;        /* where the next sweep of cold pods starts */
	bool sweep_all = false;           /* the lcore napped: the next sweep takes every cold pod */
	uint64_t next_sweep = 0;          /* TSC: a busy lcore's next pass sweeps from here */
	bool last_idle = true;            /* the last TX pass did no work */
	uint64_t sweep_gap_cycles = 0;
	bool draining = false;

	/* Pod -> DPA doorbells (docs/memory-model.md "Doorbells, pod to DPU"). A pod owned by
	 * this thread is hot (its SQ heads loaded every TX pass), cold (looked at by the sweep,
	 * sweep_pods pods a pass) or parked (only while the lcore sleeps, and after a sleep until
	 * it has work again: not looked at until its TX doorbell rings). Hot and cold pods have
	 * an even tx_wait (they never ring), parked ones an odd one. By pod_id; DPU memory only;
	 * what a pass touches of a pod is this one line. */
	enum class where : uint8_t { hot, cold, parked };
	struct alignas(64) pod_watch {
		uint32_t handle = 0;        /* 0: no pod of ours */
		uint32_t first = 0, n = 0;  /* its SQs: owned[first, first + n) */
		uint32_t pos = 0;           /* index in active[] (hot) or cold[] (cold) */
		uint64_t *tx_wait = nullptr; /* its need-wakeup word (we write, never read) */
		uint64_t epoch = 0;         /* what we last stored in tx_wait: odd = parked */
		uint64_t last_work = 0;     /* TSC of the last pass that found work in its SQs */
		int fd = -1;                /* its TX doorbell, in our epoll set (-1: not) */
		where at = where::hot;
	};
	pod_watch watch[DPUMESH_MAX_PODS];
	uint32_t active[DPUMESH_MAX_PODS]; /* hot pod_ids: dpa_tx_ready looks at these */
	uint32_t cold[DPUMESH_MAX_PODS];   /* cold pod_ids: swept */
	uint32_t nb_active = 0, nb_cold = 0, nb_parked = 0;
	int epfd = -1;                  /* the TX doorbells of our pods (edge-triggered) */
	uint64_t cool_cycles = 0;       /* idle this long -> cold */
	uint64_t ring_gap_cycles = 0;   /* doorbell looks while awake: at most this often */
	uint64_t next_ring_check = 0, next_cool_check = 0;
	uint64_t pass_now = 0;          /* TSC at the start of this poll */
	bool look_now = false;          /* the lcore slept: look at the doorbells at once */
	bool tx_looked = false;         /* this poll's TX look at the SQ heads is done */
	bool had_work = false;          /* a poll did work since the lcore last prepared to sleep */
	uint32_t pass_work = 0;         /* units of work in this poll (descriptors, rings) */

	dpa_tx_state ts{};
	dpa_rx_state rs{};
	dpa::thread_stats stats;
	/* pods posted to during one poll: rung (if asleep) once each at its end */
	pod_registry::doorbell_batch bells;

	~pair()
	{
		for (const pod_watch &w : watch)
			if (w.fd >= 0)
				::close(w.fd);
		if (epfd >= 0)
			::close(epfd);
		rte_free(mem_tx);
		rte_free(mem_rx);
		rte_free(mem_notify);
		rte_ring_free(completions);
	}

	/* Rebuilt only when a pod came or went (the registry's membership moved). A new pod
	 * starts hot; a pod that stays keeps its state. Its TX doorbell is watched through
	 * this thread's own duplicate of the registry's descriptor: the membership can move
	 * just after a poll looked at it and before that poll reports quiescence, so the
	 * grace period may end, and the registry close the pod's descriptor, before this
	 * thread's next poll removes it here; by then its number may name a new pod's doorbell,
	 * and removing that number would take the new pod out of the epoll set (its rings
	 * would never wake this thread). The duplicate is ours until we close it. epoll_ctl and
	 * the dup here are control rate (a registration), not per message. */
	void refresh_owned() noexcept
	{
		membership = reg->membership();
		nb_owned = 0;
		nb_active = 0;
		nb_cold = 0;
		nb_parked = 0;
		const uint64_t now = rte_rdtsc();
		for (uint32_t pid = id; pid < DPUMESH_MAX_PODS; pid += nb_threads) {
			pod_watch &w = watch[pid];
			const uint32_t h = reg->handle(pid);
			if (w.handle != h) {
				if (w.fd >= 0) {
					(void)epoll_ctl(epfd, EPOLL_CTL_DEL, w.fd, nullptr);
					::close(w.fd);
				}
				w = pod_watch{};
				w.handle = h;
				if (h != 0) {
					w.tx_wait = reg->tx_wait(pid);
					w.last_work = now;
					const int fd = reg->tx_doorbell(pid);
					epoll_event ev{};
					ev.events = EPOLLIN | EPOLLET;
					ev.data.u32 = pid;
					const int own = fd >= 0 && epfd >= 0 ?
						fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
					if (own >= 0 && epoll_ctl(epfd, EPOLL_CTL_ADD, own, &ev) == 0)
						w.fd = own;
					else if (own >= 0)
						::close(own);
					/* else: never parked (nothing would wake it): hot or swept */
				}
			}
			if (h == 0)
				continue;
			const uint32_t n = reg->nb_tx_sqs(pid);
			w.first = nb_owned;
			w.n = n;
			for (uint32_t q = 0; q < n; q++)
				owned[nb_owned++] = {pid, q, reg->tx_head(pid, q)};
			switch (w.at) {
			case where::parked: nb_parked++; break;
			case where::cold: w.pos = nb_cold; cold[nb_cold++] = pid; break;
			case where::hot: w.pos = nb_active; active[nb_active++] = pid; break;
			}
		}
	}

	bool head_has_work(const pod_watch &w) const noexcept
	{
		for (uint32_t q = 0; q < w.n; q++) {
			const uint32_t *h = owned[w.first + q].head;
			if (h && __atomic_load_n(h, __ATOMIC_ACQUIRE) == DPUMESH_DESC_VALID)
				return true;
		}
		return false;
	}

	/* Out of the list it is on (hot or cold): the last one takes its place. */
	void unlist(uint32_t pid) noexcept
	{
		pod_watch &w = watch[pid];
		uint32_t *list = w.at == where::hot ? active : cold;
		uint32_t &nb = w.at == where::hot ? nb_active : nb_cold;
		const uint32_t last = list[--nb];
		list[w.pos] = last;
		watch[last].pos = w.pos;
	}

	void list_hot(uint32_t pid, uint64_t now) noexcept
	{
		pod_watch &w = watch[pid];
		w.at = where::hot;
		w.last_work = now;
		w.pos = nb_active;
		active[nb_active++] = pid;
	}

	void list_cold(uint32_t pid) noexcept
	{
		pod_watch &w = watch[pid];
		w.at = where::cold;
		w.pos = nb_cold;
		cold[nb_cold++] = pid;
	}

	/* A cold pod the sweep found with work: hot, so its next posts are seen on the next
	 * pass. (Heating pods on delivery too was tried: at 64 pods with 64 requests in flight
	 * nearly every pod was hot, 27 SQ heads per look against 12, and dpa_tx_ready went from
	 * 9% to 17% of dpumesh's samples; docs/benchmarks-log.md, track scale3.) */
	void heat(uint32_t pid, uint64_t now) noexcept
	{
		pod_watch &w = watch[pid];
		if (w.at == where::hot) {
			w.last_work = now;
		} else if (w.at == where::cold) {
			unlist(pid);
			list_hot(pid, now);
		}
	}

	/* A parked pod comes back (its ring, or its post slipped in while we parked it): an
	 * even epoch (it stops ringing), hot. */
	void wake(uint32_t pid, uint64_t now) noexcept
	{
		pod_watch &w = watch[pid];
		w.epoch++;
		__atomic_store_n(w.tx_wait, w.epoch, __ATOMIC_RELAXED);
		nb_parked--;
		list_hot(pid, now);
	}

	/* Hot pods idle for cool_cycles turn cold. Nothing is stored in the pod's memory: its
	 * tx_wait stays even (it does not ring), and the sweep finds its next post. */
	void cool_idle(uint64_t now) noexcept
	{
		for (uint32_t k = nb_active; k-- > 0;) {
			const uint32_t pid = active[k];
			if (now - watch[pid].last_work < cool_cycles)
				continue;
			unlist(pid);
			list_cold(pid);
			stats.tx_cools.inc();
		}
	}

	/*
	 * The lcore is about to sleep: every hot and cold pod with a TX doorbell is parked, a
	 * new odd epoch in each one's tx_wait, one full fence, then its SQ heads again; a pod
	 * whose post slipped in is hot again. The Dekker pair with the pod's "post, full fence,
	 * load tx_wait" (docs/memory-model.md). Returns whether any slipped.
	 */
	bool park_all(uint64_t now) noexcept
	{
		uint32_t parked[DPUMESH_MAX_PODS];
		uint32_t np = 0;
		for (uint32_t *list : {active, cold}) {
			uint32_t &nb = list == active ? nb_active : nb_cold;
			for (uint32_t k = nb; k-- > 0;) {
				const uint32_t pid = list[k];
				pod_watch &w = watch[pid];
				if (w.fd < 0)
					continue;
				w.epoch++;
				__atomic_store_n(w.tx_wait, w.epoch, __ATOMIC_RELAXED);
				unlist(pid);
				w.at = where::parked;
				nb_parked++;
				parked[np++] = pid;
			}
		}
		if (np == 0)
			return false;
		std::atomic_thread_fence(std::memory_order_seq_cst);
		bool slipped = false;
		for (uint32_t i = 0; i < np; i++) {
			if (head_has_work(watch[parked[i]])) {
				wake(parked[i], now);
				slipped = true;
			} else {
				stats.tx_parks.inc();
			}
		}
		return slipped;
	}

	/* The lcore slept and now has work: the pods still parked turn cold (an even epoch:
	 * they stop ringing; the sweep looks at them), so an awake lcore makes no epoll_wait.
	 * A pod that read the odd epoch before our store rings once more: its event is
	 * dropped at the next look (it is not parked); its post is found by the sweep. */
	void unpark_all() noexcept
	{
		for (uint32_t pid = id; pid < DPUMESH_MAX_PODS && nb_parked != 0; pid += nb_threads) {
			pod_watch &w = watch[pid];
			if (w.handle == 0 || w.at != where::parked)
				continue;
			w.epoch++;
			__atomic_store_n(w.tx_wait, w.epoch, __ATOMIC_RELAXED);
			nb_parked--;
			list_cold(pid);
			stats.tx_unparks.inc();
		}
	}

	/* The TX doorbells that rang since the last look: their pods are hot again. One
	 * epoll_wait, only while some pod is parked; edge-triggered, so nothing to read. A
	 * ring for a pod not parked (it rang for an epoch we took back) is dropped. */
	uint32_t take_rings(uint64_t now) noexcept
	{
		if (nb_parked == 0 || epfd < 0)
			return 0;
		next_ring_check = now + ring_gap_cycles;
		look_now = false;
		stats.tx_ring_checks.inc();
		epoll_event ev[64];
		const int n = epoll_wait(epfd, ev, 64, 0);
		uint32_t woke = 0;
		for (int i = 0; i < n; i++) {
			const uint32_t pid = ev[i].data.u32;
			if (pid >= DPUMESH_MAX_PODS || watch[pid].handle == 0 ||
			    watch[pid].at != where::parked)
				continue;
			wake(pid, now);
			woke++;
		}
		if (woke)
			stats.tx_rings.add(woke);
		return woke;
	}

	/* The lcore is about to sleep (runner's prepare_sleep): park every pod; false when
	 * work is there or slipped in (do not sleep). Then the lcore may block on epfd: a
	 * ring wakes it, and one that came before (not taken yet) leaves it readable. */
	bool prepare_sleep() noexcept
	{
		if (membership != reg->membership())
			refresh_owned();
		const uint64_t now = rte_rdtsc();
		had_work = false;
		if (park_all(now) || !idle() || rx_doorbell())
			return false;
		look_now = true;
		return true;
	}

	bool idle() const noexcept
	{
		return ts.nb_inflight == 0 && rs.nb_inflight == 0 && tx.idle() && rx.idle();
	}

	/* A thread is quiescent when no copy it posted still touches pod memory. While an
	 * unregistration waits for this thread, it takes no new work so that happens promptly;
	 * once it has reported since that grace period began, it takes work again at once
	 * (not when control next looks: every grace period begun so far has what it needs
	 * from this thread, and a new one makes it drain again). */
	void quiesce() noexcept
	{
		const unsigned qid = emu->qsbr_id(id);
		if (idle()) {
			reg->dp_quiescent(qid);
			drain_since = 0;
		}
		draining = reg->quiesce_pending() && !reg->dp_caught_up(qid);
		if (draining)
			note_slow_drain();
	}

	/* A drain that takes long holds an unregistration (and, while it lasts, this thread's
	 * new work): say once per drain, after pod_registry::retire_slow_ms (the threshold of
	 * the registry's own slow-unregistration notes), what it waits for. Control-path rare. */
	void note_slow_drain() noexcept
	{
		const uint64_t now = rte_rdtsc();
		if (drain_since == 0) {
			drain_since = now;
			drain_told = false;
			return;
		}
		const uint64_t slow = rte_get_tsc_hz() / 1000 * pod_registry::retire_slow_ms;
		if (drain_told || now - drain_since < slow)
			return;
		drain_told = true;
		const dpa_rx_inflight &h = rs.slot[rs.head];
		DPUMESH_LOG(NOTICE, dpa, "DPA thread %u: quiescence waits %llu ms: %u TX and %u RX "
			    "in flight (RX head: state %u, copies left %u, pod %u), hardware queues "
			    "%s/%s, engine in flight %u", id,
			    static_cast<unsigned long long>(pod_registry::retire_slow_ms),
			    ts.nb_inflight, rs.nb_inflight,
			    rs.nb_inflight ? h.used : 0u, rs.nb_inflight ? h.copies_left : 0u,
			    rs.nb_inflight ? h.cmd.dst.pod_id : 0u, tx.idle() ? "idle" : "busy",
			    rx.idle() ? "idle" : "busy", dma->inflight());
	}
	uint64_t drain_since = 0;
	bool drain_told = false;

	void drain_completions() noexcept
	{
		dpa::tx_completion c[16];
		unsigned n = rte_ring_dequeue_burst_elem(completions, c, sizeof(c[0]), 16, nullptr);
		for (unsigned i = 0; i < n; i++) {
			uint32_t st = reg->complete_tx(c[i].src, c[i].orig, c[i].status);
			if (st == DPUMESH_STATUS_DEST_FULL) {
				/* its RX SQ is full: keep it for later (we are the only consumer) */
				if (rte_ring_enqueue_elem(completions, &c[i], sizeof(c[i])) != 0)
					stats.completion_ring_full.inc();
			} else {
				stats.tx_completions.inc();
				pass_work++;
			}
		}
	}

	/* The RX kernel's doorbells: a command from the Arm, or a TX completion to post. On
	 * hardware the producer rings them; here the emulator sees the queue heads. */
	bool rx_doorbell() const noexcept
	{
		return __atomic_load_n(&rx_cons.slots[rx_cons.pos & rx_cons.mask].valid,
				       __ATOMIC_ACQUIRE) != 0 ||
		       rte_ring_count(completions) != 0;
	}

	void run_tx() noexcept
	{
		tx.activate([](::dpa_dev *d, void *a) { dpa_tx_kernel(d, static_cast<dpa_tx_state *>(a)); }, &ts);
	}
	void run_rx() noexcept
	{
		rx.activate([](::dpa_dev *d, void *a) { dpa_rx_kernel(d, static_cast<dpa_rx_state *>(a)); }, &rs);
	}

	/*
	 * The kernels' copies of this poll, and their next step in the same poll. A CPU engine
	 * copies when the DMA hardware submits, so a header the TX kernel took is in its hbuf
	 * at once, and a delivery's copies likewise: the kernel's next activation (post the
	 * header to the Arm; post the pod's RX SQ entry, complete the sender) is due now, not
	 * on the next pass. Run it here, so that one poll carries a message's leg where it took
	 * three passes: a lone message (at 64 pods every message is alone in its pass) paid
	 * three polls' fixed costs per step. Only kernels a completion made due run (not the
	 * TX kernel's look again: tx_looked); an engine whose copies are not done yet leaves
	 * them to later passes as before. Bounded by follow_ups rounds.
	 */
	void follow_up(bool with_tx) noexcept
	{
		for (unsigned r = 0; r < follow_ups; r++) {
			if (!tx.copies_rung() && !rx.copies_rung())
				return;
			hw.step();
			const bool run_t = with_tx && tx.completed();
			const bool run_r = rx.completed();
			if (!run_t && !run_r)
				return;
			stats.follow_ups.inc();
			if (run_t)
				run_tx();
			/* as in the first round: TX completions other threads handed us go to their
			 * pods before this round's deliveries, so a sender's TX-done is not overtaken
			 * by a delivery that the RX kernel finishes here */
			drain_completions();
			if (run_r)
				run_rx();
		}
	}

	/* One pass of the lcore: the pods' TX doorbells (with_tx), the DMA hardware, then each
	 * kernel if an activation is due. The TX kernel's doorbell is "a hot or cold pod may have
	 * work" (the emulator loads the hot pods' SQ heads and sweep_pods cold pods'); parked pods
	 * come back by ringing, and turn cold once the lcore has work again. Returns the work done
	 * (descriptors taken, posted, delivered, completed, doorbells taken, and 1 while copies
	 * are in flight), so an adaptive lcore backs off when nothing moves. */
	uint32_t poll(bool with_tx = true) noexcept
	{
		reg->begin_doorbells(&bells);
		pass_work = 0;
		pass_now = rte_rdtsc();
		if (with_tx) {
			if (membership != reg->membership())
				refresh_owned();
			const uint64_t now = pass_now;
			if (nb_parked != 0) {
				if (look_now || now >= next_ring_check)
					pass_work += take_rings(now);
				if (had_work && nb_parked != 0)
					unpark_all();
			}
			if (now >= next_cool_check) {
				next_cool_check = now + cool_cycles / 4;
				cool_idle(now);
			}
		}
		tx_looked = false;
		hw.step();
		if (with_tx && tx.due(nb_active != 0 || nb_cold != 0))
			run_tx();
		drain_completions();
		if (rx.due(rx_doorbell()))
			run_rx();
		follow_up(with_tx);
		uint32_t ran = pass_work + (idle() ? 0 : 1);
		if (ran)
			had_work = true;
		if (with_tx)
			last_idle = ran == 0;
		/* before quiescence: the batch names pods */
		const pod_registry::doorbell_counts rung = reg->end_doorbells(&bells);
		if (rung.rung) {
			stats.doorbells.add(rung.rung);
			stats.doorbell_cycles.add(rung.cycles);
			if (rung.timed_rung) {
				stats.doorbell_timed_ns.add(rung.timed_ns);
				stats.doorbell_timed_writes.add(rung.timed_rung);
			}
		}
		if (rung.suppressed)
			stats.doorbells_suppressed.add(rung.suppressed);
		quiesce();
		return ran;
	}
};

namespace {

uint32_t sq_free_ahead(const dpumesh_sq &sq, uint32_t max) noexcept
{
	uint32_t n = 0;
	while (n < max && n <= sq.mask &&
	       __atomic_load_n(&sq.slots[(sq.pos + n) & sq.mask].valid, __ATOMIC_ACQUIRE) == 0)
		n++;
	return n;
}

} // namespace

/* ---- dpa_dev.h, implemented ---- */

extern "C" {

uint32_t dpa_dpu_mmap(struct dpa_dev *) { return dpu_mmap_handle; }

const struct pod_registry_entry *dpa_pod_table(struct dpa_dev *d)
{
	return d->pair ? d->pair->reg->table() : no_pods;
}

void *dpa_mmap_ptr(struct dpa_dev *d, uint32_t mmap, uint64_t addr, uint32_t len)
{
	void *p = d->resolve(mmap, addr, len);
	if (!p)
		d->violate(dpa::rule::mmap_range, mmap, addr);
	return p;
}

void dpa_window_writeback(struct dpa_dev *) { __atomic_thread_fence(__ATOMIC_RELEASE); }

void dpa_post_memcpy(struct dpa_dev *d, uint32_t dst_mmap, uint64_t dst_addr, uint32_t src_mmap,
		     uint64_t src_addr, uint32_t len, uint32_t flags, uint64_t cookie)
{
	void *dst = nullptr;
	const void *src = nullptr;
	if (len == 0 || len > d->rules.max_copy) {
		d->violate(dpa::rule::copy_size, len, d->rules.max_copy);
	} else {
		dst = d->resolve(dst_mmap, dst_addr, len);
		src = d->resolve(src_mmap, src_addr, len);
		if (!dst)
			d->violate(dpa::rule::mmap_range, dst_mmap, dst_addr);
		else if (!src)
			d->violate(dpa::rule::mmap_range, src_mmap, src_addr);
	}
	if (d->tail - d->head >= d->rules.queue_size) {
		d->violate(dpa::rule::queue_overflow, d->tail - d->head, d->rules.queue_size);
		if (d->tail - d->head > d->mask)
			return; /* not even the emulator can keep it */
	}
	const bool ok = dst && src;
	/* a copy that broke a rule completes with an error, as the hardware reports it: the
	 * engine refuses a null address with -EINVAL */
	d->fifo[d->tail & d->mask] = {cookie, ok ? dst : nullptr, ok ? src : nullptr, ok ? len : 1u,
				     (flags & DPA_SUBMIT_OPTIMIZE_REPORTS) == 0};
	d->tail++;
	if (flags & DPA_SUBMIT_FLUSH)
		d->rung = d->tail;
}

uint32_t dpa_async_room(struct dpa_dev *d)
{
	const uint32_t used = d->tail - d->head;
	return used >= d->rules.queue_size ? 0 : d->rules.queue_size - used;
}

int dpa_get_completion(struct dpa_dev *d, struct dpa_completion *out)
{
	if (d->cq_taken == d->cq_tail)
		return 0;
	if (d->head != d->covered)
		d->violate(dpa::rule::cookie_order, d->covered - d->head); /* cookies left behind */
	const dpa_dev::cq_elem &c = d->cq[d->cq_taken & d->mask];
	d->cq_taken++;
	d->covered = c.end;
	out->status = c.status;
	out->reserved = 0;
	return 1;
}

int dpa_cookie_take(struct dpa_dev *d, uint64_t *cookie, int *last)
{
	if (d->head == d->covered) {
		d->violate(dpa::rule::cookie_order, d->head, d->tail);
		return DPA_EMPTY;
	}
	const dpa_dev::entry &e = d->fifo[d->head & d->mask];
	d->head++;
	*cookie = e.cookie;
	*last = d->head == d->covered;
	return DPA_OK;
}

void dpa_completion_ack(struct dpa_dev *d, uint32_t n)
{
	if (n > d->cq_taken - d->cq_acked) {
		d->violate(dpa::rule::ack_overrun, n, d->cq_taken - d->cq_acked);
		n = d->cq_taken - d->cq_acked;
	}
	d->cq_acked += n;
}

void dpa_completion_request_notification(struct dpa_dev *d) { d->armed = true; }

void dpa_thread_notify(struct dpa_dev *d) { d->notified = true; }

void dpa_thread_reschedule(struct dpa_dev *d) { d->ended = true; }

void dpa_thread_finish(struct dpa_dev *d)
{
	d->ended = true;
	d->finished = true;
}

int dpa_thread_stop_requested(struct dpa_dev *d) { return d->stop; }

/* The emulated doorbell hardware: the SQs whose head holds a descriptor, one acquire load
 * each (what a hardware doorbell event says for free), of the hot pods and, in a sweep, of
 * the next sweep_pods cold pods; parked pods are not looked at (they ring). A look sweeps
 * when the hot pods had nothing after an idle pass, after a nap, and at least every
 * sweep_gap_us, even when the hot pods fill `max` (a cold pod found with work turns hot and
 * is taken next pass), so a cold pod's post waits at most ceil(cold / sweep_pods) sweeps of
 * an awake lcore, a sweep at least every sweep_gap_us. The head pointers move
 * only on a take, and owned[] is rebuilt when a pod comes or goes (membership moves before
 * the unregistration waits for our quiescence). */
uint32_t dpa_tx_ready(struct dpa_dev *d, uint32_t *sqs, uint32_t max)
{
	auto *p = d->pair;
	if (!p || p->draining || p->tx_looked)
		return 0; /* a follow-up activation: the heads were looked at in this poll */
	p->tx_looked = true;
	if (p->membership != p->reg->membership())
		p->refresh_owned();
	const uint64_t now = p->pass_now;
	uint32_t got = 0, looks = 0;
	auto look = [&](dpa::emulator::pair::pod_watch &w) {
		const uint32_t before = got;
		for (uint32_t q = 0; q < w.n; q++) {
			const uint32_t i = w.first + q;
			const uint32_t *h = p->owned[i].head;
			looks++;
			if (h && __atomic_load_n(h, __ATOMIC_ACQUIRE) == DPUMESH_DESC_VALID) {
				if (got == max)
					return true;
				sqs[got++] = i;
			}
		}
		return got != before;
	};
	/* the lists are walked from their cursors with a wrap, not a division per pod */
	const uint32_t n = p->nb_active;
	if (n) {
		uint32_t i = p->ready_cursor < n ? p->ready_cursor : 0;
		for (uint32_t k = 0; k < n && got < max; k++) {
			auto &w = p->watch[p->active[i]];
			if (look(w))
				w.last_work = now;
			if (++i == n)
				i = 0;
		}
		p->ready_cursor = p->ready_cursor + 1 < n ? p->ready_cursor + 1 : 0;
	}
	/* the sweep: when the hot pods had nothing after an idle pass (the lcore is waiting for
	 * work), after a nap, and at least every sweep_gap_us while it is busy */
	const uint32_t nc = p->nb_cold;
	if (nc && ((got == 0 && p->last_idle) || p->sweep_all || now >= p->next_sweep)) {
		p->next_sweep = now + p->sweep_gap_cycles;
		uint32_t found[DPUMESH_MAX_PODS];
		uint32_t nf = 0;
		/* after a nap every cold pod (a nap lasts longer than a pass: what came in
		 * meanwhile should not wait ceil(cold / sweep_pods) more passes) */
		const uint32_t m = p->sweep_all ? nc : std::min(nc, dpa::emulator::pair::sweep_pods);
		p->sweep_all = false;
		uint32_t i = p->sweep_cursor < nc ? p->sweep_cursor : 0;
		for (uint32_t k = 0; k < m; k++) {
			const uint32_t pid = p->cold[i];
			if (look(p->watch[pid]))
				found[nf++] = pid;
			if (++i == nc)
				i = 0;
		}
		p->sweep_cursor = i;
		for (uint32_t k = 0; k < nf; k++)
			p->heat(found[k], now);
		if (nf)
			p->stats.tx_sweep_finds.add(nf);
	}
	p->stats.tx_ready_calls.inc();
	p->stats.tx_sq_looks.add(looks);
	return got;
}

int dpa_tx_doorbells(struct dpa_dev *d) { return d->pair != nullptr; }

int dpa_tx_take(struct dpa_dev *d, uint32_t i, struct dpa_tx_item *out)
{
	auto *p = d->pair;
	if (!p || i >= p->nb_owned)
		return DPA_GONE;
	tx_item it;
	auto &o = p->owned[i];
	const take_rc rc = p->reg->take_tx(o.pod_id, o.sq, &it);
	o.head = p->reg->tx_head(o.pod_id, o.sq); /* the head moved (null once gone) */
	switch (rc) {
	case take_rc::ok: break;
	case take_rc::empty: return DPA_EMPTY;
	case take_rc::refused: p->pass_work++; return DPA_REFUSED;
	case take_rc::gone: return DPA_GONE;
	}
	out->desc = it.desc;
	out->src = it.src;
	out->mmap = it.mkey;
	p->stats.tx_taken.inc();
	p->pass_work++;
	return DPA_OK;
}

uint32_t dpa_hbuf_size(struct dpa_dev *d) { return d->pair ? d->pair->emu->hbuf_size() : 0; }

int dpa_hbuf_alloc(struct dpa_dev *d, uint64_t *addr)
{
	void *obj;
	if (!d->pair || rte_mempool_get(d->pair->emu->hbufs(), &obj) != 0)
		return DPA_FULL;
	*addr = reinterpret_cast<uint64_t>(obj);
	return DPA_OK;
}

void dpa_hbuf_free(struct dpa_dev *d, uint64_t addr)
{
	if (d->pair)
		rte_mempool_put(d->pair->emu->hbufs(), reinterpret_cast<void *>(addr));
}

int dpa_sidecar_tx_post(struct dpa_dev *d, const struct sw_descriptor *desc)
{
	auto *p = d->pair;
	if (!p || dpumesh_sq_enqueue_burst(&p->tx_prod, desc, 1) != 1)
		return DPA_FULL;
	p->stats.tx_posted.inc();
	p->pass_work++;
	return DPA_OK;
}

uint32_t dpa_sidecar_rx_take(struct dpa_dev *d, struct sw_descriptor *out, uint32_t max)
{
	auto *p = d->pair;
	if (!p || p->draining)
		return 0;
	const uint32_t n = dpumesh_sq_dequeue_burst(&p->rx_cons, out, max);
	p->pass_work += n;
	return n;
}

int dpa_notify_arm(struct dpa_dev *d, const struct sw_descriptor *note)
{
	auto *p = d->pair;
	if (!p || dpumesh_sq_enqueue_burst(&p->notify_prod, note, 1) != 1)
		return DPA_FULL;
	p->stats.rx_handed_back.inc();
	p->pass_work++;
	return DPA_OK;
}

uint32_t dpa_notify_room(struct dpa_dev *d)
{
	return d->pair ? sq_free_ahead(d->pair->notify_prod, 64) : 0;
}

uint32_t dpa_rx_slots_take(struct dpa_dev *d, uint32_t dst, uint32_t header_len,
			   uint32_t body_len, struct dpa_rx_slots *out)
{
	if (!d->pair)
		return DPUMESH_STATUS_DEST_GONE;
	rx_slots s;
	uint32_t st = d->pair->reg->take_rx_slots(dst, header_len, body_len, &s);
	if (st != DPUMESH_STATUS_OK)
		return st;
	out->header_addr = s.header_addr;
	out->body_addr = s.body_addr;
	out->mmap = s.mkey;
	out->reserved = 0;
	return DPUMESH_STATUS_OK;
}

void dpa_rx_slots_return(struct dpa_dev *d, uint32_t dst, const struct dpa_rx_slots *slots)
{
	if (!d->pair)
		return;
	rx_slots s;
	s.header_addr = slots->header_addr;
	s.body_addr = slots->body_addr;
	s.mkey = slots->mmap;
	d->pair->reg->return_rx_slots(dst, s);
}

uint32_t dpa_deliver(struct dpa_dev *d, uint32_t dst, const struct sw_descriptor *desc)
{
	if (!d->pair)
		return DPUMESH_STATUS_DEST_GONE;
	auto *p = d->pair;
	uint32_t st = p->reg->deliver(dst, *desc);
	if (st == DPUMESH_STATUS_OK)
		p->stats.rx_delivered.inc();
	p->pass_work++;
	return st;
}

uint32_t dpa_tx_complete(struct dpa_dev *d, uint32_t src, const struct sw_descriptor *orig,
			 uint32_t status)
{
	auto *p = d->pair;
	if (!p)
		return DPUMESH_STATUS_DEST_GONE;
	dpa::tx_completion c{*orig, src, status};
	unsigned owner = p->emu->owner(src);
	if (owner == p->id) {
		uint32_t st = p->reg->complete_tx(src, *orig, status);
		p->pass_work++;
		if (st != DPUMESH_STATUS_DEST_FULL) {
			p->stats.tx_completions.inc();
			return st;
		}
	} else {
		p->stats.remote_completions.inc();
	}
	/* to the owner's completion ring (ours when the sender's RX SQ was full) */
	auto *o = p->emu->_threads[owner].get();
	if (rte_ring_enqueue_elem(o->completions, &c, sizeof(c)) != 0) {
		p->stats.completion_ring_full.inc();
		return DPUMESH_STATUS_DEST_FULL;
	}
	return DPUMESH_STATUS_OK;
}

uint32_t dpa_local_body_next(struct dpa_dev *, uint64_t body, uint64_t *cursor, uint64_t *addr)
{
	if (*cursor == UINT64_MAX)
		return 0;
	const auto *b = reinterpret_cast<const dpa::local_body *>(body);
	rte_mbuf *seg = *cursor ? reinterpret_cast<rte_mbuf *>(*cursor) : b->first;
	uint32_t off = *cursor ? 0 : b->first_off;
	while (seg && seg->data_len <= off) { /* skip empty pieces */
		off = 0;
		seg = seg->next;
	}
	if (!seg) {
		*cursor = UINT64_MAX;
		return 0;
	}
	*addr = rte_pktmbuf_mtod_offset(seg, uint64_t, off);
	*cursor = seg->next ? reinterpret_cast<uint64_t>(seg->next) : UINT64_MAX;
	return seg->data_len - off;
}

void dpa_local_body_release(struct dpa_dev *, uint64_t body) { dpa::release_local_body(body); }

} /* extern "C" */

namespace dpumesh::dpa {

void release_local_body(uint64_t handle) noexcept
{
	auto *b = reinterpret_cast<local_body *>(handle);
	rte_pktmbuf_free(b->chain);
	b->chain = nullptr;
	rte_mempool_put(rte_mempool_from_obj(b), b);
}

namespace {

uint16_t pair_poll(void *arg) noexcept
{
	auto *p = static_cast<emulator::pair *>(arg);
	return static_cast<uint16_t>(p->poll());
}

/* the lcore is about to sleep: park every pod; its doorbells (epfd) wake the lcore */
bool pair_prepare_sleep(void *arg) noexcept
{
	return static_cast<emulator::pair *>(arg)->prepare_sleep();
}

/* the lcore napped (nothing rang meanwhile): the next TX pass sweeps every cold pod */
void pair_after_nap(void *arg) noexcept { static_cast<emulator::pair *>(arg)->sweep_all = true; }

/* both stages of a pair share one lcore: the second pass runs the DMA hardware and the RX
 * kernel if it became due in between, not the always-due (polling) TX kernel again */
uint16_t pair_poll_rx(void *arg) noexcept
{
	return static_cast<uint16_t>(static_cast<emulator::pair *>(arg)->poll(false));
}

result<void *> zalloc_ring(const char *what, unsigned t, uint32_t depth)
{
	void *m = rte_zmalloc_socket(what, depth * sizeof(sw_descriptor), 64, SOCKET_ID_ANY);
	if (!m)
		return errorf("DPA thread %u: allocating its %s queue (%u entries) failed", t, what,
			      depth);
	return m;
}

} // namespace

result<std::unique_ptr<emulator>> emulator::create(const config::node_config &cfg,
						  pod_registry &reg, unsigned nb_threads)
{
	if (nb_threads == 0 || nb_threads > 16)
		return errorf("DPA emulator: %u threads (1 to 16)", nb_threads);
	std::unique_ptr<emulator> e(new emulator());
	/* an hbuf holds the largest header a pod may post, after its metadata */
	e->_hbuf_size = DPA_HBUF_META_SIZE + std::max<uint32_t>(cfg.pools.tx_header.slot_size, 1024);
	e->_hbufs = rte_mempool_create("dpumesh_hbufs", 8191, e->_hbuf_size, 64, 0, nullptr,
				       nullptr, nullptr, nullptr, SOCKET_ID_ANY, 0);
	if (!e->_hbufs)
		return errorf("DPA emulator: header buffer pool (8191 x %u B): %s (raise -m)",
			      e->_hbuf_size, rte_strerror(rte_errno));
	const bool strict = strict_from_env();
	const rules r{};
	for (unsigned t = 0; t < nb_threads; t++) {
		auto p = std::make_unique<pair>();
		p->emu = e.get();
		p->reg = &reg;
		p->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (p->epfd < 0)
			return errorf("DPA thread %u: epoll_create1 for the pods' TX doorbells: %s", t,
				      std::strerror(errno));
		p->cool_cycles = rte_get_tsc_hz() / 1000000 * pair::cool_after_us;
		p->sweep_gap_cycles = rte_get_tsc_hz() / 1000000 * pair::sweep_gap_us;
		p->ring_gap_cycles = rte_get_tsc_hz() / 1000000 * pair::ring_gap_us;
		p->id = t;
		p->nb_threads = nb_threads;
		auto eng = dma::create(cfg.dma, t);
		if (!eng)
			return eng.error().with_context("DPA thread " + std::to_string(t));
		p->dma = std::move(*eng);
		char n[24];
		std::snprintf(n, sizeof(n), "tx%u", t);
		p->tx.init(n, r, strict, &reg.mkeys());
		std::snprintf(n, sizeof(n), "rx%u", t);
		p->rx.init(n, r, strict, &reg.mkeys());
		for (::dpa_dev *d : {&p->tx, &p->rx}) {
			d->pair = p.get();
			d->hw = &p->hw;
			d->hw_index = p->hw.nb;
			d->violations_total = &p->stats.violations;
			p->hw.k[p->hw.nb++] = d;
			d->notified = true; /* doca_dpa_thread_run: the first activation */
		}
		p->hw.eng = p->dma.get();
		DPUMESH_ASSIGN_OR_RETURN(p->mem_tx, zalloc_ring("sidecar TX", t, pair::queue_depth));
		DPUMESH_ASSIGN_OR_RETURN(p->mem_rx, zalloc_ring("sidecar RX", t, pair::queue_depth));
		DPUMESH_ASSIGN_OR_RETURN(p->mem_notify, zalloc_ring("notify", t, pair::queue_depth));
		dpumesh_sq_init(&p->tx_prod, p->mem_tx, pair::queue_depth);
		dpumesh_sq_init(&p->arm.from_dpa, p->mem_tx, pair::queue_depth);
		dpumesh_sq_init(&p->rx_cons, p->mem_rx, pair::queue_depth);
		dpumesh_sq_init(&p->arm.to_dpa, p->mem_rx, pair::queue_depth);
		dpumesh_sq_init(&p->notify_prod, p->mem_notify, pair::queue_depth);
		dpumesh_sq_init(&p->arm.notify, p->mem_notify, pair::queue_depth);
		std::string rname = "dpa_compl" + std::to_string(t);
		p->completions = rte_ring_create_elem(rname.c_str(), sizeof(tx_completion), 16384,
						      SOCKET_ID_ANY, RING_F_SC_DEQ);
		if (!p->completions)
			return errorf("DPA thread %u: completion ring: %s", t, rte_strerror(rte_errno));
		status st = reg.dp_thread_register(e->qsbr_id(t));
		if (!st)
			return st;
		p->refresh_owned();
		e->_threads.push_back(std::move(p));
	}
	return e;
}

emulator::~emulator()
{
	for (auto &p : _threads)
		p->reg->dp_thread_unregister(qsbr_id(p->id));
	_threads.clear();
	rte_mempool_free(_hbufs);
}

status emulator::stop(unsigned timeout_ms)
{
	for (auto &p : _threads)
		for (::dpa_dev *d : {&p->tx, &p->rx}) {
			d->stop = true;
			d->notified = true;
		}
	const uint64_t deadline = rte_get_tsc_cycles() + rte_get_tsc_hz() * timeout_ms / 1000;
	for (;;) {
		std::string running;
		for (auto &p : _threads) {
			p->poll();
			for (::dpa_dev *d : {&p->tx, &p->rx})
				if (!d->finished)
					running += std::string(running.empty() ? "" : ", ") + d->name;
		}
		if (running.empty())
			return status::ok();
		if (rte_get_tsc_cycles() > deadline)
			return errorf("DPA emulator: kernel thread(s) %s did not finish within %u ms",
				      running.c_str(), timeout_ms);
	}
}

lcore::stage_def emulator::tx_stage(unsigned t) noexcept
{
	lcore::stage_def s{"dpa_tx", &pair_poll, _threads[t].get(), false};
	s.prepare_sleep = &pair_prepare_sleep;
	s.after_nap = &pair_after_nap;
	s.wait_fd = _threads[t]->epfd;
	return s;
}
lcore::stage_def emulator::rx_stage(unsigned t) noexcept
{
	return {"dpa_rx", &pair_poll_rx, _threads[t].get(), false};
}
arm_queues &emulator::arm(unsigned t) noexcept { return _threads[t]->arm; }

arm_side emulator::side() noexcept
{
	arm_side s;
	for (auto &p : _threads)
		s.threads.push_back({&p->arm.from_dpa, &p->arm.to_dpa, &p->arm.notify});
	s.hbuf_size = _hbuf_size;
	s.hbuf_pool = _hbufs; /* the kernels poll: no service call */
	return s;
}
const thread_stats &emulator::stats(unsigned t) const noexcept { return _threads[t]->stats; }
const dma::engine &emulator::dma(unsigned t) const noexcept { return *_threads[t]->dma; }

kernel_counters emulator::kernels(unsigned t) const noexcept
{
	const pair &p = *_threads[t];
	kernel_counters k;
	k.nb_tx_inflight = dpa_gauge_get(&p.ts.nb_inflight);
	k.nb_rx_inflight = dpa_gauge_get(&p.rs.nb_inflight);
	k.tx_posted = dpa_counter_get(&p.ts.posted);
	k.tx_no_hbuf = dpa_counter_get(&p.ts.no_hbuf);
	k.tx_dma_errors = dpa_counter_get(&p.ts.dma_errors);
	k.tx_activations = dpa_counter_get(&p.ts.activations);
	k.rx_delivered = dpa_counter_get(&p.rs.delivered);
	k.rx_failed = dpa_counter_get(&p.rs.failed);
	k.rx_completions = dpa_counter_get(&p.rs.completions);
	k.rx_bad_commands = dpa_counter_get(&p.rs.bad_commands);
	k.rx_activations = dpa_counter_get(&p.rs.activations);
	return k;
}

uint64_t emulator::violations(unsigned t, rule r) const noexcept
{
	const pair &p = *_threads[t];
	const size_t i = static_cast<size_t>(r);
	return p.tx.violations[i].get() + p.rx.violations[i].get();
}

/* ---- solo_thread ---- */

struct solo_thread::impl {
	std::unique_ptr<dma::engine> eng;
	detail::hw hw;
	::dpa_dev d;
};

result<std::unique_ptr<solo_thread>> solo_thread::create(const mkey_table *mkeys,
							 const config::dma_config &dma_cfg,
							 const rules &r, unsigned dma_index)
{
	std::unique_ptr<solo_thread> t(new solo_thread());
	t->_impl = std::make_unique<impl>();
	auto eng = dma::create(dma_cfg, dma_index);
	if (!eng)
		return eng.error().with_context("solo DPA thread");
	t->_impl->eng = std::move(*eng);
	t->_impl->hw.eng = t->_impl->eng.get();
	t->_impl->d.init("solo", r, false, mkeys);
	t->_impl->d.hw = &t->_impl->hw;
	t->_impl->hw.k[0] = &t->_impl->d;
	t->_impl->hw.nb = 1;
	return t;
}

solo_thread::~solo_thread() = default;
::dpa_dev *solo_thread::dev() noexcept { return &_impl->d; }
void solo_thread::notify() noexcept { _impl->d.notified = true; }
void solo_thread::request_stop() noexcept
{
	_impl->d.stop = true;
	_impl->d.notified = true;
}
void solo_thread::hw_step() noexcept { _impl->hw.step(); }
bool solo_thread::step(kernel_fn fn, void *arg) noexcept
{
	_impl->hw.step();
	if (!_impl->d.due(false))
		return false;
	_impl->d.activate(fn, arg);
	return true;
}
bool solo_thread::finished() const noexcept { return _impl->d.finished; }
uint64_t solo_thread::violations(rule r) const noexcept
{
	return _impl->d.violations[static_cast<size_t>(r)].get();
}
uint64_t solo_thread::violations_total() const noexcept { return _impl->d.violation_count(); }

} // namespace dpumesh::dpa
