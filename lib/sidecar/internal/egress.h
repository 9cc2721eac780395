// SPDX-License-Identifier: BSD-3-Clause
// Egress: messages out of a port as mesh frames (Case 1), and where they go.
//
// Owns the node's link addresses (to each peer; back to a requester on the network), the
// packet pool the frames come from and the TX-done ring of zero-copy bodies. A pod body
// leaves attached as external-buffer mbufs where the port takes multi-segment mbufs
// (zero-copy: the sender's TX completes when the NIC frees the last frame, reap()), copied
// into the frames otherwise. It never completes anything itself: it says what it did.
//
//   egress::outcome o = eg.send_pod_message(target, kind, correlation, msg);
//   if (o.complete) outbox.send(..., dpa_command::complete(msg.header, o.status));
//   n = eg.reap(hbufs, burst);                     // zero-copy bodies the NIC let go of
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dpumesh/common/status.h"
#include "dpumesh/config/config.h"
#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/port/rx.h"
#include "dpumesh/wire/frame.h"

#include <rte_mbuf.h>
#include <rte_ring.h>

namespace dpumesh::sidecar {

struct counters;
struct network;
struct pod_message;

/** Where frames go: link addressing and the port (index into the sidecar's ports). */
struct remote {
	wire::link_addr addr{};
	int port = -1; /**< -1: nothing can be sent there */
};

/**
 * An error response egress::reply() makes (504 timeout, 503, 429...): its L7 header, made
 * once, and its sum (wire::l7_sum), and the frames kept made of it, one per requester
 * address (any of its ports; a few addresses: wire::frame_template::slot_of()). A caller
 * holds one between egress::reply_of() and egress::reply() of it; what is in it is the
 * egress' own.
 */
struct kept_reply {
	static constexpr unsigned kept_bits = 2;
	struct frame {
		/* not made: never a requester's port, -1 (nothing can be sent there) included,
		 * so a kept frame fits no requester before it is made (kept_fits()) */
		static constexpr int not_made = -2;
		wire::frame_template frame;
		int port = not_made; /**< made for this port's MTU */
	};
	uint16_t status = 0;
	uint16_t len = 0; /**< 0: empty */
	uint16_t sum = 0;
	const char *reason = nullptr;
	const std::string *hop = nullptr;
	uint8_t hdr[256];
	std::array<frame, 1u << kept_bits> kept;
};

struct peer_link {
	std::string name;
	remote to; /**< this node -> the peer */
	wire::link_template frame; /**< the headers of frames to.addr (in-place relays) */
	/** frame.max_payload() at its port's MTU, 0 when that port may not send (or no frame
	 *  was made): what in_place_for() takes, the port's test, its MTU and the template's
	 *  arithmetic not done again for every relay (all three are made for good): relay
	 *  1211.1 -> 1186.1 instructions a message, routes 131B */
	uint32_t in_place_max = 0;
};

class egress {
public:
	/** What a send did; `complete`: the caller completes the sender's TX with `status`. */
	struct outcome {
		bool sent = false;
		bool complete = true;
		uint32_t status = DPUMESH_STATUS_OK;
	};

	/**
	 * @param max_msg the largest message (header + body) it must frame
	 * @param reg for pod bodies (nullptr: messages with a pod body cannot be sent)
	 */
	static result<std::unique_ptr<egress>> create(const config::node_config &cfg,
						      const network &net, uint32_t max_msg,
						      pod_registry *reg, counters &stats);
	~egress();
	egress(const egress &) = delete;
	egress &operator=(const egress &) = delete;

	const peer_link &peer(uint16_t i) const noexcept { return _peers[i]; }
	/** The peer with this address, or -1. */
	int peer_of(const wire::endpoint &ep) const noexcept;
	/** Back to the sender of a network message, from this node's address of its family,
	 *  out of the port it came in on (port -1 when that port may not send). */
	remote remote_of(const port::rx_msg &m) const noexcept
	{
		remote r;
		remote_of(m, r);
		return r;
	}
	/** The same, written into `r` where it is (a remote made aside and copied in stalled
	 *  on store forwarding: a quarter of network_in::take()'s own samples). Inline, the
	 *  port found in a table by its id (a call and a loop over the ports were ~30 of its
	 *  ~50 instructions a request). */
	void remote_of(const port::rx_msg &m, remote &r) const noexcept
	{
		std::memcpy(r.addr.src_mac, _mac, 6);
		std::memcpy(r.addr.dst_mac, m.msg.src_mac, 6);
		r.addr.dst = m.msg.src;
		const std::optional<wire::endpoint> &self = m.msg.src.is_v4() ? _ep4 : _ep6;
		if (!self) [[unlikely]] { /* port -1: nothing can be sent back */
			r.addr.src = wire::endpoint{};
			r.port = -1;
			return;
		}
		r.addr.src = *self;
		r.port = m.port_id < _reply_port.size() ? _reply_port[m.port_id] : -1;
	}

