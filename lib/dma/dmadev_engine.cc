// SPDX-License-Identifier: BSD-3-Clause
// The `dmadev` DMA backend: DPDK rte_dma_* on one device, vchan 0, owned by one engine.
#include <cinttypes>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_dmadev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_memory.h>

#include "dpumesh/common/log.h"
#include "internal/backends.h"
#include "internal/op_tracker.h"

namespace dpumesh::dma::internal {

namespace {

constexpr uint16_t vchan = 0;

/** Which engine owns which dmadev (control path only; the fast path never looks). */
std::mutex owners_lock;
std::map<int16_t, unsigned> owners;

int32_t errno_of(rte_dma_status_code sc) noexcept
{
	switch (sc) {
	case RTE_DMA_STATUS_SUCCESSFUL:
		return 0;
	case RTE_DMA_STATUS_INVALID_SRC_ADDR:
	case RTE_DMA_STATUS_INVALID_DST_ADDR:
	case RTE_DMA_STATUS_INVALID_ADDR:
	case RTE_DMA_STATUS_PAGE_FAULT:
		return -EFAULT;
	case RTE_DMA_STATUS_INVALID_LENGTH:
		return -EINVAL;
	case RTE_DMA_STATUS_USER_ABORT:
	case RTE_DMA_STATUS_NOT_ATTEMPTED:
		return -ECANCELED;
	default:
		return -EIO;
	}
}

/**
 * The IOVA rule (docs/dma.md): in IOVA-as-VA mode the address is the VA itself, valid
 * for any memory when the device does shared virtual addressing (RTE_DMA_CAPA_SVA,
 * e.g. dma_skeleton, idxd with PASID) and for DPDK-known memory otherwise (rte_malloc,
 * memzones, rte_extmem_register'ed and DMA-mapped areas). In IOVA-as-PA mode only
 * DPDK-known memory has an IOVA; a segment must be IOVA-contiguous (checked at both ends).
 */
struct iova_rule {
	bool va_mode;
	bool sva;

	rte_iova_t operator()(const void *va, uint32_t len) const noexcept
	{
		if (va_mode) {
			if (sva || rte_mem_virt2memseg_list(va) != nullptr)
				return reinterpret_cast<uintptr_t>(va);
			return RTE_BAD_IOVA;
		}
		const rte_memseg *ms = rte_mem_virt2memseg(va, nullptr);
		if (ms == nullptr || ms->iova == RTE_BAD_IOVA)
			return RTE_BAD_IOVA;
		rte_iova_t io = ms->iova + (reinterpret_cast<uintptr_t>(va) -
					    reinterpret_cast<uintptr_t>(ms->addr));
		const void *last = static_cast<const uint8_t *>(va) + len - 1;
		const rte_memseg *ml = rte_mem_virt2memseg(last, nullptr);
		if (ml == nullptr || ml->iova == RTE_BAD_IOVA ||
		    ml->iova + (reinterpret_cast<uintptr_t>(last) -
				reinterpret_cast<uintptr_t>(ml->addr)) !=
			    io + len - 1)
			return RTE_BAD_IOVA;
		return io;
	}
};

struct device_ref {
	int16_t id = -1;
	std::string name;
	std::string bus; /**< set when this engine probed the device and must remove it */
	unsigned owner = 0;
};

void release(const device_ref &d)
{
	if (d.id >= 0) {
		std::lock_guard<std::mutex> g(owners_lock);
		owners.erase(d.id);
	}
	/* rte_dma_close() releases the dmadev in 22.11 (it disappears until re-probed), so an
	 * EAL --vdev device is only stopped, to be reusable; a device we probed is removed,
	 * which closes it through its driver. */
	if (!d.bus.empty()) {
		int rc = rte_eal_hotplug_remove(d.bus.c_str(), d.name.c_str());
		if (rc < 0)
			DPUMESH_LOG(WARNING, dma, "removing dmadev %s: %s", d.name.c_str(),
				    rte_strerror(-rc));
	}
}

class dmadev_engine final : public engine {
public:
	dmadev_engine(device_ref dev, uint16_t capacity, const engine_options &opt, iova_rule rule)
		: engine("dmadev " + dev.name + " vchan 0", opt.max_copy_size, 1, capacity),
		  _dev(std::move(dev)), _id(_dev.id), _iova(rule), _t(capacity),
		  _status(std::make_unique<rte_dma_status_code[]>(capacity))
	{
	}

