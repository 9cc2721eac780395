// SPDX-License-Identifier: BSD-3-Clause
// The lcore loop: polls each stage, measures cycles (TSC) and samples thread CPU time, and
// backs off when idle.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_pause.h>

#include "dpumesh/lcore/runner.h"
#include "dpumesh/common/log.h"
#include "dpumesh/common/thread_clock.h"

namespace dpumesh::lcore {

namespace {

uint64_t to_ns(const timespec &t) noexcept
{
	return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}


struct task_cpu {
	uint64_t user_ns = 0, sys_ns = 0, oncpu_ns = 0, runq_ns = 0, vol = 0, invol = 0;
};

bool read_file(const char *path, char *buf, size_t size)
{
	FILE *f = std::fopen(path, "re");
	if (!f)
		return false;
	size_t n = std::fread(buf, 1, size - 1, f);
	std::fclose(f);
	buf[n] = '\0';
	return n > 0;
}

} // namespace

uint64_t thread_cpu_ns() noexcept { return dpumesh::thread_cpu_ns(); }

uint64_t mono_ns() noexcept
{
	timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return to_ns(t);
}

bool read_schedstat(int tid, uint64_t *oncpu_ns, uint64_t *runq_ns) noexcept
{
	char path[64], buf[256];
	std::snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	unsigned long long on = 0, wait = 0;
	if (!read_file(path, buf, sizeof(buf)) || std::sscanf(buf, "%llu %llu", &on, &wait) != 2)
		return false;
	*oncpu_ns = on;
	*runq_ns = wait;
	return true;
}

status set_control_priority(unsigned priority) noexcept
{
	sched_param p{};
	p.sched_priority = static_cast<int>(priority);
	const int policy = priority ? SCHED_FIFO : SCHED_OTHER;
	const int rc = pthread_setschedparam(pthread_self(), policy, &p);
	if (rc != 0)
		return errorf("control thread: SCHED_%s priority %u: %s%s", priority ? "FIFO" : "OTHER",
			      priority, std::strerror(rc),
			      rc == EPERM ? " (needs CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least "
					    "the priority)"
					  : "");
	return status::ok();
}

std::string main_thread_policy()
{
	/* on Linux the calls take a thread id: the process id is its main thread's */
	const int policy = sched_getscheduler(getpid());
	sched_param p{};
	(void)sched_getparam(getpid(), &p);
	switch (policy) {
	case SCHED_FIFO: return "SCHED_FIFO " + std::to_string(p.sched_priority);
	case SCHED_RR: return "SCHED_RR " + std::to_string(p.sched_priority);
	case SCHED_OTHER: return "SCHED_OTHER";
	case SCHED_BATCH: return "SCHED_BATCH";
	case SCHED_IDLE: return "SCHED_IDLE";
	default: return "policy " + std::to_string(policy);
	}
}

namespace {

/** /proc/self/task/<tid>/{stat,schedstat,status}; fields it cannot read stay 0. */
task_cpu read_task_cpu(int tid)
{
	task_cpu c;
	char path[64], buf[2048];
	static const uint64_t tick_ns = 1000000000ull / static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
	std::snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if (read_file(path, buf, sizeof(buf))) {
		/* fields after the command's closing parenthesis: 3 (state) ... 14 utime, 15 stime */
		const char *p = std::strrchr(buf, ')');
		unsigned long long ut = 0, st = 0;
		if (p && std::sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
				     &ut, &st) == 2) {
			c.user_ns = ut * tick_ns;
			c.sys_ns = st * tick_ns;
		}
	}
	(void)read_schedstat(tid, &c.oncpu_ns, &c.runq_ns);
	std::snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	if (read_file(path, buf, sizeof(buf))) {
		const char *v = std::strstr(buf, "\nvoluntary_ctxt_switches:");
		const char *nv = std::strstr(buf, "\nnonvoluntary_ctxt_switches:");
		if (v)
			c.vol = std::strtoull(std::strchr(v, ':') + 1, nullptr, 10);
		if (nv)
			c.invol = std::strtoull(std::strchr(nv, ':') + 1, nullptr, 10);
	}
	return c;
}

} // namespace

runner::runner(const config::lcores_config &cfg)
	: _cfg(cfg), _tsc_hz(rte_get_tsc_hz()), _slots(RTE_MAX_LCORE, nullptr)
{
}

runner::~runner()
{
	stop();
	for (lcore_slot *s : _slots)
		delete s;
}

