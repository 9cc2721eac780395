// SPDX-License-Identifier: BSD-3-Clause
// Port RX's own answers: a saturated service's request of one frame answered 503
// `saturated` in the poll that read it, out of the port without the sidecar
// (docs/overload.md, "Port RX answers what it refuses").
//
// The request's own mbuf becomes its answer: the frame is stamped into it from a
// wire::frame_template kept per requester address (a few; one serves all its ports), the bytes the sidecar's
// egress::reply() makes for that requester (the same L7 header: status, reason, flag, the
// node's hop), with a message id of this port RX's own. A burst's answers leave in one
// rte_eth_tx_burst() on the TX queue that port TX uses for that port on this lcore (the
// same thread: no lock), and only while port TX holds nothing for that queue, so an answer
// never overtakes frames port TX owes. What the queue does not take stays the caller's,
// to be handed on as a refusal (the sidecar answers it, or owes it).
//
//   port::rx_answers a(mac, ep4, ep6, hop, first_id, id_step);
//   a.attach(port_id, &tx_on_this_lcore, mtu);       // setup: per port
//   if (a.ready(port) && a.make(m, pf, port)) out[n++] = m;
//   const uint16_t sent = a.send(port, out, n);       // out[sent..n): still the caller's
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dpumesh/common/tsan.h"
#include "dpumesh/port/tx.h"
#include "dpumesh/wire/frame.h"

namespace dpumesh::port {

class rx_answers {
public:
	/** Requester addresses whose answer frames are kept made (one each, for all its
	 *  ports). */
	static constexpr unsigned nb_templates = 8;

	/**
	 * @param mac, ep4, ep6 the node's link addresses (ep*: with the mesh port; a requester
	 *        of a family the node has no address of is not answered here)
	 * @param hop the node's hop name in mesh-made answers (the sidecar's)
	 * @param first_id, id_step message ids: first_id + id_step, + 2 id_step, ... (disjoint
	 *        from every other sender of the node: docs/overload.md)
	 */
	rx_answers(const uint8_t mac[6], std::optional<wire::endpoint> ep4,
		   std::optional<wire::endpoint> ep6, const std::string &hop, uint32_t first_id,
		   uint32_t id_step);
	rx_answers(const rx_answers &) = delete;
	rx_answers &operator=(const rx_answers &) = delete;

	/** Answers to requests that came in on `port_id` leave through `tx`'s queue: port TX of
	 *  that port on this port RX's lcore. Setup only. */
	void attach(uint16_t port_id, const tx_ctx *tx, uint16_t mtu) noexcept;
	bool attached(uint16_t port_id) const noexcept
	{
		return port_id < _out.size() && _out[port_id].tx;
	}
	/** Whether answers may leave on `port_id` now: attached, and port TX holds nothing
	 *  for its queue (no burst the NIC left, nothing owed). */
	bool ready(uint16_t port_id) const noexcept
	{
		if (!attached(port_id))
			return false;
		const tx_ctx &t = *_out[port_id].tx;
		return t.nb_held == 0 && t.backlog_size() == 0;
	}
	/**
	 * Turns `m`, a request of one frame parsed as `pf` (port RX's own, direct, one
	 * reference), into its 503 `saturated` answer. False when it cannot (no address of the
	 * requester's family, an mbuf that is not its own buffer, no room): then `m` is the
	 * caller's to free and the request is to be handed on.
	 */
	bool make(rte_mbuf *m, const wire::parsed_frame &pf, uint16_t port_id) noexcept;
	/** The answers made for `port_id` out of its queue: how many it took (those are gone;
	 *  frames[sent..n) are still the caller's). */
	uint16_t send(uint16_t port_id, rte_mbuf **frames, uint16_t n) noexcept
	{
		const tx_ctx &t = *_out[port_id].tx;
		DPUMESH_TSAN_PMD_GIVES(frames, n);
		return rte_eth_tx_burst(t.port, t.queue, frames, n);
	}

	/** The L7 header its answers carry (tests). */
	const uint8_t *l7() const noexcept { return _l7; }
	uint16_t l7_len() const noexcept { return _l7_len; }

private:
	struct out {
		const tx_ctx *tx = nullptr;
		uint16_t mtu = 0;
	};
	struct kept {
		wire::frame_template frame;
		uint16_t port = UINT16_MAX; /* made for this port's MTU; UINT16_MAX: not made */
	};
	std::array<out, RTE_MAX_ETHPORTS> _out{};
	std::array<kept, nb_templates> _kept{};
	uint8_t _mac[6];
	std::optional<wire::endpoint> _ep4, _ep6;
	uint8_t _l7[256];
	uint16_t _l7_len = 0;
	uint16_t _l7_sum = 0;
	uint32_t _msg_id;
	uint32_t _id_step;
};

} // namespace dpumesh::port