	/**
	 * A pod's message (header in its hbuf, body in its TX pool) out to `to`: zero-copy
	 * where the port allows it (then the TX completes through reap()), copied otherwise.
	 */
	outcome send_pod_message(const remote &to, wire::frame_kind kind, uint64_t correlation,
				 const pod_message &m) noexcept;
	/**
	 * The frames of one message, all or none (counted when none). `body` is attached
	 * zero-copy when `zc_meta` is given (its hbuf's scratch keeps the release state).
	 */
	bool send(const remote &to, wire::frame_kind kind, uint64_t correlation,
		  const uint8_t *l7, uint16_t l7_len, const uint8_t *body, uint32_t body_len,
		  dpa_hbuf_meta *zc_meta) noexcept;
	/**
	 * A message relayed on from the network: its L7 header (in an hbuf), its body still in
	 * the received mbufs (`body_len` bytes from body.first/first_off). The body's segments
	 * are attached to the frames by reference where the port takes chained mbufs, copied
	 * otherwise; the caller frees the received chain either way once this returns.
	 * `l7_sum`, when given, is the header's sum (wire::l7_summed): not read again.
	 */
	bool forward(const remote &to, wire::frame_kind kind, uint64_t correlation,
		     const uint8_t *l7, uint16_t l7_len, const dpa::local_body *body,
		     uint32_t body_len, const uint16_t *l7_sum = nullptr) noexcept;
	/**
	 * forward() to a peer of a message of one frame from the network whose header grew
	 * (`l7`, its sum given), made in the mbuf it came in (`m`, data at its old header of
	 * `old_l7_len` bytes: wire::link_template::frame_in_place(), from the peer's kept
	 * headers): no mbuf taken, the body not copied.
	 * Inline in the relay (out of line, its call was ~20 instructions a request); the
	 * caller counts relayed_in_place when `*sent`.
	 * @return false, `m` untouched and still the caller's, when it cannot be made there
	 *         (forward() it then); true when `m` became the frame, which is then this
	 *         egress's: `*sent` says whether it went onto the port's ring (it was freed and
	 *         counted when not)
	 */
	[[gnu::always_inline]] bool forward_in_place(const peer_link &to, wire::frame_kind kind,
						     uint64_t correlation,
						     const wire::l7_summed &l7, rte_mbuf *m,
						     uint16_t old_l7_len, bool *sent) noexcept
	{
		if (!can_send(to.to.port))
			return false; /* forward() counts it */
		port_view &eg = _ports[to.to.port];
		if (!to.frame.frame_in_place(m, old_l7_len, kind, _msg_id + _msg_id_step,
					     correlation, l7, eg.mtu))
			return false;
		_msg_id += _msg_id_step;
		*sent = put_one(eg, m);
		return true;
	}
	/**
	 * forward_in_place() in two steps, for a caller that makes the header in the frame
	 * (a relay formats its trace fields there, not in network-in's buffer to be copied):
	 * where a header of `l7_len` bytes goes in `m` (place::body nullptr: not there, `m`
	 * untouched; forward_in_place() or forward() it then), then forward_at() with a
	 * header of at most that length (copied there unless it is there already).
	 */
	[[gnu::always_inline]] wire::link_template::place
	in_place_for(const peer_link &to, const rte_mbuf *m, uint16_t old_l7_len,
		     uint16_t l7_len) noexcept
	{
		return to.frame.place_within(m, old_l7_len, l7_len, to.in_place_max);
	}
	/** The frame in_place_for() placed: `m` is then this egress's; whether it went onto
	 *  the port's ring (it was freed and counted when not), as forward_in_place(). */
	[[gnu::always_inline]] bool forward_at(const peer_link &to, const wire::link_template::place &at,
					       wire::frame_kind kind, uint64_t correlation,
					       const wire::l7_summed &l7, rte_mbuf *m) noexcept
	{
		_msg_id += _msg_id_step;
		to.frame.frame_at(m, at, kind, _msg_id, correlation, l7);
		return put_one(_ports[to.to.port], m);
	}
	/** An error response made here, to a requester on the network. `reason` must live as
	 *  long as the egress (a literal, a static name): its header is made once and kept. */
	bool reply(const remote &to, uint64_t correlation, uint16_t status, const char *reason,
		   const std::string &hop) noexcept;
	/**
	 * reply()'s answer for (status, reason, hop), found among the kept ones or made in
	 * place of the oldest: for the same answer to many requesters (a deadline sweep's
	 * 504s), each sent with reply(to, correlation, r) without looking it up again (the
	 * search, and can_send() tested twice, were ~20 instructions a 504). Valid until a
	 * reply() or reply_of() of another answer, which may make that one in its place.
	 */
	kept_reply &reply_of(uint16_t status, const char *reason, const std::string &hop) noexcept;
	/** reply() of a kept answer (reply_of()) to a requester whose port can_send().
	 *  Inline in the deadline sweep's loop (stage::expired()), its one caller: out of line,
	 *  its call and the six registers it saved and restored were ~28 instructions a 504 */
	[[gnu::always_inline]] bool reply(const remote &to, uint64_t correlation,
					  kept_reply &r) noexcept
	{
		return send_reply(to, correlation, r);
	}
	/**
	 * The frame of kept answer `r` made for a requester's address and port, or nullptr (then
	 * the port is tested and reply() sends it). A frame is kept only for a port that can
	 * send (reply_new_address(), after can_send()) and a port's ring is the egress' for
	 * good: the sweep's 504 to a kept frame's address needs no can_send() of its own
	 * (~8 instructions a 504). Its reply_kept() sends it as reply() would.
	 */
	[[gnu::always_inline]] kept_reply::frame *kept_for(const remote &to, kept_reply &r) noexcept
	{
		kept_reply::frame &k = kept_slot(to, r);
		return kept_fits(k, to) ? &k : nullptr;
	}
	[[gnu::always_inline]] bool reply_kept(const remote &to, uint64_t correlation,
					       const kept_reply::frame &k) noexcept
	{
		const uint32_t id = _msg_id += _msg_id_step;
		rte_mbuf *m = k.frame.stamp(id, correlation, to.addr.dst.port, *_mbufs);
		/* the port's view found after the stamp: held across it, one register more
		 * made the stamp keep its ids on the stack */
		port_view &eg = _ports[to.port];
		return m ? put_one(eg, m) : put(eg, 0);
	}
	/** hbufs whose zero-copy frames the NIC released (their senders' TX completes now). */
	unsigned reap(void **hbufs, unsigned max) noexcept;

