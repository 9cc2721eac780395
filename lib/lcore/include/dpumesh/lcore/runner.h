// SPDX-License-Identifier: BSD-3-Clause
// The lcore engine: runs registered stages on their mapped lcores with an idle policy.
//
// A stage is a poll function returning how much work it did (0 = idle). Several stages
// can share an lcore; each lcore loops over its stages until stopped. Per-stage busy and
// idle cycles are measured with the TSC (wall time: on a shared CPU they include time the
// lcore was descheduled). Besides, the thread's own CPU clock is sampled: after every
// cpu_sample_period passes that did work (and at most every cpu_sample_gap_us), one poll of
// one stage (round robin) is bracketed by CLOCK_THREAD_CPUTIME_ID reads (a syscall, ~0.4 us
// here; three per sample: at most ~25 ns per busy pass and 0.75% of the wall time), so
// `show stages` can report CPU cycles per unit of work that descheduling does not inflate. The clock's own cost, measured at loop start, is taken off each sample,
// and a sample is at most its poll's TSC time: the reads' entry and exit, cold after the
// poll, would otherwise stay in it (0.1-0.8 us per sampled poll, docs/benchmarks.md). The control thread reads
// each lcore thread's user/kernel CPU and run-queue wait from /proc (lcore_cpu()).
//
//   lcore::runner r(cfg.lcores);
//   r.add(1, {"port_rx", &port_rx_poll, &rx_ctx});
//   r.launch();            // remote-launches every worker lcore that has stages
//   ...                     // main lcore: control, stats
//   r.stop();              // signals and joins
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <rte_lcore.h>

#include "dpumesh/config/config.h"
#include "dpumesh/common/counter.h"

namespace dpumesh::lcore {

/** A stage's poll function: do one burst of work, return units done (packets, descriptors). */
using poll_fn = uint16_t (*)(void *arg) noexcept;

struct stage_def {
	const char *name;
	poll_fn poll;
	void *arg;
	/** Paused by set_forwarding(false) (port traffic). The DPA threads and the sidecar
	 * keep running: pods keep talking, and unregistration needs their quiescent reports. */
	bool pausable = true;
	/** Optional (adaptive idle): called when the lcore is about to sleep; the stage arms
	 *  whatever wakes it (wait_fd) and returns false if work is there or came in (the lcore
	 *  then polls on instead of sleeping). */
	bool (*prepare_sleep)(void *arg) noexcept = nullptr;
	/** Optional: an fd that turns readable when work comes in for a stage that prepared
	 *  to sleep; the lcore's back-off sleep ends early when it does (ppoll). -1: none. */
	int wait_fd = -1;
	/** Optional (adaptive idle): called after a nap, a short sleep that armed nothing;
	 *  the stage's next poll looks wider than a pass does (the DPA emulator sweeps every
	 *  cold pod), since nothing rang for what came in meanwhile. */
	void (*after_nap)(void *arg) noexcept = nullptr;
};

struct alignas(64) stage_stats {
	counter calls;
	counter work;
	counter busy_cycles; /**< TSC (wall) cycles of polls that did work */
	counter idle_cycles; /**< TSC (wall) cycles of polls that did none */
	/* the sampled polls (thread CPU clock) */
	counter cpu_polls;   /**< sampled polls that did work */
	counter cpu_work;    /**< their units of work */
	counter cpu_ns;      /**< their thread CPU time, the clock's own cost taken off, each
			      *  at most its poll's TSC time */
	counter cpu_clipped_ns; /**< what that bound took off them (the reads' overhead) */
	counter cpu_tsc;     /**< their TSC (wall) cycles */
	counter cpu_idle_polls; /**< sampled polls that did no work */
	counter cpu_idle_ns;
};

/** A snapshot for display. */
struct stage_view {
	std::string name;
	unsigned lcore;
	uint64_t calls, work, busy_cycles, idle_cycles;
	uint64_t cpu_polls = 0, cpu_work = 0, cpu_ns = 0, cpu_tsc = 0, cpu_clipped_ns = 0;
	uint64_t cpu_idle_polls = 0, cpu_idle_ns = 0;

