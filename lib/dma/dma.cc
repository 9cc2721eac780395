// SPDX-License-Identifier: BSD-3-Clause
// dma::create(): validates the options and builds the configured backend.
#include "dpumesh/dma/dma.h"

#include "internal/backends.h"

namespace dpumesh::dma {

result<std::unique_ptr<engine>> create(const config::dma_config &cfg, unsigned index,
				       const engine_options &opt)
{
	if (opt.max_copy_size == 0)
		return errorf("dma: max_copy_size must be at least 1 byte");
	if (opt.ring_size < 2 || opt.ring_size > 32768)
		return errorf("dma: ring_size %u is out of range (2..32768)", opt.ring_size);
	switch (cfg.backend) {
	case config::dma_backend::cpu:
		return internal::make_cpu_engine(opt);
	case config::dma_backend::dmadev: {
		auto eng = internal::make_dmadev_engine(cfg.device, index, opt);
		if (!eng)
			return eng.error().with_context("dma engine " + std::to_string(index));
		return eng;
	}
	}
	return errorf("dma: unknown backend %d", static_cast<int>(cfg.backend));
}

} // namespace dpumesh::dma
