// SPDX-License-Identifier: BSD-3-Clause
// The lcore engine: runs registered stages on their mapped lcores with an idle policy.
//
// A stage is a poll function returning how much work it did (0 = idle). Several stages
// can share an lcore; each lcore loops over its stages until stopped. Per-stage busy and
// idle cycles are measured with the TSC so `show stages` can report cycles per unit of work.
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
};

struct alignas(64) stage_stats {
	counter calls;
	counter work;
	counter busy_cycles;
	counter idle_cycles;
};

/** A snapshot for display. */
struct stage_view {
	std::string name;
	unsigned lcore;
	uint64_t calls, work, busy_cycles, idle_cycles;
};

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
	config::idle_policy idle() const noexcept { return _cfg.idle; }
	uint64_t tsc_hz() const noexcept { return _tsc_hz; }

	static constexpr unsigned max_stages_per_lcore = 16;

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
	};

	static int lcore_main(void *arg);
	void loop(lcore_slot &slot);

	config::lcores_config _cfg;
	uint64_t _tsc_hz;
	std::vector<lcore_slot *> _slots; /* indexed by lcore id */
	std::atomic<bool> _quit{false};
	std::atomic<bool> _forwarding{true};
	bool _launched = false;
};

} // namespace dpumesh::lcore
