// SPDX-License-Identifier: BSD-3-Clause
// Backend constructors, called by dma::create() after the options are validated.
#pragma once

#include <memory>

#include "dpumesh/dma/dma.h"

namespace dpumesh::dma::internal {

std::unique_ptr<engine> make_cpu_engine(const engine_options &opt);

/** Opens (or probes) the device for thread `index` and starts an engine on its vchan 0. */
result<std::unique_ptr<engine>> make_dmadev_engine(const std::string &device, unsigned index,
						   const engine_options &opt);

} // namespace dpumesh::dma::internal