	~dmadev_engine() override
	{
		/* The device may still write into buffers: wait (bounded) for what it owes. */
		uint64_t deadline = rte_get_timer_cycles() + rte_get_timer_hz();
		while (_t.pending_segments() != 0 && rte_get_timer_cycles() < deadline)
			reap();
		if (_t.pending_segments() != 0)
			DPUMESH_LOG(WARNING, dma, "%s: stopping with %u segments in flight",
				    name().c_str(), _t.pending_segments());
		int rc = rte_dma_stop(_id);
		if (rc < 0)
			DPUMESH_LOG(WARNING, dma, "%s: stop: %s", name().c_str(), rte_strerror(-rc));
		release(_dev);
	}

	uint16_t submit(const copy_op *ops, uint16_t n) noexcept override
	{
		const uint32_t max_seg = max_copy_size();
		bool any = false;
		uint16_t done = submit_burst(
			_t, _stats, max_seg, ops, n,
			[this, max_seg, &any](const copy_op &op, uint32_t nb, uint32_t &pending) {
				auto *d = static_cast<uint8_t *>(op.dst);
				auto *s = static_cast<const uint8_t *>(op.src);
				uint32_t left = op.len;
				int32_t st = 0;
				uint32_t k = 0;
				for (; k < nb; k++) {
					uint32_t len = left < max_seg ? left : max_seg;
					rte_iova_t si = _iova(s, len);
					rte_iova_t di = _iova(d, len);
					if (si == RTE_BAD_IOVA || di == RTE_BAD_IOVA) [[unlikely]] {
						st = -EFAULT;
						break;
					}
					int rc = rte_dma_copy(_id, vchan, si, di, len, 0);
					if (rc < 0) [[unlikely]] {
						st = rc;
						break;
					}
					d += len;
					s += len;
					left -= len;
				}
				pending = k;
				any |= k != 0;
				return st;
			});
		if (any)
			rte_dma_submit(_id, vchan);
		return done;
	}

	uint16_t poll(completion *out, uint16_t max) noexcept override
	{
		reap();
		return _t.drain(out, max, _stats);
	}

	uint16_t inflight() const noexcept override { return _t.ops_seen(); }

private:
	void reap() noexcept
	{
		uint32_t want = _t.pending_segments();
		if (want == 0)
			return;
		uint16_t last_idx;
		uint16_t nb = rte_dma_completed_status(
			_id, vchan, static_cast<uint16_t>(want < max_inflight() ? want : max_inflight()),
			&last_idx, _status.get());
		for (uint16_t k = 0; k < nb; k++)
			_t.segment_done(errno_of(_status[k]));
	}