	/** TSC (wall) cycles per unit of work, every busy poll. */
	double tsc_cycles_per_unit() const noexcept
	{
		return work ? static_cast<double>(busy_cycles) / static_cast<double>(work) : 0.0;
	}
	/** Thread CPU time of the sampled busy polls, in TSC-rate cycles, per unit of work
	 * (cpu_ns x tsc_hz / 1e9 / cpu_work); 0 before the first sample. */
	double cpu_cycles_per_unit(uint64_t tsc_hz) const noexcept
	{
		return cpu_work ? static_cast<double>(cpu_ns) * static_cast<double>(tsc_hz) / 1e9 /
					  static_cast<double>(cpu_work)
				: 0.0;
	}
	/** CPU / TSC over the same sampled polls: 1 = on the CPU throughout; less = the poll
	 * slept or the lcore was descheduled. */
	double cpu_tsc_ratio(uint64_t tsc_hz) const noexcept
	{
		return cpu_tsc ? static_cast<double>(cpu_ns) * static_cast<double>(tsc_hz) / 1e9 /
					 static_cast<double>(cpu_tsc)
			       : 0.0;
	}
};

/** An lcore thread's CPU as the kernel counts it (/proc/self/task/<tid>/{stat,schedstat,
 * status}), read by the control thread. Wall time runs from the lcore loop's start to its
 * end (or now). */
struct lcore_cpu_view {
	unsigned lcore;
	int tid = 0;           /**< 0 before the loop started */
	bool running = false;
	uint64_t wall_ns = 0;
	uint64_t user_ns = 0, sys_ns = 0;  /**< utime, stime (clock-tick resolution) */
	uint64_t oncpu_ns = 0, runq_ns = 0; /**< schedstat: on the CPU, runnable but waiting */
	uint64_t voluntary_switches = 0, involuntary_switches = 0;
	uint64_t clock_read_ns = 0; /**< one thread-CPU clock read, measured at loop start */

	/** Share of the wall time the thread was runnable but not running (descheduled). */
	double runq_percent() const noexcept
	{
		return wall_ns ? 100.0 * static_cast<double>(runq_ns) / static_cast<double>(wall_ns)
			       : 0.0;
	}
	double oncpu_percent() const noexcept
	{
		return wall_ns ? 100.0 * static_cast<double>(oncpu_ns) /
					 static_cast<double>(wall_ns)
			       : 0.0;
	}
};

/** CLOCK_MONOTONIC in ns (the lcore threads' wall clock, lcore_cpu_view::wall_ns). */
uint64_t mono_ns() noexcept;

/** The calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID: a syscall on Linux, no vDSO
 * for CPU-time clocks). */
uint64_t thread_cpu_ns() noexcept;

/**
 * A thread of this process's time on a CPU and runnable but waiting for one, in ns since it
 * started (/proc/self/task/<tid>/schedstat). False if the kernel does not show it. Control path.
 */
bool read_schedstat(int tid, uint64_t *oncpu_ns, uint64_t *runq_ns) noexcept;

/**
 * Runs the calling thread (the control thread) as SCHED_FIFO priority `priority` (1-99), or
 * under SCHED_OTHER for 0. An error says why (no CAP_SYS_NICE, RLIMIT_RTPRIO). Control path.
 */
status set_control_priority(unsigned priority) noexcept;

/** The policy of the process's main thread (the main lcore's): "SCHED_FIFO 10", "SCHED_OTHER". */
std::string main_thread_policy();

class runner {
public:
	explicit runner(const config::lcores_config &cfg);
	~runner();
	runner(const runner &) = delete;
	runner &operator=(const runner &) = delete;

