// SPDX-License-Identifier: BSD-3-Clause
// The DMA engine interface: submit copies, poll their completions, per DPA thread.
//
// An engine belongs to one lcore (one emulated DPA thread) and is used without locks. The
// DPA kernels, through the emulator, submit a burst of copies and later poll a burst of
// completions; neither call allocates, locks or makes a syscall. Copies longer than
// max_copy_size() are split into segments by the engine (the BlueField-3 DPA's comch DMA
// takes at most 8 KiB per operation); the op completes once, when its last segment has.
//
//   dma::engine_options opt;                      // 8 KiB segments, 1024 in flight
//   auto eng = dma::create(cfg.dma, thread_index, opt);
//   if (!eng) return eng.error();
//   dma::copy_op ops[2] = {{dst, src, 4096, 1}, {dst2, src2, 1 << 20, 2}};
//   uint16_t n = (*eng)->submit(ops, 2);          // n < 2: ring full, resubmit the rest later
//   dma::completion done[32];
//   uint16_t k = (*eng)->poll(done, 32);          // in submission order: cookie 1, then 2
//
// Backends: `cpu` (memcpy at submit time) and `dmadev` (DPDK rte_dma_*, one device and
// vchan per engine). See docs/dma.md for ordering, errors and the IOVA rule.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "dpumesh/config/config.h"
#include "dpumesh/common/counter.h"
#include "dpumesh/common/status.h"

namespace dpumesh::dma {

/** One copy: `len` bytes from `src` to `dst` (must not overlap), tagged with `cookie`. */
struct copy_op {
	void *dst;
	const void *src;
	uint32_t len;
	uint64_t cookie;
};

/** The result of one copy_op, reported once, in submission order. */
struct completion {
	uint64_t cookie;
	/** 0 on success, else a negative errno: -EIO (a segment failed on the device),
	 *  -EFAULT (an address the device cannot reach), -EINVAL (null address with len > 0),
	 *  -E2BIG (longer than max_op_size()). */
	int32_t status;
	uint32_t len;
};

/** Per-engine settings that are not in the node config. */
struct engine_options {
	/** Bytes per hardware operation; copies are split into segments of at most this. */
	uint32_t max_copy_size = 8192;
	/** Ops and segments that may be outstanding between submit() and poll(). */
	uint16_t ring_size = 1024;
};

/** Counters, written by the engine's lcore only. */
struct engine_stats {
	counter ops_submitted;      /**< ops accepted by submit() */
	counter segments_submitted; /**< hardware operations (after splitting) */
	counter bytes_submitted;
	counter ops_completed; /**< ops returned by poll(), ok or not */
	counter errors;        /**< ops returned by poll() with a non-zero status */
	counter ring_full;     /**< ops refused by submit() because the ring was full */
};

/** A DMA engine for one lcore. Not thread-safe: one thread submits and polls. */
class engine {
public:
	virtual ~engine() = default;
	engine(const engine &) = delete;
	engine &operator=(const engine &) = delete;

	/**
	 * Starts up to `n` copies, in order. An op is accepted whole or not at all: it is
	 * accepted when the ring has room for one more op and for all of its segments.
	 * Ops that fail validation (null address, too long) are accepted and complete with
	 * an error, so every accepted op produces exactly one completion.
	 * @return the number of ops accepted (a prefix of `ops`); fewer than `n` only when
	 *         the ring is full: poll() and submit the rest again.
	 */
	virtual uint16_t submit(const copy_op *ops, uint16_t n) noexcept = 0;

	/**
	 * Returns up to `max` finished ops, in submission order (an op finished early
	 * waits for the ops before it). Frees their ring space.
	 * @return the number of completions written to `out`.
	 */
	virtual uint16_t poll(completion *out, uint16_t max) noexcept = 0;

	/** Bytes per hardware operation (segment). */
	uint32_t max_copy_size() const noexcept { return _max_copy_size; }
	/** Required alignment of src and dst in bytes (1: none). */
	uint32_t alignment() const noexcept { return _alignment; }
	/** Ops, and segments, that may be outstanding between submit() and poll(). */
	uint16_t max_inflight() const noexcept { return _max_inflight; }
	/** The longest op accepted: max_inflight() segments of max_copy_size(). */
	uint64_t max_op_size() const noexcept
	{
		return static_cast<uint64_t>(_max_inflight) * _max_copy_size;
	}
	/** Ops submitted and not yet returned by poll(); any thread may read it (telemetry). */
	virtual uint16_t inflight() const noexcept = 0;

	/** "cpu" or "dmadev <name> vchan <n>". */
	const std::string &name() const noexcept { return _name; }
	const engine_stats &stats() const noexcept { return _stats; }

protected:
	engine(std::string name, uint32_t max_copy_size, uint32_t alignment, uint16_t max_inflight)
		: _name(std::move(name)), _max_copy_size(max_copy_size), _alignment(alignment),
		  _max_inflight(max_inflight)
	{
	}
	engine_stats _stats;

private:
	std::string _name;
	uint32_t _max_copy_size;
	uint32_t _alignment;
	uint16_t _max_inflight;
};

/**
 * Creates the engine for DPA thread `index` (control path; needs EAL for `dmadev`).
 *
 * For `dmadev`, `cfg.device` is a dmadev name that exists (EAL --vdev=dma_skeleton,lcore=1)
 * or vdev devargs to probe ("dma_skeleton1,lcore=1"); several devices are separated by ';'
 * and thread `index` takes the index-th (a single device serves every index). Each engine
 * owns its device's vchan 0 exclusively.
 * @return the engine, or an error: bad options, dmadev not found / cannot be probed,
 *         device already used by another engine or started elsewhere, no mem-to-mem
 *         copy capability, configure / vchan setup / start failed, no device for `index`.
 */
result<std::unique_ptr<engine>> create(const config::dma_config &cfg, unsigned index,
				       const engine_options &opt = {});

} // namespace dpumesh::dma
