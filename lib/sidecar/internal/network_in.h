// SPDX-License-Identifier: BSD-3-Clause
// Network-in: Case 2 decode of whole messages port RX reassembled from the network.
//
// take() copies a message's L7 header (and only it) into an hbuf, decodes it and turns the
// message into a delivery command whose body stays in the received mbufs (a dpa::local_body
// handle: the DPA copies it into the pod). It consumes the rx_msg in every case and returns
// what came in, or why nothing can be delivered; the caller routes and answers.
//
//   net_message m = in.take(msg);
//   switch (m.what) { case net_message::kind::request: ... admit, deliver ...; }
#pragma once

#include <cstdint>

#include "command.h"
#include "egress.h"
#include "dpumesh/port/rx.h"
#include "dpumesh/wire/l7.h"

#include <rte_mempool.h>

namespace dpumesh::sidecar {

struct counters;

struct net_message {
	enum class kind : uint8_t {
		request,    /**< cmd, view, reply_to, correlation are set */
		response,   /**< cmd, view, from, correlation are set */
		too_large,  /**< L7 header larger than an hbuf (431 to a requester) */
		bad_header, /**< L7 header malformed (400 to a requester); `error` says how */
		no_hbuf,    /**< no header buffer: dropped */
	};
	kind what = kind::no_hbuf;
	bool request = false;     /**< the frame said request (also for the failures) */
	wire::l7_error error = wire::l7_error::ok;
	dpa_command cmd;          /**< flow INGRESS; op, dst and ids are the caller's to set */
	wire::l7_view view;       /**< points into the hbuf at cmd.header */
	remote reply_to;          /**< requests and refused requests: where to answer */
	wire::endpoint from;      /**< the sender's address */
	uint64_t correlation = 0;
};

class network_in {
public:
	network_in(rte_mempool *hbufs, uint32_t hbuf_size, const egress &eg, counters &stats)
		: _hbufs(hbufs), _hbuf_size(hbuf_size), _egress(eg), _stats(stats)
	{
	}

	/** Takes one message (always consumed: freed, or its body handed to the command). */
	net_message take(port::rx_msg *m) noexcept;

private:
	rte_mempool *_hbufs;
	uint32_t _hbuf_size;
	const egress &_egress;
	counters &_stats;
};

} // namespace dpumesh::sidecar
