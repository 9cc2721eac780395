// SPDX-License-Identifier: BSD-3-Clause
// The lcore loop: polls each stage, measures cycles, and backs off when idle.
#include <algorithm>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_pause.h>

#include "dpumesh/lcore/runner.h"
#include "dpumesh/common/log.h"

namespace dpumesh::lcore {

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
		int rc = rte_eal_remote_launch(lcore_main, _slots[l], l);
		if (rc != 0) {
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
	for (unsigned l = 0; l < RTE_MAX_LCORE; l++)
		if (_slots[l])
			rte_eal_wait_lcore(l);
	_launched = false;
}

int runner::lcore_main(void *arg)
{
	auto *slot = static_cast<lcore_slot *>(arg);
	slot->self->loop(*slot);
	return 0;
}

void runner::loop(lcore_slot &slot)
{
	const bool adaptive = _cfg.idle == config::idle_policy::adaptive;
	const uint32_t idle_polls = _cfg.idle_polls;
	const uint32_t max_sleep_us = _cfg.max_sleep_us;
	uint32_t empty = 0;
	uint32_t sleep_us = 1;

	while (!_quit.load(std::memory_order_relaxed)) {
		uint32_t work = 0;
		const bool forwarding = _forwarding.load(std::memory_order_relaxed);
		uint64_t t0 = rte_rdtsc();
		for (unsigned i = 0; i < slot.nb_stages; i++) {
			stage_slot &s = slot.stages[i];
			if (!forwarding && s.def.pausable)
				continue;
			uint16_t n = s.def.poll(s.def.arg);
			uint64_t t1 = rte_rdtsc();
			s.stats.calls.inc();
			if (n) {
				s.stats.work.add(n);
				s.stats.busy_cycles.add(t1 - t0);
			} else {
				s.stats.idle_cycles.add(t1 - t0);
			}
			work += n;
			t0 = t1;
		}
		if (work || !adaptive) {
			empty = 0;
			sleep_us = 1;
			continue;
		}
		/* adaptive: pause first, then sleep with exponential back-off */
		if (++empty < idle_polls) {
			rte_pause();
			continue;
		}
		rte_delay_us_sleep(sleep_us);
		if (sleep_us < max_sleep_us)
			sleep_us = std::min(sleep_us * 2, max_sleep_us);
	}
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
			out.push_back({st.def.name, l, st.stats.calls.get(), st.stats.work.get(),
				       st.stats.busy_cycles.get(), st.stats.idle_cycles.get()});
		}
	}
	return out;
}

} // namespace dpumesh::lcore
