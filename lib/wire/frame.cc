// SPDX-License-Identifier: BSD-3-Clause
// Mesh wire frames: validation of received frames and fragmentation of outgoing messages.
#include <algorithm>
#include <bit>
#include <cstring>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_net.h>
#include <rte_prefetch.h>
#include <rte_udp.h>

#include "dpumesh/wire/frame.h"

#include "dpumesh/common/copy.h"

namespace dpumesh::wire {

/* link_template::frame_in_place()'s helpers (frame.h), the other frames' too */
using detail::be16;
using detail::copy_exact_64;
using detail::ipv4_checksum_from;
using detail::max_payload;
using detail::put;
using detail::udp_checksum_field;

namespace {

uint16_t chain_raw_cksum(const rte_mbuf *m, uint32_t off, uint32_t len);

/* One's-complement sum of an address pair (pseudo header), unfolded. */
uint32_t addr_sum(const void *src, const void *dst, size_t len)
{
	return csum_fold(csum_raw(src, len) + csum_raw(dst, len));
}

/* Whether a datagram's UDP checksum holds: the port's verdict where it gives one
 * (RTE_MBUF_F_RX_L4_CKSUM_GOOD / _NONE: data verified; _BAD), else computed here over
 * the pseudo header and the whole datagram. A zero checksum is "none" over IPv4 (RFC
 * 768) and invalid over IPv6 (RFC 8200). */
bool udp_checksum_ok(const rte_mbuf *m, uint32_t l4_off, uint32_t dgram, uint16_t cksum,
		     uint32_t phdr_addrs, bool v4)
{
	if (cksum == 0)
		return v4;
	switch (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) {
	case RTE_MBUF_F_RX_L4_CKSUM_GOOD:
	case RTE_MBUF_F_RX_L4_CKSUM_NONE:
		return true;
	case RTE_MBUF_F_RX_L4_CKSUM_BAD:
		return false;
	default:
		break;
	}
	uint32_t sum = phdr_addrs + be16(static_cast<uint16_t>(dgram)) +
		       be16(static_cast<uint16_t>(IPPROTO_UDP));
	sum += m->nb_segs == 1
		       ? csum_fold(csum_raw(rte_pktmbuf_mtod_offset(m, const char *, l4_off), dgram))
		       : chain_raw_cksum(m, l4_off, dgram);
	return __rte_raw_cksum_reduce(sum) == 0xffff;
}

/* L2 and L3 of a frame: IPv4 without options or fragmentation and UDP in the first segment
 * read in place (the mesh's own frames); anything else through rte_net_get_ptype(), which
 * gives the same lengths for those (and its verdict for the rest). */
uint32_t frame_ptype(const rte_mbuf *m, rte_net_hdr_lens *lens)
{
	constexpr uint32_t l2 = sizeof(rte_ether_hdr), l3 = sizeof(rte_ipv4_hdr);
	if (m->data_len >= l2 + l3 + sizeof(rte_udp_hdr)) {
		/* read at offsets: rte_ether_hdr asks for 2-byte alignment, and a frame relayed
		 * in place (frame_in_place()) that reaches a peer without a copy (net_ring) may
		 * start at an odd address; the rte_ipv4_hdr struct is packed */
		const auto *p = rte_pktmbuf_mtod(m, const uint8_t *);
		const auto *ip = reinterpret_cast<const rte_ipv4_hdr *>(p + l2);
		uint16_t ether_type;
		std::memcpy(&ether_type, p + offsetof(rte_ether_hdr, ether_type), 2);
		if (ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV4) &&
		    ip->version_ihl == RTE_IPV4_VHL_DEF && ip->next_proto_id == IPPROTO_UDP &&
		    (ip->fragment_offset &
		     RTE_BE16(RTE_IPV4_HDR_OFFSET_MASK | RTE_IPV4_HDR_MF_FLAG)) == 0) {
			lens->l2_len = l2;
			lens->l3_len = l3;
			return RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4 | RTE_PTYPE_L4_UDP;
		}
	}
	return rte_net_get_ptype(m, lens, RTE_PTYPE_L2_MASK | RTE_PTYPE_L3_MASK | RTE_PTYPE_L4_MASK);
}

} // namespace

