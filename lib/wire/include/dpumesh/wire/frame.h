// SPDX-License-Identifier: BSD-3-Clause
// The mesh wire protocol: messages (L7 header + body) over UDP, split into fragments.
//
// Each UDP datagram to the mesh port carries one 32-byte fragment header and a slice of
// one message; a message is the L7 header (dpumesh/wire/l7.h) followed by the body. The format
// is in docs/wire.md; the header itself and its checks are in dpumesh/wire/frame_hdr.h (no
// DPDK). This file has the three pieces the Arm pipeline needs:
//
//   parse_frame()   validate Ethernet/IPv4|IPv6/UDP/fragment header of a received frame
//   fragmenter      build frames for a message (body copied, or attached zero-copy)
//   reassembler     collect fragments into whole messages with bounded memory and time
//
//   wire::parsed_frame pf;
//   if (wire::parse_frame(m, mesh_port_be, &pf) != wire::wire_drop::none) { count; free; }
//   wire::message msg;
//   if (reasm->input(m, pf, rte_rdtsc(), &msg) == wire::reasm_result::complete) deliver(msg);
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include <rte_hash.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_udp.h>

#include "dpumesh/common/copy.h"
#include "dpumesh/common/csum.h"
#include "dpumesh/common/prefetch.h"
#include "dpumesh/common/counter.h"
#include "dpumesh/wire/frame_hdr.h"
#include "dpumesh/common/status.h"