status runner::add(unsigned lcore, stage_def def)
{
	if (lcore >= RTE_MAX_LCORE || !rte_lcore_is_enabled(lcore))
		return errorf("stage %s: lcore %u is not enabled (EAL -l/-c lists the lcores)",
			      def.name, lcore);
	if (lcore == rte_get_main_lcore())
		return errorf("stage %s: lcore %u is the main lcore, which runs control; map "
			      "stages to worker lcores",
			      def.name, lcore);
	if (_launched)
		return errorf("stage %s: cannot add stages after launch", def.name);
	if (!_slots[lcore]) {
		_slots[lcore] = new lcore_slot();
		_slots[lcore]->self = this;
		_slots[lcore]->lcore = lcore;
	}
	lcore_slot &s = *_slots[lcore];
	if (s.nb_stages == max_stages_per_lcore)
		return errorf("stage %s: lcore %u already runs %u stages", def.name, lcore,
			      max_stages_per_lcore);
	s.stages[s.nb_stages++].def = def;
	return status::ok();
}

status runner::launch()
{
	for (unsigned l = 0; l < RTE_MAX_LCORE; l++) {
		if (!_slots[l])
			continue;
		_slots[l]->exited.store(false, std::memory_order_relaxed);
		int rc = rte_eal_remote_launch(lcore_main, _slots[l], l);
		if (rc != 0) {
			_slots[l]->exited.store(true, std::memory_order_relaxed);
			_launched = true; /* join the ones already running */
			stop();
			return errorf("launching lcore %u: %s", l, rte_strerror(-rc));
		}
		DPUMESH_LOG(INFO, lcore, "lcore %u runs %u stage(s)", l, _slots[l]->nb_stages);
	}
	_launched = true;
	return status::ok();
}

void runner::stop()
{
	_quit.store(true, std::memory_order_release);
	if (!_launched)
		return;
	/* DPDK's rte_eal_wait_lcore spins until the lcore is back: look, then sleep, instead,
	 * so that a real-time control thread (lcores.control_priority) does not keep a worker
	 * lcore that shares its CPU from ever seeing _quit */
	for (unsigned l = 0; l < RTE_MAX_LCORE; l++)
		if (_slots[l]) {
			while (!_slots[l]->exited.load(std::memory_order_acquire))
				usleep(50);
			rte_eal_wait_lcore(l);
		}
	_launched = false;
}

bool runner::prepare_sleep(lcore_slot &slot, bool forwarding) noexcept
{
	bool ok = true;
	for (unsigned i = 0; i < slot.nb_stages; i++) {
		const stage_def &d = slot.stages[i].def;
		if (d.prepare_sleep && (forwarding || !d.pausable) && !d.prepare_sleep(d.arg))
			ok = false;
	}
	return ok;
}

void runner::after_nap(lcore_slot &slot, bool forwarding) noexcept
{
	for (unsigned i = 0; i < slot.nb_stages; i++) {
		const stage_def &d = slot.stages[i].def;
		if (d.after_nap && (forwarding || !d.pausable))
			d.after_nap(d.arg);
	}
}

int runner::lcore_main(void *arg)
{
	auto *slot = static_cast<lcore_slot *>(arg);
	slot->self->loop(*slot);
	slot->exited.store(true, std::memory_order_release);
	return 0;
}

