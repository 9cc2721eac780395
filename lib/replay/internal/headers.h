// SPDX-License-Identifier: BSD-3-Clause
// Ethernet/IP/UDP header walking shared by capture classification and answer matching.
#pragma once

#include <cstdint>
#include <cstring>

namespace dpumesh::replay::internal {

inline constexpr uint8_t proto_tcp = 6, proto_udp = 17;

inline uint16_t be16(const uint8_t *p) { return uint16_t(p[0] << 8 | p[1]); }

/** What the walk found: offsets of L3 and L4, the L4 length per the IP header, addresses. */
struct l4_view {
	bool ip = false, v6 = false;
	uint8_t proto = 0;
	uint16_t l3 = 0, l4 = 0;
	uint32_t l4_len = 0;
	uint8_t src[16] = {}, dst[16] = {}; /* IPv4 as ::ffff:a.b.c.d */
};

inline void v4_mapped(const uint8_t *a, uint8_t out[16])
{
	std::memset(out, 0, 16);
	out[10] = out[11] = 0xff;
	std::memcpy(out + 12, a, 4);
}

/**
 * Walks Ethernet (one optional VLAN tag), IPv4 (not a fragment) or IPv6 (no extension
 * headers followed). f holds at least min(len, 64 + 40) bytes; len is the frame length.
 */
inline l4_view walk(const uint8_t *f, uint32_t len)
{
	l4_view v;
	if (len < 14)
		return v;
	uint32_t off = 12;
	uint16_t type = be16(f + off);
	off += 2;
	if (type == 0x8100) {
		if (len < off + 4)
			return v;
		type = be16(f + off + 2);
		off += 4;
	}
	if (type == 0x0800) {
		if (len < off + 20 || (f[off] >> 4) != 4)
			return v;
		uint32_t ihl = uint32_t(f[off] & 0xf) * 4, total = be16(f + off + 2);
		if (ihl < 20 || total < ihl || off + total > len || off + ihl > 64)
			return v;
		if ((be16(f + off + 6) & 0x3fff) != 0)
			return v;
		v.ip = true;
		v.proto = f[off + 9];
		v.l3 = uint16_t(off);
		v.l4 = uint16_t(off + ihl);
		v.l4_len = total - ihl;
		v4_mapped(f + off + 12, v.src);
		v4_mapped(f + off + 16, v.dst);
	} else if (type == 0x86dd) {
		if (len < off + 40 || (f[off] >> 4) != 6)
			return v;
		uint32_t payload = be16(f + off + 4);
		if (off + 40 + payload > len)
			return v;
		v.ip = v.v6 = true;
		v.proto = f[off + 6];
		v.l3 = uint16_t(off);
		v.l4 = uint16_t(off + 40);
		v.l4_len = payload;
		std::memcpy(v.src, f + off + 8, 16);
		std::memcpy(v.dst, f + off + 24, 16);
	}
	return v;
}

} // namespace dpumesh::replay::internal