	/** A poll's burst of messages: frames take their mbufs from a stash filled in bulk
	 *  (wire::mbuf_stash) until end_burst() puts back what was not used; frames for a
	 *  single-producer TX ring are staged and go onto it in one enqueue per port at
	 *  end_burst() (or when the stage is full), within the room the ring had: what was
	 *  said sent is sent. */
	void begin_burst() noexcept
	{
		if (_pkts)
			_mbufs->begin();
		_in_burst = true;
	}
	void end_burst() noexcept
	{
		_in_burst = false;
		for (port_view &p : _ports) {
			flush(p);
			p.end = p.next; /* no room: read again in the next burst */
		}
		_mbufs->end();
	}

	bool can_send(int port) const noexcept { return port >= 0 && _ports[port].tx; }
	bool zero_copy(int port) const noexcept { return can_send(port) && _ports[port].zero_copy; }
	/** Whether the packet pool has room to spare (a quarter free). */
	bool pkts_plenty() const noexcept;

private:
	/** Frames staged for one TX ring in a burst (then one enqueue). */
	static constexpr unsigned staged_max = 128;
	struct port_view {
		uint16_t port_id = 0;
		uint16_t mtu = 0;
		bool external = false;
		bool zero_copy = false;
		rte_ring *tx = nullptr;
		bool stage = false;   /* tx is single-producer: this egress alone fills it */
		std::unique_ptr<rte_mbuf *[]> staged; /* staged_max */
		/* where the next staged frame goes (staged + the frames staged), and that plus
		 * the room: what tx surely takes beyond the staged frames, and the stage too
		 * (room() at most staged_max - nb_staged()); no room outside a burst and for a
		 * port that is not staged. Two pointers rather than a count and the room:
		 * put_one() compares them and moves one (a count, the array's pointer and the
		 * room loaded, and two stored, were ~3 instructions more a frame) */
		rte_mbuf **next = nullptr;
		rte_mbuf **end = nullptr;
		uint32_t nb_staged() const noexcept { return static_cast<uint32_t>(next - staged.get()); }
		uint32_t room() const noexcept { return static_cast<uint32_t>(end - next); }
	};
	bool enqueue(port_view &p, rte_mbuf **frames, uint16_t n) noexcept;
	bool put(port_view &p, uint16_t n) noexcept;
	/* put() of one frame (a relay in place, a kept error answer), staged here when the
	 * burst's stage has a place and the ring room for it, as enqueue() would stage it:
	 * out of line, put() and enqueue() were ~60 instructions a frame, twice a forwarded
	 * request (its relay, its 504). The room alone says it (none outside a burst, for a
	 * port that is not staged, nor beyond the stage: enqueue() keeps it so): the burst,
	 * the port's kind and the stage's count tested as well were ~7 instructions a frame */
	bool put_one(port_view &p, rte_mbuf *m) noexcept
	{
		if (p.next != p.end) [[likely]] {
			*p.next++ = m;
			return true;
		}
		_frames[0] = m;
		return put(p, 1);
	}
	void flush(port_view &p) noexcept;
	egress(pod_registry *reg, counters &stats) : _reg(reg), _stats(stats) {}
	static void nic_done(void *addr, void *opaque);

