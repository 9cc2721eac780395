// SPDX-License-Identifier: BSD-3-Clause
// The command the Arm sends a DPA thread's RX kernel, typed, and its one encoding as an
// sw_descriptor on the sidecar RX SQ; the notes the RX kernel hands back; the Arm's scratch
// in an hbuf (where parking state lives, never in ABI fields that mean something else).
//
// Every command and note of the sidecar passes through here:
//
//   dpa_command c = dpa_command::deliver_request(pod_message, dst, token, hold);
//   sw_descriptor d = c.encode();                 // outbox: the only place that encodes
//   dpa_note n = dpa_note::decode(note_desc);     // run(): the only place that decodes notes
#pragma once

#include <cstdint>
#include <cstring>

#include "dpumesh/abi/abi.h"
#include "dpumesh/kernels/dpa_dev.h"

namespace dpumesh::sidecar {

/**
 * What the Arm asks an RX kernel to do. On the wire (encode()) it is an sw_descriptor:
 *
 *   field              deliver_request / deliver_response        complete_tx
 *   header_buf_addr    header (hbuf address after dpa_hbuf_meta) the hbuf to complete
 *   header_len         header bytes                              0
 *   body_buf_addr/len  flow LOCAL: the sender's TX-pool address  0
 *                      flow INGRESS: a dpa::local_body handle
 *   req_id, step_id    what the destination sees                 0
 *   dst.pod_id         destination pod handle                    0
 *   flags              OP_REQUEST (| OP_HOLD) or OP_RESPONSE,    OP_TX_DONE
 *                      | flow (| OP_RESUME | OP_NOTIFY)         (| OP_ERROR | status)
 *
 * Bytes of dst past pod_id are always zero. complete_tx completes the TX of whoever sent
 * the header in that hbuf (dpa_hbuf_meta::src; 0: the Arm made it, only the hbuf is freed).
 */
struct dpa_command {
	enum class op : uint8_t { deliver_request, deliver_response, complete_tx };

	op what = op::complete_tx;
	uint32_t flow = DPUMESH_CASE_LOCAL; /**< DPUMESH_CASE_LOCAL (Case 3) or _INGRESS (Case 2) */
	bool hold = false;                  /**< deliver_request: keep the sender's buffers */
	bool resume = false; /**< deliver: the first of a held-back destination's queue */
	bool notify = false; /**< deliver: the last of a window sent from a queue */
	uint32_t status = DPUMESH_STATUS_OK; /**< complete_tx: what the sender hears */
	uint32_t dst = 0;                   /**< deliver: destination pod handle */
	uint32_t req_id = 0;
	uint32_t step_id = 0;
	uint64_t header = 0; /**< header bytes in an hbuf, after its dpa_hbuf_meta */
	uint32_t header_len = 0;
	uint64_t body = 0;
	uint32_t body_len = 0;

	static dpa_command complete(uint64_t header, uint32_t status) noexcept
	{
		dpa_command c;
		c.header = header;
		c.status = status;
		return c;
	}
	bool delivers() const noexcept { return what != op::complete_tx; }
	/** Whether its body is a network (Case 2) body the Arm must release if it drops it. */
	bool network_body() const noexcept
	{
		return delivers() && flow == DPUMESH_CASE_INGRESS && body_len != 0;
	}

	sw_descriptor encode() const noexcept
	{
		sw_descriptor d{};
		d.header_buf_addr = header;
		if (what == op::complete_tx) {
			d.flags = DPUMESH_OP_TX_DONE;
			if (status != DPUMESH_STATUS_OK)
				d.flags |= DPUMESH_OP_ERROR | (status << DPUMESH_STATUS_SHIFT);
			return d;
		}
		d.header_len = header_len;
		d.body_buf_addr = body;
		d.body_len = body_len;
		d.req_id = req_id;
		d.step_id = step_id;
		d.dst.pod_id = dst;
		d.flags = (what == op::deliver_request ? DPUMESH_OP_REQUEST : DPUMESH_OP_RESPONSE) |
			  flow | (hold && what == op::deliver_request ? DPUMESH_OP_HOLD : 0) |
			  (resume ? DPUMESH_OP_RESUME : 0) | (notify ? DPUMESH_OP_NOTIFY : 0);
		return d;
	}
};

/** What an RX kernel hands back on the notification queue: a delivery command with a status. */
struct dpa_note {
	dpa_command cmd;
	uint32_t status = DPUMESH_STATUS_OK;
	/** A HOLD delivery the kernel made (status OK): the Arm may now release its buffers. */
	bool held_done() const noexcept
	{
		return status == DPUMESH_STATUS_OK && cmd.hold;
	}