namespace dpumesh::wire {

/** What parse_frame() found; offsets are into the mbuf's data. Its first fields, from src
 *  to correlation, are laid out as a message's from its src on (checked after message):
 *  port RX fills a message of one frame with one 48-byte copy of them, not a move per
 *  field (~20 instructions a message less). */
struct parsed_frame {
	endpoint src;
	uint8_t src_mac[6];
	frame_kind kind;
	uint32_t msg_id;
	uint32_t msg_len;
	uint16_t l7_len;
	/** The payload's sum (its frag_len bytes after the fragment header), as csum_folded()
	 *  takes it, where the UDP checksum was verified here in software (parse_frame()'s
	 *  own frames): a part of that check's sum, kept. 0: not taken (the port's verdict, no
	 *  checksum, parse_any()'s frames, or a payload that sums to 0). */
	uint16_t payload_sum;
	uint64_t correlation;
	endpoint dst;
	uint32_t frag_offset;
	uint32_t frag_len; /**< payload bytes in this frame */
	uint32_t payload_off; /**< offset of the payload from the start of the frame */
};

namespace detail {
/* The sizes of DPDK's protocol headers a frame starts with, for the inline parse and frame
 * here (checked against DPDK's headers in frame.cc) */
constexpr uint32_t ether_size = 14, ipv4_size = 20, ipv6_size = 40, udp_size = 8;

/* parse_frame() of any frame: L2 and L3 through rte_net_get_ptype() but for the mesh's
 * own, every header read through rte_pktmbuf_read() (a chain, IPv6, IPv4 options), the
 * UDP checksum across segments */
wire_drop parse_any(const rte_mbuf *m, uint16_t mesh_port_be, uint32_t max_message,
		    parsed_frame *out) noexcept;

/* the fragment header at h (in place) with frag_len bytes after it, into f */
inline wire_drop take_frag_hdr(const uint8_t *h, uint32_t frag_len, uint32_t max_message,
			       parsed_frame &f) noexcept
{
	frag_fields ff;
	const wire_drop d = decode_frag_hdr(h, frag_len, max_message, &ff);
	if (d != wire_drop::none)
		return d;
	f.kind = ff.kind;
	f.msg_id = ff.msg_id;
	f.msg_len = ff.msg_len;
	f.frag_offset = ff.frag_offset;
	f.frag_len = ff.frag_len;
	f.l7_len = ff.l7_len;
	f.correlation = ff.correlation;
	return wire_drop::none;
}

/* a 16-bit value as a load of its network-order bytes gives it (what a sum of loaded
 * words adds for it) */
inline constexpr uint16_t as_loaded_be16(uint16_t v) noexcept
{
	return to_be(v);
}
/* the 16 bits at p + at as loaded (network order in memory): compared against a constant
 * as_loaded_be16() gives, no byte swap */
inline uint16_t load_raw16(const uint8_t *p, size_t at) noexcept
{
	uint16_t v;
	std::memcpy(&v, p + at, 2);
	return v;
}

/* What parse_inline() returns for a frame it does not take (parse_any()'s): no reason */
inline constexpr wire_drop not_inline = wire_drop::count;

/* parse_inline()'s end for a datagram shorter than the fragment header (8 + dgram bytes
 * at `at`, the addresses on): bad_checksum where its checksum is wrong, else truncated */
[[gnu::cold, gnu::noinline]] inline wire_drop short_dgram(const uint8_t *at, uint64_t flags,
							  uint32_t dgram) noexcept
{
	if (load_raw16(at, 8 + 6) == 0)
		return wire_drop::truncated;
	switch (flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) {
	case RTE_MBUF_F_RX_L4_CKSUM_GOOD:
	case RTE_MBUF_F_RX_L4_CKSUM_NONE:
		return wire_drop::truncated;
	case RTE_MBUF_F_RX_L4_CKSUM_BAD:
		return wire_drop::bad_checksum;
	default: {
		const uint64_t sum = as_loaded_be16(static_cast<uint16_t>(dgram)) +
				     as_loaded_be16(17) + csum_raw(at, 8 + dgram);
		return sum % 0xffff != 0 ? wire_drop::bad_checksum : wire_drop::truncated;
	}
	}
}

/* parse_frame() of the mesh's own frames (IPv4 without options or fragmentation, UDP, in
 * one segment), read in place; not_inline for any other. A frame it accepts is in one
 * segment with its payload in it: reassembler::whole_inline() says whether it is a whole
 * message, not whole_frame() (port RX's ~10 instructions a message less).
 * Dst false (port RX): the destination is not written to out->dst (left as it was) but its
 * IPv4 address, as it lies in the frame, to *dst_ip: port RX compares it with its own and
 * reads it nowhere else (its four stores and the 16-byte compare: rx_poll 297.2 -> 286.8
 * instructions a frame). Always inline: with the payload's sum inlined in it, GCC made it a
 * call of its own (its frame written to memory and read back: port RX +17 instructions a
 * frame). */
template <bool Dst = true>
[[gnu::always_inline]] inline wire_drop parse_inline(const rte_mbuf *m, uint16_t mesh_port_be,
						     uint32_t max_message, parsed_frame *out,
						     uint32_t *dst_ip = nullptr) noexcept
{
	/* Ethernet, IPv4 without options, UDP */
	constexpr uint32_t l2 = ether_size, l3 = ipv4_size, l4_off = l2 + l3;
	constexpr uint32_t ip_src = l2 + 12; /* the destination follows */
	const auto *p = rte_pktmbuf_mtod(m, const uint8_t *);
	if (m->nb_segs != 1 || m->data_len < l4_off + udp_size || m->pkt_len != m->data_len ||
	    load_be<uint16_t>(p, 12) != 0x0800 /* IPv4 */ || p[l2] != 0x45 /* 20 bytes */ ||
	    p[l2 + 9] != 17 /* UDP */ ||
	    (load_raw16(p, l2 + 6) & as_loaded_be16(0x3fff)) != 0 /* a fragment */)
		[[unlikely]]
		return not_inline;
	/* the port's verdicts on the IP and UDP checksums: none (net_pcap, virtio without
	 * offloads) is one test here and one at the UDP checksum, not the IP verdict and
	 * then the UDP one apart (~6 instructions a frame) */
	const uint64_t flags = m->ol_flags;
	constexpr uint64_t verdicts = RTE_MBUF_F_RX_IP_CKSUM_MASK | RTE_MBUF_F_RX_L4_CKSUM_MASK;
	static_assert(RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN == 0 && RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN == 0);
	if ((flags & verdicts) != 0 &&
	    (flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_BAD)
		return wire_drop::bad_checksum;
	const uint32_t total = load_be<uint16_t>(p, l2 + 2);
	if (total < l3 || l2 + total > m->pkt_len)
		return wire_drop::bad_ip;
	parsed_frame &f = *out;
	const uint8_t *udp = p + l4_off;
	uint32_t src, dst;
	std::memcpy(&src, p + ip_src, 4);
	std::memcpy(&dst, p + ip_src + 4, 4);
	/* the ports with the addresses: each stored once (set_v4()'s 0 then the port was two
	 * stores and a clear more) */
	f.src.set_v4(src, load_be<uint16_t>(udp, 0));
	if constexpr (Dst)
		f.dst.set_v4(dst, load_be<uint16_t>(udp, 2));
	else
		*dst_ip = dst;
	uint16_t dst_port_be;
	std::memcpy(&dst_port_be, udp + 2, 2);
	if (mesh_port_be != 0 && dst_port_be != mesh_port_be)
		return wire_drop::other_port;
	/* within the segment from here on: l2 + total <= pkt_len == data_len */
	const uint32_t dgram = load_be<uint16_t>(udp, 4);
	if (dgram < udp_size || dgram != total - l3)
		return wire_drop::bad_udp;
	/* shorter than the fragment header: its checksum checked, then truncated (a cold path
	 * of its own: the common one tests the length once) */
	if (dgram < udp_size + frame_hdr_size) [[unlikely]]
		return short_dgram(p + ip_src, flags, dgram);
	/* a zero checksum is none over IPv4, else the port's verdict, else the sum from the
	 * addresses on with the pseudo header's length and protocol (17) */
	const bool checksum = load_raw16(udp, 6) != 0;
	const uint64_t l4 = flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	if (checksum && ((flags & verdicts) == 0 || l4 == RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN))
		[[likely]] {
		/* it folds to 0xffff (the check holds) when it is a multiple of 0xffff (2^16 is
		 * 1), being nonzero (the protocol's word): a multiply, no fold. Summed in two
		 * parts, the addresses and the UDP and fragment headers (48 bytes) and the
		 * payload after them (at an even offset from the addresses: its words pair as
		 * in place), whose folded sum is kept: a relay that makes a frame of the same
		 * bytes need not read them again. The payload's 64-bit sum folded for
		 * payload_sum, then the heads' words added onto it (one carry count, one wrap
		 * each) */
		constexpr uint32_t heads = 8 + udp_size + frame_hdr_size;
		const uint64_t pseudo =
			as_loaded_be16(static_cast<uint16_t>(dgram)) + as_loaded_be16(17);
		const uint64_t payload = csum_raw64(p + ip_src + heads, dgram + 8 - heads);
		f.payload_sum = csum_fold(payload);
		if (csum_raw64(p + ip_src, heads, csum_add64(payload, pseudo)) % 0xffff != 0)
			return wire_drop::bad_checksum;
	} else if (checksum && l4 == RTE_MBUF_F_RX_L4_CKSUM_BAD) {
		return wire_drop::bad_checksum;
	} else {
		f.payload_sum = 0; /* no checksum, or the port's verdict GOOD or NONE */
	}
	/* the source MAC as one 8-byte move (the frame's next 2 bytes over kind, which
	 * take_frag_hdr() writes after it, and the padding after kind): a 4- and a 2-byte one
	 * were 4 instructions */
	static_assert(offsetof(parsed_frame, kind) == offsetof(parsed_frame, src_mac) + 6 &&
		      offsetof(parsed_frame, msg_id) >= offsetof(parsed_frame, kind) + 2);
	std::memcpy(reinterpret_cast<char *>(&f) + offsetof(parsed_frame, src_mac), p + 6, 8);
	const wire_drop d = take_frag_hdr(
		udp + udp_size, dgram - static_cast<uint32_t>(udp_size + frame_hdr_size),
		max_message, f);
	if (d != wire_drop::none)
		return d;
	f.payload_off = l4_off + static_cast<uint32_t>(udp_size + frame_hdr_size);
	return wire_drop::none;
}
} // namespace detail

/**
 * Validates a whole frame: L2/L3/L4, IP and UDP lengths against the mbuf, the UDP
 * checksum (the port's verdict where it gives one), the fragment header, and the fragment
 * against max_message. mesh_port_be 0 takes UDP to any port (tools reading captures of
 * both directions).
 *
 * Inline for the mesh's own frames (IPv4 without options or fragmentation, UDP, in one
 * segment), read in place (detail::parse_inline()): port RX's per-frame call, its checks
 * in parse_any()'s order, nothing copied, the UDP checksum one sum from the pseudo
 * header's addresses (right before the UDP header in IPv4) to the datagram's end.
 * Anything else: detail::parse_any().
 * (Offsets and values are checked against DPDK's headers in frame.cc.)
 * @return wire_drop::none when valid, else the reason (then *out is partly written).
 */
inline wire_drop parse_frame(const rte_mbuf *m, uint16_t mesh_port_be, uint32_t max_message,
			     parsed_frame *out) noexcept
{
	const wire_drop d = detail::parse_inline(m, mesh_port_be, max_message, out);
	return d != detail::not_inline ? d : detail::parse_any(m, mesh_port_be, max_message, out);
}

/** Addressing of frames this node sends. */
struct link_addr {
	uint8_t src_mac[6];
	uint8_t dst_mac[6];
	endpoint src;
	endpoint dst;
};

/** How a message's body reaches the frames. */
struct body_ref {
	const uint8_t *data = nullptr;
	uint32_t len = 0;
	/**
	 * Non-null: attach the body zero-copy as external buffers (one mbuf per fragment, each
	 * holding a reference on shinfo); shinfo's free callback runs once the NIC is done with
	 * every fragment. Requires a port with RTE_ETH_TX_OFFLOAD_MULTI_SEGS. fragment() takes
	 * one reference per attached segment; the caller holds its own (refcnt starts at 1)
	 * and drops it after fragment() returns, calling the free callback itself if that
	 * was the last one (so a failed fragment() never fires the callback early).
	 */
	rte_mbuf_ext_shared_info *shinfo = nullptr;
	rte_iova_t iova = RTE_BAD_IOVA; /**< IOVA of data (zero-copy only) */
	/**
	 * Non-null (instead of data): the body is in received mbufs, from `seg_off` bytes into
	 * `seg` along its chain (a message relayed on). With `attach`, each frame takes its
	 * part by reference (indirect mbufs on the segments: the caller may free the chain
	 * once fragment() returned; requires RTE_ETH_TX_OFFLOAD_MULTI_SEGS), else it is copied.
	 */
	const rte_mbuf *seg = nullptr;
	uint32_t seg_off = 0;
	bool attach = false;
};

/**
 * Where fragment() takes its mbufs: one rte_pktmbuf_alloc() each, or, between begin() and
 * end() (a burst of messages on one lcore), from a stash refilled 32 at a time with
 * rte_mempool_get_bulk() while the next mbuf's two lines and its headroom are prefetched:
 * a fresh mbuf is a cold line or two, and its reset was the hottest store of the
 * forwarding path. end() puts back what the burst did not use, so nothing stays taken
 * between bursts. Not thread-safe: one per lcore.
 */
class mbuf_stash {
public:
	static constexpr unsigned size = 32;
	explicit mbuf_stash(rte_mempool *pool) noexcept;
	~mbuf_stash() { end(); }
	mbuf_stash(const mbuf_stash &) = delete;
	mbuf_stash &operator=(const mbuf_stash &) = delete;

