// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the socket-side reassembler (lib/meshsock) on untrusted datagrams.
// Input: a sequence of records, each a source byte (two sources, two ports), a time step
// byte, and a datagram prefixed by a 16-bit big-endian length. Invariants: limits never
// exceeded, a completed message is exactly msg_len bytes (l7_len of them the header), and
// after expire() everything is released. The first byte, when odd, also runs a round trip:
// the rest of the input as a body, fragmented (at most 64 fragments), delivered in an
// input-driven order with duplicates, and reassembled byte-exact.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <arpa/inet.h>

#include "dpumesh/meshsock/meshsock.h"

using namespace dpumesh;
using namespace dpumesh::meshsock;

namespace {

void check(bool ok)
{
	if (!ok)
		std::abort();
}

/* The round trip's fragments are at most this many: its slices grow for a longer body. A
 * message of 64 fragments takes the reassembler's paths as one of 4,000 does, and each
 * fragment is a map insert there (up to 4,112 one-byte slices of a 4 KiB input kept the
 * target at ~1,000 inputs a second, the slowest of the ten) */
constexpr uint32_t round_trip_max_frags = 64;

void round_trip(const uint8_t *data, size_t size)
{
	static const uint8_t l7[16] = {'D', 'M', 1, 1, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	const uint32_t least = static_cast<uint32_t>((16 + size + round_trip_max_frags - 1) /
						     round_trip_max_frags);
	const uint32_t slice = std::max<uint32_t>(least, 1 + (size ? data[0] % 97 : 0));
	out_message m{wire::frame_kind::request, 77, 0xfeedull, {l7, 16}, {data, size}};
	fragmenter fr(m, slice);
	check(fr.count() == (16 + size + slice - 1) / slice);
	std::vector<uint32_t> order(fr.count());
	for (uint32_t i = 0; i < fr.count(); i++)
		order[i] = i;
	for (uint32_t i = 0; i + 1 < fr.count(); i++) /* input-driven shuffle */
		std::swap(order[i], order[i + (i < size ? data[i] : i) % (fr.count() - i)]);
	reassembler r(reasm_limits{});
	wire::endpoint src = wire::endpoint::from_v4(htonl(0x0a000001), 1);
	message out;
	uint32_t complete = 0;
	std::vector<uint8_t> d; /* one datagram at a time: its room allocated once */
	d.reserve(32 + slice);
	for (uint32_t k = 0; k < fr.count(); k++) {
		uint8_t hdr[32];
		iovec iov[3];
		int n = fr.datagram(order[k], hdr, iov);
		d.clear();
		for (int j = 0; j < n; j++)
			d.insert(d.end(), static_cast<uint8_t *>(iov[j].iov_base),
				 static_cast<uint8_t *>(iov[j].iov_base) + iov[j].iov_len);
		for (int rep = 0; rep < 1 + (k % 3 == 1 && k + 1 < fr.count()); rep++) /* duplicates */
			complete += r.input(src, d.data(), d.size(), 0, &out) == reasm_result::complete;
	}
	check(complete == 1);
	check(out.data.size() == 16 + size && std::memcmp(out.data.data(), l7, 16) == 0);
	check(size == 0 || std::memcmp(out.data.data() + 16, data, size) == 0);
	check(r.in_flight() == 0 && r.bytes_held() == 0);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size && (data[0] & 1))
		round_trip(data + 1, size - 1);
	reasm_limits lim;
	lim.max_message = 1u << 16;
	lim.max_in_flight = 8;
	lim.max_per_source = 4;
	lim.max_bytes = 1u << 17;
	lim.max_frags = 32;
	lim.timeout_ms = 50;
	reassembler r(lim);
	uint64_t now = 0;
	size_t i = size ? 1 : 0;
	while (i + 4 <= size) {
		uint8_t who = data[i];
		now += data[i + 1];
		size_t len = (size_t(data[i + 2]) << 8) | data[i + 3];
		i += 4;
		len = std::min(len, size - i);
		wire::endpoint src = wire::endpoint::from_v4(htonl(0x0a000001 + (who & 1)),
							     static_cast<uint16_t>(who >> 7));
		message m;
		wire::wire_drop why;
		reasm_result res = r.input(src, data + i, len, now, &m, &why);
		if (res == reasm_result::complete)
			check(m.data.size() >= m.l7_len && m.l7_len >= 16 &&
			      m.data.size() <= lim.max_message && m.src == src);
		else if (res == reasm_result::dropped)
			check(why != wire::wire_drop::none);
		check(r.in_flight() <= lim.max_in_flight && r.bytes_held() <= lim.max_bytes);
		r.expire(now);
		i += len;
	}
	r.expire(now + lim.timeout_ms);
	check(r.in_flight() == 0 && r.bytes_held() == 0);
	return 0;
}