	/** The same note as an RX kernel writes it (a refusal handed to another shard). */
	sw_descriptor encode() const noexcept
	{
		sw_descriptor d = cmd.encode();
		if (status != DPUMESH_STATUS_OK)
			d.flags |= DPUMESH_OP_ERROR | (status << DPUMESH_STATUS_SHIFT);
		return d;
	}

	static dpa_note decode(const sw_descriptor &d) noexcept
	{
		dpa_note n;
		n.status = dpumesh_flags_status(d.flags);
		dpa_command &c = n.cmd;
		c.what = (d.flags & DPUMESH_OP_RESPONSE) ? dpa_command::op::deliver_response
							  : dpa_command::op::deliver_request;
		c.flow = d.flags & DPUMESH_CASE_MASK;
		c.hold = d.flags & DPUMESH_OP_HOLD;
		c.resume = d.flags & DPUMESH_OP_RESUME;
		c.notify = d.flags & DPUMESH_OP_NOTIFY;
		c.dst = d.dst.pod_id;
		c.req_id = d.req_id;
		c.step_id = d.step_id;
		c.header = d.header_buf_addr;
		c.header_len = d.header_len;
		c.body = d.body_buf_addr;
		c.body_len = d.body_len;
		return n;
	}
};

/** A pod's message as the TX kernel handed it to the Arm (sidecar TX SQ). */
struct pod_message {
	bool request = false;
	bool dma_error = false; /**< the header copy failed: only the hbuf is valid */
	uint32_t src = 0;       /**< sender's pod handle (the kernel's, never the pod's claim) */
	uint32_t req_id = 0, step_id = 0;
	uint64_t header = 0;
	uint32_t header_len = 0;
	uint64_t body = 0; /**< the sender's TX-pool address */
	uint32_t body_len = 0;

	static pod_message decode(const sw_descriptor &d) noexcept
	{
		pod_message m;
		m.request = (d.flags & DPUMESH_OP_MASK & ~DPUMESH_OP_ERROR) == DPUMESH_OP_REQUEST;
		m.dma_error = d.flags & DPUMESH_OP_ERROR;
		m.src = d.dst.pod_id; /* dpa_sidecar_tx_post(): the sender's handle */
		m.req_id = d.req_id;
		m.step_id = d.step_id;
		m.header = d.header_buf_addr;
		m.header_len = d.header_len;
		m.body = d.body_buf_addr;
		m.body_len = d.body_len;
		return m;
	}
	/** The same message delivered on (Case 3): header and body stay where they are. */
	dpa_command deliver(dpa_command::op what, uint32_t dst, uint32_t req, uint32_t step) const noexcept
	{
		dpa_command c;
		c.what = what;
		c.flow = DPUMESH_CASE_LOCAL;
		c.dst = dst;
		c.req_id = req;
		c.step_id = step;
		c.header = header;
		c.header_len = header_len;
		c.body = body;
		c.body_len = body_len;
		return c;
	}
};

/** The metadata ahead of the header bytes at `header`. */
inline dpa_hbuf_meta *hbuf_meta(uint64_t header) noexcept
{
	return reinterpret_cast<dpa_hbuf_meta *>(header - DPA_HBUF_META_SIZE);
}

/**
 * The Arm's scratch in an hbuf (dpa_hbuf_meta::arm, which no kernel reads). A header that
 * leaves through a port zero-copy keeps the NIC's release state here; a delivery that is
 * parked keeps its parking state, so a command that bounces again and again still ends by
 * its first give-up time.
 */
struct hbuf_scratch {
	uint64_t nic_shinfo[3]; /**< rte_mbuf_ext_shared_info of a zero-copy body (egress) */
	uint64_t nic_owner;     /**< the egress that attached it */
	uint64_t park_give_up;  /**< first give-up time (TSC) of a parked delivery; 0: none */
	uint32_t park_bounces;  /**< times it was parked */
	uint32_t reserved;
	/** a request's deadline (TSC; stamped by stage::deliver_new): its header's deadline_ms
	 *  is rewritten from it as it goes to the DPA (outbox::put) */
	uint64_t deliver_by;
};
static_assert(sizeof(hbuf_scratch) == sizeof(dpa_hbuf_meta::arm), "hbuf scratch size");

inline hbuf_scratch &scratch_of(uint64_t header) noexcept
{
	return *reinterpret_cast<hbuf_scratch *>(hbuf_meta(header)->arm);
}

/** A delivery starts afresh: no parking state (hbufs are reused). */
inline void reset_park_state(uint64_t header) noexcept
{
	hbuf_scratch &s = scratch_of(header);
	s.park_give_up = 0;
	s.park_bounces = 0;
}

} // namespace dpumesh::sidecar
