// SPDX-License-Identifier: BSD-3-Clause
// The `cpu` DMA backend: each segment is a memcpy done at submit time.
//
// Copying at submit (not at poll) gives the lowest latency and keeps the cost on the
// submitting lcore, which is the only lcore this engine serves anyway. The op still holds
// its ring space until poll() returns it, so ring capacity and splitting behave exactly
// as on a device and tests drive both backends alike.
#include "internal/backends.h"

#include <cstring>

#include "internal/op_tracker.h"

namespace dpumesh::dma::internal {

namespace {

class cpu_engine final : public engine {
public:
	cpu_engine(const engine_options &opt)
		: engine("cpu", opt.max_copy_size, 1, opt.ring_size), _t(opt.ring_size)
	{
	}

	uint16_t submit(const copy_op *ops, uint16_t n) noexcept override
	{
		const uint32_t max_seg = max_copy_size();
		return submit_burst(_t, _stats, max_seg, ops, n,
				    [max_seg](const copy_op &op, uint32_t nb, uint32_t &pending) {
					    auto *d = static_cast<uint8_t *>(op.dst);
					    auto *s = static_cast<const uint8_t *>(op.src);
					    uint32_t left = op.len;
					    for (uint32_t k = 0; k < nb; k++) {
						    uint32_t len = left < max_seg ? left : max_seg;
						    std::memcpy(d, s, len);
						    d += len;
						    s += len;
						    left -= len;
					    }
					    pending = 0;
					    return 0;
				    });
	}

	uint16_t poll(completion *out, uint16_t max) noexcept override
	{
		return _t.drain(out, max, _stats);
	}

	uint16_t inflight() const noexcept override { return _t.ops_seen(); }

private:
	op_tracker _t;
};

} // namespace

std::unique_ptr<engine> make_cpu_engine(const engine_options &opt)
{
	return std::make_unique<cpu_engine>(opt);
}

} // namespace dpumesh::dma::internal