wire_drop detail::parse_any(const rte_mbuf *m, uint16_t mesh_port_be, uint32_t max_message,
			    parsed_frame *out) noexcept
{
	rte_net_hdr_lens lens{};
	uint32_t ptype = frame_ptype(m, &lens);
	const bool v4 = RTE_ETH_IS_IPV4_HDR(ptype);
	if (!v4 && !RTE_ETH_IS_IPV6_HDR(ptype))
		return wire_drop::not_ip;
	uint32_t l4 = ptype & RTE_PTYPE_L4_MASK;
	if (l4 == RTE_PTYPE_L4_FRAG)
		return wire_drop::ip_fragment;
	if (l4 != RTE_PTYPE_L4_UDP)
		return wire_drop::not_udp;

	const uint32_t l3_off = lens.l2_len;
	const uint32_t l4_off = lens.l2_len + lens.l3_len;
	uint32_t ip_payload; /* bytes after the whole L3 header, per the IP header */
	uint32_t phdr;       /* the pseudo header's addresses, summed */
	/* written in place: a frame on the stack copied out at the end stalled on
	 * store forwarding (parse_frame's hottest lines in the forward profile) */
	parsed_frame &f = *out;
	if (v4) {
		rte_ipv4_hdr buf;
		auto *ip = static_cast<const rte_ipv4_hdr *>(
			rte_pktmbuf_read(m, l3_off, sizeof(buf), &buf));
		if (!ip)
			return wire_drop::bad_ip;
		/* the port's verdict on the IPv4 header checksum where it gives one (no software
		 * check: the UDP checksum covers the addresses, protocol and length used here) */
		if ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_BAD)
			return wire_drop::bad_checksum;
		uint32_t total = be16(ip->total_length);
		if (total < lens.l3_len || l3_off + total > m->pkt_len)
			return wire_drop::bad_ip;
		ip_payload = total - lens.l3_len;
		phdr = addr_sum(&ip->src_addr, &ip->dst_addr, 4);
		f.src.set_v4(ip->src_addr, 0);
		f.dst.set_v4(ip->dst_addr, 0);
	} else {
		rte_ipv6_hdr buf;
		auto *ip = static_cast<const rte_ipv6_hdr *>(
			rte_pktmbuf_read(m, l3_off, sizeof(buf), &buf));
		if (!ip)
			return wire_drop::bad_ip;
		uint32_t plen = be16(ip->payload_len);
		uint32_t ext = lens.l3_len - static_cast<uint32_t>(sizeof(rte_ipv6_hdr));
		if (plen < ext || l3_off + sizeof(rte_ipv6_hdr) + plen > m->pkt_len)
			return wire_drop::bad_ip;
		ip_payload = plen - ext;
		phdr = addr_sum(ip->src_addr, ip->dst_addr, 16);
		std::memcpy(f.src.ip, ip->src_addr, 16);
		std::memcpy(f.dst.ip, ip->dst_addr, 16);
	}
	rte_udp_hdr ubuf;
	auto *udp = static_cast<const rte_udp_hdr *>(rte_pktmbuf_read(m, l4_off, sizeof(ubuf), &ubuf));
	if (!udp)
		return wire_drop::bad_udp;
	if (mesh_port_be != 0 && udp->dst_port != mesh_port_be)
		return wire_drop::other_port;
	uint32_t dgram = be16(udp->dgram_len);
	if (dgram < sizeof(rte_udp_hdr) || dgram != ip_payload)
		return wire_drop::bad_udp;
	if (!udp_checksum_ok(m, l4_off, dgram, udp->dgram_cksum, phdr, v4))
		return wire_drop::bad_checksum;
	f.src.port = be16(udp->src_port);
	f.dst.port = be16(udp->dst_port);
	uint32_t payload = dgram - static_cast<uint32_t>(sizeof(rte_udp_hdr));
	if (payload < frame_hdr_size)
		return wire_drop::truncated;

	frame_hdr hbuf;
	auto *h = static_cast<const frame_hdr *>(rte_pktmbuf_read(
		m, l4_off + static_cast<uint32_t>(sizeof(rte_udp_hdr)), sizeof(hbuf), &hbuf));
	if (!h)
		return wire_drop::truncated;
	const wire_drop d = detail::take_frag_hdr(reinterpret_cast<const uint8_t *>(h),
					  payload - static_cast<uint32_t>(frame_hdr_size), max_message, f);
	if (d != wire_drop::none)
		return d;
	f.payload_off = l4_off + static_cast<uint32_t>(sizeof(rte_udp_hdr) + frame_hdr_size);
	f.payload_sum = 0; /* not taken here */
	/* through rte_pktmbuf_read() as every header here: a chain's first segment may end
	 * before it (read in place, the address came from past the segment's data); always
	 * there, the IP header that follows it having been read */
	uint8_t mac_buf[6];
	const auto *mac = static_cast<const uint8_t *>(
		rte_pktmbuf_read(m, offsetof(rte_ether_hdr, src_addr), sizeof(mac_buf), mac_buf));
	if (!mac) [[unlikely]]
		return wire_drop::bad_ip;
	std::memcpy(f.src_mac, mac, sizeof(f.src_mac));
	return wire_drop::none;
}

/* parse_frame()'s offsets and values (frame.h, without DPDK's protocol headers) */
static_assert(sizeof(rte_ether_hdr) == 14 && offsetof(rte_ether_hdr, ether_type) == 12 &&
	      offsetof(rte_ether_hdr, src_addr) == 6 && sizeof(rte_ipv4_hdr) == 20 &&
	      offsetof(rte_ipv4_hdr, version_ihl) == 0 && offsetof(rte_ipv4_hdr, total_length) == 2 &&
	      offsetof(rte_ipv4_hdr, fragment_offset) == 6 &&
	      offsetof(rte_ipv4_hdr, next_proto_id) == 9 && offsetof(rte_ipv4_hdr, src_addr) == 12 &&
	      offsetof(rte_ipv4_hdr, dst_addr) == 16 && sizeof(rte_udp_hdr) == 8 &&
	      offsetof(rte_udp_hdr, src_port) == 0 && offsetof(rte_udp_hdr, dst_port) == 2 &&
	      offsetof(rte_udp_hdr, dgram_len) == 4 && offsetof(rte_udp_hdr, dgram_cksum) == 6);
