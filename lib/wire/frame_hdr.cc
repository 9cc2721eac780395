// SPDX-License-Identifier: BSD-3-Clause
// The fragment header's checks, shared by the mbuf and the socket sides (the encoding is inline).
#include <arpa/inet.h>
#include <endian.h>

#include <cstring>

#include "dpumesh/wire/frame_hdr.h"

namespace dpumesh::wire {

const char *wire_drop_name(wire_drop d) noexcept
{
	switch (d) {
#define DPUMESH_WIRE_DROP_NAME(n, h)                                                     \
	case wire_drop::n: return #n;
		DPUMESH_FOREACH_WIRE_DROP(DPUMESH_WIRE_DROP_NAME)
#undef DPUMESH_WIRE_DROP_NAME
	case wire_drop::count: break;
	}
	return "?";
}

const char *wire_drop_help(wire_drop d) noexcept
{
	switch (d) {
#define DPUMESH_WIRE_DROP_HELP(n, h)                                                     \
	case wire_drop::n: return h;
		DPUMESH_FOREACH_WIRE_DROP(DPUMESH_WIRE_DROP_HELP)
#undef DPUMESH_WIRE_DROP_HELP
	case wire_drop::count: break;
	}
	return "?";
}

wire_drop decode_frag_hdr(const void *hdr, uint32_t frag_len, uint32_t max_message,
			  frag_fields *out) noexcept
{
	frame_hdr h;
	std::memcpy(&h, hdr, sizeof(h));
	if (ntohs(h.magic) != frame_magic)
		return wire_drop::bad_magic;
	if (h.version != frame_version)
		return wire_drop::bad_version;
	if (h.kind != static_cast<uint8_t>(frame_kind::request) &&
	    h.kind != static_cast<uint8_t>(frame_kind::response))
		return wire_drop::bad_kind;
	if (h.flags != 0 || h.reserved != 0)
		return wire_drop::bad_reserved;
	frag_fields f;
	f.kind = static_cast<frame_kind>(h.kind);
	f.msg_id = ntohl(h.msg_id);
	f.msg_len = ntohl(h.msg_len);
	f.frag_offset = ntohl(h.frag_offset);
	f.frag_len = frag_len;
	f.l7_len = ntohs(h.l7_len);
	f.correlation = be64toh(h.correlation);
	if (f.msg_len > max_message)
		return wire_drop::too_large;
	/* an L7 header is at least 16 bytes; every fragment carries at least one byte */
	if (f.l7_len < 16 || f.l7_len > f.msg_len || f.frag_len == 0 ||
	    uint64_t(f.frag_offset) + f.frag_len > f.msg_len)
		return wire_drop::bad_length;
	*out = f;
	return wire_drop::none;
}

} // namespace dpumesh::wire