	void begin() noexcept { _bulk = true; }
	void end() noexcept;
	/** A reset packet mbuf (as rte_pktmbuf_alloc), or nullptr when the pool is empty.
	 *  Inline (below): in the callers that take one mbuf a message (a kept 504 stamped). */
	rte_mbuf *get() noexcept;
	/**
	 * get() for a caller that writes the mbuf's fields itself with reset() (a frame made
	 * whole at once: frame_template::stamp()): the stash's next mbuf as it came from the
	 * pool (next NULL, one segment, one reference: DPDK keeps free mbufs so), or one
	 * get_slow() reset; nullptr when the pool is empty.
	 */
	rte_mbuf *get_unreset() noexcept;
	/** rte_pktmbuf_reset() of one of the pool's free mbufs (any of its data; its ol_flags'
	 *  RTE_MBUF_F_EXTERNAL as the pool's free mbufs have it), then data_len and
	 *  pkt_len `len`: the same fields, in a few wide stores (its headroom, and the room
	 *  after it, the pool's: the reset's min() and the tailroom's loads ~10 instructions
	 *  a 504) */
	void reset(rte_mbuf *m, uint16_t len) const noexcept;
	/** A reset mbuf's data: its buffer after the pool's headroom. */
	uint8_t *data(rte_mbuf *m) const noexcept
	{
		return static_cast<uint8_t *>(m->buf_addr) + _headroom;
	}
	/** Whole copy chunks (copy_chunk bytes) a reset mbuf of the pool has room for, or 0
	 *  when fewer than least_chunks (a copy of at least those is one straight line:
	 *  frame_template::stamp()). */
	uint32_t room_chunks() const noexcept { return _room_chunks; }
	static constexpr uint32_t least_chunks = 4;
	rte_mempool *pool() const noexcept { return _pool; }
	unsigned held() const noexcept { return _n - _i; }

private:
	void prefetch(unsigned k) const noexcept;
	rte_mbuf *get_slow() noexcept;