static_assert(RTE_ETHER_TYPE_IPV4 == 0x0800 && RTE_IPV4_VHL_DEF == 0x45 && IPPROTO_UDP == 17 &&
	      (RTE_IPV4_HDR_OFFSET_MASK | RTE_IPV4_HDR_MF_FLAG) == 0x3fff);

namespace {

uint32_t l3_size(bool v6) { return v6 ? sizeof(rte_ipv6_hdr) : sizeof(rte_ipv4_hdr); }

/* The 16-bit big-endian words of a value, summed. */
inline uint64_t be_words(uint64_t x)
{
	return (x >> 48) + ((x >> 32) & 0xffff) + ((x >> 16) & 0xffff) + (x & 0xffff);
}

inline uint32_t load_be32(const uint8_t *p)
{
	uint32_t v;
	std::memcpy(&v, p, 4);
	return rte_be_to_cpu_32(v);
}

/* The sum of the IPv4 header's words that write_headers() writes but the IP id's. */
uint64_t ipv4_words_but_id(const link_addr &a, uint32_t total_len)
{
	return (uint32_t(RTE_IPV4_VHL_DEF) << 8) + total_len + RTE_IPV4_HDR_DF_FLAG +
	       ((64u << 8) | IPPROTO_UDP) + be_words(load_be32(a.src.ip + 12)) +
	       be_words(load_be32(a.dst.ip + 12));
}

/* The IPv4 header checksum of what write_headers() writes, from the values (reading the
 * header back after its piecewise stores stalled on store forwarding). */
uint16_t ipv4_checksum_of(const link_addr &a, uint32_t total_len, uint16_t ip_id)
{
	return ipv4_checksum_from(ipv4_words_but_id(a, total_len) + ip_id);
}

/** Writes Ethernet/IP/UDP/fragment headers for `payload` bytes into the first segment
 *  (the UDP checksum 0: the caller's). */
void write_headers(uint8_t *p, const link_addr &a, frame_kind kind, uint32_t msg_id,
		   uint32_t msg_len, uint32_t offset, uint16_t l7_len, uint64_t correlation,
		   uint32_t payload, uint16_t ip_id)
{
	const uint16_t udp_len = static_cast<uint16_t>(sizeof(rte_udp_hdr) + frame_hdr_size + payload);
	if (a.src.is_v4()) {
		/* each field one store of its own width, adjacent constants together (through
		 * the rte_* structs: a memset and byte stores) */
		const uint16_t total = static_cast<uint16_t>(sizeof(rte_ipv4_hdr) + udp_len);
		std::memcpy(p, a.dst_mac, 6);
		std::memcpy(p + 6, a.src_mac, 6);
		put(p, 12, RTE_BE16(RTE_ETHER_TYPE_IPV4));
		put(p, 14, RTE_BE16(uint16_t(RTE_IPV4_VHL_DEF) << 8)); /* type of service 0 */
		put(p, 16, be16(total));
		put(p, 18, be16(ip_id));
		/* DF, time to live 64, UDP */
		put(p, 20, RTE_BE32(uint32_t(RTE_IPV4_HDR_DF_FLAG) << 16 | 64u << 8 | IPPROTO_UDP));
		put(p, 24, ipv4_checksum_of(a, total, ip_id));
		std::memcpy(p + 26, a.src.ip + 12, 4);
		std::memcpy(p + 30, a.dst.ip + 12, 4);
		put(p, 34, be16(a.src.port));
		put(p, 36, be16(a.dst.port));
		put(p, 38, be16(udp_len));
		put(p, 40, uint16_t(0)); /* the UDP checksum: the caller's */
		encode_frag_hdr(frag_fields{kind, msg_id, msg_len, offset, 0, l7_len, correlation},
				p + 42);
		return;
	}
	static_assert(sizeof(rte_ether_hdr) == 14 && sizeof(rte_ipv6_hdr) == 40 &&
		      offsetof(rte_ipv6_hdr, payload_len) == 4 && offsetof(rte_ipv6_hdr, proto) == 6 &&
		      offsetof(rte_ipv6_hdr, hop_limits) == 7 && offsetof(rte_ipv6_hdr, src_addr) == 8 &&
		      offsetof(rte_ipv6_hdr, dst_addr) == 24 && sizeof(rte_udp_hdr) == 8);
	/* the same stores at their offsets, never through the rte_* structs: a relay in place
	 * (frame_in_place()) starts the frame wherever the body leaves room, an odd address when
	 * the grown L7 header's length is odd */
	std::memcpy(p, a.dst_mac, 6);
	std::memcpy(p + 6, a.src_mac, 6);
	put(p, 12, RTE_BE16(RTE_ETHER_TYPE_IPV6));
	put(p, 14, RTE_BE32(6u << 28)); /* version 6, traffic class 0, flow label 0 */
	put(p, 18, be16(udp_len));
	put(p, 20, RTE_BE16(uint16_t(IPPROTO_UDP) << 8 | 64u)); /* next header UDP, hop limit 64 */
	std::memcpy(p + 22, a.src.ip, 16);
	std::memcpy(p + 38, a.dst.ip, 16);
	put(p, 54, be16(a.src.port));
	put(p, 56, be16(a.dst.port));
	put(p, 58, be16(udp_len));
	put(p, 60, uint16_t(0)); /* the UDP checksum: the caller's */
	encode_frag_hdr(frag_fields{kind, msg_id, msg_len, offset, 0, l7_len, correlation}, p + 62);
}

/**
 * One's-complement sum of len bytes from off across a chain. DPDK 22.11's
 * rte_raw_cksum_mbuf() truncates a segment's unfolded 32-bit sum to 16 bits before the byte
 * swap an odd offset needs, so a chain whose first segment holds an odd number of UDP bytes
 * (an L7 header of odd length with the body attached zero-copy) got a wrong checksum and
 * receivers dropped the frame (UdpInCsumErrors). Here each segment's sum is folded first.
 */
uint16_t chain_raw_cksum(const rte_mbuf *m, uint32_t off, uint32_t len)
{
	uint64_t sum = 0;
	uint32_t done = 0;
	for (const rte_mbuf *seg = m; seg && len; seg = seg->next) {
		uint32_t sl = seg->data_len;
		if (off >= sl) {
			off -= sl;
			continue;
		}
		uint32_t n = std::min(sl - off, len);
		uint32_t t = csum_fold(csum_raw(rte_pktmbuf_mtod_offset(seg, const char *, off), n));
		if (done & 1)
			t = __builtin_bswap16(static_cast<uint16_t>(t));
		sum += t;
		done += n;
		len -= n;
		off = 0;
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return static_cast<uint16_t>(sum);
}

/** UDP checksum in software over the whole (possibly chained) frame. */
void finish_checksum(rte_mbuf *m, bool v6)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t l3 = sizeof(rte_ether_hdr);
	uint32_t l4 = l3 + l3_size(v6);
	auto *udp = reinterpret_cast<rte_udp_hdr *>(p + l4);
	uint32_t len = be16(udp->dgram_len);
	uint32_t sum = chain_raw_cksum(m, l4, len);
	sum += v6 ? rte_ipv6_phdr_cksum(reinterpret_cast<rte_ipv6_hdr *>(p + l3), 0)
		  : rte_ipv4_phdr_cksum(reinterpret_cast<rte_ipv4_hdr *>(p + l3), 0);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	uint16_t ck = static_cast<uint16_t>(~sum);
	udp->dgram_cksum = ck == 0 ? 0xffff : ck; /* RFC 768: a zero sum goes out as all ones */
}

/* The one's-complement sum of n bytes, folded to 16 bits (as loaded from memory). */
inline uint16_t raw_sum(const void *p, uint32_t n)
{
	return csum_folded(p, n);
}

/* The sum (big-endian word values) of what the UDP checksum covers of a frame that
 * write_headers() makes, but its message id, its correlation and its payload: the pseudo
 * header, the UDP header (checksum 0) and the fragment header's other fields. */
uint64_t udp_words_but_ids(const link_addr &a, frame_kind kind, uint32_t msg_len, uint32_t offset,
			   uint16_t l7_len, uint32_t udp_len)
{
	uint64_t be = 0;
	if (a.src.is_v4()) {
		be += be_words(load_be32(a.src.ip + 12)) + be_words(load_be32(a.dst.ip + 12));
	} else {
		for (unsigned i = 0; i < 16; i += 4)
			be += be_words(load_be32(a.src.ip + i)) + be_words(load_be32(a.dst.ip + i));
	}
	be += IPPROTO_UDP + udp_len;                     /* the rest of the pseudo header */
	be += a.src.port + a.dst.port + udp_len;          /* the UDP header, checksum 0 */
	be += frame_magic + (uint32_t(frame_version) << 8) + static_cast<uint8_t>(kind) +
	      be_words(msg_len) + be_words(offset) + l7_len; /* (flags, reserved 0) */
	return be;
}

/* The UDP checksum from udp_words_but_ids() plus the ids' words, and the payload's sums:
 * n1 bytes that sum to `p1_sum` (raw_sum()), then a body whose bytes sum to `body_sum`
 * (raw_sum() of them as if they started at an even offset; 0 for none). */
uint16_t udp_checksum_from(uint64_t be, uint16_t p1_sum, uint32_t n1, uint16_t body_sum)
{
	/* the payload's sums (of words as loaded from memory) as big-endian values: a byte
	 * swap is a multiplication by 256 modulo 0xffff, so a sum's swap is the sum of the
	 * swapped words (the body, at an odd offset after n1 bytes, is paired the other way) */
	return udp_checksum_field(
		csum_add64(be, uint32_t(be16(p1_sum)) + (n1 & 1 ? body_sum : be16(body_sum))));
}

/**
 * The UDP checksum of a frame write_headers() just made, whose payload was copied from
 * n1 bytes that sum to `p1_sum` then a body that sums to `body_sum`
 * (udp_checksum_from()): the header fields summed by value and the payload from its
 * sources, not read back from the frame (its bytes were just stored piecewise, and the
 * wide loads of a checksum over them stalled on store forwarding: 8% of the forwarding
 * path's samples).
 */
uint16_t udp_checksum_of(const link_addr &a, frame_kind kind, uint32_t msg_id, uint32_t msg_len,
			 uint32_t offset, uint16_t l7_len, uint64_t correlation, uint32_t udp_len,
			 uint16_t p1_sum, uint32_t n1, uint16_t body_sum)
{
	return udp_checksum_from(udp_words_but_ids(a, kind, msg_len, offset, l7_len, udp_len) +
					 be_words(msg_id) + be_words(correlation),
				 p1_sum, n1, body_sum);
}

/**
 * `len` body bytes from (cur, cur_off) along a received chain into frame `m`: copied to
 * `dst` (their raw_sum() added up into *sum, from the source as it is copied, for the UDP
 * checksum), or attached as indirect mbufs on the segments. Advances the cursor.
 */
bool chain_body(rte_mbuf *m, uint8_t *dst, const rte_mbuf *&cur, uint32_t &cur_off,
		uint32_t len, bool attach, mbuf_stash &pool, uint16_t *sum)
{
	uint32_t acc = 0, done = 0;
	while (len) {
		while (cur && cur_off >= cur->data_len) {
			cur_off -= cur->data_len;
			cur = cur->next;
		}
		if (!cur)
			return false; /* the chain is shorter than the body it claims */
		const uint32_t piece = std::min<uint32_t>(len, cur->data_len - cur_off);
		if (!attach) {
			const uint8_t *src = rte_pktmbuf_mtod_offset(cur, const uint8_t *, cur_off);
			std::memcpy(dst, src, piece);
			const uint16_t t = raw_sum(src, piece);
			acc += done & 1 ? __builtin_bswap16(t) : t; /* a piece at an odd offset */
			done += piece;
			dst += piece;
		} else {
			rte_mbuf *seg = pool.get();
			if (!seg)
				return false;
			rte_pktmbuf_attach(seg, const_cast<rte_mbuf *>(cur));
			seg->data_off = static_cast<uint16_t>(cur->data_off + cur_off);
			seg->data_len = static_cast<uint16_t>(piece);
			seg->pkt_len = piece;
			if (rte_pktmbuf_chain(m, seg) != 0) {
				rte_pktmbuf_free(seg);
				return false;
			}
		}
		cur_off += piece;
		len -= piece;
	}
	*sum = static_cast<uint16_t>(__rte_raw_cksum_reduce(acc));
	return true;
}

} // namespace

