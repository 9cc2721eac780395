// SPDX-License-Identifier: BSD-3-Clause
// The mesh fragment header (docs/wire.md §2) without DPDK: constants, drop reasons, encode/decode.
//
// Both sides of the wire use it: the Arm pipeline (dpumesh/wire/frame.h, on mbufs) and socket
// programs such as the ingress gateway (dpumesh/meshsock/meshsock.h, on plain UDP datagrams). The
// checks live here once, so a datagram a socket program accepts is one the node accepts.
//
//   wire::frag_fields f;
//   if (wire::decode_frag_hdr(dgram, n - wire::frame_hdr_size, max_message, &f) ==
//       wire::wire_drop::none)
//     reasm.input(src, f, dgram + wire::frame_hdr_size, now);
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dpumesh::wire {

inline constexpr uint16_t frame_magic = 0x4457; /* "DW" */
inline constexpr uint8_t frame_version = 1;
inline constexpr size_t frame_hdr_size = 32;

enum class frame_kind : uint8_t { request = 1, response = 2 };

/** The fragment header as on the wire (all fields big-endian). */
struct __attribute__((packed)) frame_hdr {
	uint16_t magic;       /**< "DW" */
	uint8_t version;      /**< 1 */
	uint8_t kind;         /**< frame_kind */
	uint32_t msg_id;      /**< sender-chosen; with the source address, the reassembly key */
	uint32_t msg_len;     /**< L7 header + body */
	uint32_t frag_offset; /**< where this fragment's payload starts in the message */
	uint16_t l7_len;      /**< length of the L7 header at the start of the message */
	uint16_t flags;       /**< reserved, zero */
	uint64_t correlation; /**< request: sender's pending key; response: copied back */
	uint32_t reserved;    /**< zero */
};
static_assert(sizeof(frame_hdr) == frame_hdr_size);

/** Why a frame or a reassembly was dropped; each is a counter. */
#define DPUMESH_FOREACH_WIRE_DROP(_)                                                     \
	_(none, "not dropped")                                                           \
	_(not_ip, "neither IPv4 nor IPv6")                                               \
	_(ip_fragment, "an IP fragment (mesh fragments at L7)")                          \
	_(not_udp, "IP but not UDP")                                                     \
	_(other_port, "UDP to another port")                                             \
	_(other_host, "to another IP address than the node's (of that family)")         \
	_(bad_ip, "IP header or lengths inconsistent with the frame")                    \
	_(bad_udp, "UDP length inconsistent with the IP payload")                        \
	_(bad_checksum, "UDP checksum wrong (the port's verdict, or computed when it has none)") \
	_(truncated, "shorter than the fragment header")                                 \
	_(bad_magic, "fragment magic is not DW")                                         \
	_(bad_version, "unsupported fragment version")                                   \
	_(bad_kind, "kind is neither request nor response")                              \
	_(bad_reserved, "reserved fields or flags set")                                  \
	_(bad_length, "offsets or lengths out of bounds")                                \
	_(too_large, "message longer than the configured maximum")                       \
	_(mismatch, "fragment disagrees with earlier fragments of its message")          \
	_(overlap, "fragment overlaps data already received")                            \
	_(table_full, "too many messages in reassembly")                                 \
	_(source_limit, "source has too many messages or mbufs in reassembly")           \
	_(memory_limit, "reassembly holds too many mbufs")                               \
	_(timeout, "message not complete before the reassembly timeout")                \
	_(too_many_frags, "message split into more fragments than allowed")             \
	_(refused_frag, "a later fragment of a request refused at its first (its tombstone)")

enum class wire_drop : uint8_t {
#define DPUMESH_WIRE_DROP_ENUM(n, d) n,
	DPUMESH_FOREACH_WIRE_DROP(DPUMESH_WIRE_DROP_ENUM)
#undef DPUMESH_WIRE_DROP_ENUM
	count
};
const char *wire_drop_name(wire_drop d) noexcept;
const char *wire_drop_help(wire_drop d) noexcept;

/**
 * An IPv4 (as ::ffff:a.b.c.d) or IPv6 address and a UDP port. Both helpers are inline, and
 * word loads and stores: per frame, the out-of-line forms' byte stores read back as a
 * whole stalled on store forwarding (half of parse_frame's samples) and is_v4() called
 * libc memcmp.
 */
struct endpoint {
	uint8_t ip[16] = {};
	uint16_t port = 0; /**< host order */
	bool is_v4() const noexcept
	{
		uint64_t head;
		uint32_t mid;
		std::memcpy(&head, ip, 8);
		std::memcpy(&mid, ip + 8, 4);
		return head == 0 && mid == v4_mid;
	}
	static endpoint from_v4(uint32_t addr_be, uint16_t port) noexcept
	{
		endpoint e;
		e.set_v4(addr_be, port);
		return e;
	}
	/** An IPv6 endpoint: the address's 16 bytes (network order), port. */
	static endpoint from_v6(const uint8_t addr[16], uint16_t port) noexcept
	{
		endpoint e;
		std::memcpy(e.ip, addr, 16);
		e.port = port;
		return e;
	}
	/** This endpoint as ::ffff:addr, port. */
	void set_v4(uint32_t addr_be, uint16_t p) noexcept
	{
		const uint64_t head = 0;
		const uint32_t mid = v4_mid;
		std::memcpy(ip, &head, 8);
		std::memcpy(ip + 8, &mid, 4);
		std::memcpy(ip + 12, &addr_be, 4);
		port = p;
	}
	bool operator==(const endpoint &) const noexcept = default;

private:
	/* bytes 8-11 of a v4-mapped address (0, 0, 0xff, 0xff) as a word in memory order */
	static constexpr uint32_t v4_mid =
		std::endian::native == std::endian::little ? 0xffff0000u : 0x0000ffffu;
};

/** The fragment header's fields in host order, and the slice length of its datagram. */
struct frag_fields {
	frame_kind kind = frame_kind::request;
	uint32_t msg_id = 0;
	uint32_t msg_len = 0;
	uint32_t frag_offset = 0;
	uint32_t frag_len = 0; /**< payload bytes after the header in this datagram */
	uint16_t l7_len = 0;
	uint64_t correlation = 0;
};

namespace detail {
/* a 16-, 32- or 64-bit value to or from network order (the same swap either way) */
template <typename T> constexpr T to_be(T v) noexcept
{
	static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
	if constexpr (std::endian::native == std::endian::little) {
		if constexpr (sizeof(T) == 2)
			return __builtin_bswap16(v);
		else if constexpr (sizeof(T) == 4)
			return __builtin_bswap32(v);
		else
			return __builtin_bswap64(v);
	} else {
		return v;
	}
}
/* v in network byte order, stored at out + at */
template <typename T> inline void store_be(void *out, size_t at, T v) noexcept
{
	v = to_be(v);
	std::memcpy(static_cast<char *>(out) + at, &v, sizeof(v));
}
/* the network-order T at in + at, in host order */
template <typename T> inline T load_be(const void *in, size_t at) noexcept
{
	T v;
	std::memcpy(&v, static_cast<const char *>(in) + at, sizeof(v));
	return to_be(v);
}
} // namespace detail

/**
 * Validates a fragment header (32 bytes at hdr, any alignment) followed by frag_len bytes
 * of payload: magic, version, kind, reserved fields, msg_len against max_message, and the
 * lengths (16 <= l7_len <= msg_len, 1 <= frag_len, frag_offset + frag_len <= msg_len).
 * Inline, each field loaded where it is: port RX calls it for every frame (out of line,
 * with the header copied to the stack first, it cost ~65 instructions a frame).
 * @return wire_drop::none with *out filled, else the first reason found
 */
inline wire_drop decode_frag_hdr(const void *hdr, uint32_t frag_len, uint32_t max_message,
				 frag_fields *out) noexcept
{
	using detail::load_be;
	static_assert(offsetof(frame_hdr, version) == 2 && offsetof(frame_hdr, kind) == 3 &&
		      static_cast<uint8_t>(frame_kind::request) == 1 &&
		      static_cast<uint8_t>(frame_kind::response) == 2);
	/* magic, version and kind in one load: the head of a request's less 1, or a response's */
	const uint32_t head = load_be<uint32_t>(hdr, offsetof(frame_hdr, magic));
	const uint32_t head0 = uint32_t(frame_magic) << 16 | uint32_t(frame_version) << 8;
	if (head - head0 - 1 > 1) [[unlikely]] {
		if (head >> 16 != frame_magic)
			return wire_drop::bad_magic;
		if ((head >> 8 & 0xff) != frame_version)
			return wire_drop::bad_version;
		return wire_drop::bad_kind;
	}
	const auto kind = static_cast<uint8_t>(head);
	if (load_be<uint16_t>(hdr, offsetof(frame_hdr, flags)) != 0 ||
	    load_be<uint32_t>(hdr, offsetof(frame_hdr, reserved)) != 0)
		return wire_drop::bad_reserved;
	frag_fields f;
	f.kind = static_cast<frame_kind>(kind);
	f.msg_id = load_be<uint32_t>(hdr, offsetof(frame_hdr, msg_id));
	f.msg_len = load_be<uint32_t>(hdr, offsetof(frame_hdr, msg_len));
	f.frag_offset = load_be<uint32_t>(hdr, offsetof(frame_hdr, frag_offset));
	f.frag_len = frag_len;
	f.l7_len = load_be<uint16_t>(hdr, offsetof(frame_hdr, l7_len));
	f.correlation = load_be<uint64_t>(hdr, offsetof(frame_hdr, correlation));
	if (f.msg_len > max_message)
		return wire_drop::too_large;
	/* an L7 header is at least 16 bytes; every fragment carries at least one byte */
	if (f.l7_len < 16 || f.l7_len > f.msg_len || f.frag_len == 0 ||
	    uint64_t(f.frag_offset) + f.frag_len > f.msg_len)
		return wire_drop::bad_length;
	*out = f;
	return wire_drop::none;
}

/**
 * Writes the 32-byte header for f (frag_len is not part of it) at out: a store per field
 * (magic, version and kind as one), inline: the frame makers call it for every frame, and a
 * header made on the stack and copied out stalled on store forwarding.
 */
inline void encode_frag_hdr(const frag_fields &f, void *out) noexcept
{
	detail::store_be(out, offsetof(frame_hdr, magic),
			 uint32_t(frame_magic) << 16 | uint32_t(frame_version) << 8 |
				 static_cast<uint8_t>(f.kind));
	detail::store_be(out, offsetof(frame_hdr, msg_id), f.msg_id);
	detail::store_be(out, offsetof(frame_hdr, msg_len), f.msg_len);
	detail::store_be(out, offsetof(frame_hdr, frag_offset), f.frag_offset);
	detail::store_be(out, offsetof(frame_hdr, l7_len), uint32_t(f.l7_len) << 16); /* flags 0 */
	detail::store_be(out, offsetof(frame_hdr, correlation), f.correlation);
	detail::store_be(out, offsetof(frame_hdr, reserved), uint32_t(0));
}

} // namespace dpumesh::wire