	rte_mempool *_pool;
	uint32_t _data_off; /* from an mbuf's address to its headroom's end */
	/* data_off, refcnt, nb_segs and port as the reset writes them, then ol_flags: the
	 * reset keeps RTE_MBUF_F_EXTERNAL alone, which a free mbuf of the pool has exactly when
	 * the pool's buffers are pinned external ones (rte_pktmbuf_detach() clears the flags of
	 * any other on its way back): one 16-byte store (ol_flags read, masked and merged
	 * were ~3 instructions a 504) */
	alignas(16) uint64_t _rearm[2] = {};
	uint16_t _headroom = 0; /* a reset mbuf's data_off */
	uint32_t _room_chunks = 0; /* room_chunks() */
	bool _bulk = false;
	unsigned _i = 0, _n = 0; /* equal (0) while not _bulk: get() tests them alone */
	/* two more than a stash: get() prefetches the one after the next without a compare
	 * (past _n: an mbuf handed out before, or none; a prefetch does not fault) */
	rte_mbuf *_m[size + 2] = {};
};

[[gnu::always_inline]] inline void mbuf_stash::prefetch(unsigned k) const noexcept
{
	/* both lines of the mbuf (the reset writes next and tx_offload in the second) and
	 * the two lines its headers go to (a direct mbuf's buffer follows it: a 504's frame
	 * is ~130 bytes). _m[k] may be null (past _n): prefetch0_at() */
	const rte_mbuf *m = _m[k];
	rte_prefetch0(m);
	prefetch0_at(m, RTE_CACHE_LINE_SIZE);
	prefetch0_at(m, _data_off);
	prefetch0_at(m, _data_off + RTE_CACHE_LINE_SIZE);
}

inline rte_mbuf *mbuf_stash::get() noexcept
{
	/* not _bulk: _i == _n (0), get_slow() (testing `_bulk` here too was ~2 a get) */
	if (_i == _n) [[unlikely]]
		return get_slow();
	/* two ahead: a sweep's 504s come ~100 cycles apart, less than a cold mbuf's miss
	 * (prefetched one ahead, the first prefetch's wait was 84% of prefetch_next()); past
	 * the stash's end too (_m's two spare entries: the compare was ~3 a get) */
	rte_mbuf *m = _m[_i++];
	prefetch(_i + 1);
	rte_pktmbuf_reset(m);
	return m;
}

inline rte_mbuf *mbuf_stash::get_unreset() noexcept
{
	if (_i == _n) [[unlikely]] /* not _bulk, or the stash is empty */
		return get_slow();
	rte_mbuf *m = _m[_i++];
	prefetch(_i + 1);
	return m;
}

[[gnu::always_inline]] inline void mbuf_stash::reset(rte_mbuf *m, uint16_t len) const noexcept
{
	static_assert(offsetof(rte_mbuf, ol_flags) == offsetof(rte_mbuf, data_off) + 8,
		      "rearm_data, then ol_flags");
	std::memcpy(reinterpret_cast<char *>(m) + offsetof(rte_mbuf, data_off), _rearm,
		    sizeof(_rearm));
	m->packet_type = 0;
	m->pkt_len = len;
	if constexpr (std::endian::native == std::endian::little) {
		/* data_len and vlan_tci (adjacent) as one 4-byte store of the length: the
		 * 16-bit stores and the zero made for the second were ~2 instructions a 504 */
		static_assert(offsetof(rte_mbuf, vlan_tci) == offsetof(rte_mbuf, data_len) + 2);
		const uint32_t len_vlan = len;
		std::memcpy(reinterpret_cast<char *>(m) + offsetof(rte_mbuf, data_len), &len_vlan,
			    sizeof(len_vlan));
	} else {
		m->data_len = len;
		m->vlan_tci = 0;
	}
	m->vlan_tci_outer = 0;
	m->next = nullptr;
	m->tx_offload = 0;
}

/**
 * Builds the frames of one message. The L7 header is copied; the body is copied or
 * attached (body_ref::shinfo). Frames are sized to `mtu` (IP packet size).
 * @return number of frames written to out, or 0 if the pool ran dry, max_out is too small
 *         or the sizes are invalid (nothing is leaked; on failure no shinfo reference is
 *         left taken).
 */
uint16_t fragment(const link_addr &addr, frame_kind kind, uint32_t msg_id, uint64_t correlation,
		  const uint8_t *l7, uint16_t l7_len, const body_ref &body, uint16_t mtu,
		  rte_mempool *hdr_pool, rte_mbuf **out, uint16_t max_out) noexcept;
/** The same, with mbufs from a stash (its pool's). */
uint16_t fragment(const link_addr &addr, frame_kind kind, uint32_t msg_id, uint64_t correlation,
		  const uint8_t *l7, uint16_t l7_len, const body_ref &body, uint16_t mtu,
		  mbuf_stash &mbufs, rte_mbuf **out, uint16_t max_out) noexcept;

/**
 * An L7 header framed again and again as it is, with no body (an error answer this node
 * makes: 504 timeout, 503 overloaded, 408): its bytes and their one's-complement sum,
 * taken once (l7_sum()), so that each frame's UDP checksum adds only the sum of the
 * fields that differ per message instead of reading the header again.
 */
struct l7_summed {
	const uint8_t *data = nullptr;
	uint16_t len = 0;
	uint16_t sum = 0; /**< l7_sum(data, len) */
	/** frame_in_place() only: `sum` is of the whole payload, the header and the body after
	 *  it in the mbuf (message::payload_sum of a header that grew by an even number of
	 *  bytes: each body byte at the parity it had), so the body is not summed again. */
	bool with_body = false;
};
/** The sum l7_summed::sum holds: of `len` bytes as the UDP checksum adds them. Inline: a
 *  relay takes it of every request's header (csum_folded()). */
inline uint16_t l7_sum(const uint8_t *l7, uint16_t len) noexcept
{
	return csum_folded(l7, len);
}
/**
 * The one's-complement sum of a header (as wire::l7_sum() takes it: the UDP checksum's
 * part) that grew in place, from the sum it had: `old_len` bytes and `old_nb` fields
 * before, `new_len` and `new_nb` after, the bytes appended at old_len summing to `added`
 * (csum_bytes() from the first of them, unfolded). Only the length and field-count words
 * of the fixed part change besides: nothing is read again (a header just written in narrow
 * stores read back with wide loads stalls on store forwarding).
 */
inline uint16_t l7_sum_grown(uint16_t old_sum, uint16_t old_len, uint16_t old_nb,
			     uint16_t new_len, uint16_t new_nb, uint64_t added) noexcept
{
	/* a big-endian field at an even offset sums as its value times 256 modulo 0xffff
	 * (its bytes swapped, and 2^16 is 1 there), which is all the fold keeps: the length
	 * and count words change by (new - old) << 8 (0xffff added: 0 modulo 0xffff, never
	 * negative). Byte by byte and complemented, the words were ~30 instructions. */
	const uint64_t grown = uint64_t(new_len) + 0xffff - old_len + new_nb + 0xffff - old_nb;
	return csum_fold(uint64_t(old_sum) + (grown << 8) + (old_len & 1 ? added << 8 : added));
}
/**
 * The one's-complement sum of a header (as wire::l7_sum() takes it, or of a payload that
 * starts with the header) whose big-endian field at an even offset (deadline_ms, a 16-bit
 * word) changed from `old_value` to `new_value` in place, from the sum it had: nothing is
 * read again. The field sums as its value times 256 modulo 0xffff (l7_sum_grown());
 * 0xffffffff, a multiple of 0xffff, keeps the difference from going below 0.
 */
inline uint16_t l7_sum_changed(uint16_t old_sum, uint32_t old_value, uint32_t new_value) noexcept
{
	return csum_fold(uint64_t(old_sum) + ((uint64_t(new_value) + 0xffffffffu - old_value) << 8));
}

/** fragment() of a message that is `l7` alone: the same frames, one UDP checksum made from
 *  `l7.sum` where the message fits one frame (the header read again otherwise). */
uint16_t fragment(const link_addr &addr, frame_kind kind, uint32_t msg_id, uint64_t correlation,
		  const l7_summed &l7, uint16_t mtu, mbuf_stash &mbufs, rte_mbuf **out,
		  uint16_t max_out) noexcept;
/** fragment() of `l7` and a body, the header's sum given (`l7.sum`: l7_sum() of it, or
 *  l7_sum_grown() of a header that grew in place): the same frames. */
uint16_t fragment(const link_addr &addr, frame_kind kind, uint32_t msg_id, uint64_t correlation,
		  const l7_summed &l7, const body_ref &body, uint16_t mtu, mbuf_stash &mbufs,
		  rte_mbuf **out, uint16_t max_out) noexcept;

/**
 * One frame made again and again to one requester, its ids and its UDP port alone
 * changing: an error answer this node makes (the 504s of a deadline sweep go to few
 * requester addresses, each from many ports: a client's sockets). make() writes the
 * frame's bytes once and keeps the sums of its checksummed words but the ids' and the
 * destination port's; stamp() copies them into an mbuf and writes the message id, the
 * correlation, the destination port, the IPv4 id and both checksums: the same bytes
 * fragment() makes for that message to that port.
 *
 *   wire::frame_template t;
 *   if (t.make(addr, frame_kind::response, l7, mtu))
 *           m = t.stamp(msg_id, corr, addr.dst.port, stash);
 */
class frame_template {
public:
	/** For `l7` alone (no body) to `addr` (its dst.port is stamp()'s); false when it needs
	 *  more than one frame at this MTU or the addresses' families differ (then fragment()
	 *  frames it). */
	bool make(const link_addr &addr, frame_kind kind, const l7_summed &l7, uint16_t mtu) noexcept;
	/** One frame with these ids to `dst_port` (host order); nullptr when no mbuf is left
	 *  or it has no room. Inline, with the stash's get() (below): out of line in the
	 *  egress' reply, its call and the registers it saved were ~25 instructions a 504. */
	[[gnu::always_inline]] inline rte_mbuf *stamp(uint32_t msg_id, uint64_t correlation,
						      uint16_t dst_port,
						      mbuf_stash &mbufs) const noexcept;
	/** The same frame written into `m`, an empty (reset) one-segment mbuf of the caller's
	 *  (port RX turns a refused request's own mbuf into its answer); false when it has no
	 *  room (m unchanged). */
	bool stamp_into(rte_mbuf *m, uint32_t msg_id, uint64_t correlation,
			uint16_t dst_port) const noexcept;
	/** Whether it was made for this address, but perhaps another destination port, and
	 *  this header (the same bytes at `l7.data`): then stamp() makes its frames. */
	bool made_for(const link_addr &addr, const l7_summed &l7) const noexcept
	{
		return _len && _l7 == l7.data && _l7_len == l7.len && _l7_sum == l7.sum &&
		       same_but_port(_addr, addr);
	}
	/** Whether a template the caller knows is made (egress keeps a port with each and -1
	 *  for one not made) was made for this address (but perhaps another destination port),
	 *  its header whatever it was made from: for a caller that keeps its templates per
	 *  header and clears them when that header changes. The address alone (_len tested too
	 *  was ~3 instructions a 504). */
	bool made_for_made(const link_addr &addr) const noexcept
	{
		return same_but_port(_addr, addr);
	}
	void clear() noexcept
	{
		_len = 0;
		_chunks = 0;
		_short = false;
	}
	/** Which of 2^bits kept templates a requester's answers are stamped from: its address
	 *  mixed (not its port: one template serves all of them). */
	static unsigned slot_of(const endpoint &requester, unsigned bits) noexcept
	{
		uint32_t w;
		std::memcpy(&w, requester.ip + 12, 4);
		return bits ? (w * 0x9e3779b1u) >> (32 - bits) : 0;
	}

private:
	/* the bytes of a link_addr made_for() compares: all but the destination's port */
	static constexpr size_t addr_but_port = offsetof(link_addr, dst) + offsetof(endpoint, port);
	static_assert(addr_but_port + sizeof(endpoint::port) == sizeof(link_addr),
		      "the destination port is a link_addr's last bytes");
	static_assert(addr_but_port == 5 * 8 + 6);
	/* those 46 bytes compared inline (a memcmp of 46 is a call into libc: 10% of
	 * egress::reply()'s samples), as three 16-byte vectors, the last one overlapping
	 * the second (bytes 30 to 45): same_bytes()' 8-, 4- and 2-byte steps were ~27
	 * instructions a 504, these ~16 (SSE2 on x86, NEON on Arm) */
	static bool same_but_port(const link_addr &a, const link_addr &b) noexcept
	{
		using v16 = uint64_t __attribute__((vector_size(16)));
		constexpr size_t last = addr_but_port - sizeof(v16);
		const auto at = [](const link_addr &x, size_t off) noexcept {
			v16 v;
			std::memcpy(&v, reinterpret_cast<const uint8_t *>(&x) + off, sizeof(v));
			return v;
		};
		const v16 d = (at(a, 0) ^ at(b, 0)) | (at(a, 16) ^ at(b, 16)) |
			      (at(a, last) ^ at(b, last));
		return (d[0] | d[1]) == 0;
	}
	static constexpr unsigned max_len = 128 + 256; /* headers, then an L7 header */
	uint8_t _bytes[max_len];
	uint16_t _len = 0;     /* 0: not made */
	uint16_t _udp_at = 0;  /* the UDP header's offset */
	bool _v4 = false;
	uint8_t _chunks = 0;   /* copy_chunks_len(_len) / copy_chunk */
	/* 1 to mbuf_stash::least_chunks of them: stamp()'s straight copy, into any pool with
	 * room_chunks() (the chunks' two range tests a 504 were ~2 instructions more) */
	bool _short = false;
	link_addr _addr{};
	const uint8_t *_l7 = nullptr;
	uint16_t _l7_len = 0;
	uint16_t _l7_sum = 0;
	/* The checksums' constant words as stamp() takes them: summed as loaded from memory
	 * (little-endian words: a sum's byte swap is the sum of its words swapped, so the
	 * sums of the stored ids and the checksums come out as stored, no swap back), and
	 * negated, so that each checksum is one fold of a sum that is never 0 (the fold's
	 * 1..0xffff is then the field's range: no "0xffff stays 0xffff" test; put_ids()).
	 * IPv4: 3 * 0xffff less the header's words but its id (ipv4_words_but_id(), folded:
	 * 1..0xffff), above the id's 0xffff at most */
	uint32_t _ip_neg = 0;
	/* ~ (udp_words_but_ids() less the destination port, plus the L7 header's sum, folded:
	 * all the UDP checksum adds but the ids and the port) */
	uint64_t _udp_neg = 0;