mbuf_stash::mbuf_stash(rte_mempool *pool) noexcept
	: _pool(pool),
	  _data_off(static_cast<uint32_t>(sizeof(rte_mbuf)) +
		    (pool ? rte_pktmbuf_priv_size(pool) : 0) + RTE_PKTMBUF_HEADROOM)
{
	/* what rte_pktmbuf_reset() makes of the pool's mbufs' headroom and tailroom (each has
	 * the pool's data room: rte_pktmbuf_init(), and rte_pktmbuf_detach() restores it) */
	const uint16_t buf_len = pool ? rte_pktmbuf_data_room_size(pool) : 0;
	const uint16_t headroom = std::min<uint16_t>(RTE_PKTMBUF_HEADROOM, buf_len);
	const struct {
		uint16_t data_off, refcnt, nb_segs, port;
	} rearm = {headroom, 1, 1, RTE_MBUF_PORT_INVALID};
	static_assert(sizeof(rearm) == sizeof(_rearm[0]));
	static_assert(offsetof(rte_mbuf, refcnt) == offsetof(rte_mbuf, data_off) + 2 &&
		      offsetof(rte_mbuf, nb_segs) == offsetof(rte_mbuf, data_off) + 4 &&
		      offsetof(rte_mbuf, port) == offsetof(rte_mbuf, data_off) + 6,
		      "rte_mbuf's rearm_data: data_off, refcnt, nb_segs, port");
	std::memcpy(&_rearm[0], &rearm, sizeof(_rearm[0]));
	/* rte_pktmbuf_reset()'s ol_flags &= RTE_MBUF_F_EXTERNAL of a free mbuf of the pool */
	const bool pinned = pool && (rte_pktmbuf_priv_flags(pool) & RTE_PKTMBUF_POOL_F_PINNED_EXT_BUF);
	_rearm[1] = pinned ? RTE_MBUF_F_EXTERNAL : 0;
	_headroom = headroom;
	const uint32_t room = buf_len - headroom;
	_room_chunks = room >= least_chunks * copy_chunk ? room / copy_chunk : 0;
}

