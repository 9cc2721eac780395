// SPDX-License-Identifier: BSD-3-Clause
// lib/meshsock: fragmenter, bounded reassembler and a real UDP socket pair on loopback.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "dpumesh/wire/l7.h"
#include "dpumesh/meshsock/meshsock.h"

using namespace dpumesh;
using namespace dpumesh::meshsock;
using wire::wire_drop;

namespace {

std::vector<uint8_t> l7_request(const char *service = "echo")
{
	uint8_t buf[256];
	wire::l7_writer w(buf, sizeof(buf));
	w.request(service, "POST", "/x", 1000);
	size_t n = w.finish();
	return {buf, buf + n};
}

std::vector<uint8_t> bytes(size_t n, uint32_t seed)
{
	std::mt19937 rng(seed);
	std::vector<uint8_t> b(n);
	for (auto &x : b)
		x = static_cast<uint8_t>(rng());
	return b;
}

/** The datagrams of a message, each as one contiguous buffer. */
std::vector<std::vector<uint8_t>> datagrams(const out_message &m, uint32_t slice)
{
	fragmenter fr(m, slice);
	std::vector<std::vector<uint8_t>> out;
	for (uint32_t i = 0; i < fr.count(); i++) {
		uint8_t hdr[32];
		iovec iov[3];
		int n = fr.datagram(i, hdr, iov);
		std::vector<uint8_t> d;
		for (int k = 0; k < n; k++) {
			auto *p = static_cast<uint8_t *>(iov[k].iov_base);
			d.insert(d.end(), p, p + iov[k].iov_len);
		}
		out.push_back(std::move(d));
	}
	return out;
}

wire::endpoint src(uint8_t last, uint16_t port = 5000)
{
	return wire::endpoint::from_v4(htonl(0x0a000000u | last), port);
}

TEST(Meshsock, SliceForMtu)
{
	EXPECT_EQ(slice_for_mtu(1500, false), 1500u - 20 - 8 - 32);
	EXPECT_EQ(slice_for_mtu(1500, true), 1500u - 40 - 8 - 32);
	EXPECT_EQ(slice_for_mtu(50, false), 0u);
}

TEST(Meshsock, FragmentAndReassembleAnyOrder)
{
	auto l7 = l7_request();
	for (size_t size : {size_t(0), size_t(1), size_t(1000), size_t(5000), size_t(70000)}) {
		SCOPED_TRACE(size);
		auto body = bytes(size, static_cast<uint32_t>(size));
		out_message m{wire::frame_kind::request, 7, 0x1234567890ull, l7, body};
		auto dg = datagrams(m, 100);
		EXPECT_EQ(dg.size(), (l7.size() + size + 99) / 100);
		std::mt19937 rng(static_cast<uint32_t>(size));
		std::shuffle(dg.begin(), dg.end(), rng);
		reassembler r(reasm_limits{});
		message got;
		for (size_t i = 0; i < dg.size(); i++) {
			reasm_result res = r.input(src(1), dg[i].data(), dg[i].size(), 0, &got);
			ASSERT_EQ(res, i + 1 == dg.size() ? reasm_result::complete : reasm_result::held);
		}
		EXPECT_EQ(got.correlation, 0x1234567890ull);
		EXPECT_EQ(got.msg_id, 7u);
		EXPECT_EQ(got.kind, wire::frame_kind::request);
		EXPECT_TRUE(std::equal(got.l7().begin(), got.l7().end(), l7.begin(), l7.end()));
		EXPECT_TRUE(std::equal(got.body().begin(), got.body().end(), body.begin(), body.end()));
		EXPECT_EQ(r.in_flight(), 0u);
		EXPECT_EQ(r.bytes_held(), 0u);
	}
}

TEST(Meshsock, FragmenterRefusesBadSizes)
{
	std::vector<uint8_t> small(10), body(10);
	EXPECT_EQ(fragmenter(out_message{wire::frame_kind::request, 1, 1, small, body}, 100).count(), 0u);
	auto l7 = l7_request();
	EXPECT_EQ(fragmenter(out_message{wire::frame_kind::request, 1, 1, l7, body}, 0).count(), 0u);
}

TEST(Meshsock, DuplicatesOverlapsMismatches)
{
	auto l7 = l7_request();
	auto body = bytes(1000, 3);
	out_message m{wire::frame_kind::response, 9, 42, l7, body};
	auto dg = datagrams(m, 300);
	ASSERT_GE(dg.size(), 3u);
	reassembler r(reasm_limits{});
	message got;
	wire_drop why;
	EXPECT_EQ(r.input(src(1), dg[0].data(), dg[0].size(), 0, &got), reasm_result::held);
	/* an exact duplicate is ignored */
	EXPECT_EQ(r.input(src(1), dg[0].data(), dg[0].size(), 0, &got), reasm_result::held);
	EXPECT_EQ(r.stats().duplicates, 1u);
	/* the same id from another source is another message */
	EXPECT_EQ(r.input(src(2), dg[1].data(), dg[1].size(), 0, &got), reasm_result::held);
	EXPECT_EQ(r.in_flight(), 2u);
	/* a slice whose correlation disagrees is dropped alone */
	auto bad = dg[1];
	bad[20] ^= 1;
	EXPECT_EQ(r.input(src(1), bad.data(), bad.size(), 0, &got, &why), reasm_result::dropped);
	EXPECT_EQ(why, wire_drop::mismatch);
	EXPECT_EQ(r.in_flight(), 2u);
	/* an overlapping slice (offset moved back by one) drops the whole message */
	auto ov = dg[1];
	uint32_t off;
	std::memcpy(&off, ov.data() + 12, 4);
	off = htonl(ntohl(off) - 1);
	std::memcpy(ov.data() + 12, &off, 4);
	EXPECT_EQ(r.input(src(1), ov.data(), ov.size(), 0, &got, &why), reasm_result::dropped);
	EXPECT_EQ(why, wire_drop::overlap);
	EXPECT_EQ(r.in_flight(), 1u);
	EXPECT_EQ(r.stats().drops[size_t(wire_drop::overlap)], 1u);
}

TEST(Meshsock, HeaderChecks)
{
	auto l7 = l7_request();
	std::vector<uint8_t> body(10);
	auto dg = datagrams(out_message{wire::frame_kind::request, 1, 1, l7, body}, 1000)[0];
	reassembler r(reasm_limits{});
	message got;
	struct {
		size_t at;
		uint8_t value;
		wire_drop want;
	} cases[] = {{0, 0x00, wire_drop::bad_magic}, {2, 2, wire_drop::bad_version},
		     {3, 3, wire_drop::bad_kind},     {18, 1, wire_drop::bad_reserved},
		     {31, 1, wire_drop::bad_reserved}, {17, 8, wire_drop::bad_length}};
	for (const auto &c : cases) {
		auto d = dg;
		d[c.at] = c.value;
		wire_drop why;
		EXPECT_EQ(r.input(src(1), d.data(), d.size(), 0, &got, &why), reasm_result::dropped);
		EXPECT_EQ(why, c.want) << c.at;
	}
	wire_drop why;
	EXPECT_EQ(r.input(src(1), dg.data(), 31, 0, &got, &why), reasm_result::dropped);
	EXPECT_EQ(why, wire_drop::truncated);
	EXPECT_EQ(r.input(src(1), dg.data(), 32, 0, &got, &why), reasm_result::dropped);
	EXPECT_EQ(why, wire_drop::bad_length); /* a datagram carries at least one byte */
	EXPECT_EQ(r.input(src(1), dg.data(), dg.size(), 0, &got), reasm_result::complete);
}

TEST(Meshsock, Limits)
{
	auto l7 = l7_request();
	auto body = bytes(1000, 1);
	reasm_limits lim;
	lim.max_in_flight = 4;
	lim.max_per_source = 2;
	lim.max_bytes = 3 * (l7.size() + 1000);
	lim.max_message = 2000;
	lim.timeout_ms = 100;
	reassembler r(lim);
	message got;
	wire_drop why;
	auto first = [&](uint32_t id) {
		return datagrams(out_message{wire::frame_kind::request, id, id, l7, body}, 500)[0];
	};
	/* per source */
	for (uint32_t id = 1; id <= 2; id++) {
		auto d = first(id);
		EXPECT_EQ(r.input(src(1), d.data(), d.size(), 0, &got), reasm_result::held);
	}
	auto d3 = first(3);
	EXPECT_EQ(r.input(src(1), d3.data(), d3.size(), 0, &got, &why), reasm_result::dropped);
	EXPECT_EQ(why, wire_drop::source_limit);
	/* bytes: the third message fits, a fourth does not */
	EXPECT_EQ(r.input(src(2), d3.data(), d3.size(), 50, &got), reasm_result::held);
	auto d4 = first(4);
	EXPECT_EQ(r.input(src(3), d4.data(), d4.size(), 50, &got, &why), reasm_result::dropped);
	EXPECT_EQ(why, wire_drop::memory_limit);
	/* too large */
	auto big = bytes(3000, 2);
	auto db = datagrams(out_message{wire::frame_kind::request, 5, 5, l7, big}, 500)[0];
	EXPECT_EQ(r.input(src(4), db.data(), db.size(), 50, &got, &why), reasm_result::dropped);
	EXPECT_EQ(why, wire_drop::too_large);
	/* time: the two from t=0 expire at 100, the one from t=50 at 150 */
	EXPECT_EQ(r.expire(99), 0u);
	EXPECT_EQ(r.expire(100), 2u);
	EXPECT_EQ(r.in_flight(), 1u);
	EXPECT_EQ(r.expire(150), 1u);
	EXPECT_EQ(r.in_flight(), 0u);
	EXPECT_EQ(r.bytes_held(), 0u);
	EXPECT_EQ(r.stats().drops[size_t(wire_drop::timeout)], 3u);
	/* in flight */
	lim.max_per_source = 100;
	lim.max_bytes = 1u << 30;
	reassembler r2(lim);
	for (uint32_t id = 1; id <= 5; id++) {
		auto d = first(id);
		EXPECT_EQ(r2.input(src(1), d.data(), d.size(), 0, &got, &why),
			  id <= 4 ? reasm_result::held : reasm_result::dropped);
	}
	EXPECT_EQ(why, wire_drop::table_full);
	/* fragments per message */
	lim.max_frags = 2;
	reassembler r3(lim);
	auto dg = datagrams(out_message{wire::frame_kind::request, 6, 6, l7, body}, 300);
	ASSERT_GE(dg.size(), 3u);
	EXPECT_EQ(r3.input(src(1), dg[0].data(), dg[0].size(), 0, &got), reasm_result::held);
	EXPECT_EQ(r3.input(src(1), dg[1].data(), dg[1].size(), 0, &got), reasm_result::held);
	EXPECT_EQ(r3.input(src(1), dg[2].data(), dg[2].size(), 0, &got, &why), reasm_result::dropped);
	EXPECT_EQ(why, wire_drop::too_many_frags);
	EXPECT_EQ(r3.in_flight(), 0u);
}

TEST(Meshsock, UdpLoopback)
{
	int rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	int tx = socket(AF_INET, SOCK_DGRAM, 0);
	ASSERT_GE(rx, 0);
	ASSERT_GE(tx, 0);
	int big = 8 << 20;
	setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) == 0 ||
		setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(bind(rx, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
	socklen_t alen = sizeof(a);
	getsockname(rx, reinterpret_cast<sockaddr *>(&a), &alen);
	auto l7 = l7_request();
	const size_t sizes[] = {0, 1, 1440, 100000};
	for (uint32_t i = 0; i < 4; i++) {
		auto body = bytes(sizes[i], i);
		out_message m{wire::frame_kind::request, i + 1, 100 + i, l7, body};
		ASSERT_EQ(send_message(tx, reinterpret_cast<sockaddr *>(&a), sizeof(a), m,
				       slice_for_mtu(1500, false)),
			  0);
	}
	reassembler r(reasm_limits{});
	receiver rcv(8);
	std::vector<message> got;
	for (int tries = 0; tries < 100 && got.size() < 4; tries++) {
		if (rcv.drain(rx, r, 0, &got) == 0)
			usleep(10000);
	}
	ASSERT_EQ(got.size(), 4u);
	for (const message &m : got) {
		auto body = bytes(sizes[m.correlation - 100], static_cast<uint32_t>(m.correlation - 100));
		EXPECT_TRUE(std::equal(m.body().begin(), m.body().end(), body.begin(), body.end()));
		EXPECT_TRUE(m.src.is_v4());
	}
	close(rx);
	close(tx);
}

/* receiver::only_from: datagrams from any other address or port are dropped before the
 * reassembler, and counted. A sender that is not the node sends the first fragments of four
 * messages that say 16 MiB each: let in, they hold the reassembler's whole 64 MiB budget
 * (until its time-out), and every fragment of the node's next message of more than one
 * datagram is dropped (memory_limit). */
TEST(Meshsock, ReceiverTakesOnlyTheSourcesItIsGiven)
{
	int rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	int node = socket(AF_INET, SOCK_DGRAM, 0);
	int other = socket(AF_INET, SOCK_DGRAM, 0);
	ASSERT_GE(rx, 0);
	ASSERT_GE(node, 0);
	ASSERT_GE(other, 0);
	int big = 8 << 20;
	setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) == 0 ||
		setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	sockaddr_storage to{}, from{};
	for (auto [fd, sa] : {std::pair{rx, &to}, std::pair{node, &from}}) {
		auto *a = reinterpret_cast<sockaddr_in *>(sa);
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(sa), sizeof(sockaddr_in)), 0);
		socklen_t alen = sizeof(sockaddr_in);
		getsockname(fd, reinterpret_cast<sockaddr *>(sa), &alen);
	}
	const std::vector<uint8_t> l7(16), huge((16u << 20) - 16);
	auto flood = [&] {
		for (uint32_t i = 0; i < 4; i++) {
			fragmenter fr(out_message{wire::frame_kind::response, 100 + i, i, l7, huge},
				      slice_for_mtu(1500, false));
			uint8_t hdr[wire::frame_hdr_size];
			iovec iov[3];
			msghdr mh{};
			mh.msg_name = &to;
			mh.msg_namelen = sizeof(sockaddr_in);
			mh.msg_iov = iov;
			mh.msg_iovlen = static_cast<size_t>(fr.datagram(0, hdr, iov));
			ASSERT_GT(sendmsg(other, &mh, 0), 0);
		}
	};
	const auto l7r = l7_request();
	const auto body = bytes(100000, 5);
	const out_message answer{wire::frame_kind::response, 1, 7, l7r, body};
	const uint32_t nb_answer = fragmenter(answer, slice_for_mtu(1500, false)).count();
	ASSERT_GT(nb_answer, 1u);
	/* drains until the reassembler has seen `want` datagrams and the receiver `foreign` */
	auto drain = [&](receiver &rcv, reassembler &r, uint64_t want, uint64_t foreign) {
		std::vector<message> got;
		for (int tries = 0; tries < 200; tries++) {
			if (r.stats().datagrams >= want && rcv.foreign() >= foreign)
				break;
			if (rcv.drain(rx, r, 0, &got) == 0)
				usleep(5000);
		}
		return got;
	};

	/* anyone: the flood takes the budget, the node's answer is dropped */
	{
		reassembler r(reasm_limits{});
		receiver rcv(8);
		flood();
		ASSERT_EQ(send_message(node, reinterpret_cast<sockaddr *>(&to), sizeof(sockaddr_in),
				       answer, slice_for_mtu(1500, false)),
			  0);
		auto got = drain(rcv, r, 4 + nb_answer, 0);
		EXPECT_TRUE(got.empty());
		EXPECT_EQ(r.stats().drops[size_t(wire_drop::memory_limit)], nb_answer);
		EXPECT_EQ(r.bytes_held(), 64ull << 20);
		EXPECT_EQ(rcv.foreign(), 0u);
	}
	/* the node only: the flood is dropped before the reassembler, the answer comes whole */
	{
		reassembler r(reasm_limits{});
		receiver rcv(8);
		rcv.only_from({endpoint_of(from)});
		flood();
		ASSERT_EQ(send_message(node, reinterpret_cast<sockaddr *>(&to), sizeof(sockaddr_in),
				       answer, slice_for_mtu(1500, false)),
			  0);
		auto got = drain(rcv, r, nb_answer, 4);
		ASSERT_EQ(got.size(), 1u);
		EXPECT_TRUE(std::equal(got[0].body().begin(), got[0].body().end(), body.begin(),
				       body.end()));
		EXPECT_TRUE(got[0].src == endpoint_of(from));
		EXPECT_EQ(rcv.foreign(), 4u);
		EXPECT_EQ(r.stats().datagrams, nb_answer);
		EXPECT_EQ(r.bytes_held(), 0u);
		for (size_t d = 1; d < r.stats().drops.size(); d++)
			EXPECT_EQ(r.stats().drops[d], 0u) << wire::wire_drop_name(wire_drop(d));
	}
	/* the node's address with another port is another source */
	{
		reassembler r(reasm_limits{});
		receiver rcv(8);
		wire::endpoint moved = endpoint_of(from);
		moved.port++;
		rcv.only_from({moved});
		ASSERT_EQ(send_message(node, reinterpret_cast<sockaddr *>(&to), sizeof(sockaddr_in),
				       answer, slice_for_mtu(1500, false)),
			  0);
		auto got = drain(rcv, r, 0, nb_answer);
		EXPECT_TRUE(got.empty());
		EXPECT_EQ(rcv.foreign(), nb_answer);
		EXPECT_EQ(r.stats().datagrams, 0u);
	}
	close(rx);
	close(node);
	close(other);
}

} // namespace