	/** Maps a stage onto a worker lcore. Fails if the lcore is not enabled or is the main one. */
	status add(unsigned lcore, stage_def def);

	/** Launches every lcore that has stages. */
	status launch();

	/** Asks every lcore to return and waits for them. Idempotent. */
	void stop();

	/** Pauses or resumes polling (console start/stop); lcores stay launched. */
	void set_forwarding(bool on) noexcept { _forwarding.store(on, std::memory_order_release); }
	bool forwarding() const noexcept { return _forwarding.load(std::memory_order_acquire); }

	std::vector<stage_view> stages() const;
	/** Per lcore with stages: its thread's CPU from /proc. Control path (file reads). */
	std::vector<lcore_cpu_view> lcore_cpu() const;
	config::idle_policy idle() const noexcept { return _cfg.idle; }
	uint64_t tsc_hz() const noexcept { return _tsc_hz; }

	static constexpr unsigned max_stages_per_lcore = 16;
	/** One poll is bracketed by thread-CPU clock reads per this many busy passes of an
	 * lcore, and at most once per cpu_sample_gap_us: the reads cost ~1.5 us a sample, so the
	 * overhead stays under ~25 ns a busy pass and under 0.75% of the lcore's wall time. */
	static constexpr unsigned cpu_sample_period = 64;
	static constexpr unsigned cpu_sample_gap_us = 200;

private:
	struct stage_slot {
		stage_def def;
		stage_stats stats;
	};
	struct alignas(64) lcore_slot {
		runner *self = nullptr;
		unsigned lcore = 0;
		unsigned nb_stages = 0;
		std::array<stage_slot, max_stages_per_lcore> stages;
		/* written by the lcore, read by control */
		std::atomic<int> tid{0};
		std::atomic<bool> running{false};
		/* set by the lcore as its function returns (release), waited for by stop()
		 * (acquire): what the lcore wrote is ours to read and free after that, by this
		 * project's own order rather than DPDK's lcore state (which ThreadSanitizer, not
		 * seeing inside librte_eal, cannot follow) */
		std::atomic<bool> exited{true};
		std::atomic<uint64_t> start_ns{0}, end_ns{0}; /* CLOCK_MONOTONIC */
		std::atomic<uint64_t> clock_read_ns{0};
		/* the thread's /proc counters when its loop started (before `running`) */
		std::atomic<uint64_t> base_user_ns{0}, base_sys_ns{0}, base_oncpu_ns{0},
			base_runq_ns{0}, base_vol{0}, base_invol{0};
	};

	/** Adaptive idle: the lcore parks its stages and sleeps until woken only after this
	 *  long without work (and idle_polls empty passes); before, past lcores.spin_us, it
	 *  naps (short sleeps that arm nothing). A thread that sleeps loses its scheduler
	 *  weight on a shared CPU (with autogroups a process's weight there follows its load
	 *  there) and then waited seconds to run again behind other processes' spinners on
	 *  this box (docs/architecture.md). */
	static constexpr unsigned sleep_after_us = 1000;
	/** Timer slack of lcore threads (PR_SET_TIMERSLACK): back-off sleeps end within this. */
	static constexpr unsigned long timer_slack_ns = 1000;

	static int lcore_main(void *arg);
	void loop(lcore_slot &slot);
	/** Before an adaptive sleep: every stage's prepare_sleep (all are called, so each arms
	 *  its wake-up); false when one found work. */
	static bool prepare_sleep(lcore_slot &slot, bool forwarding) noexcept;
	/** After a nap: every stage's after_nap. */
	static void after_nap(lcore_slot &slot, bool forwarding) noexcept;

	config::lcores_config _cfg;
	uint64_t _tsc_hz;
	std::vector<lcore_slot *> _slots; /* indexed by lcore id */
	std::atomic<bool> _quit{false};
	std::atomic<bool> _forwarding{true};
	bool _launched = false;
};

} // namespace dpumesh::lcore