	device_ref _dev;
	int16_t _id;
	iova_rule _iova;
	op_tracker _t;
	std::unique_ptr<rte_dma_status_code[]> _status;
};

std::vector<std::string> split(const std::string &s, char sep)
{
	std::vector<std::string> out;
	size_t start = 0;
	for (;;) {
		size_t end = s.find(sep, start);
		out.push_back(s.substr(start, end - start));
		if (end == std::string::npos)
			return out;
		start = end + 1;
	}
}

result<device_ref> open_device(const std::string &item, unsigned index)
{
	device_ref d;
	d.name = item.substr(0, item.find(','));
	d.owner = index;
	if (d.name.empty())
		return errorf("empty dmadev name in \"%s\"", item.c_str());
	int id = rte_dma_get_dev_id_by_name(d.name.c_str());
	if (id >= 0 && d.name != item)
		return errorf("dmadev %s already exists (from --vdev?); give only its name, or "
			      "drop it from the EAL command line",
			      d.name.c_str());
	if (id < 0) {
		int rc = rte_dev_probe(item.c_str());
		if (rc < 0)
			return errorf("dmadev \"%s\" not found, and probing \"%s\" failed (%s): "
				      "create it with EAL --vdev (e.g. --vdev=dma_skeleton,lcore=1) "
				      "or give vdev devargs",
				      d.name.c_str(), item.c_str(), rte_strerror(-rc));
		d.bus = d.name.find(':') != std::string::npos ? "pci" : "vdev";
		id = rte_dma_get_dev_id_by_name(d.name.c_str());
		if (id < 0) {
			(void)rte_eal_hotplug_remove(d.bus.c_str(), d.name.c_str());
			return errorf("probing \"%s\" created a device, but no dmadev named %s",
				      item.c_str(), d.name.c_str());
		}
	}
	std::lock_guard<std::mutex> g(owners_lock);
	auto it = owners.find(static_cast<int16_t>(id));
	if (it != owners.end()) {
		unsigned other = it->second;
		if (!d.bus.empty())
			(void)rte_eal_hotplug_remove(d.bus.c_str(), d.name.c_str());
		return errorf("dmadev %s is already used by dma engine %u: a dmadev vchan is "
			      "single-threaded, so each DPA thread needs its own device; list one "
			      "per thread in dma.device, separated by ';' "
			      "(e.g. \"dma_skeleton0,lcore=1;dma_skeleton1,lcore=1\")",
			      d.name.c_str(), other);
	}
	owners[static_cast<int16_t>(id)] = index;
	d.id = static_cast<int16_t>(id);
	return d;
}

status setup(const device_ref &d, const engine_options &opt, uint16_t &capacity, bool &sva)
{
	rte_dma_info info;
	int rc = rte_dma_info_get(d.id, &info);
	if (rc < 0)
		return errorf("dmadev %s: cannot read device info: %s", d.name.c_str(),
			      rte_strerror(-rc));
	if (!(info.dev_capa & RTE_DMA_CAPA_MEM_TO_MEM) || !(info.dev_capa & RTE_DMA_CAPA_OPS_COPY))
		return errorf("dmadev %s cannot copy memory to memory (capabilities 0x%" PRIx64 ")",
			      d.name.c_str(), info.dev_capa);
	if (info.max_vchans < 1)
		return errorf("dmadev %s has no free vchan", d.name.c_str());
	sva = info.dev_capa & RTE_DMA_CAPA_SVA;

	rte_dma_conf conf{};
	conf.nb_vchans = 1;
	rc = rte_dma_configure(d.id, &conf);
	if (rc == -EBUSY)
		return errorf("dmadev %s cannot be configured: it is started (used outside dpumesh's "
			      "dma engines?)",
			      d.name.c_str());
	if (rc < 0)
		return errorf("dmadev %s cannot be configured: %s", d.name.c_str(), rte_strerror(-rc));

	/* One descriptor more than the engine's ring (a device ring may keep one slot free),
	 * a power of two (dma_skeleton requires it), within the device's limits. */
	uint32_t nb_desc = 1;
	while (nb_desc < static_cast<uint32_t>(opt.ring_size) + 1)
		nb_desc <<= 1;
	if (nb_desc > info.max_desc)
		nb_desc = info.max_desc;
	if (nb_desc < info.min_desc)
		nb_desc = info.min_desc;
	rte_dma_vchan_conf vc{};
	vc.direction = RTE_DMA_DIR_MEM_TO_MEM;
	vc.nb_desc = static_cast<uint16_t>(nb_desc);
	rc = rte_dma_vchan_setup(d.id, vchan, &vc);
	if (rc < 0)
		return errorf("dmadev %s: vchan setup with %u descriptors failed: %s",
			      d.name.c_str(), nb_desc, rte_strerror(-rc));
	capacity = static_cast<uint16_t>(nb_desc - 1 < opt.ring_size ? nb_desc - 1 : opt.ring_size);
	rc = rte_dma_start(d.id);
	if (rc < 0)
		return errorf("dmadev %s cannot be started: %s", d.name.c_str(), rte_strerror(-rc));
	return status::ok();
}

} // namespace

result<std::unique_ptr<engine>> make_dmadev_engine(const std::string &device, unsigned index,
						   const engine_options &opt)
{
	if (device.empty())
		return errorf("dma.device is empty: name a dmadev (e.g. dma_skeleton, created with "
			      "EAL --vdev=dma_skeleton,lcore=1) or give vdev devargs");
	if (rte_lcore_count() == 0)
		return errorf("the dmadev backend needs EAL: call rte_eal_init first");
	std::vector<std::string> items = split(device, ';');
	if (items.size() > 1 && index >= items.size())
		return errorf("dma.device lists %zu devices, none for DPA thread %u (one per thread)",
			      items.size(), index);
	const std::string &item = items.size() == 1 ? items[0] : items[index];

	DPUMESH_ASSIGN_OR_RETURN(device_ref d, open_device(item, index));
	uint16_t capacity = 0;
	bool sva = false;
	status st = setup(d, opt, capacity, sva);
	if (!st.is_ok()) {
		release(d);
		return st;
	}
	iova_rule rule{rte_eal_iova_mode() == RTE_IOVA_VA, sva};
	DPUMESH_LOG(INFO, dma, "engine %u: dmadev %s (id %d), %u in flight, %u B segments, iova %s%s",
		    index, d.name.c_str(), d.id, capacity, opt.max_copy_size,
		    rule.va_mode ? "va" : "pa", sva ? ", sva" : "");
	return std::unique_ptr<engine>(new dmadev_engine(std::move(d), capacity, opt, rule));
}

} // namespace dpumesh::dma::internal