void mbuf_stash::end() noexcept
{
	if (_i < _n)
		rte_mempool_put_bulk(_pool, reinterpret_cast<void *const *>(_m + _i), _n - _i);
	_i = _n = 0;
	_bulk = false;
}

/* get() outside a burst, or of a burst whose stash is empty: out of line, so that the
 * common get() (the next of the stash) saves and restores no registers for the pool's
 * calls inlined here (~20 instructions a frame) */
[[gnu::noinline]] rte_mbuf *mbuf_stash::get_slow() noexcept
{
	if (!_bulk)
		return rte_pktmbuf_alloc(_pool);
	_i = 0;
	_n = rte_mempool_get_bulk(_pool, reinterpret_cast<void **>(_m), size) == 0 ? size : 0;
	if (_n == 0) /* fewer than a stash left: one at a time */
		return rte_pktmbuf_alloc(_pool);
	prefetch(0);
	prefetch(1);
	rte_mbuf *m = _m[_i++];
	rte_pktmbuf_reset(m);
	return m;
}

namespace {

/**
 * One frame: a message within one frame's payload whose body, if any, is copied (the most
 * common case by far: a request or answer of a few hundred bytes, a 504). fragment()'s
 * loop for its first frame, without the loop, the division that counts frames, or
 * rte_pktmbuf_append(): the same bytes. `l7_raw` is raw_sum() of the L7 header.
 */
uint16_t one_frame(const link_addr &addr, bool v6, frame_kind kind, uint32_t msg_id,
		   uint64_t correlation, const uint8_t *l7, uint16_t l7_len, uint16_t l7_raw,
		   const body_ref &body, uint32_t msg_len, mbuf_stash &mbufs, rte_mbuf **out) noexcept
{
	const uint32_t hdrs = sizeof(rte_ether_hdr) + l3_size(v6) + sizeof(rte_udp_hdr) +
			      frame_hdr_size;
	const uint32_t udp_len = static_cast<uint32_t>(sizeof(rte_udp_hdr) + frame_hdr_size) + msg_len;
	rte_mbuf *m = mbufs.get();
	if (!m)
		return 0;
	if (hdrs + msg_len > rte_pktmbuf_tailroom(m)) {
		rte_pktmbuf_free(m);
		return 0;
	}
	/* a reset mbuf is empty: this is rte_pktmbuf_append() */
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	m->data_len = static_cast<uint16_t>(hdrs + msg_len);
	m->pkt_len = hdrs + msg_len;
	write_headers(p, addr, kind, msg_id, msg_len, 0, l7_len, correlation, msg_len,
		      static_cast<uint16_t>(msg_id + 1));
	std::memcpy(p + hdrs, l7, l7_len);
	const uint32_t body_len = msg_len - l7_len;
	uint16_t body_sum = 0;
	if (body_len && body.seg) {
		const rte_mbuf *cur = body.seg;
		uint32_t cur_off = body.seg_off;
		if (!chain_body(m, p + hdrs + l7_len, cur, cur_off, body_len, false, mbufs,
				&body_sum)) {
			rte_pktmbuf_free(m);
			return 0;
		}
	} else if (body_len) {
		std::memcpy(p + hdrs + l7_len, body.data, body_len);
		body_sum = raw_sum(body.data, body_len);
	}
	const uint16_t ck = udp_checksum_of(addr, kind, msg_id, msg_len, 0, l7_len, correlation,
					    udp_len, l7_raw, l7_len, body_sum);
	std::memcpy(p + hdrs - frame_hdr_size - sizeof(rte_udp_hdr) +
			    offsetof(rte_udp_hdr, dgram_cksum),
		    &ck, sizeof(ck));
	out[0] = m;
	return 1;
}

} // namespace