	using reply_hdr = kept_reply;
	using kept_frame = kept_reply::frame;
	static constexpr unsigned kept_bits = kept_reply::kept_bits;

	/* reply()'s: the kept answer for (status, reason, hop), made when there is none */
	[[gnu::always_inline]] reply_hdr &find_reply(uint16_t status, const char *reason,
						     const std::string &hop) noexcept;
	/* reply()'s frame of a kept answer, to a port that can send */
	[[gnu::always_inline]] bool send_reply(const remote &to, uint64_t correlation,
					       reply_hdr &r) noexcept
	{
		/* the frame kept for the requester's address, stamped with its port and ids (a
		 * deadline sweep answers a burst of 504s to few addresses, from many ports
		 * each). Its kept frames were all made from this header (make_reply() clears
		 * them): only the address is compared (the making and the frames of a new
		 * address out of line: here, the header's sum passed to them by address kept
		 * ~20 instructions a 504 on the stack) */
		kept_frame &k = kept_slot(to, r);
		if (!kept_fits(k, to)) [[unlikely]]
			return reply_new_address(to, _msg_id += _msg_id_step, correlation, r, k);
		return reply_kept(to, correlation, k);
	}
	/* the kept frame of a requester's address, made or not */
	[[gnu::always_inline]] static kept_frame &kept_slot(const remote &to, reply_hdr &r) noexcept
	{
		return r.kept[wire::frame_template::slot_of(to.addr.dst, kept_bits)];
	}
	/* whether it was made for the address and port (a kept frame's port is not_made until
	 * it is made, which no requester's is: one that cannot be sent to, to.port -1, has
	 * none) */
	[[gnu::always_inline]] static bool kept_fits(const kept_frame &k, const remote &to) noexcept
	{
		return k.port == to.port && k.frame.made_for_made(to.addr);
	}
	[[gnu::noinline]] reply_hdr *make_reply(uint16_t status, const char *reason,
						const std::string &hop) noexcept;
	[[gnu::noinline]] bool reply_new_address(const remote &to, uint32_t id,
						 uint64_t correlation, reply_hdr &r,
						 kept_frame &k) noexcept;

	pod_registry *_reg;
	counters &_stats;
	std::array<reply_hdr, 8> _replies{};
	unsigned _next_reply = 0;
	std::vector<peer_link> _peers;
	std::vector<port_view> _ports;
	rte_mempool *_pkts = nullptr;
	std::unique_ptr<wire::mbuf_stash> _mbufs; /* of _pkts */
	rte_ring *_tx_done = nullptr;
	std::vector<rte_mbuf *> _frames;
	uint8_t _mac[6] = {};
	std::optional<wire::endpoint> _ep4, _ep6;
	/* remote_of()'s: the port (an index into _ports, -1 when none may send) a message that
	 * came in on a port id is answered out of */
	std::array<int16_t, RTE_MAX_ETHPORTS> _reply_port{};
	uint32_t _msg_id = 0;
	uint32_t _msg_id_step = 1;
	bool _iova_va = false;
	bool _in_burst = false;
};

} // namespace dpumesh::sidecar
