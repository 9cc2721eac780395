// SPDX-License-Identifier: BSD-3-Clause
// Registration of imported regions with DPDK (external memory, device DMA mapping).
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_memory.h>

#include "dpumesh/common/log.h"
#include "dpumesh/region/region.h"

namespace dpumesh {

status dpdk_register_region(const region &r, rte_device *dev)
{
	if (r.data() == nullptr)
		return errorf("DPDK registration: empty region");
	if (rte_extmem_register(r.data(), r.size(), nullptr, 0, r.page_size()) != 0)
		return errorf("rte_extmem_register(%p, %zu, page %zu): %s", r.data(), r.size(),
			      r.page_size(), rte_strerror(rte_errno));
	if (dev == nullptr)
		return status::ok();
	uint64_t iova = reinterpret_cast<uintptr_t>(r.data()); /* IOVA as VA */
	if (rte_dev_dma_map(dev, r.data(), iova, r.size()) < 0) {
		int err = rte_errno;
		if (err == ENOTSUP) {
			DPUMESH_LOG(DEBUG, region, "%s needs no DMA mapping (ENOTSUP): region %p",
				    rte_dev_name(dev), r.data());
			return status::ok();
		}
		rte_extmem_unregister(r.data(), r.size());
		return errorf("rte_dev_dma_map(%s, %p, %zu): %s", rte_dev_name(dev), r.data(),
			      r.size(), rte_strerror(err));
	}
	return status::ok();
}

status dpdk_unregister_region(const region &r, rte_device *dev)
{
	if (r.data() == nullptr)
		return errorf("DPDK unregistration: empty region");
	status st;
	if (dev != nullptr) {
		uint64_t iova = reinterpret_cast<uintptr_t>(r.data());
		if (rte_dev_dma_unmap(dev, r.data(), iova, r.size()) < 0 && rte_errno != ENOTSUP)
			st = errorf("rte_dev_dma_unmap(%s, %p, %zu): %s", rte_dev_name(dev),
				    r.data(), r.size(), rte_strerror(rte_errno));
	}
	/* Unregister the memory even if the unmap failed: nothing else would. */
	if (rte_extmem_unregister(r.data(), r.size()) != 0 && st.is_ok())
		st = errorf("rte_extmem_unregister(%p, %zu): %s", r.data(), r.size(),
			    rte_strerror(rte_errno));
	return st;
}

} // namespace dpumesh