bool frame_template::make(const link_addr &addr, frame_kind kind, const l7_summed &l7,
			  uint16_t mtu) noexcept
{
	clear();
	const bool v6 = !addr.src.is_v4();
	const uint32_t hdrs = sizeof(rte_ether_hdr) + l3_size(v6) + sizeof(rte_udp_hdr) +
			      frame_hdr_size;
	if (addr.dst.is_v4() == v6 || l7.len < 16 || l7.len > max_payload(mtu, v6) ||
	    hdrs + l7.len > max_len)
		return false;
	/* as one_frame() writes them, with ids 0: stamp() writes those */
	write_headers(_bytes, addr, kind, 0, l7.len, 0, l7.len, 0, l7.len, 0);
	std::memcpy(_bytes + hdrs, l7.data, l7.len);
	const uint32_t udp_len = static_cast<uint32_t>(sizeof(rte_udp_hdr) + frame_hdr_size) + l7.len;
	_v4 = !v6;
	_udp_at = static_cast<uint16_t>(sizeof(rte_ether_hdr) + l3_size(v6));
	/* folded here, swapped to the words' sum as loaded from memory (1..0xffff either
	 * way: a swap keeps 0xffff) and negated (put_ids()): stamp() adds the id and folds
	 * once (the same checksum: the same sum modulo 0xffff, neither 0) */
	_ip_neg = _v4 ? 3u * 0xffff - be16(csum_fold(ipv4_words_but_id(
					      addr, static_cast<uint32_t>(sizeof(rte_ipv4_hdr)) + udp_len)))
		      : 0;
	/* the destination port is stamp()'s: a requester's answers to its other ports stamp
	 * the same frame. The header's sum joins the words here, as a big-endian value (see
	 * udp_checksum_from()): it is all of the payload, at an even offset */
	_udp_neg = ~uint64_t(be16(csum_fold(udp_words_but_ids(addr, kind, l7.len, 0, l7.len, udp_len) -
					    addr.dst.port + be16(l7.sum))));
	_addr = addr;
	_l7 = l7.data;
	_l7_len = l7.len;
	_l7_sum = l7.sum;
	_len = static_cast<uint16_t>(hdrs + l7.len);
	_chunks = static_cast<uint8_t>(copy_chunks_len(_len) / copy_chunk);
	_short = _chunks >= 1 && _chunks <= mbuf_stash::least_chunks;
	return true;
}

