// SPDX-License-Identifier: BSD-3-Clause
// The pod control channel's messages on DOCA comch (no DOCA calls: built and fuzzed in every
// build that has the DOCA backend, and by the fuzz build): REGISTER with the export
// descriptor, and DOORBELL. REGISTERED and UNREGISTER[ED] are podchan's (proto.h) as they are.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "dpumesh/common/status.h"
#include "dpumesh/podchan/proto.h"

namespace dpumesh::doca {

/**
 * REGISTER on comch: podchan's REGISTER (hdr.length = the whole message), where the pod's
 * exported memory is (its own addresses: descriptors name memory by them), then the export
 * descriptor of that memory (doca_mmap_export_pci), desc_len bytes. The memory holds the
 * pod's region (dpumesh_pod_layout) and, from the next 4 KiB boundary, its TX SQs
 * (dpumesh_tx_sq_offset): on DOCA the DPA polls them there (docs/doca.md). Then the
 * export of the pod's doorbell (doca_sync_event_export_to_remote_pci, pod_doorbell.h),
 * bell_len bytes; 0: the pod has none (it polls: the DPA rings nothing).
 */
struct comch_register_msg {
	dpumesh_ctrl_register reg;
	uint32_t desc_len;
	uint32_t bell_len; /**< the doorbell export's bytes after the descriptor (0..comch_max_desc) */
	uint64_t base;     /**< the pod's address of its memory (4 KiB-aligned, not 0) */
	uint64_t len;      /**< bytes: at least comch_pod_memory_size(reg) */
};
static_assert(sizeof(comch_register_msg) == 152);

/** The exported memory a pod with this REGISTER needs: region, then TX SQs. */
uint64_t comch_pod_memory_size(const dpumesh_ctrl_register &reg) noexcept;

/** DOORBELL on comch: a dpumesh_ctrl_hdr of this type (outside podchan's types). */
inline constexpr uint16_t comch_doorbell_type = 0x100;
/** TX_BELL on comch (Arm -> pod, just before an OK REGISTERED): a dpumesh_ctrl_hdr of this
 *  type, then the export of the pod's pair's TX doorbell (pod_doorbell.h tx_bell), the rest
 *  of the message (1..comch_max_desc bytes). */
inline constexpr uint16_t comch_tx_bell_type = 0x101;
/** Largest export descriptor accepted. */
inline constexpr uint32_t comch_max_desc = 2048;

/** A REGISTER that passed every check. */
struct comch_register_view {
	dpumesh_ctrl_register reg;
	uint64_t base, len;
	std::span<const uint8_t> desc; /**< into the message */
	std::span<const uint8_t> bell; /**< the doorbell's export, into the message (may be empty) */
	uint64_t doorbell = 0; /**< its DPA handle once the Arm imported it (pod_channel.h); 0: none */
};

/**
 * Checks a REGISTER from a pod (untrusted): length, magic, version, type, hdr.length equal to
 * the message, desc_len (1..comch_max_desc) + bell_len (0..comch_max_desc) equal to what
 * follows, reserved words zero, the
 * service name (NUL-terminated, [a-z0-9._-]), nb_workers 1..DPUMESH_MAX_WORKERS, a geometry
 * dpumesh_pod_layout_compute accepts, and the memory: base 4 KiB-aligned and not 0, len at
 * least what the geometry needs, base + len not wrapping.
 * @return the view, or an error naming the first bad field
 */
result<comch_register_view> parse_register(std::span<const uint8_t> msg);

/** Builds a REGISTER message (host side). */
std::vector<uint8_t> make_register(const dpumesh_ctrl_register &reg, uint64_t base, uint64_t len,
				   std::span<const uint8_t> desc, std::span<const uint8_t> bell = {});

} // namespace dpumesh::doca