	/* stamp_into(), inline in both stamps (below) */
	[[gnu::always_inline]] inline bool write(rte_mbuf *m, uint32_t msg_id,
						 uint64_t correlation,
						 uint16_t dst_port) const noexcept;
	/* the ids, the port and the checksums into the frame's bytes at p (copied there) */
	[[gnu::always_inline]] inline void put_ids(uint8_t *p, uint32_t msg_id,
						   uint64_t correlation,
						   uint16_t dst_port) const noexcept;
};

/**
 * A message of one frame that came in, made in its own mbuf into the frame that carries it
 * on with another L7 header (a relayed request: its trace fields added): `m` is one direct
 * segment of its own (reference count 1) whose data is the message as port RX left it, an
 * L7 header of `old_l7_len` bytes then the body. The body stays where it is; `l7` (its
 * bytes elsewhere, its sum given) goes in front of it and the frame's headers before that,
 * over the received headers and into the headroom. The frame is the bytes fragment() makes
 * for the message (one frame). No mbuf is taken and the body is not copied.
 * @return false, m unchanged, when it is not such an mbuf, the message needs more than one
 *         frame at this MTU, or the headroom is short: fragment() frames it then
 */
bool frame_in_place(rte_mbuf *m, uint16_t old_l7_len, const link_addr &addr, frame_kind kind,
		    uint32_t msg_id, uint64_t correlation, const l7_summed &l7,
		    uint16_t mtu) noexcept;

namespace detail {
/* A 16-bit value to or from network order. DPDK 22.11's rte_cpu_to_be_16() of a run-time
 * value on x86 is an `asm volatile` xchgb of a register's low and high bytes (a partial-
 * register merge; a fifth of the in-place frame's samples sat right behind one);
 * __builtin_bswap16 is one rotate the compiler schedules freely */
inline uint16_t be16(uint16_t x) noexcept
{
	return to_be(x);
}

/* The payload a frame carries at this MTU (IP packet size): what the IP, UDP and
 * fragment headers leave (20 or 40, 8, frame_hdr_size bytes). */
inline uint32_t max_payload(uint16_t mtu, bool v6) noexcept
{
	const uint32_t over = (v6 ? ipv6_size : ipv4_size) + udp_size + uint32_t(frame_hdr_size);
	return mtu > over ? mtu - over : 0;
}

/* The IPv4 header checksum from a sum below 0x20000 of its words (big-endian values: a
 * header's words folded once for all, and an id): one fold leaves 0xffff at most */
inline uint16_t ipv4_checksum_from_folded(uint32_t be) noexcept
{
	be = (be & 0xffff) + (be >> 16);
	/* as rte_ipv4_cksum(): a sum of all ones stays all ones */
	return be16(be == 0xffff ? 0xffff : static_cast<uint16_t>(~be));
}

/* The IPv4 header checksum from the sum of its words (big-endian values, below 2^32: ten
 * words and an id): a first fold leaves 0x1fffe at most, ipv4_checksum_from_folded()'s
 * (the loop that folded until nothing was left above 16 bits was a branch per step). */
inline uint16_t ipv4_checksum_from(uint64_t be) noexcept
{
	return ipv4_checksum_from_folded(static_cast<uint32_t>((be & 0xffff) + (be >> 16)));
}

/* The UDP checksum field, as stored, from the sum of every word it covers (big-endian
 * values): folded (csum_fold()), complemented, in network order. */
inline uint16_t udp_checksum_field(uint64_t be) noexcept
{
	const uint16_t s = csum_fold(be);
	/* RFC 768: a zero checksum goes out as all ones (a sum of all ones, a nonzero
	 * multiple of 0xffff: a sum of nonzero words never folds to 0) */
	return be16(s == 0xffff ? 0xffff : static_cast<uint16_t>(~s));
}

/* copy_exact() of n >= 64 bytes: 64 a step (four 16-byte loads and stores), then the last
 * 64 again, overlapping what is already copied; nothing past either end touched. The
 * first two steps are not in the loop: a relayed request's grown header (~180 bytes) is
 * those and the last, no compare and branch a step (the loop was ~45 instructions). */
/* 64 bytes as two chunks: a 64-byte memcpy out of a loop became a `rep movs` */
[[gnu::always_inline]] inline void copy_64(uint8_t *d, const uint8_t *s) noexcept
{
	std::memcpy(d, s, copy_chunk);
	std::memcpy(d + copy_chunk, s + copy_chunk, copy_chunk);
}
[[gnu::always_inline]] inline void copy_exact_64(uint8_t *d, const uint8_t *s, size_t n) noexcept
{
	copy_64(d, s);
	if (n > 128) {
		copy_64(d + 64, s + 64);
		for (size_t i = 128; i + 64 < n; i += 64)
			copy_64(d + i, s + i);
	}
	copy_64(d + n - 64, s + n - 64);
}

/* A field of `n` bytes stored whole at p + at, from its value in network order. */
template <typename T> inline void put(uint8_t *p, unsigned at, T be) noexcept
{
	std::memcpy(p + at, &be, sizeof(be));
}
} // namespace detail

/**
 * The headers every frame to one address starts with (Ethernet, IPv4 or IPv6, UDP), made
 * once with the sums of their constant words: frame_in_place() to that address copies them
 * and writes the lengths, ids, fragment header and checksums, instead of writing every
 * field and summing the addresses again for each frame (a relay's peer is one address: the
 * headers' writer and the checksums' address words were a quarter of the relay's frame).
 * The same bytes as frame_in_place() with the address.
 *
 *   wire::link_template t;
 *   if (t.make(peer_addr)) ... t.frame_in_place(m, old_l7_len, kind, id, corr, l7, mtu);
 */
class link_template {
public:
	/** false (nothing made) when the two ends' address families differ. */
	bool make(const link_addr &addr) noexcept;
	bool made() const noexcept { return _len != 0; }
	/** frame_in_place() to the address it was made for. Inline (a relay's, in the relay:
	 *  out of line, its call with eight arguments, the header's sum on the stack, and the
	 *  registers it saved were ~25 instructions a request). */
	[[gnu::always_inline]] inline bool frame_in_place(rte_mbuf *m, uint16_t old_l7_len,
							  frame_kind kind, uint32_t msg_id,
							  uint64_t correlation, const l7_summed &l7,
							  uint16_t mtu) const noexcept
	{
		const place at = place_for(m, old_l7_len, l7.len, mtu);
		if (!at.body)
			return false;
		frame_at(m, at, kind, msg_id, correlation, l7);
		return true;
	}