bool frame_template::stamp_into(rte_mbuf *m, uint32_t msg_id, uint64_t correlation,
				uint16_t dst_port) const noexcept
{
	return write(m, msg_id, correlation, dst_port);
}

bool frame_in_place(rte_mbuf *m, uint16_t old_l7_len, const link_addr &addr, frame_kind kind,
		    uint32_t msg_id, uint64_t correlation, const l7_summed &l7,
		    uint16_t mtu) noexcept
{
	link_template t;
	return t.make(addr) && t.frame_in_place(m, old_l7_len, kind, msg_id, correlation, l7, mtu);
}

bool link_template::make(const link_addr &addr) noexcept
{
	_len = 0;
	const bool v6 = !addr.src.is_v4();
	if (addr.dst.is_v4() == v6)
		return false;
	/* write_headers()' bytes with every length, id and checksum 0 (the fragment header
	 * after them is frame_in_place()'s); the sums of what stays */
	uint8_t frame[max_len + frame_hdr_size];
	write_headers(frame, addr, frame_kind::request, 0, 0, 0, 0, 0, 0, 0);
	_v4 = !v6;
	_len = static_cast<uint8_t>(sizeof(rte_ether_hdr) + l3_size(v6) + sizeof(rte_udp_hdr));
	std::memcpy(_bytes, frame, _len);
	if (_v4) { /* the IPv4 length (at 16) and checksum (at 24) are stamped; the id is 0 */
		std::memset(_bytes + 16, 0, 2);
		std::memset(_bytes + 24, 0, 2);
	} else {   /* the IPv6 payload length */
		std::memset(_bytes + sizeof(rte_ether_hdr) + 4, 0, 2);
	}
	std::memset(_bytes + _len - sizeof(rte_udp_hdr) + 4, 0, 2); /* the UDP length */
	/* frame_at() subtracts the stored length and id, and the other UDP words, from
	 * these (see _ip_neg, _udp_neg) */
	_ip_neg = _v4 ? 4u * 0xffff - be16(csum_fold(ipv4_words_but_id(addr, 0))) : 0;
	_udp_neg = udp_neg_top - udp_words_but_ids(addr, frame_kind{}, 0, 0, 0, 0);
	return true;
}

uint32_t frames_needed(uint32_t msg_len, uint16_t mtu, bool v6) noexcept
{
	uint32_t per = max_payload(mtu, v6);
	if (per == 0)
		return UINT32_MAX;
	return msg_len == 0 ? 1 : (msg_len + per - 1) / per;
}

uint16_t fragment(const link_addr &addr, frame_kind kind, uint32_t msg_id, uint64_t correlation,
		  const uint8_t *l7, uint16_t l7_len, const body_ref &body, uint16_t mtu,
		  rte_mempool *hdr_pool, rte_mbuf **out, uint16_t max_out) noexcept
{
	mbuf_stash one_by_one(hdr_pool);
	return fragment(addr, kind, msg_id, correlation, l7, l7_len, body, mtu, one_by_one, out,
			max_out);
}

