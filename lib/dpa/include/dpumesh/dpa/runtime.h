// SPDX-License-Identifier: BSD-3-Clause
// The DOCA rules the DPA emulator enforces on kernels, and a standalone emulated DPA thread.
//
// Each rule is one a BlueField-3 enforces (or where breaking it makes the hardware hang or
// fail): what passes the emulator would pass there. A broken rule is counted per thread,
// logged once per rule and thread, and aborts the node when DPUMESH_DPA_STRICT=1 is in its
// environment (every rule but time_alive, which is wall clock on a shared, preempted box).
//
//   dpa::solo_thread::options o;                  // defaults: DOCA's limits
//   auto t = dpa::solo_thread::create(&mkeys, dma_cfg, o);
//   (*t)->notify();                               // as doca_dpa_thread_run's first wake
//   while ((*t)->step(&my_kernel, &state)) {}     // one activation per step, while due
//   EXPECT_EQ((*t)->violations(dpa::rule::mmap_range), 0u);
#pragma once

#include <cstdint>
#include <memory>

#include "dpumesh/common/status.h"
#include "dpumesh/config/config.h"
#include "dpumesh/kernels/dpa_dev.h"
#include "dpumesh/region/mkey_table.h"

struct dpa_dev;

namespace dpumesh::dpa {

/** Rules of the DOCA DPA model (docs/doca.md, "Rules the emulator enforces"). */
#define DPUMESH_FOREACH_DPA_RULE(_)                                                           \
	_(mmap_range, "a copy or window outside its mmap's range (or an unknown mmap)")          \
	_(copy_size, "a copy of 0 bytes or longer than the per-post limit, not split")           \
	_(queue_overflow, "a post with the async-ops queue full")                                \
	_(unflushed, "an activation ended with posts whose doorbell was never rung")              \
	_(cookie_order, "a cookie taken before a completion covering it, or left behind")        \
	_(ack_overrun, "more completions acknowledged than taken")                              \
	_(time_alive, "an activation longer than the time-alive budget")                        \
	_(no_reschedule, "an activation ended without reschedule or finish")

enum class rule : uint8_t {
#define DPUMESH_DPA_RULE_ENUM(n, d) n,
	DPUMESH_FOREACH_DPA_RULE(DPUMESH_DPA_RULE_ENUM)
#undef DPUMESH_DPA_RULE_ENUM
	count
};
const char *rule_name(rule r) noexcept;
const char *rule_description(rule r) noexcept;

/** The limits enforced; defaults are DOCA's (dpa_dev.h). */
struct rules {
	uint32_t max_copy = DPA_MAX_COPY;    /**< bytes per post */
	uint32_t queue_size = DPA_ASYNC_QUEUE; /**< posts outstanding per async-ops queue */
	uint64_t time_alive_us = 100000;     /**< per activation (wall clock, lcore preemption
						  included: generous by default) */
};

/** A kernel entry point: one activation. */
using kernel_fn = void (*)(::dpa_dev *, void *arg);

/**
 * One emulated DPA thread with its own DMA engine, async-ops queue and completion context,
 * naming memory through an mkey table (pods) and the DPU mmap (DPDK memory): what a kernel
 * that only copies needs. For tests of kernels and of the rules; single-threaded.
 */
class solo_thread {
public:
	static result<std::unique_ptr<solo_thread>> create(const mkey_table *mkeys,
							   const config::dma_config &dma,
							   const rules &r = {}, unsigned dma_index = 0);
	~solo_thread();
	solo_thread(const solo_thread &) = delete;
	solo_thread &operator=(const solo_thread &) = delete;

	/** The thread's context, as kernels see it. */
	::dpa_dev *dev() noexcept;
	/** A notification (the host's doca_dpa_thread_run, or a doorbell). */
	void notify() noexcept;
	/** Sets the stop word and notifies. */
	void request_stop() noexcept;
	/** Runs the DMA hardware, then one activation of fn if one is due. @return whether it ran */
	bool step(kernel_fn fn, void *arg) noexcept;
	/** Runs the DMA hardware only. */
	void hw_step() noexcept;
	bool finished() const noexcept;
	uint64_t violations(rule r) const noexcept;
	uint64_t violations_total() const noexcept;

private:
	solo_thread() = default;
	struct impl;
	std::unique_ptr<impl> _impl;
};

} // namespace dpumesh::dpa