void runner::loop(lcore_slot &slot)
{
	const bool adaptive = _cfg.idle == config::idle_policy::adaptive;
	const uint32_t idle_polls = _cfg.idle_polls;
	const uint32_t max_sleep_us = _cfg.max_sleep_us;
	uint32_t empty = 0;
	uint32_t sleep_us = 1;
	const uint64_t sleep_after = _tsc_hz / 1000000 * sleep_after_us;
	const uint64_t spin = _tsc_hz / 1000000 * std::min(_cfg.spin_us, sleep_after_us);
	uint64_t last_work = 0;
	/* thread CPU sampling: busy passes until the next sampled poll, and whose it is */
	uint32_t until_sample = cpu_sample_period;
	unsigned sample_stage = 0;
	const uint64_t sample_gap = _tsc_hz / 1000000 * cpu_sample_gap_us;
	const double ns_per_cycle = 1e9 / static_cast<double>(_tsc_hz);
	uint64_t last_sample = 0;

	/* the back-off sleeps are 1..max_sleep_us: with the default 50 us timer slack a 1 us
	 * sleep lasts ~55 us, so a short idle spell cost a long one (finer back-off) */
	(void)prctl(PR_SET_TIMERSLACK, timer_slack_ns, 0, 0, 0);
	pollfd wait_fds[max_stages_per_lcore];
	nfds_t nb_wait_fds = 0;
	for (unsigned i = 0; i < slot.nb_stages; i++)
		if (slot.stages[i].def.wait_fd >= 0)
			wait_fds[nb_wait_fds++] = {slot.stages[i].def.wait_fd, POLLIN, 0};

	const int tid = static_cast<int>(gettid());
	const uint64_t clock_ns = dpumesh::clock_read_cost();
	const task_cpu base = read_task_cpu(tid);
	slot.base_user_ns.store(base.user_ns, std::memory_order_relaxed);
	slot.base_sys_ns.store(base.sys_ns, std::memory_order_relaxed);
	slot.base_oncpu_ns.store(base.oncpu_ns, std::memory_order_relaxed);
	slot.base_runq_ns.store(base.runq_ns, std::memory_order_relaxed);
	slot.base_vol.store(base.vol, std::memory_order_relaxed);
	slot.base_invol.store(base.invol, std::memory_order_relaxed);
	slot.clock_read_ns.store(clock_ns, std::memory_order_relaxed);
	slot.tid.store(tid, std::memory_order_relaxed);
	slot.end_ns.store(0, std::memory_order_relaxed);
	slot.start_ns.store(mono_ns(), std::memory_order_release);
	slot.running.store(true, std::memory_order_release);

	while (!_quit.load(std::memory_order_relaxed)) {
		uint32_t work = 0;
		const bool forwarding = _forwarding.load(std::memory_order_relaxed);
		uint64_t t0 = rte_rdtsc();
		const uint64_t pass_start = t0;
		/* the sample is due after cpu_sample_period busy passes and cpu_sample_gap_us */
		const bool sample_due = unlikely(until_sample == 0) && t0 - last_sample >= sample_gap;
		for (unsigned i = 0; i < slot.nb_stages; i++) {
			stage_slot &s = slot.stages[i];
			if (!forwarding && s.def.pausable) {
				if (i == sample_stage)
					sample_stage = (sample_stage + 1) % slot.nb_stages;
				continue;
			}
			uint16_t n;
			uint64_t t1;
			bool sampled = false;
			if (sample_due && i == sample_stage) {
				/* the sampled poll: its TSC bracket inside its CPU bracket. A
				 * first read warms the clock's kernel path, which the stages'
				 * data evicts: the end of a cold read costs ~0.2-0.5 us more
				 * than a warm one, which would land in the sample. */
				(void)thread_cpu_ns();
				const uint64_t c0 = thread_cpu_ns();
				t0 = rte_rdtsc();
				n = s.def.poll(s.def.arg);
				t1 = rte_rdtsc();
				uint64_t c = thread_cpu_ns() - c0;
				c = c > clock_ns ? c - clock_ns : 0;
				/* a poll runs no longer on the CPU than on the wall clock: what the
				 * bracket has beyond its own TSC time is the clock reads' (their
				 * entry and exit, cold after the poll): 1.5-2.9x the TSC of port TX's
				 * and the sidecar's polls at one message each in the overload suite */
				const uint64_t wall = static_cast<uint64_t>(
					static_cast<double>(t1 - t0) * ns_per_cycle);
				const uint64_t clipped = c > wall ? c - wall : 0;
				c -= clipped;
				if (n) {
					s.stats.cpu_polls.inc();
					s.stats.cpu_work.add(n);
					s.stats.cpu_ns.add(c);
					s.stats.cpu_clipped_ns.add(clipped);
					s.stats.cpu_tsc.add(t1 - t0);
				} else {
					s.stats.cpu_idle_polls.inc();
					s.stats.cpu_idle_ns.add(c);
				}
				until_sample = cpu_sample_period;
				sample_stage = (sample_stage + 1) % slot.nb_stages;
				last_sample = t1;
				sampled = true;
			} else {
				n = s.def.poll(s.def.arg);
				t1 = rte_rdtsc();
			}
			s.stats.calls.inc();
			if (n) {
				s.stats.work.add(n);
				s.stats.busy_cycles.add(t1 - t0);
			} else {
				s.stats.idle_cycles.add(t1 - t0);
			}
			work += n;
			t0 = sampled ? rte_rdtsc() : t1; /* not the clock read */
		}
		if (work && until_sample)
			until_sample--;
		if (work || !adaptive) {
			empty = 0;
			sleep_us = 1;
			last_work = pass_start;
			continue;
		}
		/* adaptive: pause first (spin_us), then nap (sleeps that arm nothing: what comes
		 * in waits for the nap's end, at most max_sleep_us), then, past sleep_after_us,
		 * sleep with exponential back-off; stages that can be woken arm their wake-up
		 * first (a stage that finds work cancels the sleep), and the sleep ends early when
		 * one of their fds turns readable. A nap costs a syscall and two task switches
		 * (12-20 us of the thread's CPU on the VM of docs/benchmarks-log.md, track
		 * scale4, "What a sleep costs here"): it pays for gaps longer than the spin,
		 * not for the short ones a stream leaves. */
		if (++empty < idle_polls || pass_start - last_work < spin) {
			rte_pause();
			continue;
		}
		if (pass_start - last_work < sleep_after) {
			rte_delay_us_sleep(sleep_us);
			after_nap(slot, forwarding);
			if (sleep_us < max_sleep_us)
				sleep_us = std::min(sleep_us * 2, max_sleep_us);
			continue;
		}
		if (!prepare_sleep(slot, forwarding)) {
			empty = 0;
			sleep_us = 1;
			continue;
		}
		if (nb_wait_fds != 0) {
			const timespec ts{0, static_cast<long>(sleep_us) * 1000};
			(void)ppoll(wait_fds, nb_wait_fds, &ts, nullptr);
		} else {
			rte_delay_us_sleep(sleep_us);
		}
		if (sleep_us < max_sleep_us)
			sleep_us = std::min(sleep_us * 2, max_sleep_us);
	}
	slot.end_ns.store(mono_ns(), std::memory_order_relaxed);
	slot.running.store(false, std::memory_order_release);
}