namespace {

/* fragment(), with the L7 header's raw_sum() given (l7_raw; nullptr: taken here when the
 * one-frame path needs it): both public forms, one set of checks */
uint16_t fragment_with(const link_addr &addr, frame_kind kind, uint32_t msg_id,
		       uint64_t correlation, const uint8_t *l7, uint16_t l7_len,
		       const uint16_t *l7_raw, const body_ref &body, uint16_t mtu,
		       mbuf_stash &mbufs, rte_mbuf **out, uint16_t max_out) noexcept
{
	const bool v6 = !addr.src.is_v4();
	if (addr.dst.is_v4() == v6 || l7_len < 16)
		return 0;
	const uint64_t msg_len64 = uint64_t(l7_len) + body.len;
	if (msg_len64 > UINT32_MAX)
		return 0;
	const uint32_t msg_len = static_cast<uint32_t>(msg_len64);
	const uint32_t per = max_payload(mtu, v6);
	if (per == 0 || max_out == 0)
		return 0;
	const bool zero_copy = body.shinfo != nullptr || (body.seg && body.attach);
	if (msg_len <= per && !zero_copy)
		return one_frame(addr, v6, kind, msg_id, correlation, l7, l7_len,
				 l7_raw ? *l7_raw : raw_sum(l7, l7_len), body, msg_len, mbufs, out);
	if (frames_needed(msg_len, mtu, v6) > max_out)
		return 0;
	const uint32_t hdrs = sizeof(rte_ether_hdr) + l3_size(v6) + sizeof(rte_udp_hdr) +
			      frame_hdr_size;
	/* a body in received mbufs: where the next frame's part starts */
	const rte_mbuf *cur = body.seg;
	uint32_t cur_off = body.seg_off;

	uint16_t n = 0;
	uint32_t off = 0;
	while (off < msg_len) {
		uint32_t chunk = std::min(per, msg_len - off);
		rte_mbuf *m = mbufs.get();
		if (!m)
			goto fail;
		out[n++] = m;
		/* the part of this chunk inside the L7 header is always copied */
		uint32_t l7_part = off < l7_len ? std::min<uint32_t>(chunk, l7_len - off) : 0;
		uint32_t body_off = off + l7_part - l7_len; /* valid when chunk > l7_part */
		uint32_t body_part = chunk - l7_part;
		uint32_t copy_len = hdrs + l7_part + (zero_copy ? 0 : body_part);
		if (copy_len > rte_pktmbuf_tailroom(m))
			goto fail;
		uint8_t *p = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, static_cast<uint16_t>(copy_len)));
		write_headers(p, addr, kind, msg_id, msg_len, off, l7_len, correlation, chunk,
			      static_cast<uint16_t>(msg_id + n));
		if (l7_part)
			std::memcpy(p + hdrs, l7 + off, l7_part);
		uint16_t body_sum = 0; /* of a body copied from received segments */
		if (body_part && body.seg) {
			if (!chain_body(m, p + hdrs + l7_part, cur, cur_off, body_part, body.attach,
					mbufs, &body_sum))
				goto fail;
		} else if (body_part && !zero_copy) {
			std::memcpy(p + hdrs + l7_part, body.data + body_off, body_part);
		} else if (body_part) {
			rte_mbuf *seg = mbufs.get();
			if (!seg)
				goto fail;
			rte_mbuf_ext_refcnt_update(body.shinfo, 1);
			rte_pktmbuf_attach_extbuf(seg, const_cast<uint8_t *>(body.data) + body_off,
						  body.iova == RTE_BAD_IOVA ? RTE_BAD_IOVA
									    : body.iova + body_off,
						  static_cast<uint16_t>(body_part), body.shinfo);
			seg->data_len = static_cast<uint16_t>(body_part);
			seg->pkt_len = body_part;
			if (rte_pktmbuf_chain(m, seg) != 0) {
				rte_pktmbuf_free(seg);
				goto fail;
			}
		}
		if (body_part == 0 || !zero_copy) {
			/* the whole datagram in this segment, copied from l7 and the body (its
			 * sum from body.data here, or taken while copying from received mbufs) */
			if (body_part && !body.seg)
				body_sum = raw_sum(body.data + body_off, body_part);
			auto *udp = reinterpret_cast<rte_udp_hdr *>(p + hdrs - frame_hdr_size -
								    sizeof(rte_udp_hdr));
			udp->dgram_cksum = udp_checksum_of(
				addr, kind, msg_id, msg_len, off, l7_len, correlation,
				static_cast<uint32_t>(sizeof(rte_udp_hdr) + frame_hdr_size + chunk),
				raw_sum(l7 + off, l7_part), l7_part, body_sum);
		} else {
			finish_checksum(m, v6);
		}
		off += chunk;
	}
	return n;
fail:
	for (uint16_t i = 0; i < n; i++)
		rte_pktmbuf_free(out[i]);
	return 0;
}

} // namespace

uint16_t fragment(const link_addr &addr, frame_kind kind, uint32_t msg_id, uint64_t correlation,
		  const uint8_t *l7, uint16_t l7_len, const body_ref &body, uint16_t mtu,
		  mbuf_stash &mbufs, rte_mbuf **out, uint16_t max_out) noexcept
{
	return fragment_with(addr, kind, msg_id, correlation, l7, l7_len, nullptr, body, mtu,
			     mbufs, out, max_out);
}

uint16_t fragment(const link_addr &addr, frame_kind kind, uint32_t msg_id, uint64_t correlation,
		  const l7_summed &l7, uint16_t mtu, mbuf_stash &mbufs, rte_mbuf **out,
		  uint16_t max_out) noexcept
{
	return fragment_with(addr, kind, msg_id, correlation, l7.data, l7.len, &l7.sum, body_ref{},
			     mtu, mbufs, out, max_out);
}

uint16_t fragment(const link_addr &addr, frame_kind kind, uint32_t msg_id, uint64_t correlation,
		  const l7_summed &l7, const body_ref &body, uint16_t mtu, mbuf_stash &mbufs,
		  rte_mbuf **out, uint16_t max_out) noexcept
{
	return fragment_with(addr, kind, msg_id, correlation, l7.data, l7.len, &l7.sum, body, mtu,
			     mbufs, out, max_out);
}

} // namespace dpumesh::wire