	/** Where frame_in_place() of a header of `l7_len` bytes puts it in `m`, and the body's
	 *  place: body == nullptr when it cannot make that frame there. */
	struct place {
		uint8_t *body = nullptr; /* the body's first byte; the header ends there */
		uint32_t body_at = 0;    /* its offset from m->buf_addr */
		uint32_t body_len = 0;
		/** where the header of `l7_len` bytes starts */
		uint8_t *header(uint16_t l7_len) const noexcept { return body - l7_len; }
	};
	/** frame_in_place()'s checks for a header of `l7_len` bytes (the one the caller will
	 *  have: a relay formats its trace fields there, in the frame, not copied after). */
	[[gnu::always_inline]] inline place place_for(const rte_mbuf *m, uint16_t old_l7_len,
						      uint16_t l7_len, uint16_t mtu) const noexcept
	{
		return place_within(m, old_l7_len, l7_len, max_payload(mtu));
	}
	/** The most a message (header and body) may have to go in one frame of this template
	 *  at `mtu`; 0 when it is not made (then nothing goes). */
	uint32_t max_payload(uint16_t mtu) const noexcept
	{
		return _len ? detail::max_payload(mtu, !_v4) : 0;
	}
	/** place_for() with the MTU's max_payload() worked out once by the caller (a relay's
	 *  peer keeps it: its template and port are made for good; the template's test and
	 *  the MTU's arithmetic were ~10 instructions a relay) */
	[[gnu::always_inline]] inline place place_within(const rte_mbuf *m, uint16_t old_l7_len,
							 uint16_t l7_len,
							 uint32_t max_payload) const noexcept;
	/** frame_in_place() where place_for() said, for a header of at most the length it was
	 *  asked for: the header copied in front of the body unless it is there already
	 *  (l7.data == at.header(l7.len)). */
	[[gnu::always_inline]] inline void frame_at(rte_mbuf *m, const place &at, frame_kind kind,
						    uint32_t msg_id, uint64_t correlation,
						    const l7_summed &l7) const noexcept;

private:
	static constexpr unsigned max_len = 64; /* Ethernet + IPv6 + UDP: 62 */
	alignas(16) uint8_t _bytes[max_len] = {};
	uint8_t _len = 0;        /* 42 (IPv4) or 62 (IPv6); 0: not made */
	bool _v4 = false;
	/* The checksums' constant words negated, as frame_template's (put_ids()): each
	 * checksum then one fold of a sum that is never 0, no all-ones test. IPv4: 4 * 0xffff
	 * less the header's words but its total length and id (folded, swapped to the sum
	 * as loaded from memory: the stored length and id are subtracted as they are stored,
	 * and the fold is the field as stored). UDP: udp_neg_top less the words that depend on
	 * the address alone (big-endian values), nonzero after frame_at() takes every other
	 * word off (below 2^42 together) */
	uint32_t _ip_neg = 0;
	uint64_t _udp_neg = 0;
	static constexpr uint64_t udp_neg_top = uint64_t(0xffff) << 42;
};

inline link_template::place link_template::place_within(const rte_mbuf *m, uint16_t old_l7_len,
							uint16_t l7_len,
							uint32_t max_payload) const noexcept
{
	place at;
	/* a template not made has a max_payload() of 0: no l7_len of 16 or more fits it */
	if (l7_len < 16 || m->nb_segs != 1 || m->next || !RTE_MBUF_DIRECT(m) ||
	    rte_mbuf_refcnt_read(m) != 1 || m->data_len < old_l7_len)
		return at;
	const uint32_t body_len = m->data_len - old_l7_len;
	const uint32_t front = _len + frame_hdr_size + l7_len; /* what goes before the body */
	const uint32_t body_at = uint32_t(m->data_off) + old_l7_len;
	if (l7_len + body_len > max_payload || front > body_at)
		return at;
	at.body = static_cast<uint8_t *>(m->buf_addr) + body_at;
	at.body_at = body_at;
	at.body_len = body_len;
	return at;
}

inline void link_template::frame_at(rte_mbuf *m, const place &at, frame_kind kind,
				     uint32_t msg_id, uint64_t correlation,
				     const l7_summed &l7) const noexcept
{
	using detail::be16;
	using detail::put;
	using detail::ether_size;
	using detail::ipv4_size;
	using detail::udp_size;
	/* the UDP header's checksum field (frame.cc checks it against DPDK's header) */
	constexpr unsigned udp_cksum_at = 6;
	uint8_t *body = at.body;
	const uint32_t body_len = at.body_len;
	const uint32_t body_at = at.body_at;
	const uint32_t msg_len = l7.len + body_len;
	const uint32_t hdrs = _len + frame_hdr_size;
	const uint32_t front = hdrs + l7.len; /* what goes before the body */
	uint8_t *p = body - front;
	/* one_frame()'s bytes: the kept headers (whole chunks: the fragment header after them
	 * is written next, and front > 64), their lengths and ids, the header copied, the body
	 * where it is */
	static_assert(max_len % copy_chunk == 0 && max_len < frame_hdr_size + 42 + 16);
	/* and not into a header made in place (frame_at() of a header already there) */
	static_assert(max_len <= frame_hdr_size + 42);
	copy_chunks(p, _bytes, max_len);
	const uint16_t udp_len = static_cast<uint16_t>(udp_size + frame_hdr_size + msg_len);
	if (_v4) {
		/* the checksum summed as the words are stored: _ip_neg (3 * 0xffff at least)
		 * less two words, nonzero, so one fold gives 1..0xffff, the field as stored (a
		 * fold, its all-ones test and a swap of a big-endian sum; with the UDP one
		 * below, relay 1171.7 -> 1161.7 instructions a message, routes 131B) */
		const uint16_t total_be = be16(static_cast<uint16_t>(ipv4_size + udp_len));
		const uint16_t ip_id_be = be16(static_cast<uint16_t>(msg_id + 1));
		put(p, 16, total_be);
		put(p, 18, ip_id_be);
		put(p, 24, csum_fold(uint32_t(_ip_neg - total_be - ip_id_be)));
	} else {
		put(p, ether_size + 4, be16(udp_len));
	}
	uint8_t *udp = p + _len - udp_size;
	put(udp, 4, be16(udp_len));
	encode_frag_hdr(frag_fields{kind, msg_id, msg_len, 0, 0, l7.len, correlation}, udp + 8);
	/* >= 16 (place_for()); libc's memcpy was a call. A grown header (~180 bytes) 64 a
	 * step: copy_exact()'s 32-byte loop was ~65 instructions of it. None where the caller
	 * made it in place (a relay's trace fields: the copy was ~40 instructions) */
	if (l7.data == p + hdrs) {
	} else if (l7.len >= 64) {
		detail::copy_exact_64(p + hdrs, l7.data, l7.len);
	} else {
		copy_exact(p + hdrs, l7.data, l7.len);
	}
	/* udp_checksum_of()'s words: the address's kept, the lengths', kind's and ids' added.
	 * A value's 16-bit words sum to the value itself modulo 0xffff (2^16 is 1 there), and
	 * the fold below keeps only that: the 32-bit values added whole, the correlation with
	 * its carry wrapped around (csum_add64()), not split into words (be_words(): ~25
	 * instructions a frame). The payload's sums (words as loaded) join them as big-endian
	 * values, a byte swap being a multiplication by 256 modulo 0xffff: shifted by 8, the
	 * body's unfolded (below 2^33), one fold for all (a fold and a swap each were ~20) */
	const uint64_t body_raw = l7.with_body ? 0 : csum_raw(body, body_len);
	const uint64_t payload = (uint64_t(l7.sum) << 8) + (l7.len & 1 ? body_raw : body_raw << 8);
	/* negated (_udp_neg, the correlation as its complement ~x, which is -x modulo
	 * 0xffff): the field is the value in 1..0xffff congruent to minus the sum of the
	 * words it covers, which one fold of this sum gives (it is never 0: a nonzero value
	 * plus another with the carry wrapped around). RFC 768's zero sent as all ones
	 * without a test (the complement and the test were ~4 instructions a relay) */
	const uint64_t neg = csum_add64(_udp_neg - (2u * udp_len + static_cast<uint8_t>(kind) +
						    msg_len + l7.len + msg_id + payload),
					~correlation);
	put(udp, udp_cksum_at, be16(csum_fold(neg)));
	/* an mbuf to send: what rte_pktmbuf_reset() clears of a received one */
	m->data_off = static_cast<uint16_t>(body_at - front);
	m->data_len = static_cast<uint16_t>(front + body_len);
	m->pkt_len = front + body_len;
	m->ol_flags &= RTE_MBUF_F_EXTERNAL;
	m->packet_type = 0;
	m->tx_offload = 0;
	m->vlan_tci = 0;
	m->vlan_tci_outer = 0;
	m->port = RTE_MBUF_PORT_INVALID;
}

namespace detail {

/* copy_chunks() of at most 12 chunks (frame_template::max_len), unrolled: a jump into a run
 * of 32-byte copies, the last chunk first. The loop's add, compare and branch were a third
 * of a 504's copy (~130 bytes, five chunks: 45 instructions, 25 unrolled). */
inline void copy_chunks_384(uint8_t *d, const uint8_t *s, size_t n) noexcept
{
	const auto chunk = [d, s](unsigned i) noexcept {
		std::memcpy(d + i * copy_chunk, s + i * copy_chunk, copy_chunk);
	};
	switch (copy_chunks_len(n) / copy_chunk) {
	case 12: chunk(11); [[fallthrough]];
	case 11: chunk(10); [[fallthrough]];
	case 10: chunk(9); [[fallthrough]];
	case 9: chunk(8); [[fallthrough]];
	case 8: chunk(7); [[fallthrough]];
	case 7: chunk(6); [[fallthrough]];
	case 6: chunk(5); [[fallthrough]];
	case 5: chunk(4); [[fallthrough]];
	case 4: chunk(3); [[fallthrough]];
	case 3: chunk(2); [[fallthrough]];
	case 2: chunk(1); [[fallthrough]];
	case 1: chunk(0); [[fallthrough]];
	default: break;
	}
}

} // namespace detail

/* The ids, the port and both checksums of a frame whose bytes were copied to p: the members
 * in registers first, then the sums, then the stores (each store into the frame, bytes that
 * may alias anything, made the compiler load the next member again; the sums taken before
 * the copy were kept on the stack around it, ~6 instructions a 504).
 * Each checksum field is the value in 1..0xffff congruent to minus the sum of the other
 * words it covers (modulo 0xffff): rte_ipv4_cksum()'s and the UDP one's (RFC 768: a zero
 * goes out as all ones; a sum of all ones stays all ones). Summed as the words are stored
 * (the ids' and the port's network-order values, which the stores take anyway) onto the
 * negated constant (_ip_neg, _udp_neg), each is one csum_fold() of a nonzero sum: the
 * folds, swaps and the all-ones tests of big-endian sums were ~20 instructions a 504 */
inline void frame_template::put_ids(uint8_t *p, uint32_t msg_id, uint64_t correlation,
				    uint16_t dst_port) const noexcept
{
	const unsigned udp_at = _udp_at;
	const bool v4 = _v4;
	const uint16_t port_be = detail::be16(dst_port);
	const uint32_t id_be = detail::to_be(msg_id);
	const uint64_t corr_be = detail::to_be(correlation);
	/* ~(constant + port + id) as _udp_neg - port - id (below 2^33 added, so never 0), and
	 * the correlation's -x as its complement ~x: a one's-complement sum of a nonzero
	 * value is never 0, so csum_fold() gives 1..0xffff */
	const uint16_t udp_ck =
		csum_fold(csum_add64(_udp_neg - port_be - id_be, ~corr_be));
	if (v4) [[likely]] {
		/* the IP id is one_frame()'s, the message id + 1; 3 * 0xffff - the header's
		 * words - the id: 0xffff..0x2fffc, nonzero below 2^32 */
		const uint16_t ip_id_be = detail::be16(static_cast<uint16_t>(msg_id + 1));
		const uint16_t ip_ck = csum_fold(_ip_neg - ip_id_be);
		detail::put(p, 18, ip_id_be);
		detail::put(p, 24, ip_ck);
	}
	detail::put(p, udp_at + unsigned(offsetof(rte_udp_hdr, dst_port)), port_be);
	detail::put(p, udp_at + unsigned(offsetof(rte_udp_hdr, dgram_cksum)), udp_ck);
	uint8_t *frag = p + udp_at + sizeof(rte_udp_hdr);
	detail::put(frag, unsigned(offsetof(frame_hdr, msg_id)), id_be);
	detail::put(frag, unsigned(offsetof(frame_hdr, correlation)), corr_be);
}

/* stamp_into() inline in stamp() too: a 504 made from its template was two calls (stamp()'s
 * frame and stamp_into()'s, ~35 instructions of it) */
inline bool frame_template::write(rte_mbuf *m, uint32_t msg_id, uint64_t correlation,
				  uint16_t dst_port) const noexcept
{
	const uint16_t len = _len;
	const uint16_t room = rte_pktmbuf_tailroom(m);
	if (len > room)
		return false;
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	m->data_len = len;
	m->pkt_len = len;
	/* whole chunks, inline (_bytes is a multiple of them): libc's memcpy of ~130 bytes was
	 * 2% of the forward path's worker */
	static_assert(max_len == 12 * copy_chunk);
	if (copy_chunks_len(len) <= room) [[likely]]
		detail::copy_chunks_384(p, _bytes, len);
	else
		std::memcpy(p, _bytes, len);
	put_ids(p, msg_id, correlation, dst_port);
	return true;
}

/* The stash's next mbuf, reset with its lengths in one go (mbuf_stash::reset()), and at least
 * the first four chunks (128 bytes: an IPv4 504) copied in a straight line, where the pool's
 * mbufs have room for them (room_chunks()): the copy's jump into its run of chunks and the
 * reset's and tailroom's loads were ~15 instructions a 504. Else get() and write(). */
inline rte_mbuf *frame_template::stamp(uint32_t msg_id, uint64_t correlation,
				       uint16_t dst_port, mbuf_stash &mbufs) const noexcept
{
	constexpr unsigned least = mbuf_stash::least_chunks;
	static_assert(max_len >= least * copy_chunk, "the straight copy reads within _bytes");
	/* a pool with room_chunks() has room for `least` of them (0 below it) */
	if (_short && mbufs.room_chunks()) [[likely]] {
		rte_mbuf *m = mbufs.get_unreset();
		if (!m) [[unlikely]]
			return nullptr;
		mbufs.reset(m, _len);
		uint8_t *p = mbufs.data(m);
		/* as two copy_64()s (a loop of four chunks stayed a loop: ~12 more) */
		static_assert(least * copy_chunk == 128);
		detail::copy_64(p, _bytes);
		detail::copy_64(p + 64, _bytes + 64);
		put_ids(p, msg_id, correlation, dst_port);
		return m;
	}
	/* 0 < chunks <= room_chunks() (a template not made has none) */
	if (const unsigned chunks = _chunks; chunks - 1 < mbufs.room_chunks()) {
		rte_mbuf *m = mbufs.get_unreset();
		if (!m) [[unlikely]]
			return nullptr;
		const uint16_t len = _len;
		mbufs.reset(m, len);
		uint8_t *p = mbufs.data(m);
		detail::copy_chunks_384(p, _bytes, len);
		put_ids(p, msg_id, correlation, dst_port);
		return m;
	}
	rte_mbuf *m = mbufs.get();
	if (m && !write(m, msg_id, correlation, dst_port)) [[unlikely]] {
		rte_pktmbuf_free(m);
		return nullptr;
	}
	return m;
}

/** Frames needed for a message of msg_len bytes at this MTU and address family. */
uint32_t frames_needed(uint32_t msg_len, uint16_t mtu, bool v6) noexcept;

struct reasm_config {
	uint32_t max_message = 16u << 20;  /**< bytes of L7 header + body */
	uint32_t max_reassemblies = 1024;  /**< messages in flight */
	uint32_t max_per_source = 64;      /**< messages in flight per source IP */
	uint32_t max_mbufs = 32768;        /**< mbufs held across all reassemblies */
	uint32_t max_mbufs_per_source = 16384; /**< mbufs held per source IP */
	uint32_t max_frags = 16384;        /**< fragments per message */
	uint32_t timeout_ms = 500;         /**< from first fragment to complete */
};

/**
 * The bounds of one of `workers` reassemblers that take their fragments from a packet pool
 * of pool_mbufs that RX refills and egress also draw on (the node's): together they hold
 * at most a quarter of the pool (max_mbufs: a quarter divided by the workers), and one
 * source at most half of a worker's (max_mbufs_per_source); each at least 1. The rest as
 * reasm_config{}. A message of more frames than max_mbufs_per_source never completes.
 */
reasm_config reasm_config_for_pool(uint32_t pool_mbufs, unsigned workers) noexcept;

/** A whole message: a chain of payload mbufs, in order, totalling msg_len bytes. */
struct message {
	rte_mbuf *chain = nullptr; /**< owner; free with rte_pktmbuf_free */
	endpoint src;
	uint8_t src_mac[6];
	frame_kind kind;
	uint32_t msg_id;
	uint32_t msg_len;
	uint16_t l7_len;
	/** A message of one frame: parsed_frame::payload_sum, the sum of its msg_len bytes
	 *  (csum_folded()); 0 when not taken, and for a message of several frames. */
	uint16_t payload_sum = 0;
	uint64_t correlation;
};

/* parsed_frame's head (src to correlation) is a message's from its src on (port RX copies
 * it whole into a message of one frame) */
inline constexpr size_t msg_head_size =
	offsetof(message, correlation) + sizeof(uint64_t) - offsetof(message, src);
static_assert(offsetof(parsed_frame, src) == 0 &&
	      offsetof(parsed_frame, src_mac) == offsetof(message, src_mac) - offsetof(message, src) &&
	      offsetof(parsed_frame, kind) == offsetof(message, kind) - offsetof(message, src) &&
	      offsetof(parsed_frame, msg_id) == offsetof(message, msg_id) - offsetof(message, src) &&
	      offsetof(parsed_frame, msg_len) == offsetof(message, msg_len) - offsetof(message, src) &&
	      offsetof(parsed_frame, l7_len) == offsetof(message, l7_len) - offsetof(message, src) &&
	      offsetof(parsed_frame, payload_sum) ==
		      offsetof(message, payload_sum) - offsetof(message, src) &&
	      offsetof(parsed_frame, correlation) ==
		      offsetof(message, correlation) - offsetof(message, src) &&
	      msg_head_size == 48 && std::is_trivially_copyable_v<parsed_frame> &&
	      std::is_trivially_copyable_v<message>);

/** A request whose reassembly timed out with its first fragment held: what an answer to
 *  it needs (the sender's addresses, its correlation: `msg`, whose chain is nullptr) and
 *  the port it came in on. */
struct expired_request {
	message msg;
	uint16_t port; /**< the first fragment's mbuf port */
};

enum class reasm_result { complete, held, dropped };

/** What reassembler::refuse() did with a refused request's first fragment. */
enum class reasm_refusal : uint8_t {
	tombstone, /**< first refusal; its later fragments are dropped until all came */
	whole,     /**< first refusal; every other byte of it was here already (freed) */
	no_room,   /**< first refusal; no slot for a tombstone: later fragments reassemble
		      and time out (counted) */
	repeat,    /**< its tombstone is there: refused already, nothing more to answer */
};

struct alignas(64) reasm_stats {
	counter fragments;
	counter messages;
	counter bytes;
	counter duplicates; /**< exact repeats, ignored (and repeated refused first fragments) */
	counter tombstones; /**< refused messages whose later fragments a tombstone drops */
	counter tombstone_no_room; /**< refused messages no tombstone could be placed for */
	std::array<counter, static_cast<size_t>(wire_drop::count)> drops;
};

/**
 * Reassembly on one lcore (not thread-safe). Memory is bounded by max_reassemblies slots,
 * max_mbufs held mbufs, and per source IP max_per_source messages and max_mbufs_per_source
 * mbufs (each fragment held, of a new message or one open already, is checked against
 * both mbuf bounds); a message not completed within timeout_ms is dropped by expire().
 * Every mbuf given to input() is consumed: held, freed, or returned in a message.
 */
class reassembler {
public:
	static result<std::unique_ptr<reassembler>> create(const reasm_config &cfg,
							   const char *name, int socket_id);
	~reassembler();
	reassembler(const reassembler &) = delete;
	reassembler &operator=(const reassembler &) = delete;

