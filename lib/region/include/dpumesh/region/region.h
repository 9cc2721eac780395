// SPDX-License-Identifier: BSD-3-Clause
// Shared memory regions: created by a pod, exported over a Unix socket, imported by the DPU.
//
// The portable stand-in for doca_mmap export / doca_mmap_create_from_export: a region is a
// sealed memfd mapped MAP_SHARED. The exporter sends the fd (SCM_RIGHTS) with a small
// fixed header giving the region's length and the exporter's own base virtual address, so
// the importer can translate the exporter's addresses (those in descriptors) into its own
// mapping. See docs/memory-model.md.
//
//   // pod
//   DPUMESH_ASSIGN_OR_RETURN(dpumesh::region r, dpumesh::region::create("pod7", 8 << 20));
//   DPUMESH_RETURN_IF_ERROR(r.export_to(ctrl_sock, /*tag=*/7));
//   // DPU
//   DPUMESH_ASSIGN_OR_RETURN(dpumesh::region r, dpumesh::region::import_from(ctrl_sock));
//   DPUMESH_ASSIGN_OR_RETURN(uint32_t mkey, table.register_region(std::move(r)));
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "dpumesh/common/status.h"

struct rte_device;

namespace dpumesh {

/** First word of an export message: "DPMR" in memory order. */
constexpr uint32_t region_export_magic = 0x524d5044u;
/** Version of region_export_header; a different version is refused. */
constexpr uint16_t region_export_version = 1;

/**
 * The export message's bytes (host byte order: both ends run on one node). Exactly one
 * file descriptor travels with it as SCM_RIGHTS ancillary data.
 */
struct region_export_header {
	uint32_t magic;    /**< region_export_magic */
	uint16_t version;  /**< region_export_version */
	uint16_t reserved; /**< zero */
	uint32_t tag;      /**< chosen by the exporter (e.g. which pool); opaque here */
	uint32_t reserved2; /**< zero */
	uint64_t length;   /**< bytes of the region, a multiple of its page size */
	uint64_t base_va;  /**< the exporter's virtual address of byte 0 */
};
static_assert(sizeof(region_export_header) == 32);

/**
 * A memory region shared between processes: a sealed memfd and this process's MAP_SHARED
 * mapping of it. Owns both (unmapped and closed on destruction). Move-only.
 */
class region {
public:
	/**
	 * Creates a region of at least len bytes (rounded up to the page size). With
	 * try_hugepages, a MFD_HUGETLB memfd (2 MiB pages) is tried first and normal pages
	 * are used if that fails (no hugepages reserved, kernel without hugetlbfs). The
	 * memfd is sealed against shrinking and growing, so an importer can never be made to
	 * fault (SIGBUS) on a mapping that was truncated under it.
	 *
	 * @param name memfd name (shows in /proc/<pid>/maps), e.g. "dpumesh-pod7"
	 * @return the region; an error naming the failed syscall and errno if len is 0 or
	 *         too large, or memfd_create/ftruncate/fcntl(F_ADD_SEALS)/mmap fail
	 */
	static result<region> create(std::string_view name, size_t len, bool try_hugepages = true);

	/**
	 * Receives one export message on a connected Unix socket (SOCK_STREAM or
	 * SOCK_SEQPACKET; blocks, set SO_RCVTIMEO for a limit) and maps the region.
	 * Refuses, closing every fd that came with it: a bad magic or version, non-zero
	 * reserved fields, length 0, not a multiple of the page size, or with base_va +
	 * length above 2^64; no fd or more than one; truncated data or control messages; an
	 * fd that is not a regular file, not sealed against shrinking (F_SEAL_SHRINK), or
	 * smaller than length.
	 *
	 * @return the imported region, with remote_base() = the exporter's base_va and
	 *         tag() = its tag; or an error saying which check or syscall failed
	 */
	static result<region> import_from(int sock);

	/**
	 * The importer's half without the socket (doca_mmap_create_from_export): maps the
	 * region an export descriptor names. Here the descriptor is the 32-byte
	 * region_export_header and the memory comes as the memfd beside it; with DOCA the
	 * descriptor alone names the memory. Same checks as import_from(); takes ownership of
	 * fd (closed on refusal).
	 * @return the region; an error naming the failed check (descriptor size included)
	 */
	static result<region> create_from_export(std::span<const uint8_t> desc, int fd);

	/**
	 * The exporter's descriptor of this region (doca_mmap_export_pci): opaque bytes the
	 * importer gives to create_from_export(), here a region_export_header. export_to()
	 * sends it with the fd.
	 */
	std::vector<uint8_t> export_desc(uint32_t tag) const;

	/**
	 * Sends this region's export message (header + fd) on a connected Unix socket.
	 * An imported region can be re-exported; base_va is then still the original
	 * exporter's (remote_base()).
	 *
	 * @return ok, or an error from sendmsg (EPIPE is reported, never raised as SIGPIPE)
	 */
	status export_to(int sock, uint32_t tag) const;

	region() = default;
	region(region &&other) noexcept;
	region &operator=(region &&other) noexcept;
	region(const region &) = delete;
	region &operator=(const region &) = delete;
	~region();

	/** This process's mapping; nullptr for a moved-from or default region. */
	void *data() const noexcept { return _data; }
	/** Length in bytes (a multiple of page_size()). */
	size_t size() const noexcept { return _size; }
	/** Page size of the backing memory: 4 KiB, or the huge page size. */
	size_t page_size() const noexcept { return _page_size; }
	bool hugepages() const noexcept { return _hugepages; }
	/** The exporter's address of byte 0: data() for a created region. */
	uint64_t remote_base() const noexcept { return _remote_base; }
	/** The tag received on import; 0 for a created region. */
	uint32_t tag() const noexcept { return _tag; }
	/** The memfd (owned by the region). */
	int fd() const noexcept { return _fd; }

private:
	void reset() noexcept;
	void *_data = nullptr;
	size_t _size = 0;
	size_t _page_size = 0;
	uint64_t _remote_base = 0;
	uint32_t _tag = 0;
	int _fd = -1;
	bool _hugepages = false;
};

/**
 * Makes a region reachable by DPDK DMA: registers its mapping as external memory
 * (rte_extmem_register, IOVA unknown) and, when dev is not nullptr, maps it for that device
 * (rte_dev_dma_map with IOVA = VA, the IOVA-as-VA mode VFIO uses). A device whose bus or
 * driver needs no mapping (rte_dev_dma_map fails with ENOTSUP: vdevs, no IOMMU) is
 * accepted and logged at debug level. Needs EAL. One device per region for now.
 *
 * @return ok; an error if rte_extmem_register fails (EEXIST: already registered) or
 *         rte_dev_dma_map fails with anything but ENOTSUP (the extmem registration is then
 *         rolled back)
 */
status dpdk_register_region(const region &r, rte_device *dev);

/**
 * Undoes dpdk_register_region (rte_dev_dma_unmap, then rte_extmem_unregister). Call it
 * before the region is unmapped, once no DMA can still target it.
 *
 * @return ok, or an error naming the failed call (ENOENT: not registered)
 */
status dpdk_unregister_region(const region &r, rte_device *dev);

} // namespace dpumesh
