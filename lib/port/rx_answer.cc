// SPDX-License-Identifier: BSD-3-Clause
// Port RX's own 503 `saturated` answers: the request's mbuf stamped into its answer (rx_answer.h).
#include "dpumesh/port/rx_answer.h"

#include <cstring>

#include "dpumesh/wire/l7.h"

namespace dpumesh::port {

namespace {
constexpr unsigned kept_bits = 3;
static_assert(rx_answers::nb_templates == 1u << kept_bits);
} // namespace

rx_answers::rx_answers(const uint8_t mac[6], std::optional<wire::endpoint> ep4,
		       std::optional<wire::endpoint> ep6, const std::string &hop, uint32_t first_id,
		       uint32_t id_step)
	: _ep4(ep4), _ep6(ep6), _msg_id(first_id), _id_step(id_step)
{
	std::memcpy(_mac, mac, sizeof(_mac));
	/* egress::reply()'s header for 503 saturated, made the same way */
	wire::l7_writer w(_l7, sizeof(_l7));
	w.response(503, wire::l7_flag_mesh_generated, "saturated", hop);
	_l7_len = static_cast<uint16_t>(w.finish());
	_l7_sum = wire::l7_sum(_l7, _l7_len);
}

void rx_answers::attach(uint16_t port_id, const tx_ctx *tx, uint16_t mtu) noexcept
{
	if (port_id < _out.size())
		_out[port_id] = out{tx, mtu};
}

bool rx_answers::make(rte_mbuf *m, const wire::parsed_frame &pf, uint16_t port_id) noexcept
{
	const std::optional<wire::endpoint> &self = pf.src.is_v4() ? _ep4 : _ep6;
	if (!self || _l7_len == 0 || !RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) != 1)
		[[unlikely]]
		return false;
	/* what egress::remote_of() makes: from the node's address of the family, to the
	 * requester's address and MAC */
	wire::link_addr a;
	std::memcpy(a.src_mac, _mac, 6);
	std::memcpy(a.dst_mac, pf.src_mac, 6);
	a.src = *self;
	a.dst = pf.src;
	const wire::l7_summed l7{_l7, _l7_len, _l7_sum};
	kept &k = _kept[wire::frame_template::slot_of(pf.src, kept_bits)];
	if (k.port != port_id || !k.frame.made_for(a, l7)) {
		k.port = k.frame.make(a, wire::frame_kind::response, l7, _out[port_id].mtu)
				 ? port_id
				 : UINT16_MAX;
		if (k.port == UINT16_MAX) [[unlikely]]
			return false;
	}
	/* the request's buffer, emptied: one segment, no offload flags, the default headroom */
	if (m->next) [[unlikely]] {
		rte_pktmbuf_free(m->next);
		m->next = nullptr;
	}
	rte_pktmbuf_reset(m);
	if (!k.frame.stamp_into(m, _msg_id + _id_step, pf.correlation, pf.src.port)) [[unlikely]]
		return false;
	_msg_id += _id_step;
	return true;
}

} // namespace dpumesh::port