	/** Feeds one parsed frame; on complete, *out holds the message. */
	reasm_result input(rte_mbuf *m, const parsed_frame &pf, uint64_t now_tsc,
			   message *out) noexcept;

	/**
	 * Whether a parsed frame is a whole message by itself in one segment (offset 0, the
	 * message's every byte, the payload within the segment): input() holds nothing for
	 * it and would only trim it and count it. Port RX's common case takes it without
	 * the call: trim_whole(), then count_whole() once per burst, is what input() does
	 * with such a frame (nothing else is done or checked there for it).
	 */
	static bool whole_frame(const rte_mbuf *m, const parsed_frame &pf) noexcept
	{
		return pf.frag_offset == 0 && pf.frag_len == pf.msg_len && m->nb_segs == 1 &&
		       uint64_t(pf.payload_off) + pf.frag_len <= m->data_len;
	}
	/**
	 * whole_frame() of a frame detail::parse_inline() accepted: it is in one segment with
	 * its payload (its checks), and frag_offset + frag_len <= msg_len (decode_frag_hdr())
	 * makes the offset 0 when the fragment is the message's every byte: one compare.
	 */
	static bool whole_inline(const parsed_frame &pf) noexcept
	{
		return pf.frag_len == pf.msg_len;
	}
	/** A whole_frame()'s mbuf cut to its payload, as input() cuts it. */
	static void trim_whole(rte_mbuf *m, const parsed_frame &pf) noexcept
	{
		m->data_off = static_cast<uint16_t>(m->data_off + pf.payload_off);
		m->data_len = static_cast<uint16_t>(pf.frag_len);
		m->pkt_len = pf.frag_len;
		m->hash.usr = 0; /* its message offset, as input() records it */
	}
	/** n whole_frame() messages of `bytes` in all, counted as input() counts them. */
	void count_whole(uint64_t n, uint64_t bytes) noexcept
	{
		_stats.fragments.add(n);
		_stats.messages.add(n);
		_stats.bytes.add(bytes);
	}