std::vector<stage_view> runner::stages() const
{
	std::vector<stage_view> out;
	for (unsigned l = 0; l < RTE_MAX_LCORE; l++) {
		const lcore_slot *s = _slots[l];
		if (!s)
			continue;
		for (unsigned i = 0; i < s->nb_stages; i++) {
			const stage_slot &st = s->stages[i];
			stage_view v{st.def.name, l, st.stats.calls.get(), st.stats.work.get(),
				     st.stats.busy_cycles.get(), st.stats.idle_cycles.get()};
			v.cpu_polls = st.stats.cpu_polls.get();
			v.cpu_work = st.stats.cpu_work.get();
			v.cpu_ns = st.stats.cpu_ns.get();
			v.cpu_tsc = st.stats.cpu_tsc.get();
			v.cpu_clipped_ns = st.stats.cpu_clipped_ns.get();
			v.cpu_idle_polls = st.stats.cpu_idle_polls.get();
			v.cpu_idle_ns = st.stats.cpu_idle_ns.get();
			out.push_back(std::move(v));
		}
	}
	return out;
}

std::vector<lcore_cpu_view> runner::lcore_cpu() const
{
	std::vector<lcore_cpu_view> out;
	for (unsigned l = 0; l < RTE_MAX_LCORE; l++) {
		const lcore_slot *s = _slots[l];
		if (!s)
			continue;
		lcore_cpu_view v{};
		v.lcore = l;
		const bool started = s->start_ns.load(std::memory_order_acquire) != 0;
		v.running = s->running.load(std::memory_order_acquire);
		if (!started) {
			out.push_back(v);
			continue;
		}
		v.tid = s->tid.load(std::memory_order_relaxed);
		v.clock_read_ns = s->clock_read_ns.load(std::memory_order_relaxed);
		const uint64_t start = s->start_ns.load(std::memory_order_relaxed);
		const uint64_t end = v.running ? 0 : s->end_ns.load(std::memory_order_relaxed);
		const uint64_t now = end ? end : mono_ns();
		v.wall_ns = now > start ? now - start : 0;
		const task_cpu c = read_task_cpu(v.tid);
		auto since = [](uint64_t now_v, uint64_t base_v) {
			return now_v > base_v ? now_v - base_v : 0;
		};
		v.user_ns = since(c.user_ns, s->base_user_ns.load(std::memory_order_relaxed));
		v.sys_ns = since(c.sys_ns, s->base_sys_ns.load(std::memory_order_relaxed));
		v.oncpu_ns = since(c.oncpu_ns, s->base_oncpu_ns.load(std::memory_order_relaxed));
		v.runq_ns = since(c.runq_ns, s->base_runq_ns.load(std::memory_order_relaxed));
		v.voluntary_switches = since(c.vol, s->base_vol.load(std::memory_order_relaxed));
		v.involuntary_switches = since(c.invol, s->base_invol.load(std::memory_order_relaxed));
		out.push_back(v);
	}
	return out;
}

} // namespace dpumesh::lcore
