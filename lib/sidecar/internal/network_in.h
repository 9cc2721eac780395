// SPDX-License-Identifier: BSD-3-Clause
// Network-in: Case 2 decode of whole messages port RX reassembled from the network.
//
// take() decodes a message's L7 header and turns the message into a delivery command whose
// body stays in the received mbufs (a dpa::local_body handle: the DPA copies it into the
// pod). A request's header is copied into one of network-in's own header buffers (one per
// message of a burst: aligned as an hbuf's header is) and decoded there: a relay to a peer needs
// no hbuf at all (its trace fields are added in that buffer, which has an hbuf's room), and
// only a delivery to a local pod copies the header into one (to_hbuf()). It is not decoded
// in the received segment itself: frames put it at an offset of 2 mod 4, and the view's
// strings went to hash functions (rte_hash_crc, rte_jhash) that load 4-byte words (the
// service gate reads names through memcpy since track dec12). Responses
// are copied into an hbuf and decoded there. take() consumes the rx_msg or hands it to
// the net_message; it returns what came in, or why nothing can be delivered; the caller
// routes and answers, then release()s what it holds.
//
//   net_message m = in.take(msg, i);             // i: the message's place in its burst
//   switch (m.what) { case net_message::kind::request: ... admit;
//           if (m.held && to a local pod && !in.to_hbuf(m)) ... 503;
//           ... deliver (the command owns the hbuf and body) or in.release(m); }
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "command.h"
#include "egress.h"
#include "dpumesh/port/rx.h"
#include "dpumesh/wire/l7.h"

#include <rte_mempool.h>
#include <rte_prefetch.h>

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
	/* Made by network_in::take() alone, which writes every field on every path: the
	 * command, the view, the addresses are not cleared first (a 288-byte clear, a `rep stos`
	 * whose start-up was 40% of take()'s samples in the forward profile). */
	net_message() noexcept
		: what(kind::no_hbuf), request(false), source(UINT16_MAX), l7(nullptr),
		  held(nullptr), correlation(0)
	{
	}

	/** What network_in::take_burst() makes its messages with: no field written (take()
	 *  writes every one the default writes, on every path: its stores were 6
	 *  instructions a message). */
	struct unwritten {};
	explicit net_message(unwritten) noexcept {}

	kind what;
	bool request;     /**< the frame said request (also for the failures) */
	wire::l7_error error = wire::l7_error::ok;
	/** A request's: its sender's quota bucket (port::rx_msg::source_bucket, which take()
	 *  copies); made without take(), none (quota::nb_sources or more: open_request()
	 *  hashes the address), not bucket 0. */
	uint16_t source;
	/** flow INGRESS; op, dst and ids are the caller's to set. A request decoded in the
	 *  header buffer has header 0, body 0, header_len and body_len, and no other field
	 *  written until to_hbuf(). */
	union {
		dpa_command cmd;
	};
	union {
		wire::l7_view view; /**< points into `l7` */
	};
	/** The L7 header: in the hbuf at cmd.header, or in a network-in header buffer (then
	 *  writable, with an hbuf's room, valid until the next take() into that buffer). */
	uint8_t *l7;
	/** Decoded in the header buffer: the received message, still the caller's (its chain
	 *  holds the body); to_hbuf() or release() ends it. */
	port::rx_msg *held;
	union {
		remote reply_to; /**< requests and refused requests: where to answer */
	};
	union {
		wire::endpoint from; /**< the sender's address */
	};
	uint64_t correlation;

	/** The body as a relay reads it: the received segments after the header. */
	dpa::local_body relay_body() const noexcept
	{
		if (!held)
			return cmd.body_len ? *reinterpret_cast<const dpa::local_body *>(cmd.body)
					    : dpa::local_body{};
		return {held->msg.chain, held->msg.chain, cmd.header_len};
	}
};

class network_in {
public:
	/** Header buffers: as many as a burst has messages (take(m, i) uses the i-th). */
	static constexpr unsigned nb_buffers = 32;
	/** A header buffer's least size in words (the copy of a header into it takes two
	 *  16-byte chunks, 64 bytes read whatever its length). */
	static constexpr uint32_t min_hdr_words = 8;