	/**
	 * A request refused at its first fragment (m, offset 0, not the whole message; freed
	 * here): its later fragments are dropped as they come (wire_drop::refused_frag), not
	 * reassembled, by a tombstone for its (source, msg_id): a slot that holds no mbufs,
	 * taken from the same bounded table and per-source count as a reassembly, and gone
	 * once the message's bytes all came or at the reassembly timeout. Fragments already
	 * held for it are freed. Exactly one call per message answers: a repeat of the first
	 * fragment while the tombstone lives returns `repeat`.
	 */
	reasm_refusal refuse(rte_mbuf *m, const parsed_frame &pf, uint64_t now_tsc) noexcept;

	/** Drops reassemblies older than the timeout; returns how many. */
	uint32_t expire(uint64_t now_tsc) noexcept { return expire(now_tsc, nullptr, 0, nullptr); }
	/**
	 * The same, and each timed-out request that holds its first fragment is written to
	 * out (at most max; *nb_out says how many) so that its sender can be answered: once
	 * out is full the sweep stops, and the rest wait for the next one. A request whose
	 * first fragment never came is not reported (a later first fragment would open a
	 * reassembly of its own: no second answer). out nullptr: none reported, none kept.
	 */
	uint32_t expire(uint64_t now_tsc, expired_request *out, uint32_t max,
			uint32_t *nb_out) noexcept;

	/** Drops everything held (shutdown, tests). */
	void flush() noexcept;

	uint32_t in_flight() const noexcept { return _nb_active; }
	uint32_t mbufs_held() const noexcept { return _mbufs_held; }
	const reasm_stats &stats() const noexcept { return _stats; }
	reasm_stats &stats() noexcept { return _stats; }

private:
	struct slot;
	reassembler() = default;
	void release(uint32_t idx, wire_drop why) noexcept;
	void free_frags(slot &s) noexcept;
	/** A new slot for key at the LRU's tail, or nil (*why says which bound); holds: whether
	 *  it is to hold a fragment (not a tombstone), so its source needs an mbuf's room. */
	uint32_t open_slot(const parsed_frame &pf, uint64_t now_tsc, bool holds,
			   wire_drop *why) noexcept;
	int32_t source_get(const uint8_t ip[16]) noexcept;
	void source_put(uint32_t pos, const uint8_t ip[16]) noexcept;
	void held_sub(slot &s, uint32_t n) noexcept;

	reasm_config _cfg{};
	uint64_t _timeout_tsc = 0;
	rte_hash *_msgs = nullptr;    /**< (src ip, port, msg_id) -> slot */
	rte_hash *_sources = nullptr; /**< src ip -> per-source use index */
	std::unique_ptr<slot[]> _slots;
	struct source_use {
		uint32_t msgs;  /* slots, tombstones included */
		uint32_t mbufs; /* fragments held */
	};
	std::unique_ptr<source_use[]> _source_use;
	uint32_t _lru_head = UINT32_MAX, _lru_tail = UINT32_MAX; /* oldest first */
	uint32_t _free_head = UINT32_MAX;
	gauge<uint32_t> _nb_active; /* in_flight(): control reads it (take_snapshot) */
	uint32_t _mbufs_held = 0;
	reasm_stats _stats;
};

} // namespace dpumesh::wire
