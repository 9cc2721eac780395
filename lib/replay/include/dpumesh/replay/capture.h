// SPDX-License-Identifier: BSD-3-Clause
// Captures loaded for replay: the frames' bytes and times, and what answer each one expects.
//
// dpumesh-replay reads one or more pcap files (libpcap) once, before any trial, and keeps
// every frame in memory. Each frame is classified for the chosen way of matching answers:
//   - match_mode::mesh: a frame belongs to a mesh request message (docs/wire.md §2) whose
//     fragments are all in the capture and agree; the message is tracked (one answer
//     expected) and its frames carry a tag in the fragment header's correlation field,
//     which the node copies into its response. Everything else (responses, malformed
//     fragments, non-mesh frames, requests to an address that is not the device's) is sent
//     untracked.
//   - match_mode::frame: every frame long enough carries a tag in its last 8 bytes and
//     expects itself back (a reflector such as dpdk-testpmd in 5tswap or macswap mode).
//
//   auto cap = replay::load_captures({"a.pcap"}, {.match = replay::match_mode::mesh});
//   if (!cap) die(cap.error().message());
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dpumesh/common/status.h"

namespace dpumesh::replay {

enum class match_mode : uint8_t { mesh, frame };

/** Where a frame's tag goes, and what sending it means. */
struct frame_info {
	uint32_t offset = 0;      /**< into capture::bytes */
	uint16_t len = 0;         /**< frame length (bytes) */
	uint16_t tag_offset = 0;  /**< where the 8-byte tag goes; meaningful when msg >= 0 */
	/** mesh: the fragment header's msg_id, rewritten per pass (a sender does not reuse an
	 *  id while the receiver may still hold its message); 0 = none */
	uint16_t msgid_offset = 0;
	uint16_t csum_offset = 0; /**< the UDP checksum to fix, 0 = none */
	uint8_t csum_full = 0;    /**< recompute the whole L4 checksum (else incremental) */
	uint8_t is_ipv6 = 0;
	uint8_t last = 0;         /**< the last frame of its message: sending it makes one answer due */
	uint16_t l3_offset = 0;   /**< IP header, for a full recompute */
	int32_t msg = -1;         /**< tracked message index, -1 = untracked */
	uint64_t ts_ns = 0;       /**< capture time relative to the first frame */
};

struct capture_options {
	match_mode match = match_mode::mesh;
	/** Mesh: requests to other addresses are untracked (the device drops them). Empty = all. */
	std::vector<std::string> dut_ips;
	uint16_t max_frame = 2048; /**< larger frames are refused at load (mbuf data room) */
	/** The frames are held in memory, at 32-bit offsets: captures whose frames (those
	 *  loaded) pass this many bytes (UINT32_MAX at most) are an error, not offsets that
	 *  wrap around. */
	uint64_t max_bytes = UINT32_MAX;
};

struct capture {
	std::vector<uint8_t> bytes;
	std::vector<frame_info> frames;
	uint32_t nb_messages = 0;      /**< tracked messages (answers expected per pass) */
	uint64_t nb_bytes = 0;         /**< sum of frame lengths */
	uint64_t span_ns = 0;          /**< first to last frame, plus one mean gap (a pass in timing mode) */
	uint32_t nb_untracked = 0;     /**< frames sent without an expected answer */
	uint32_t nb_skipped_large = 0; /**< frames over max_frame (not loaded) */
	double mean_frame_len() const noexcept
	{
		return frames.empty() ? 0.0 : double(nb_bytes) / double(frames.size());
	}
};

/**
 * Loads and classifies the frames of each file, in order (the files' times are laid end
 * to end). Frames longer than options.max_frame are skipped and counted.
 * @return the capture, or an error naming the file (cannot open, not Ethernet, no frames)
 */
result<capture> load_captures(const std::vector<std::string> &files, const capture_options &o);

} // namespace dpumesh::replay