	network_in(rte_mempool *hbufs, uint32_t hbuf_size, const egress &eg, counters &stats)
		: _hbufs(hbufs), _max_header(hbuf_size - DPA_HBUF_META_SIZE), _egress(eg),
		  _stats(stats),
		  _hdr_words(std::max<uint32_t>(min_hdr_words, (hbuf_size + 63) / 64 * 8)),
		  _hdr(std::make_unique<uint64_t[]>(_hdr_words * nb_buffers))
	{
	}

	/** Takes one message: consumed (freed, or its body handed to the command), or, a
	 *  request, held by the net_message, its header in header buffer `buf` (valid until
	 *  the next take() into that buffer). */
	net_message take(port::rx_msg *m, unsigned buf = 0) noexcept;
	/** take() of a burst's messages into out[0, n): out[i] is made for each msgs[i] that
	 *  port RX did not refuse (its header in buffer i), left as it is for the others; the
	 *  headers decode_ahead messages on are prefetched as it goes. */
	void take_burst(port::rx_msg *const *msgs, unsigned n, net_message *out) noexcept;
	/** How many messages ahead of the one decoded take_burst() prefetches the header of
	 *  (the caller prefetches the first few's: prefetch_header()). */
	static constexpr unsigned decode_ahead = 3;
	/** The L7 header take() copies out of a message's first segment: its first and last
	 *  lines (with the first alone, take()'s copy waited on the second: a third of its
	 *  samples). */
	static void prefetch_header(const wire::message &wm) noexcept
	{
		const auto *h = rte_pktmbuf_mtod(wm.chain, const char *);
		rte_prefetch0(h);
		/* no test for an empty header: a message port RX handed on has 16 bytes of
		 * it at least (decode_frag_hdr()), and a prefetch does not fault anyway (the
		 * test was ~3 instructions a message, here and for the caller's first few) */
		rte_prefetch0(h + wm.l7_len - 1);
	}
	/**
	 * A request's header into an hbuf, as take() makes the others (the view moves with
	 * it): false when no hbuf is free (counted hbuf_empty; the message stays as it was).
	 */
	bool to_hbuf(net_message &m) noexcept;
	/** Frees what a net_message holds: the hbuf and body of its command now, its rx_msg
	 *  with the burst's others at end_burst() (one bulk free). Inline: a relay's (an
	 *  rx_msg kept for end_burst()) is a store. */
	void release(net_message &m) noexcept
	{
		release_last(m);
		/* and nothing of it left to be released again (release_other() cleared these
		 * already, where it ran) */
		m.held = nullptr;
		m.cmd.header = m.cmd.body = 0;
		m.l7 = nullptr;
	}
	/** release() of a message whose header, body and rx_msg are not read again (a relay's,
	 *  its frames made): what it held is not cleared in it (four stores a relay). Its
	 *  addresses and ids stay readable. */
	void release_last(net_message &m) noexcept
	{
		if (m.held && _nb_spent < nb_buffers) [[likely]] {
			_spent[_nb_spent++] = m.held;
			return;
		}
		release_other(m);
	}
	/** The rx_msgs released since the last call, freed (the end of a burst). */
	void end_burst() noexcept
	{
		if (_nb_spent)
			free_spent();
	}
	~network_in() { end_burst(); }

private:
	/* what take_into() counts, added to the counters once a take() or take_burst():
	 * messages (responses: those not requests), requests, requests decoded */
	struct tally {
		uint32_t taken = 0, requests = 0, decoded = 0;
	};
	void take_into(net_message &out, port::rx_msg *m, uint8_t *buf, tally &t) noexcept;
	void count(const tally &t) noexcept;
	void attach(net_message &out, port::rx_msg *m, uint8_t *hdr) noexcept;
	static void failed(net_message &out, net_message::kind why, port::rx_msg *m) noexcept;
	[[gnu::cold]] void bad_header(net_message &out, wire::l7_error err, void *obj,
				   port::rx_msg *m) noexcept;
	void free_spent() noexcept;
	void release_other(net_message &m) noexcept;

	rte_mempool *_hbufs;
	uint32_t _max_header; /* the longest header an hbuf holds: hbuf_size less its meta */
	const egress &_egress;
	counters &_stats;
	uint32_t _hdr_words;              /* one header buffer: hbuf_size, whole cache lines */
	std::unique_ptr<uint64_t[]> _hdr; /* requests' headers (nb_buffers of them, 8-aligned) */
	port::rx_msg *_spent[nb_buffers]; /* released, to be freed at end_burst() */
	unsigned _nb_spent = 0;
};

} // namespace dpumesh::sidecar
