// SPDX-License-Identifier: BSD-3-Clause
// Mesh wire frames on real mbufs: fragment -> parse -> reassemble round trips (IPv4/IPv6,
// copy and zero-copy, any arrival order), checksums, and every malformed form dropped by
// reason with memory returning to idle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dpumesh/common/fnv.h"
#include "dpumesh/wire/frame.h"
#include "dpumesh/wire/l7.h"
#include "eal_env.h"

using namespace dpumesh;
using namespace dpumesh::wire;

namespace {

constexpr uint16_t mesh_port = 7000;
constexpr unsigned pool_size = 16383;

rte_mempool *pool()
{
	static rte_mempool *mp = rte_pktmbuf_pool_create("wire_test", pool_size, 0, 0,
							 RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	return mp;
}

link_addr addr(bool v6)
{
	link_addr a{};
	const uint8_t s[6] = {2, 0, 0, 0, 0, 1}, d[6] = {2, 0, 0, 0, 0, 2};
	std::memcpy(a.src_mac, s, 6);
	std::memcpy(a.dst_mac, d, 6);
	if (v6) {
		a.src.ip[0] = 0xfd, a.src.ip[15] = 1;
		a.dst.ip[0] = 0xfd, a.dst.ip[15] = 2;
	} else {
		a.src = endpoint::from_v4(rte_cpu_to_be_32(0x0a000001), 0);
		a.dst = endpoint::from_v4(rte_cpu_to_be_32(0x0a000002), 0);
	}
	a.src.port = 40000;
	a.dst.port = mesh_port;
	return a;
}

std::vector<uint8_t> l7_request(size_t path_len = 8)
{
	std::vector<uint8_t> b(1024);
	l7_writer w(b.data(), b.size());
	w.request("echo", "POST", "/" + std::string(path_len, 'p'));
	b.resize(w.finish());
	return b;
}

std::vector<uint8_t> random_body(size_t n, unsigned seed)
{
	std::vector<uint8_t> v(n);
	std::mt19937 rng(seed);
	for (auto &x : v)
		x = static_cast<uint8_t>(rng());
	return v;
}

/** Concatenates a message chain into bytes. */
std::vector<uint8_t> bytes_of(const rte_mbuf *m)
{
	std::vector<uint8_t> out(m->pkt_len);
	const void *p = rte_pktmbuf_read(m, 0, m->pkt_len, out.data());
	if (p != out.data())
		std::memcpy(out.data(), p, m->pkt_len);
	return out;
}

/* The checksums' all-ones edges met by the frames a test compares with fragment()'s: a sum
 * that folds to 0 goes out as 0xffff, the case a short cut in a stamp would get wrong. */
struct csum_edges {
	unsigned ip = 0, udp = 0;

	/** `m` byte for byte `want` (both freed), its edges counted; udp_ck_at: the UDP sum's offset. */
	void expect_same(rte_mbuf *m, rte_mbuf *want, bool v6, unsigned udp_ck_at, uint32_t id,
			 uint32_t corr)
	{
		const std::vector<uint8_t> got = bytes_of(m), ref = bytes_of(want);
		rte_pktmbuf_free(want);
		rte_pktmbuf_free(m);
		ASSERT_EQ(got, ref) << "v6 " << v6 << " id " << id << " corr " << corr;
		if (!v6 && got[24] == 0xff && got[25] == 0xff)
			ip++;
		if (got[udp_ck_at] == 0xff && got[udp_ck_at + 1] == 0xff)
			udp++;
	}
};

/** `in` in received segments of `seg` bytes each (nullptr when the pool ran dry). */
rte_mbuf *chain_of(const std::vector<uint8_t> &in, size_t seg)
{
	rte_mbuf *head = nullptr;
	for (size_t off = 0; off < in.size(); off += seg) {
		rte_mbuf *s = rte_pktmbuf_alloc(pool());
		EXPECT_NE(s, nullptr);
		if (!s) {
			rte_pktmbuf_free(head);
			return nullptr;
		}
		const size_t n = std::min(seg, in.size() - off);
		std::memcpy(rte_pktmbuf_append(s, static_cast<uint16_t>(n)), in.data() + off, n);
		if (!head)
			head = s;
		else
			EXPECT_EQ(rte_pktmbuf_chain(head, s), 0);
	}
	return head;
}

std::unique_ptr<reassembler> make_reasm(const char *name, reasm_config cfg = {})
{
	auto r = reassembler::create(cfg, name, SOCKET_ID_ANY);
	EXPECT_TRUE(r) << r.error().message();
	return r ? std::move(*r) : nullptr;
}

/* Feeds frames; returns the completed messages. */
std::vector<message> feed(reassembler &r, std::vector<rte_mbuf *> frames, uint64_t now)
{
	std::vector<message> done;
	for (rte_mbuf *f : frames) {
		parsed_frame pf;
		wire_drop d = parse_frame(f, rte_cpu_to_be_16(mesh_port), 16u << 20, &pf);
		EXPECT_EQ(d, wire_drop::none) << wire_drop_name(d);
		if (d != wire_drop::none) {
			rte_pktmbuf_free(f);
			continue;
		}
		message msg;
		if (r.input(f, pf, now, &msg) == reasm_result::complete)
			done.push_back(msg);
	}
	return done;
}

uint64_t drops(const reassembler &r, wire_drop d)
{
	return r.stats().drops[static_cast<size_t>(d)].get();
}

} // namespace

class WireRoundTrip : public ::testing::TestWithParam<bool> {};

TEST_P(WireRoundTrip, AnySizeAnyOrderIsByteExact)
{
	const bool v6 = GetParam();
	auto r = make_reasm(v6 ? "rt6" : "rt4");
	ASSERT_TRUE(r);
	const unsigned free0 = rte_mempool_avail_count(pool());
	std::mt19937 rng(42);
	const size_t sizes[] = {0, 1, 1000, 1400, 1500, 4096, 65536, 300000, 1u << 20};
	uint32_t id = 1;
	for (size_t size : sizes) {
		auto l7 = l7_request();
		auto body = random_body(size, static_cast<unsigned>(size));
		std::vector<rte_mbuf *> frames(1024);
		uint16_t n = fragment(addr(v6), frame_kind::request, id, 0xabcdef0000000000ull + id,
				      l7.data(), static_cast<uint16_t>(l7.size()),
				      body_ref{body.data(), static_cast<uint32_t>(size)}, 1500,
				      pool(), frames.data(), static_cast<uint16_t>(frames.size()));
		ASSERT_EQ(n, frames_needed(static_cast<uint32_t>(l7.size() + size), 1500, v6));
		frames.resize(n);
		for (rte_mbuf *f : frames) {
			ASSERT_LE(f->pkt_len, 1514u);
			const uint8_t *p = rte_pktmbuf_mtod(f, const uint8_t *);
			uint32_t l4 = sizeof(rte_ether_hdr) + (v6 ? sizeof(rte_ipv6_hdr) : sizeof(rte_ipv4_hdr));
			int ok = v6 ? rte_ipv6_udptcp_cksum_mbuf_verify(
					      f, reinterpret_cast<const rte_ipv6_hdr *>(p + 14), l4)
				    : rte_ipv4_udptcp_cksum_mbuf_verify(
					      f, reinterpret_cast<const rte_ipv4_hdr *>(p + 14), l4);
			EXPECT_EQ(ok, 0) << "bad UDP checksum";
			if (!v6) { /* the IPv4 header's own sum: all ones over a right one */
				EXPECT_EQ(rte_raw_cksum(p + 14, sizeof(rte_ipv4_hdr)), 0xffff)
					<< "bad IPv4 header checksum";
			}
		}
		if (size % 2 == 0)
			std::shuffle(frames.begin(), frames.end(), rng);
		else
			std::reverse(frames.begin(), frames.end());
		auto done = feed(*r, frames, rte_rdtsc());
		ASSERT_EQ(done.size(), 1u) << size;
		message &m = done[0];
		EXPECT_EQ(m.msg_id, id);
		EXPECT_EQ(m.correlation, 0xabcdef0000000000ull + id);
		EXPECT_EQ(m.l7_len, l7.size());
		EXPECT_EQ(m.src.port, 40000);
		auto got = bytes_of(m.chain);
		ASSERT_EQ(got.size(), l7.size() + size);
		EXPECT_EQ(0, std::memcmp(got.data(), l7.data(), l7.size()));
		EXPECT_TRUE(std::equal(body.begin(), body.end(), got.begin() + l7.size())) << size;
		rte_pktmbuf_free(m.chain);
		id++;
	}
	EXPECT_EQ(r->in_flight(), 0u);
	EXPECT_EQ(r->mbufs_held(), 0u);
	EXPECT_EQ(rte_mempool_avail_count(pool()), free0);
}

INSTANTIATE_TEST_SUITE_P(Families, WireRoundTrip, ::testing::Values(false, true),
			 [](const auto &param_info) { return param_info.param ? "ipv6" : "ipv4"; });

/* A body copied on from received segments (a relay to a port without chained mbufs): its
 * UDP checksums are summed from the segments while copying, at every odd and even split of
 * header, segments and frames, and the message arrives byte-exact. */
TEST(Wire, BodyCopiedFromReceivedSegmentsHasRightChecksums)
{
	auto r = make_reasm("relaycopy");
	ASSERT_TRUE(r);
	const unsigned free0 = rte_mempool_avail_count(pool());
	uint32_t id = 100;
	for (bool v6 : {false, true})
		for (size_t path_len : {7u, 8u})           /* odd and even L7 header lengths */
			for (size_t seg : {1u, 3u, 64u, 997u}) { /* received segment sizes */
				for (size_t size : {1u, 2u, 301u, 3000u}) {
					auto l7 = l7_request(path_len);
					auto body = random_body(size, static_cast<unsigned>(size + seg));
					/* the received chain: 5 bytes before the body, then segments */
					std::vector<uint8_t> in(5 + size, 0xaa);
					std::copy(body.begin(), body.end(), in.begin() + 5);
					rte_mbuf *head = chain_of(in, seg);
					ASSERT_NE(head, nullptr);
					body_ref b;
					b.len = static_cast<uint32_t>(size);
					b.seg = head;
					b.seg_off = 5;
					std::vector<rte_mbuf *> frames(64);
					uint16_t n = fragment(addr(v6), frame_kind::request, id, id, l7.data(),
							      static_cast<uint16_t>(l7.size()), b, 1500, pool(),
							      frames.data(), static_cast<uint16_t>(frames.size()));
					rte_pktmbuf_free(head); /* copied: the frames keep nothing */
					ASSERT_EQ(n, frames_needed(static_cast<uint32_t>(l7.size() + size), 1500, v6));
					frames.resize(n);
					for (rte_mbuf *f : frames) {
						ASSERT_EQ(f->nb_segs, 1u);
						const uint8_t *p = rte_pktmbuf_mtod(f, const uint8_t *);
						uint32_t l4 = sizeof(rte_ether_hdr) +
							      (v6 ? sizeof(rte_ipv6_hdr) : sizeof(rte_ipv4_hdr));
						int ok = v6 ? rte_ipv6_udptcp_cksum_mbuf_verify(
								      f, reinterpret_cast<const rte_ipv6_hdr *>(p + 14), l4)
							    : rte_ipv4_udptcp_cksum_mbuf_verify(
								      f, reinterpret_cast<const rte_ipv4_hdr *>(p + 14), l4);
						EXPECT_EQ(ok, 0) << "bad UDP checksum: v6 " << v6 << " path " << path_len
								 << " seg " << seg << " size " << size;
					}
					auto done = feed(*r, frames, rte_rdtsc());
					ASSERT_EQ(done.size(), 1u);
					auto got = bytes_of(done[0].chain);
					ASSERT_EQ(got.size(), l7.size() + size);
					EXPECT_EQ(0, std::memcmp(got.data(), l7.data(), l7.size()));
					EXPECT_TRUE(std::equal(body.begin(), body.end(), got.begin() + l7.size()));
					rte_pktmbuf_free(done[0].chain);
					id++;
				}
			}
	EXPECT_EQ(r->in_flight(), 0u);
	EXPECT_EQ(rte_mempool_avail_count(pool()), free0);
}

namespace {
int g_freed = 0;
void count_free(void *, void *) { g_freed++; }
} // namespace

TEST(Wire, ZeroCopyBodyIsReleasedWhenEveryFrameIsFreed)
{
	auto l7 = l7_request();
	/* body memory must be visible to DPDK for a real NIC; for this test any memory works */
	std::vector<uint8_t> body = random_body(100000, 9);
	rte_mbuf_ext_shared_info shinfo{};
	shinfo.free_cb = count_free;
	shinfo.fcb_opaque = nullptr;
	rte_mbuf_ext_refcnt_set(&shinfo, 1);
	g_freed = 0;
	std::vector<rte_mbuf *> frames(200);
	uint16_t n = fragment(addr(false), frame_kind::request, 77, 1, l7.data(),
			      static_cast<uint16_t>(l7.size()),
			      body_ref{body.data(), static_cast<uint32_t>(body.size()), &shinfo},
			      1500, pool(), frames.data(), 200);
	ASSERT_GT(n, 60);
	frames.resize(n);
	/* the caller's reference plus one per frame (each frame carries some body) */
	EXPECT_EQ(rte_mbuf_ext_refcnt_read(&shinfo), n + 1);
	if (rte_mbuf_ext_refcnt_update(&shinfo, -1) == 0)
		count_free(nullptr, nullptr);
	EXPECT_EQ(g_freed, 0);
	/* the receiver sees the same bytes; parse + reassemble a copy of each frame */
	auto r = make_reasm("zc");
	std::vector<rte_mbuf *> copies;
	for (rte_mbuf *f : frames)
		copies.push_back(rte_pktmbuf_copy(f, pool(), 0, UINT32_MAX));
	for (rte_mbuf *f : frames)
		rte_pktmbuf_free(f);
	EXPECT_EQ(g_freed, 1); /* the NIC is "done": the pod's TX buffer is released once */
	auto done = feed(*r, copies, rte_rdtsc());
	ASSERT_EQ(done.size(), 1u);
	auto got = bytes_of(done[0].chain);
	EXPECT_TRUE(std::equal(body.begin(), body.end(), got.begin() + l7.size()));
	rte_pktmbuf_free(done[0].chain);
}

namespace {

/** A valid single-frame IPv4 message, as raw bytes to corrupt. */
std::vector<uint8_t> good_frame()
{
	auto l7 = l7_request();
	rte_mbuf *f;
	uint16_t n = fragment(addr(false), frame_kind::request, 5, 6, l7.data(),
			      static_cast<uint16_t>(l7.size()), body_ref{nullptr, 0}, 1500, pool(),
			      &f, 1);
	EXPECT_EQ(n, 1);
	auto v = bytes_of(f);
	rte_pktmbuf_free(f);
	return v;
}

rte_mbuf *to_mbuf(const std::vector<uint8_t> &b)
{
	rte_mbuf *m = rte_pktmbuf_alloc(pool());
	std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(b.size())), b.data(), b.size());
	return m;
}

constexpr size_t fh = 14 + 20 + 8; /* fragment header offset in an IPv4 frame */

/* The UDP checksum of an IPv4 frame made again after a change (its lengths consistent). */
void resum(std::vector<uint8_t> &b)
{
	auto *ip = reinterpret_cast<rte_ipv4_hdr *>(b.data() + 14);
	auto *udp = reinterpret_cast<rte_udp_hdr *>(b.data() + 14 + 20);
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
}

wire_drop parse(rte_mbuf *m)
{
	parsed_frame pf;
	return parse_frame(m, rte_cpu_to_be_16(mesh_port), 1u << 20, &pf);
}

} // namespace

TEST(Wire, MalformedFramesAreDroppedByReason)
{
	const auto good = good_frame();
	struct {
		wire_drop expect;
		std::vector<uint8_t> bytes;
	} cases[] = {
		{wire_drop::not_ip, [&] { auto b = good; b[12] = 0x08; b[13] = 0x06; return b; }()},
		{wire_drop::not_udp, [&] { auto b = good; b[14 + 9] = 6; return b; }()},
		{wire_drop::ip_fragment, [&] { auto b = good; b[14 + 6] = 0x20; return b; }()},
		/* the offset's low byte and its high bits (the mask taken as loaded) */
		{wire_drop::ip_fragment, [&] { auto b = good; b[14 + 7] = 0x01; return b; }()},
		{wire_drop::ip_fragment, [&] { auto b = good; b[14 + 6] = 0x01; return b; }()},
		{wire_drop::ip_fragment, [&] { auto b = good; b[14 + 6] = 0x10; return b; }()},
		{wire_drop::other_port, [&] { auto b = good; b[14 + 20 + 3] ^= 1; return b; }()},
		{wire_drop::bad_ip, [&] { auto b = good; b[14 + 2] = 0xff; return b; }()},
		{wire_drop::bad_udp, [&] { auto b = good; b[14 + 20 + 5] ^= 4; return b; }()},
		{wire_drop::truncated, [&] {
			 auto b = std::vector<uint8_t>(good.begin(), good.begin() + fh + 10);
			 uint16_t ip_len = static_cast<uint16_t>(b.size() - 14), udp = ip_len - 20;
			 b[16] = static_cast<uint8_t>(ip_len >> 8), b[17] = static_cast<uint8_t>(ip_len);
			 b[38] = static_cast<uint8_t>(udp >> 8), b[39] = static_cast<uint8_t>(udp);
			 return b;
		 }()},
		{wire_drop::bad_magic, [&] { auto b = good; b[fh] = 'X'; return b; }()},
		{wire_drop::bad_version, [&] { auto b = good; b[fh + 2] = 9; return b; }()},
		{wire_drop::bad_kind, [&] { auto b = good; b[fh + 3] = 3; return b; }()},
		{wire_drop::bad_kind, [&] { auto b = good; b[fh + 3] = 0; return b; }()},
		/* the first reason found: magic before version, version before kind */
		{wire_drop::bad_magic, [&] { auto b = good; b[fh + 1] ^= 1; b[fh + 2] = 9; b[fh + 3] = 0; return b; }()},
		{wire_drop::bad_version, [&] { auto b = good; b[fh + 2] = 0; b[fh + 3] = 2; return b; }()},
		{wire_drop::bad_version, [&] { auto b = good; b[fh + 2] = 2; b[fh + 3] = 7; return b; }()},
		{wire_drop::bad_reserved, [&] { auto b = good; b[fh + 19] = 1; return b; }()},
		{wire_drop::bad_reserved, [&] { auto b = good; b[fh + 31] = 1; return b; }()},
		{wire_drop::too_large, [&] { auto b = good; b[fh + 8] = 0x7f; return b; }()},
		{wire_drop::bad_length, [&] { auto b = good; b[fh + 12] = 0x7f; return b; }()}, /* offset */
		{wire_drop::bad_length, [&] { auto b = good; b[fh + 16] = 0x7f; return b; }()}, /* l7 > msg */
		{wire_drop::bad_length, [&] { auto b = good; b[fh + 16] = 0; b[fh + 17] = 8; return b; }()},
	};
	for (auto &c : cases) {
		/* reasons checked after the UDP checksum: a frame with a matching one */
		if (c.expect > wire_drop::bad_checksum)
			resum(c.bytes);
		rte_mbuf *m = to_mbuf(c.bytes);
		parsed_frame pf;
		EXPECT_EQ(parse_frame(m, rte_cpu_to_be_16(mesh_port), 1u << 20, &pf), c.expect)
			<< wire_drop_name(c.expect);
		rte_pktmbuf_free(m);
		/* in segments (headers read across them, not in place): the same reason */
		for (size_t seg : {size_t(20), size_t(41), size_t(fh + 5)}) {
			m = chain_of(c.bytes, seg);
			ASSERT_NE(m, nullptr);
			EXPECT_EQ(parse_frame(m, rte_cpu_to_be_16(mesh_port), 1u << 20, &pf), c.expect)
				<< wire_drop_name(c.expect) << " in segments of " << seg;
			rte_pktmbuf_free(m);
		}
	}
	/* the flags outside the fragment mask (DF, the reserved bit) are no fragment */
	for (uint8_t flags : {uint8_t(0x00), uint8_t(0x40), uint8_t(0x80), uint8_t(0xc0)}) {
		auto b = good;
		b[14 + 6] = flags;
		rte_mbuf *f = to_mbuf(b);
		parsed_frame pff;
		EXPECT_EQ(parse_frame(f, rte_cpu_to_be_16(mesh_port), 1u << 20, &pff), wire_drop::none)
			<< int(flags);
		rte_pktmbuf_free(f);
	}
	/* a runt shorter than an Ethernet header */
	rte_mbuf *m = to_mbuf(std::vector<uint8_t>(good.begin(), good.begin() + 10));
	parsed_frame pf;
	EXPECT_NE(parse_frame(m, rte_cpu_to_be_16(mesh_port), 1u << 20, &pf), wire_drop::none);
	rte_pktmbuf_free(m);
}

/* The mesh's IPv4 frame of one segment (read in place) and the same bytes in segments of
 * any size (read through rte_pktmbuf_read()): the same fields, the source MAC included when
 * the first segment ends before it. */
TEST(Wire, AFrameInSegmentsParsesAsInOne)
{
	const auto good = good_frame();
	rte_mbuf *m = to_mbuf(good);
	parsed_frame one;
	ASSERT_EQ(parse_frame(m, rte_cpu_to_be_16(mesh_port), 1u << 20, &one), wire_drop::none);
	rte_pktmbuf_free(m);
	for (size_t seg : {size_t(1), size_t(5), size_t(7), size_t(13), size_t(41), size_t(42),
			   size_t(43), size_t(fh + 1), size_t(64)}) {
		m = chain_of(good, seg);
		ASSERT_NE(m, nullptr);
		parsed_frame f;
		ASSERT_EQ(parse_frame(m, rte_cpu_to_be_16(mesh_port), 1u << 20, &f), wire_drop::none)
			<< seg;
		EXPECT_TRUE(f.src == one.src && f.dst == one.dst) << seg;
		EXPECT_EQ(std::memcmp(f.src_mac, one.src_mac, 6), 0) << seg;
		EXPECT_TRUE(f.kind == one.kind && f.msg_id == one.msg_id && f.msg_len == one.msg_len &&
			    f.frag_offset == one.frag_offset && f.frag_len == one.frag_len &&
			    f.l7_len == one.l7_len && f.correlation == one.correlation &&
			    f.payload_off == one.payload_off)
			<< seg;
		rte_pktmbuf_free(m);
	}
}

/* The UDP checksum: the port's verdict where it gives one, computed where it does not
 * (single segment and a chain split at an odd offset), zero = none over IPv4 only. */
TEST(Wire, UdpChecksumIsTheFramesOrThePorts)
{
	const auto good = good_frame();
	rte_mbuf *m = to_mbuf(good);
	EXPECT_EQ(parse(m), wire_drop::none);
	rte_pktmbuf_free(m);

	auto bad = good;
	bad[bad.size() - 1] ^= 0x40; /* a payload byte, after the checksum was made */
	m = to_mbuf(bad);
	EXPECT_EQ(parse(m), wire_drop::bad_checksum);
	m->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_GOOD; /* the port checked it: taken as it says */
	EXPECT_EQ(parse(m), wire_drop::none);
	m->ol_flags = (m->ol_flags & ~RTE_MBUF_F_RX_L4_CKSUM_MASK) | RTE_MBUF_F_RX_L4_CKSUM_NONE;
	EXPECT_EQ(parse(m), wire_drop::none);
	rte_pktmbuf_free(m);

	m = to_mbuf(good);
	m->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_BAD; /* the port's verdict wins */
	EXPECT_EQ(parse(m), wire_drop::bad_checksum);
	rte_pktmbuf_free(m);

	/* the IPv4 header checksum: the port's verdict where it gives one (a bad one drops
	 * the frame, a good or unknown one leaves it to the rest) */
	m = to_mbuf(good);
	m->ol_flags |= RTE_MBUF_F_RX_IP_CKSUM_BAD;
	EXPECT_EQ(parse(m), wire_drop::bad_checksum);
	m->ol_flags = (m->ol_flags & ~RTE_MBUF_F_RX_IP_CKSUM_MASK) | RTE_MBUF_F_RX_IP_CKSUM_GOOD;
	EXPECT_EQ(parse(m), wire_drop::none);
	rte_pktmbuf_free(m);
	m = to_mbuf(bad);
	m->ol_flags |= RTE_MBUF_F_RX_IP_CKSUM_GOOD; /* says nothing of the UDP checksum */
	EXPECT_EQ(parse(m), wire_drop::bad_checksum);
	rte_pktmbuf_free(m);

	auto none = bad; /* no checksum at all: taken over IPv4 */
	none[14 + 20 + 6] = none[14 + 20 + 7] = 0;
	m = to_mbuf(none);
	EXPECT_EQ(parse(m), wire_drop::none);
	rte_pktmbuf_free(m);

	/* a chain whose first segment ends at an odd offset into the datagram */
	for (size_t split : {size_t(fh + 1), size_t(fh + 33), good.size() - 1}) {
		for (bool corrupt : {false, true}) {
			auto b = corrupt ? bad : good;
			rte_mbuf *head = to_mbuf(std::vector<uint8_t>(b.begin(), b.begin() + split));
			rte_mbuf *tail = to_mbuf(std::vector<uint8_t>(b.begin() + split, b.end()));
			ASSERT_EQ(rte_pktmbuf_chain(head, tail), 0);
			EXPECT_EQ(parse(head), corrupt ? wire_drop::bad_checksum : wire_drop::none)
				<< split;
			rte_pktmbuf_free(head);
		}
	}

	/* IPv6: zero is not "none" */
	auto l7 = l7_request();
	rte_mbuf *f;
	ASSERT_EQ(fragment(addr(true), frame_kind::request, 5, 6, l7.data(),
			   static_cast<uint16_t>(l7.size()), body_ref{nullptr, 0}, 1500, pool(), &f, 1),
		  1);
	auto v6 = bytes_of(f);
	rte_pktmbuf_free(f);
	m = to_mbuf(v6);
	EXPECT_EQ(parse(m), wire_drop::none);
	rte_pktmbuf_free(m);
	v6[14 + 40 + 6] = v6[14 + 40 + 7] = 0;
	m = to_mbuf(v6);
	EXPECT_EQ(parse(m), wire_drop::bad_checksum);
	rte_pktmbuf_free(m);
	v6[v6.size() - 1] ^= 1;
	m = to_mbuf(v6);
	EXPECT_EQ(parse(m), wire_drop::bad_checksum);
	rte_pktmbuf_free(m);

	/* the payload's sum is kept only where the check summed it here: not on the port's
	 * word, not without a checksum */
	const auto payload_sum = [](const std::vector<uint8_t> &frame, uint64_t flags) {
		rte_mbuf *b = to_mbuf(frame);
		b->ol_flags |= flags;
		parsed_frame pf;
		EXPECT_EQ(parse_frame(b, 0, 16u << 20, &pf), wire_drop::none);
		rte_pktmbuf_free(b);
		return pf.payload_sum;
	};
	const size_t at = 14 + 20 + 8 + frame_hdr_size;
	EXPECT_EQ(payload_sum(good, 0), csum_folded(good.data() + at, good.size() - at));
	EXPECT_NE(payload_sum(good, 0), 0u);
	EXPECT_EQ(payload_sum(good, RTE_MBUF_F_RX_L4_CKSUM_GOOD), 0u);
	EXPECT_EQ(payload_sum(none, 0), 0u);
}

/* A datagram shorter than the fragment header (parse_frame()'s inline parse ends it on a
 * path of its own): its UDP checksum first, as for every frame (the port's verdict, else
 * the sum), then truncated; in one segment and in segments alike. */
TEST(Wire, AShortDatagramIsCheckedThenTruncated)
{
	const auto good = good_frame();
	auto short_frame = std::vector<uint8_t>(good.begin(), good.begin() + fh + 10);
	const uint16_t ip_len = static_cast<uint16_t>(short_frame.size() - 14), udp = ip_len - 20;
	short_frame[16] = static_cast<uint8_t>(ip_len >> 8), short_frame[17] = static_cast<uint8_t>(ip_len);
	short_frame[38] = static_cast<uint8_t>(udp >> 8), short_frame[39] = static_cast<uint8_t>(udp);
	resum(short_frame);
	auto bad = short_frame;
	bad[bad.size() - 1] ^= 0x40; /* after its checksum was made */
	auto none = bad;
	none[14 + 20 + 6] = none[14 + 20 + 7] = 0;
	const auto reason = [](const std::vector<uint8_t> &b, uint64_t flags, size_t seg) {
		rte_mbuf *m = seg ? chain_of(b, seg) : to_mbuf(b);
		EXPECT_NE(m, nullptr);
		if (!m)
			return wire_drop::count;
		m->ol_flags |= flags;
		const wire_drop d = parse(m);
		rte_pktmbuf_free(m);
		return d;
	};
	for (size_t seg : {size_t(0), size_t(20), size_t(fh + 3)}) {
		EXPECT_EQ(reason(short_frame, 0, seg), wire_drop::truncated) << seg;
		EXPECT_EQ(reason(bad, 0, seg), wire_drop::bad_checksum) << seg;
		EXPECT_EQ(reason(none, 0, seg), wire_drop::truncated) << seg;
		EXPECT_EQ(reason(bad, RTE_MBUF_F_RX_L4_CKSUM_GOOD, seg), wire_drop::truncated) << seg;
		EXPECT_EQ(reason(bad, RTE_MBUF_F_RX_L4_CKSUM_NONE, seg), wire_drop::truncated) << seg;
		EXPECT_EQ(reason(short_frame, RTE_MBUF_F_RX_L4_CKSUM_BAD, seg), wire_drop::bad_checksum)
			<< seg;
		EXPECT_EQ(reason(none, RTE_MBUF_F_RX_L4_CKSUM_BAD, seg), wire_drop::truncated) << seg;
		EXPECT_EQ(reason(bad, RTE_MBUF_F_RX_IP_CKSUM_GOOD, seg), wire_drop::bad_checksum)
			<< seg;
		EXPECT_EQ(reason(short_frame, RTE_MBUF_F_RX_IP_CKSUM_BAD, seg), wire_drop::bad_checksum)
			<< seg;
	}
}

TEST(Wire, ReassemblyAbuseIsBoundedAndCounted)
{
	const unsigned free0 = rte_mempool_avail_count(pool());
	reasm_config cfg;
	cfg.max_reassemblies = 16;
	cfg.max_per_source = 4;
	cfg.max_mbufs = 40;
	cfg.max_frags = 8;
	cfg.timeout_ms = 50;
	auto r = make_reasm("abuse", cfg);
	ASSERT_TRUE(r);
	auto l7 = l7_request();
	auto body = random_body(20000, 3);
	auto frames_of = [&](uint32_t msg_id, uint16_t src_port, size_t body_len, uint64_t corr = 1) {
		std::vector<rte_mbuf *> f(64);
		link_addr a = addr(false);
		a.src.port = src_port;
		uint16_t n = fragment(a, frame_kind::request, msg_id, corr, l7.data(),
				      static_cast<uint16_t>(l7.size()),
				      body_ref{body.data(), static_cast<uint32_t>(body_len)}, 1500, pool(),
				      f.data(), 64);
		f.resize(n);
		return f;
	};
	auto drop_all = [](std::vector<rte_mbuf *> &v) {
		for (rte_mbuf *m : v)
			rte_pktmbuf_free(m);
		v.clear();
	};
	const uint64_t t0 = rte_rdtsc();

	/* per-source cap: 5 incomplete messages from one source, the 5th refused */
	for (uint32_t id = 1; id <= 5; id++) {
		auto f = frames_of(id, 1000, 3000); /* 3 frames each */
		std::vector<rte_mbuf *> first = {f[0]};
		feed(*r, first, t0);
		f.erase(f.begin());
		drop_all(f);
	}
	EXPECT_EQ(drops(*r, wire_drop::source_limit), 1u);
	EXPECT_EQ(r->in_flight(), 4u);

	/* mismatch: a fragment of message 1 with a different correlation is dropped alone */
	{
		auto f = frames_of(1, 1000, 3000, 99);
		std::vector<rte_mbuf *> second = {f[1]};
		feed(*r, second, t0);
		f.erase(f.begin() + 1);
		drop_all(f);
	}
	EXPECT_EQ(drops(*r, wire_drop::mismatch), 1u);
	EXPECT_EQ(r->in_flight(), 4u);

	/* overlap: same message id, different fragmentation (smaller MTU) -> whole message dropped */
	{
		std::vector<rte_mbuf *> f(64);
		link_addr a = addr(false);
		a.src.port = 1000;
		uint16_t n = fragment(a, frame_kind::request, 2, 1, l7.data(),
				      static_cast<uint16_t>(l7.size()), body_ref{body.data(), 3000},
				      1000, pool(), f.data(), 64);
		f.resize(n);
		std::vector<rte_mbuf *> one = {f[0]}; /* [0, 940) over [0, 1440): overlap */
		/* identical start but a different length is an overlap, not a duplicate */
		feed(*r, one, t0);
		f.erase(f.begin());
		drop_all(f);
	}
	EXPECT_EQ(drops(*r, wire_drop::overlap), 1u);
	EXPECT_EQ(r->in_flight(), 3u);

	/* duplicates are ignored */
	{
		auto f = frames_of(3, 1000, 3000);
		std::vector<rte_mbuf *> dup = {f[0]};
		feed(*r, dup, t0);
		f.erase(f.begin());
		drop_all(f);
	}
	EXPECT_EQ(r->stats().duplicates.get(), 1u);

	/* too many fragments: a 20 kB message at this MTU needs 14 > max_frags 8 */
	{
		auto f = frames_of(50, 2000, 20000);
		ASSERT_GT(f.size(), 8u);
		feed(*r, f, t0);
	}
	EXPECT_EQ(drops(*r, wire_drop::too_many_frags), 1u);

	/* table full: 16 slots; flood from many sources */
	uint64_t before_full = drops(*r, wire_drop::table_full);
	for (uint16_t p = 3000; p < 3030; p++) {
		auto f = frames_of(p, p, 3000);
		std::vector<rte_mbuf *> first = {f[0]};
		link_addr a = addr(false);
		(void)a;
		feed(*r, first, t0);
		f.erase(f.begin());
		drop_all(f);
	}
	EXPECT_GT(drops(*r, wire_drop::table_full) + drops(*r, wire_drop::source_limit),
		  before_full);
	EXPECT_LE(r->in_flight(), cfg.max_reassemblies);
	EXPECT_LE(r->mbufs_held(), cfg.max_mbufs);

	/* timeout: everything in flight expires */
	uint32_t held = r->in_flight();
	EXPECT_EQ(r->expire(t0 + rte_get_tsc_hz()), held);
	EXPECT_EQ(drops(*r, wire_drop::timeout), held);
	EXPECT_EQ(r->in_flight(), 0u);
	EXPECT_EQ(r->mbufs_held(), 0u);
	EXPECT_EQ(rte_mempool_avail_count(pool()), free0); /* memory back to idle */

	/* after the flood, service resumes */
	auto f = frames_of(999, 4000, 3000);
	auto done = feed(*r, f, rte_rdtsc());
	ASSERT_EQ(done.size(), 1u);
	rte_pktmbuf_free(done[0].chain);
}

TEST(Wire, SingleFrameMessagesTakeNoReassemblySlot)
{
	/* one slot, one message per source: both taken by a partial message */
	reasm_config cfg;
	cfg.max_reassemblies = 1;
	cfg.max_per_source = 1;
	auto r = make_reasm("single", cfg);
	ASSERT_TRUE(r);
	auto l7 = l7_request();
	auto body = random_body(3000, 5);
	std::vector<rte_mbuf *> f(8);
	uint16_t n = fragment(addr(false), frame_kind::request, 1, 1, l7.data(),
			      static_cast<uint16_t>(l7.size()), body_ref{body.data(), 3000}, 1500,
			      pool(), f.data(), 8);
	ASSERT_EQ(n, 3u);
	EXPECT_TRUE(feed(*r, {f[0]}, rte_rdtsc()).empty());
	EXPECT_EQ(r->in_flight(), 1u);
	/* whole messages in one frame from the same source still pass, byte-exact */
	for (uint32_t id = 10; id < 20; id++) {
		std::vector<rte_mbuf *> one(1);
		ASSERT_EQ(fragment(addr(false), frame_kind::request, id, id, l7.data(),
				   static_cast<uint16_t>(l7.size()), body_ref{body.data(), id * 10},
				   1500, pool(), one.data(), 1),
			  1u);
		auto done = feed(*r, one, rte_rdtsc());
		ASSERT_EQ(done.size(), 1u);
		EXPECT_EQ(done[0].msg_id, id);
		EXPECT_EQ(done[0].correlation, id);
		EXPECT_EQ(done[0].msg_len, l7.size() + id * 10);
		EXPECT_EQ(done[0].chain->pkt_len, done[0].msg_len);
		EXPECT_EQ(std::memcmp(rte_pktmbuf_mtod_offset(done[0].chain, uint8_t *, l7.size()),
				      body.data(), id * 10),
			  0);
		rte_pktmbuf_free(done[0].chain);
	}
	EXPECT_EQ(r->in_flight(), 1u);
	EXPECT_EQ(drops(*r, wire_drop::table_full) + drops(*r, wire_drop::source_limit), 0u);
	/* the partial message completes as before */
	auto done = feed(*r, {f[1], f[2]}, rte_rdtsc());
	ASSERT_EQ(done.size(), 1u);
	EXPECT_EQ(done[0].msg_len, l7.size() + 3000);
	rte_pktmbuf_free(done[0].chain);
	EXPECT_EQ(r->in_flight(), 0u);
}

TEST(Wire, AWholeFrameTakenWithoutInputIsInputsMessage)
{
	/* port RX's common case: whole_frame(), trim_whole() and count_whole() leave the
	 * mbuf and the counters as input() leaves them, over IPv4 and IPv6 */
	auto a = make_reasm("whole_a"), b = make_reasm("whole_b");
	ASSERT_TRUE(a && b);
	auto l7 = l7_request();
	auto body = random_body(600, 9);
	uint64_t bytes = 0;
	for (bool v6 : {false, true}) {
		for (uint32_t len : {0u, 1u, 77u, 600u}) {
			rte_mbuf *f[2] = {};
			for (rte_mbuf *&x : f)
				ASSERT_EQ(fragment(addr(v6), frame_kind::request, 5, 6, l7.data(),
						   static_cast<uint16_t>(l7.size()),
						   body_ref{body.data(), len}, 1500, pool(), &x, 1),
					  1u);
			parsed_frame pf;
			ASSERT_EQ(parse_frame(f[0], rte_cpu_to_be_16(mesh_port), 16u << 20, &pf),
				  wire_drop::none);
			ASSERT_TRUE(reassembler::whole_frame(f[0], pf));
			message msg;
			ASSERT_EQ(a->input(f[0], pf, rte_rdtsc(), &msg), reasm_result::complete);
			ASSERT_EQ(parse_frame(f[1], rte_cpu_to_be_16(mesh_port), 16u << 20, &pf),
				  wire_drop::none);
			reassembler::trim_whole(f[1], pf);
			EXPECT_EQ(msg.chain, f[0]);
			EXPECT_EQ(f[1]->data_off, f[0]->data_off);
			EXPECT_EQ(f[1]->data_len, f[0]->data_len);
			EXPECT_EQ(f[1]->pkt_len, f[0]->pkt_len);
			EXPECT_EQ(f[1]->nb_segs, f[0]->nb_segs);
			EXPECT_EQ(f[1]->hash.usr, f[0]->hash.usr);
			EXPECT_EQ(bytes_of(f[1]), bytes_of(f[0]));
			bytes += pf.msg_len;
			rte_pktmbuf_free(f[0]);
			rte_pktmbuf_free(f[1]);
		}
	}
	b->count_whole(8, bytes);
	EXPECT_EQ(b->stats().fragments.get(), a->stats().fragments.get());
	EXPECT_EQ(b->stats().messages.get(), a->stats().messages.get());
	EXPECT_EQ(b->stats().bytes.get(), a->stats().bytes.get());
	EXPECT_EQ(a->in_flight(), 0u);
	/* a frame of a longer message, or in two segments, is not one: input()'s */
	rte_mbuf *f[3] = {};
	auto big = random_body(3000, 3);
	ASSERT_EQ(fragment(addr(false), frame_kind::request, 7, 7, l7.data(),
			   static_cast<uint16_t>(l7.size()), body_ref{big.data(), 3000}, 1500,
			   pool(), f, 3),
		  3u);
	for (rte_mbuf *x : f) {
		parsed_frame pf;
		ASSERT_EQ(parse_frame(x, rte_cpu_to_be_16(mesh_port), 16u << 20, &pf),
			  wire_drop::none);
		EXPECT_FALSE(reassembler::whole_frame(x, pf));
		rte_pktmbuf_free(x);
	}
	rte_mbuf *one = nullptr;
	ASSERT_EQ(fragment(addr(false), frame_kind::request, 8, 8, l7.data(),
			   static_cast<uint16_t>(l7.size()), body_ref{big.data(), 100}, 1500, pool(),
			   &one, 1),
		  1u);
	std::vector<uint8_t> raw(rte_pktmbuf_mtod(one, uint8_t *),
				 rte_pktmbuf_mtod(one, uint8_t *) + one->data_len);
	rte_pktmbuf_free(one);
	rte_mbuf *two = chain_of(raw, 60);
	ASSERT_NE(two, nullptr);
	parsed_frame pf;
	ASSERT_EQ(parse_frame(two, rte_cpu_to_be_16(mesh_port), 16u << 20, &pf), wire_drop::none);
	EXPECT_FALSE(reassembler::whole_frame(two, pf));
	rte_pktmbuf_free(two);
}

TEST(Wire, MemoryLimitHoldsAcrossMessages)
{
	reasm_config cfg;
	cfg.max_mbufs = 10;
	cfg.max_per_source = 100;
	auto r = make_reasm("mem", cfg);
	auto l7 = l7_request();
	auto body = random_body(200000, 4);
	std::vector<rte_mbuf *> f(256);
	uint16_t n = fragment(addr(true), frame_kind::response, 1, 1, l7.data(),
			      static_cast<uint16_t>(l7.size()), body_ref{body.data(), 200000}, 1500,
			      pool(), f.data(), 256);
	f.resize(n);
	auto done = feed(*r, f, rte_rdtsc());
	EXPECT_TRUE(done.empty());
	EXPECT_EQ(r->mbufs_held(), 10u);
	EXPECT_EQ(drops(*r, wire_drop::memory_limit), n - 10u);
	r->flush();
	EXPECT_EQ(r->mbufs_held(), 0u);
}

/* A reassembler over a small real pool, bounded as the node bounds its workers' for that pool
 * (reasm_config_for_pool): one source sending only later fragments, of messages that never
 * complete, is held to its share and then dropped (`source_limit`), while the pool keeps
 * free mbufs for RX refills; another source still reassembles; an open message grows no
 * further than its source's share; every release (complete, refusal, expiry, flush) gives
 * the source's count back. Before the bound the node's reassembler (max_mbufs 32768) took
 * the whole pool. */
TEST(Wire, OneSourceOfFragmentsThatNeverCompleteCannotTakeThePool)
{
	constexpr unsigned nb = 1023;
	rte_mempool *mp = rte_pktmbuf_pool_create("wire_test_flood", nb, 0, 0,
						  RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	ASSERT_NE(mp, nullptr);
	const reasm_config cfg = reasm_config_for_pool(nb, 1);
	EXPECT_EQ(cfg.max_mbufs, nb / 4);
	EXPECT_EQ(cfg.max_mbufs_per_source, cfg.max_mbufs / 2);
	auto r = make_reasm("flood", cfg);
	ASSERT_TRUE(r);
	auto l7 = l7_request();
	auto body = random_body(300000, 11);
	/* message msg_id of body_len bytes from 10.0.0.<host> (fewer frames: the pool ran dry) */
	auto frames_of = [&](uint8_t host, uint32_t msg_id, uint32_t body_len) {
		std::vector<rte_mbuf *> f(256);
		link_addr a = addr(false);
		a.src.ip[15] = host;
		uint16_t n = fragment(a, frame_kind::request, msg_id, msg_id, l7.data(),
				      static_cast<uint16_t>(l7.size()), body_ref{body.data(), body_len},
				      1500, mp, f.data(), 256);
		f.resize(n);
		return f;
	};
	/* every frame of a message but its first (freed): it never completes */
	auto feed_later = [&](std::vector<rte_mbuf *> f, uint64_t now) {
		rte_pktmbuf_free(f[0]);
		f.erase(f.begin());
		EXPECT_TRUE(feed(*r, f, now).empty());
	};
	const uint32_t per = frames_needed(static_cast<uint32_t>(l7.size()) + 40000, 1500, false);
	const uint32_t share = cfg.max_mbufs_per_source;
	const uint64_t t0 = rte_rdtsc();

	/* the flood: 28 frames a message, up to max_per_source messages (64 x 27 held frames,
	 * more than the pool) */
	ASSERT_EQ(per, 28u);
	for (uint32_t id = 1; id <= cfg.max_per_source; id++) {
		auto f = frames_of(1, id, 40000);
		ASSERT_EQ(f.size(), per) << "message " << id << ": the pool ran dry, "
					 << rte_mempool_avail_count(mp) << " free";
		feed_later(f, t0);
	}
	EXPECT_EQ(r->mbufs_held(), share);
	EXPECT_GT(drops(*r, wire_drop::source_limit), 0u);
	EXPECT_EQ(drops(*r, wire_drop::memory_limit), 0u);
	EXPECT_EQ(rte_mempool_avail_count(mp), nb - share);
	/* the messages it holds: the last one cut short when the share filled (a fragment
	 * added to an open message is bounded as a new message is) */
	const uint32_t open1 = (share + per - 2) / (per - 1);
	EXPECT_EQ(r->in_flight(), open1);

	/* another source reassembles meanwhile */
	auto done = feed(*r, frames_of(2, 1, 40000), t0);
	ASSERT_EQ(done.size(), 1u);
	EXPECT_EQ(done[0].msg_len, l7.size() + 40000);
	rte_pktmbuf_free(done[0].chain);
	/* and its count went with the message: one open message of 200 frames holds exactly
	 * its source's share, its further fragments dropped */
	const uint64_t limited = drops(*r, wire_drop::source_limit);
	auto big = frames_of(2, 2, 286000);
	ASSERT_GT(big.size(), share + 1u);
	const uint64_t big_later = big.size() - 1;
	feed_later(big, t0);
	EXPECT_EQ(r->mbufs_held(), 2 * share);
	EXPECT_EQ(drops(*r, wire_drop::source_limit) - limited, big_later - share);
	EXPECT_EQ(r->in_flight(), open1 + 1);

	/* the global share holds over sources (a third one gets its last mbuf) */
	feed_later(frames_of(3, 1, 40000), t0);
	EXPECT_EQ(r->mbufs_held(), cfg.max_mbufs);
	EXPECT_GT(drops(*r, wire_drop::memory_limit), 0u);
	EXPECT_GE(rte_mempool_avail_count(mp), nb - cfg.max_mbufs);

	/* expiry gives every count back: the same source holds its whole share again */
	r->expire(t0 + rte_get_tsc_hz());
	EXPECT_EQ(r->in_flight(), 0u);
	EXPECT_EQ(r->mbufs_held(), 0u);
	EXPECT_EQ(rte_mempool_avail_count(mp), nb);
	const uint64_t t1 = t0 + rte_get_tsc_hz();
	for (uint32_t id = 100; id < 110; id++)
		feed_later(frames_of(1, id, 40000), t1);
	EXPECT_EQ(r->mbufs_held(), share);

	/* a refusal frees what its message held (all but its first frame: `whole`), and the
	 * source may hold as much again */
	auto again = frames_of(1, 100, 40000);
	const uint32_t before = r->mbufs_held();
	parsed_frame pf;
	ASSERT_EQ(parse_frame(again[0], rte_cpu_to_be_16(mesh_port), 16u << 20, &pf),
		  wire_drop::none);
	EXPECT_EQ(r->refuse(again[0], pf, t1), reasm_refusal::whole);
	EXPECT_EQ(r->mbufs_held(), before - (per - 1));
	again.erase(again.begin());
	for (rte_mbuf *m : again)
		rte_pktmbuf_free(m);
	feed_later(frames_of(1, 200, 40000), t1);
	EXPECT_EQ(r->mbufs_held(), share);

	r->flush();
	EXPECT_EQ(r->mbufs_held(), 0u);
	EXPECT_EQ(rte_mempool_avail_count(mp), nb);
	r.reset();
	rte_mempool_free(mp);
}

namespace {

/* Refuses a frame (the first of its message) as port RX does when its service is saturated. */
reasm_refusal refuse(reassembler &r, rte_mbuf *f, uint64_t now)
{
	parsed_frame pf;
	EXPECT_EQ(parse_frame(f, rte_cpu_to_be_16(mesh_port), 16u << 20, &pf), wire_drop::none);
	EXPECT_EQ(pf.frag_offset, 0u);
	return r.refuse(f, pf, now);
}

} // namespace

/* A request refused at its first frame leaves a tombstone: its later frames are dropped and
 * counted, not reassembled; a repeat of its first frame is no second refusal; the tombstone
 * goes once every byte came, or at the timeout (no timeout drop: the request was answered);
 * tombstones are bounded by the table and the per-source cap like reassemblies. */
TEST(Wire, RefusedMessagesLeaveBoundedTombstones)
{
	const unsigned free0 = rte_mempool_avail_count(pool());
	reasm_config cfg;
	cfg.max_reassemblies = 4;
	cfg.max_per_source = 3;
	cfg.timeout_ms = 50;
	auto r = make_reasm("tomb", cfg);
	ASSERT_TRUE(r);
	auto l7 = l7_request();
	auto body = random_body(3000, 6);
	auto frames_of = [&](uint32_t msg_id, uint8_t host) { /* from 10.0.0.<host> */
		std::vector<rte_mbuf *> f(8);
		link_addr a = addr(false);
		a.src.ip[15] = host;
		uint16_t n = fragment(a, frame_kind::request, msg_id, msg_id, l7.data(),
				      static_cast<uint16_t>(l7.size()), body_ref{body.data(), 3000},
				      1500, pool(), f.data(), 8);
		f.resize(n);
		return f;
	};
	auto copy = [](const rte_mbuf *m) {
		rte_mbuf *c = rte_pktmbuf_copy(m, pool(), 0, UINT32_MAX);
		EXPECT_NE(c, nullptr);
		return c;
	};
	const uint64_t t0 = rte_rdtsc();

	/* in order: first frame refused, the two others dropped, the tombstone then gone */
	auto a = frames_of(1, 1);
	ASSERT_EQ(a.size(), 3u);
	rte_mbuf *a0 = copy(a[0]);
	EXPECT_EQ(refuse(*r, a[0], t0), reasm_refusal::tombstone);
	EXPECT_EQ(r->in_flight(), 1u);
	EXPECT_EQ(r->mbufs_held(), 0u);
	EXPECT_EQ(refuse(*r, a0, t0), reasm_refusal::repeat) << "one refusal per request";
	EXPECT_TRUE(feed(*r, {a[1], a[2]}, t0).empty());
	EXPECT_EQ(drops(*r, wire_drop::refused_frag), 2u);
	EXPECT_EQ(r->in_flight(), 0u) << "every byte came: the tombstone is gone";

	/* out of order: the later frames are held first, then freed by the refusal */
	auto b = frames_of(2, 1);
	EXPECT_TRUE(feed(*r, {b[2]}, t0).empty());
	EXPECT_EQ(r->mbufs_held(), 1u);
	EXPECT_EQ(refuse(*r, b[0], t0), reasm_refusal::tombstone);
	EXPECT_EQ(r->mbufs_held(), 0u);
	EXPECT_TRUE(feed(*r, {b[1]}, t0).empty());
	EXPECT_EQ(drops(*r, wire_drop::refused_frag), 4u) << "the held one counts too";
	EXPECT_EQ(r->in_flight(), 0u);
	/* every other frame already here: answered, nothing left to wait for */
	auto c = frames_of(3, 1);
	EXPECT_TRUE(feed(*r, {c[1], c[2]}, t0).empty());
	EXPECT_EQ(refuse(*r, c[0], t0), reasm_refusal::whole);
	EXPECT_EQ(drops(*r, wire_drop::refused_frag), 6u);
	EXPECT_EQ(r->in_flight(), 0u);
	EXPECT_EQ(r->mbufs_held(), 0u);

	/* bounded: 3 per source, 4 in all; past that the refusal is still answered (no_room)
	 * and its later frames are what they are without it: fragments of a message the
	 * reassembler has no room for */
	std::vector<std::vector<rte_mbuf *>> rest;
	for (uint32_t id = 10; id < 14; id++) {
		auto f = frames_of(id, 1);
		EXPECT_EQ(refuse(*r, f[0], t0),
			  id < 13 ? reasm_refusal::tombstone : reasm_refusal::no_room) << id;
		f.erase(f.begin());
		rest.push_back(f);
	}
	auto other = frames_of(20, 2);
	EXPECT_EQ(refuse(*r, other[0], t0), reasm_refusal::tombstone);
	auto full = frames_of(21, 3);
	EXPECT_EQ(refuse(*r, full[0], t0), reasm_refusal::no_room) << "the table is full";
	EXPECT_EQ(r->in_flight(), cfg.max_reassemblies);
	EXPECT_EQ(r->stats().tombstone_no_room.get(), 2u);
	EXPECT_TRUE(feed(*r, {rest[3][0], rest[3][1], full[1], full[2]}, t0).empty());
	EXPECT_EQ(drops(*r, wire_drop::source_limit) + drops(*r, wire_drop::table_full), 4u)
		<< "no tombstone, no slot: later frames dropped as any fragment without room";
	EXPECT_EQ(r->mbufs_held(), 0u);

	/* expiry: the tombstones go without a timeout drop (their requests were answered) */
	const uint64_t timeouts = drops(*r, wire_drop::timeout);
	EXPECT_EQ(r->expire(t0 + rte_get_tsc_hz()), 4u);
	EXPECT_EQ(drops(*r, wire_drop::timeout), timeouts);
	EXPECT_EQ(r->in_flight(), 0u);
	/* a late frame of an expired tombstone is an ordinary partial message again */
	EXPECT_TRUE(feed(*r, {rest[0][0]}, t0 + rte_get_tsc_hz()).empty());
	EXPECT_EQ(r->in_flight(), 1u);
	r->flush();
	for (size_t i = 0; i < 3; i++)
		for (size_t k = i == 0 ? 1 : 0; k < rest[i].size(); k++)
			rte_pktmbuf_free(rest[i][k]);
	rte_pktmbuf_free(other[1]);
	rte_pktmbuf_free(other[2]);
	EXPECT_EQ(r->stats().tombstones.get(), 7u);
	EXPECT_EQ(r->mbufs_held(), 0u);
	EXPECT_EQ(rte_mempool_avail_count(pool()), free0);
}

/* The frames fragment() makes, byte for byte, for messages of one frame and of several
 * (IPv4 and IPv6; no body, a body copied from memory or from received segments; odd and
 * even header lengths): an FNV-1a of each case's frames, taken from the code before its
 * one-frame path (frame.cc, "One frame") was written. A change to what goes on the wire
 * must change this table on purpose. */
TEST(Wire, FramesAreTheSameBytesAsBefore)
{
	static constexpr uint32_t expected[] = {
		0x8e32d7c8, 0xf539c001, 0x7d268fef, 0x5f5afe18, 0x39841aee, 0x63a1678f,
		0x73a30851, 0x6db5700f, 0x92b901ec, 0xf1f2e738, 0x42a16930, 0x77413778,
		0x3e19e7a3, 0xa79ed3fb, 0xe7919953, 0xb0a6bfa6, 0xd0cf13bb, 0xa8c34f8b,
		0xfbf70db9, 0xb168d515, 0x60769737, 0x98319f22, 0x28b9d44c, 0x7a9910ee,
		0x429f065f, 0x87af5da7, 0x83b49221, 0xbc2b4d28, 0x5dc6ac04, 0x9567e7cb,
		0xaafd9dcf, 0x8cc314d2, 0x1255f38d, 0xa7cd8d58, 0x65120d1e, 0x958c103f,
		0x1f78c82d, 0x5389474e, 0x5ea490b0, 0x77a03265, 0x3d389eec, 0x6a6a82e5,
		0x7078ed24, 0xd00d6800, 0x76d7b815, 0xabec6ac7, 0xddc796b1, 0x891edc15,
		0xa008388c, 0xb21e5aae, 0x95d3bc9d, 0xd02563d3, 0xfaf02ce8, 0xa53018bc,
		0xed6b18b4, 0xcf3e3311, 0xf56e8283, 0x8ce4f5ef, 0xfed83fbc, 0xff7971ad,
		0x1c4426cd, 0x8ea3383d, 0x9bdeca32, 0x398b5674, 0x9478f659, 0x938bfe61,
		0x1b3f1b99, 0xb4635c33, 0x4162953c, 0x4f4d6232, 0xfd3d9539, 0xefd684c2,
		0xc7a3fe11, 0xce958b1c, 0xdd9fab5c, 0xdc4239b5, 0xc812bc29, 0xba1a29c8,
		0x0af807ca, 0xe79310dd, 0xdb7f8205, 0x63972b9d, 0xebe60e5d, 0x7284f82a,
		0xf3282fad, 0x14fe7d12, 0x13158b6b, 0xd28ab914,
	};
	std::vector<uint32_t> got;
	std::string cases;
	const unsigned free0 = rte_mempool_avail_count(pool());
	uint32_t id = 0x01020304;
	for (bool v6 : {false, true})
		for (uint16_t mtu : {uint16_t(1500), uint16_t(256)})
			for (size_t path_len : {7u, 8u})
				for (int from : {0, 1, 2}) /* no body, from memory, from segments */
					for (size_t size : {1u, 2u, 151u, 1383u, 3001u}) {
						const size_t body_len = from == 0 ? 0 : size;
						if (from == 0 && size != 1)
							continue;
						auto l7 = l7_request(path_len);
						auto body = random_body(body_len, static_cast<unsigned>(size));
						rte_mbuf *head = nullptr;
						body_ref b;
						b.len = static_cast<uint32_t>(body_len);
						if (from == 1) {
							b.data = body.data();
						} else if (from == 2) {
							/* 3 bytes before the body, segments of 997 */
							std::vector<uint8_t> in(3 + body_len, 0x5a);
							std::copy(body.begin(), body.end(), in.begin() + 3);
							head = chain_of(in, 997);
							ASSERT_NE(head, nullptr);
							b.seg = head;
							b.seg_off = 3;
						}
						std::vector<rte_mbuf *> frames(64);
						const frame_kind kind = id & 1 ? frame_kind::request
									       : frame_kind::response;
						const uint16_t n = fragment(
							addr(v6), kind, id, 0x8877665544332211ull + id, l7.data(),
							static_cast<uint16_t>(l7.size()), b, mtu, pool(),
							frames.data(), static_cast<uint16_t>(frames.size()));
						if (head)
							rte_pktmbuf_free(head);
						ASSERT_EQ(n, frames_needed(static_cast<uint32_t>(l7.size() + body_len),
									   mtu, v6));
						uint32_t h = fnv1a_basis;
						for (uint16_t i = 0; i < n; i++) {
							auto bytes = bytes_of(frames[i]);
							h = fnv1a(bytes.data(), bytes.size(), h);
							rte_pktmbuf_free(frames[i]);
						}
						got.push_back(h);
						cases += "v6 " + std::to_string(v6) + " mtu " + std::to_string(mtu) +
							 " path " + std::to_string(path_len) + " from " +
							 std::to_string(from) + " size " + std::to_string(body_len) +
							 " frames " + std::to_string(n) + "\n";
						id += 0x01010101;
					}
	EXPECT_EQ(rte_mempool_avail_count(pool()), free0);
	std::string table;
	for (uint32_t h : got) {
		char s[16];
		std::snprintf(s, sizeof(s), "0x%08x, ", h);
		table += s;
	}
	ASSERT_EQ(got.size(), std::size(expected)) << cases << table;
	for (size_t i = 0; i < got.size(); i++)
		EXPECT_EQ(got[i], expected[i]) << "case " << i << " of\n" << cases << table;
}

/* An L7 header framed from its sum taken once (l7_summed: the node's error answers) gives
 * the frames fragment() makes of it read again: one frame or several, IPv4 or IPv6, odd and
 * even lengths, in a burst's stash and one at a time; what fragment() refuses it refuses. */
TEST(Wire, AHeaderFramedFromItsSumIsTheSameFrames)
{
	const unsigned free0 = rte_mempool_avail_count(pool());
	uint32_t id = 0x0badcafe;
	for (bool burst : {false, true}) {
		mbuf_stash stash(pool());
		if (burst)
			stash.begin();
		for (bool v6 : {false, true})
			for (uint16_t mtu : {uint16_t(1500), uint16_t(128), uint16_t(20)})
				for (size_t path_len : {1u, 2u, 7u, 8u, 300u}) {
					auto l7 = l7_request(path_len);
					std::vector<rte_mbuf *> plain(64), summed(64);
					const uint16_t len = static_cast<uint16_t>(l7.size());
					const uint16_t n = fragment(addr(v6), frame_kind::response, id, id * 3ull,
								    l7.data(), len, body_ref{}, mtu, stash,
								    plain.data(), 64);
					const uint16_t k = fragment(addr(v6), frame_kind::response, id, id * 3ull,
								    l7_summed{l7.data(), len, l7_sum(l7.data(), len)},
								    mtu, stash, summed.data(), 64);
					const std::string what = "v6 " + std::to_string(v6) + " mtu " +
								  std::to_string(mtu) + " header " +
								  std::to_string(len);
					ASSERT_EQ(n, k) << what;
					EXPECT_EQ(n, mtu == 20 ? 0u : frames_needed(len, mtu, v6)) << what;
					for (uint16_t i = 0; i < n; i++) {
						EXPECT_EQ(bytes_of(plain[i]), bytes_of(summed[i])) << what;
						rte_pktmbuf_free(plain[i]);
						rte_pktmbuf_free(summed[i]);
					}
					id++;
				}
		stash.end();
	}
	/* a header shorter than the L7 minimum, or a link of mixed families: nothing */
	const uint8_t tiny[8] = {};
	rte_mbuf *out[4];
	mbuf_stash stash(pool());
	EXPECT_EQ(fragment(addr(false), frame_kind::response, 1, 1, l7_summed{tiny, 8, 0}, 1500,
			   stash, out, 4),
		  0u);
	link_addr mixed = addr(false);
	mixed.dst = addr(true).dst;
	auto l7 = l7_request();
	EXPECT_EQ(fragment(mixed, frame_kind::response, 1, 1,
			   l7_summed{l7.data(), static_cast<uint16_t>(l7.size()), 0}, 1500, stash, out, 4),
		  0u);
	EXPECT_EQ(rte_mempool_avail_count(pool()), free0);
}

/* A header that grew in place (fields appended, as the sidecar adds trace ids to a relayed
 * request): its sum kept from the old one and the appended bytes' is its bytes' sum, at
 * every parity of the old length and of what was added; and the frames made from it, with
 * a body, are the bytes fragment() makes reading the header. */
TEST(Wire, AGrownHeadersSumIsItsBytesSum)
{
	mbuf_stash stash(pool());
	uint32_t id = 77;
	const std::vector<uint8_t> body = [] {
		std::vector<uint8_t> b(33);
		for (size_t i = 0; i < b.size(); i++)
			b[i] = static_cast<uint8_t>(0xf0 - 7 * i);
		return b;
	}();
	for (size_t path_len = 1; path_len <= 12; path_len++)
		for (size_t value_len : {0u, 1u, 2u, 5u, 36u, 55u}) {
			std::vector<uint8_t> l7 = l7_request(path_len);
			const uint16_t old_len = static_cast<uint16_t>(l7.size());
			const uint16_t old_nb = static_cast<uint16_t>(l7[6] << 8 | l7[7]);
			const uint16_t old_sum = l7_sum(l7.data(), old_len);
			l7.resize(512);
			wire::l7_writer w = wire::l7_writer::extend(l7.data(), old_len, l7.size());
			w.field("x-a", std::string(value_len, 'v'));
			w.field("traceparent", std::string(value_len + 3, '\x7e'));
			const uint16_t new_len = static_cast<uint16_t>(w.finish());
			ASSERT_GT(new_len, old_len);
			const uint32_t added = csum_bytes(reinterpret_cast<const char *>(l7.data()) + old_len,
							  new_len - old_len);
			const uint16_t got = l7_sum_grown(old_sum, old_len, old_nb, new_len,
							  static_cast<uint16_t>(old_nb + 2), added);
			const std::string what = "header " + std::to_string(old_len) + " + " +
						 std::to_string(new_len - old_len);
			EXPECT_EQ(got % 0xffff, l7_sum(l7.data(), new_len) % 0xffff) << what;
			body_ref b;
			b.data = body.data();
			b.len = static_cast<uint32_t>(body.size());
			rte_mbuf *plain[4], *summed[4];
			ASSERT_EQ(fragment(addr(path_len & 1), frame_kind::request, id, id * 5ull,
					   l7.data(), new_len, b, 1500, stash, plain, 4),
				  1u) << what;
			ASSERT_EQ(fragment(addr(path_len & 1), frame_kind::request, id, id * 5ull,
					   l7_summed{l7.data(), new_len, got}, b, 1500, stash, summed, 4),
				  1u) << what;
			EXPECT_EQ(bytes_of(plain[0]), bytes_of(summed[0])) << what;
			rte_pktmbuf_free(plain[0]);
			rte_pktmbuf_free(summed[0]);
			id++;
		}
}

/* A header whose deadline_ms was written in place (as the sidecar gives a request leaving
 * for another node the deadline it holds it to): its sum from the old one and the two values
 * is its bytes' sum, for values at the field's ends and across its carries, at both parities
 * of the header's length. */
TEST(Wire, AChangedDeadlinesSumIsItsBytesSum)
{
	const uint32_t values[] = {0, 1, 5, 255, 256, 0xffff, 0x10000, 0xfffe0001u, 0x7fffffffu,
				   0xfffffffeu, 0xffffffffu};
	for (size_t path_len : {1u, 2u}) {
		for (uint32_t from : values) {
			for (uint32_t to : values) {
				std::vector<uint8_t> l7 = l7_request(path_len);
				l7_set_deadline(l7.data(), from);
				const uint16_t len = static_cast<uint16_t>(l7.size());
				const uint16_t old_sum = l7_sum(l7.data(), len);
				l7_set_deadline(l7.data(), to);
				EXPECT_EQ(l7_sum_changed(old_sum, from, to) % 0xffff,
					  l7_sum(l7.data(), len) % 0xffff)
					<< len << " bytes, " << from << " -> " << to;
			}
		}
	}
}

/* A one's-complement fold as RFC 1071 writes it, a step at a time until nothing is left
 * above 16 bits: what csum_fold()'s two steps must equal. */
static uint16_t loop_fold(uint64_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return static_cast<uint16_t>(s);
}

/* csum_raw() is __rte_raw_cksum() folded, at every length and alignment. */
TEST(Wire, TheWordSumIsDpdksSum)
{
	const std::vector<uint8_t> bytes = random_body(600, 99);
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n <= 520; n++) {
			const uint16_t want = static_cast<uint16_t>(
				__rte_raw_cksum_reduce(__rte_raw_cksum(bytes.data() + off, n, 0)));
			ASSERT_EQ(csum_fold(csum_raw(bytes.data() + off, n)), want)
				<< "offset " << off << " length " << n;
		}
	const std::vector<uint8_t> ones(64, 0xff);
	EXPECT_EQ(csum_fold(csum_raw(ones.data(), ones.size())), 0xffff);
	/* csum_raw64() onto a sum (parse_frame()'s heads onto its payload's): the 64-bit sum
	 * folds (both folds) to DPDK's sum plus the start, and is 0 only for zeros */
	for (uint64_t start : {0ull, 1ull, 0x1100ull, 0xffffffffffffffffull, 0x8000000000000001ull})
		for (size_t off = 0; off < 8; off++)
			for (size_t n = 0; n <= 520; n++) {
				const uint64_t dpdk = __rte_raw_cksum(bytes.data() + off, n, 0);
				const uint64_t s = csum_raw64(bytes.data() + off, n, start);
				const uint16_t want = loop_fold(csum_add64(start, dpdk));
				ASSERT_EQ(csum_fold(s), want) << "start " << start << " length " << n;
			}
	const std::vector<uint8_t> zeros(64, 0);
	for (size_t n = 0; n <= 64; n++)
		ASSERT_EQ(csum_raw64(zeros.data(), n), 0u) << n;
	EXPECT_NE(csum_raw64(ones.data(), 64, 1), 0u);
	/* every word carries out (all ones), at every length and alignment: the same sum, and
	 * below 2^33 unfolded (two such sums add up without overflow) */
	const std::vector<uint8_t> all(600, 0xff);
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n <= 520; n++) {
			const uint64_t raw = csum_raw(all.data() + off, n);
			ASSERT_LT(raw, uint64_t(1) << 33) << "length " << n;
			ASSERT_EQ(csum_fold(raw),
				  static_cast<uint16_t>(__rte_raw_cksum_reduce(
					  __rte_raw_cksum(all.data() + off, n, 0))))
				<< "offset " << off << " length " << n;
		}
}

/* csum_raw64()'s steps by the bits of the length (32, 16, 8 bytes, then the word ending
 * the last n % 8) give the very 64-bit value of the plain form: a word at a time with its
 * carry wrapped, then that tail word, at every length and alignment, for random bytes, all
 * ones and zeros (parse_inline() keeps this value as the payload's sum). */
TEST(Wire, ThePayloadSumIsTheWordSum)
{
	const auto plain = [](const uint8_t *b, size_t n) {
		uint64_t s = 0;
		const auto add = [&s](uint64_t w) {
			s += w;
			s += s < w;
		};
		size_t i = 0;
		for (; i + 8 <= n; i += 8) {
			uint64_t w;
			std::memcpy(&w, b + i, 8);
			add(w);
		}
		if (i < n) {
			uint64_t w;
			std::memcpy(&w, b + n - 8, 8);
			const unsigned drop = 8 * unsigned(8 - (n - i));
			add(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? w >> drop : w << drop);
		}
		return s;
	};
	const std::vector<uint8_t> bytes = random_body(600, 7);
	const std::vector<uint8_t> all(600, 0xff), zeros(600, 0);
	for (const std::vector<uint8_t> *v : {&bytes, &all, &zeros})
		for (size_t off = 0; off < 8; off++)
			for (size_t n = 8; n <= 520; n++)
				ASSERT_EQ(csum_raw64(v->data() + off, n), plain(v->data() + off, n))
					<< "offset " << off << " length " << n;
}

/* csum_folded() (wire::l7_sum(), the frames' header and body sums) is __rte_raw_cksum()
 * folded too, at every length and alignment, for bytes that carry out of 64 bits at every
 * word (all ones: a sum of all ones comes out as DPDK's 0xffff, never 0), none at all, and
 * random ones. */
TEST(Wire, TheWordSumWithCarriesIsDpdksSum)
{
	const std::vector<uint8_t> rnd = random_body(600, 7);
	const std::vector<uint8_t> ones(600, 0xff), zeros(600, 0), high(600, 0x80);
	for (const std::vector<uint8_t> *bytes : {&rnd, &ones, &zeros, &high})
		for (size_t off = 0; off < 8; off++)
			for (size_t n = 0; n <= 520; n++) {
				const uint8_t *p = bytes->data() + off;
				const uint16_t want = static_cast<uint16_t>(
					__rte_raw_cksum_reduce(__rte_raw_cksum(p, n, 0)));
				ASSERT_EQ(csum_folded(p, n), want) << "offset " << off << " length " << n;
				ASSERT_EQ(l7_sum(p, static_cast<uint16_t>(n)), want)
					<< "offset " << off << " length " << n;
			}
}

/* csum_fold()'s two steps (and the UDP field made from it) are the fold a step at a time
 * for every sum: 64-bit sums whose halves carry out of 32 bits, whose 16-bit halves carry,
 * that are 0, all ones or a multiple of 0xffff, and random ones, at run time and at compile
 * time; and the IPv4 header's checksum from a sum folded once plus an id (frame_template)
 * is that of the whole sum plus the id. */
TEST(Wire, TheShortFoldsAreCsumFold)
{
	static_assert(csum_fold(0) == 0 && csum_fold(0xffff) == 0xffff &&
		      csum_fold(0x10000) == 1 && csum_fold(0x1fffe) == 0xffff &&
		      csum_fold(~0ull) == 0xffff && csum_fold(0x100000000ull) == 1);
	const auto rot_is_fold = [](uint64_t s) {
		ASSERT_EQ(csum_fold(s), loop_fold(s)) << std::hex << s;
		const uint16_t f = loop_fold(s);
		const uint16_t want = detail::be16(f == 0xffff ? 0xffff : static_cast<uint16_t>(~f));
		ASSERT_EQ(detail::udp_checksum_field(s), want) << std::hex << s;
	};
	for (uint64_t s : {0ull, 1ull, 0xffffull, 0x10000ull, 0x1fffeull, 0xfffeffffull,
			   0xffff0000ull, 0xffffffffull, 0x100000000ull, 0x1ffffffffull,
			   0xffffffff00000001ull, 0x80000000ffffffffull, 0xfffffffffffffffeull,
			   ~0ull, 0xffffull * 0x10001ull, 0xffffull * 0x123456789ull})
		rot_is_fold(s);
	std::mt19937_64 rng(17);
	for (int i = 0; i < 200000; i++) {
		const uint64_t r = rng();
		rot_is_fold(r);
		rot_is_fold(r >> (i % 64));
		rot_is_fold(r | 0xffff0000ffff0000ull); /* the halves carry */
		rot_is_fold((r >> 48) * 0xffffull); /* multiples of 0xffff: 0xffff, never 0 */
	}
	/* the IPv4 checksum: ten words and an id (below 2^21), whole or folded first, each the
	 * complement of the fold a step at a time (all ones kept, as rte_ipv4_cksum() keeps it) */
	const auto ipv4_is = [](uint64_t words, uint32_t id) {
		const uint16_t f = loop_fold(words + id);
		const uint16_t want = detail::be16(f == 0xffff ? 0xffff : static_cast<uint16_t>(~f));
		ASSERT_EQ(detail::ipv4_checksum_from(words + id), want) << std::hex << words << " " << id;
		ASSERT_EQ(detail::ipv4_checksum_from_folded(csum_fold(words) + id), want)
			<< std::hex << words << " " << id;
	};
	for (int i = 0; i < 200000; i++)
		ipv4_is(rng() % (10ull * 0xffff + 1), static_cast<uint16_t>(rng()));
	for (uint64_t words : {0ull, 0xffffull, 0x1fffeull, 0xfffeull, 1ull, 10ull * 0xffff})
		for (uint32_t id : {0u, 1u, 0xfffeu, 0xffffu})
			ipv4_is(words, id);
}

/* A kept frame (frame_template) is made for its address but the destination port: one bit
 * changed anywhere in the other 46 bytes (MACs, addresses, source port) is another
 * requester's, another destination port is the same one; IPv4 and IPv6. */
TEST(Wire, AKeptFrameIsForItsAddressButThePort)
{
	const std::vector<uint8_t> l7 = l7_request();
	const l7_summed sum{l7.data(), static_cast<uint16_t>(l7.size()),
			    l7_sum(l7.data(), static_cast<uint16_t>(l7.size()))};
	for (bool v6 : {false, true}) {
		const link_addr a = addr(v6);
		frame_template t;
		ASSERT_TRUE(t.make(a, frame_kind::response, sum, 1500));
		EXPECT_TRUE(t.made_for_made(a));
		EXPECT_TRUE(t.made_for(a, sum));
		link_addr other_port = a;
		other_port.dst.port ^= 0x5a5a;
		EXPECT_TRUE(t.made_for_made(other_port));
		EXPECT_TRUE(t.made_for(other_port, sum));
		static_assert(sizeof(link_addr) == 48, "no padding among the compared bytes");
		for (size_t i = 0; i < offsetof(link_addr, dst) + offsetof(endpoint, port); i++)
			for (uint8_t bit : {uint8_t(0x01), uint8_t(0x80)}) {
				link_addr b = a;
				reinterpret_cast<uint8_t *>(&b)[i] ^= bit;
				EXPECT_FALSE(t.made_for_made(b)) << "byte " << i << " v6 " << v6;
				EXPECT_FALSE(t.made_for(b, sum)) << "byte " << i << " v6 " << v6;
			}
		t.clear();
		EXPECT_FALSE(t.made_for(a, sum));
	}
}

/* An error answer's L7 header as the node makes them (egress::make_reply()), its reason
 * `reason_len` bytes long */
std::vector<uint8_t> l7_answer(size_t reason_len)
{
	static const std::string hop = "node-a";
	static std::string reason;
	reason.assign(reason_len, 'r');
	std::vector<uint8_t> b(1024);
	l7_writer w(b.data(), b.size());
	w.response(504, wire::l7_flag_mesh_generated, reason, hop);
	b.resize(w.finish());
	return b;
}

/* A kept frame stamped into the stash's next mbuf (frame_template::stamp(): the stash's own
 * reset, a 504's 128 bytes copied in a straight line) is fragment()'s frame for that message
 * to that port, in an mbuf whose fields are rte_pktmbuf_reset()'s with its lengths, however
 * the mbuf was left when it went back to the pool: IPv4 and IPv6, headers of four chunks and
 * fewer and of more, in a burst and one at a time; and from a pool whose mbufs have less
 * room than the straight copy, the frame where it fits and nothing (nothing leaked) where
 * it does not. */
/* stamp()'s checksums (summed as stored, one fold of a negated sum: put_ids()) against
 * fragment()'s (big-endian sums, the all-ones tests) at every IP id and, with it, every
 * UDP sum modulo 0xffff: both fields' edges (a sum of all ones or zero goes out as 0xffff)
 * are among them, and counted. Correlations of all ones, zero and a mixed one. */
TEST(Wire, AStampedFramesChecksumsAreFragmentsAtEveryId)
{
	const unsigned free0 = rte_mempool_avail_count(pool());
	const std::vector<uint8_t> l7 = l7_answer(7);
	const l7_summed sum{l7.data(), static_cast<uint16_t>(l7.size()),
			    l7_sum(l7.data(), static_cast<uint16_t>(l7.size()))};
	csum_edges edges;
	for (bool v6 : {false, true})
		for (uint64_t corr : {~0ull, 0ull, 0x0123456789abcdefull}) {
			frame_template t;
			ASSERT_TRUE(t.make(addr(v6), frame_kind::response, sum, 1500));
			link_addr to = addr(v6);
			to.dst.port = 40000;
			mbuf_stash stash(pool());
			stash.begin();
			const unsigned udp_ck_at = (v6 ? 14 + 40 : 14 + 20) + 6;
			for (uint32_t lo = 0; lo < 0x10000; lo++) {
				const uint32_t id = 0xa5a50000u | lo;
				rte_mbuf *want;
				ASSERT_EQ(fragment(to, frame_kind::response, id, corr, l7.data(), sum.len,
						   body_ref{}, 1500, pool(), &want, 1),
					  1u);
				rte_mbuf *m = t.stamp(id, corr, to.dst.port, stash);
				ASSERT_NE(m, nullptr);
				ASSERT_NO_FATAL_FAILURE(edges.expect_same(m, want, v6, udp_ck_at, id, corr));
			}
			stash.end();
		}
	EXPECT_GE(edges.ip, 3u);
	EXPECT_GE(edges.udp, 6u);
	EXPECT_EQ(rte_mempool_avail_count(pool()), free0);
}

/* a pool of pinned external buffers: its free mbufs keep RTE_MBUF_F_EXTERNAL, and the
 * stamp's reset (the stash's constant ol_flags) keeps it, as rte_pktmbuf_reset() does */
TEST(Wire, AStampedFrameFromPinnedExternalBuffersKeepsTheirFlag)
{
	constexpr unsigned nb = 63;
	constexpr uint16_t elt = 2048;
	const size_t len = size_t(nb + 1) * elt;
	void *mem = rte_malloc("wire_test_ext", len, 4096);
	ASSERT_NE(mem, nullptr);
	rte_pktmbuf_extmem ext{mem, rte_malloc_virt2iova(mem), len, elt};
	rte_mempool *mp = rte_pktmbuf_pool_create_extbuf("wire_test_ext", nb, 0, 0, elt,
							 SOCKET_ID_ANY, &ext, 1);
	ASSERT_NE(mp, nullptr);
	const std::vector<uint8_t> l7 = l7_answer(7);
	const l7_summed sum{l7.data(), static_cast<uint16_t>(l7.size()),
			    l7_sum(l7.data(), static_cast<uint16_t>(l7.size()))};
	frame_template t;
	ASSERT_TRUE(t.make(addr(false), frame_kind::response, sum, 1500));
	link_addr to = addr(false);
	to.dst.port = 40000;
	for (bool burst : {false, true}) {
		mbuf_stash stash(mp);
		if (burst)
			stash.begin();
		rte_mbuf *want;
		ASSERT_EQ(fragment(to, frame_kind::response, 77, 99, l7.data(), sum.len, body_ref{},
				   1500, pool(), &want, 1),
			  1u);
		rte_mbuf *m = t.stamp(77, 99, to.dst.port, stash);
		ASSERT_NE(m, nullptr);
		EXPECT_EQ(bytes_of(m), bytes_of(want));
		rte_mbuf *reset = rte_pktmbuf_alloc(mp);
		ASSERT_NE(reset, nullptr);
		EXPECT_TRUE(reset->ol_flags & RTE_MBUF_F_EXTERNAL);
		EXPECT_EQ(m->ol_flags, reset->ol_flags) << "burst " << burst;
		EXPECT_EQ(m->data_off, reset->data_off);
		rte_pktmbuf_free(reset);
		rte_pktmbuf_free(want);
		rte_pktmbuf_free(m);
		stash.end();
	}
	EXPECT_EQ(rte_mempool_avail_count(mp), nb);
	rte_mempool_free(mp);
	rte_free(mem);
}

TEST(Wire, AStampedFrameIsFragmentsFrameInAResetMbuf)
{
	const unsigned free0 = rte_mempool_avail_count(pool());
	/* the pool's mbufs left with every field reset() writes set otherwise */
	/* every free one: the pools have no cache, and take in the order they were given */
	const auto scribble = [](rte_mempool *mp) {
		std::vector<rte_mbuf *> ms(rte_mempool_avail_count(mp));
		ASSERT_EQ(rte_pktmbuf_alloc_bulk(mp, ms.data(), static_cast<unsigned>(ms.size())), 0);
		for (rte_mbuf *m : ms) {
			m->data_off = 7;
			m->port = 3;
			m->ol_flags = RTE_MBUF_F_RX_VLAN | RTE_MBUF_F_TX_IPV4;
			m->packet_type = 0x1234;
			m->pkt_len = 999;
			m->data_len = 77;
			m->vlan_tci = 0x55;
			m->vlan_tci_outer = 0x66;
			m->tx_offload = 0x0123456789abcdefull;
		}
		rte_pktmbuf_free_bulk(ms.data(), static_cast<unsigned>(ms.size()));
	};
	uint32_t id = 0x5eed;
	unsigned straight = 0, chunked = 0; /* frames of 128 bytes or fewer, and longer */
	for (bool burst : {false, true})
		for (bool v6 : {false, true})
			for (size_t reason_len : {0u, 7u, 20u, 40u, 41u, 150u}) {
				scribble(pool());
				mbuf_stash stash(pool());
				if (burst)
					stash.begin();
				const std::vector<uint8_t> l7 = l7_answer(reason_len);
				const l7_summed sum{l7.data(), static_cast<uint16_t>(l7.size()),
						    l7_sum(l7.data(), static_cast<uint16_t>(l7.size()))};
				frame_template t;
				ASSERT_TRUE(t.make(addr(v6), frame_kind::response, sum, 1500));
				for (uint16_t port : {uint16_t(1), uint16_t(40000), uint16_t(65535)}) {
					link_addr to = addr(v6);
					to.dst.port = port;
					rte_mbuf *want;
					ASSERT_EQ(fragment(to, frame_kind::response, id, id * 7ull, l7.data(),
							   sum.len, body_ref{}, 1500, pool(), &want, 1),
						  1u);
					rte_mbuf *m = t.stamp(id, id * 7ull, port, stash);
					const std::string what = "burst " + std::to_string(burst) + " v6 " +
								 std::to_string(v6) + " header " +
								 std::to_string(sum.len);
					ASSERT_NE(m, nullptr) << what;
					EXPECT_EQ(bytes_of(m), bytes_of(want)) << what;
					(want->data_len <= 128 ? straight : chunked)++;
					rte_mbuf *reset = rte_pktmbuf_alloc(pool());
					ASSERT_NE(reset, nullptr);
					EXPECT_EQ(m->data_off, reset->data_off) << what;
					EXPECT_EQ(rte_mbuf_refcnt_read(m), 1u) << what;
					EXPECT_EQ(m->nb_segs, 1u) << what;
					EXPECT_EQ(m->port, RTE_MBUF_PORT_INVALID) << what;
					EXPECT_EQ(m->ol_flags, reset->ol_flags) << what;
					EXPECT_EQ(m->packet_type, 0u) << what;
					EXPECT_EQ(m->pkt_len, want->pkt_len) << what;
					EXPECT_EQ(m->data_len, want->data_len) << what;
					EXPECT_EQ(m->vlan_tci, 0u) << what;
					EXPECT_EQ(m->vlan_tci_outer, 0u) << what;
					EXPECT_EQ(m->next, nullptr) << what;
					EXPECT_EQ(m->tx_offload, 0u) << what;
					rte_pktmbuf_free(reset);
					rte_pktmbuf_free(want);
					rte_pktmbuf_free(m);
					id += 3;
				}
				stash.end();
			}
	EXPECT_GT(straight, 12u);
	EXPECT_GT(chunked, 12u);
	EXPECT_EQ(rte_mempool_avail_count(pool()), free0);

	/* mbufs of 120 bytes after the headroom: less than the straight copy's 128 */
	rte_mempool *small = rte_pktmbuf_pool_create("wire_test_small", 255, 0, 0,
						     RTE_PKTMBUF_HEADROOM + 120, SOCKET_ID_ANY);
	ASSERT_NE(small, nullptr);
	scribble(small);
	const unsigned small0 = rte_mempool_avail_count(small);
	unsigned fit = 0, not_fit = 0;
	{
		mbuf_stash stash(small);
		stash.begin();
		EXPECT_EQ(stash.room_chunks(), 0u);
		for (size_t reason_len : {1u, 60u}) {
			const std::vector<uint8_t> l7 = l7_answer(reason_len);
			const l7_summed sum{l7.data(), static_cast<uint16_t>(l7.size()),
					    l7_sum(l7.data(), static_cast<uint16_t>(l7.size()))};
			frame_template t;
			ASSERT_TRUE(t.make(addr(false), frame_kind::response, sum, 1500));
			rte_mbuf *want;
			ASSERT_EQ(fragment(addr(false), frame_kind::response, 9, 9, l7.data(), sum.len,
					   body_ref{}, 1500, pool(), &want, 1),
				  1u);
			rte_mbuf *m = t.stamp(9, 9, addr(false).dst.port, stash);
			if (want->data_len <= 120) {
				ASSERT_NE(m, nullptr) << sum.len;
				EXPECT_EQ(bytes_of(m), bytes_of(want));
				rte_pktmbuf_free(m);
				fit++;
			} else {
				EXPECT_EQ(m, nullptr) << sum.len;
				not_fit++;
			}
			rte_pktmbuf_free(want);
		}
		stash.end();
	}
	EXPECT_EQ(fit, 1u);
	EXPECT_EQ(not_fit, 1u);
	EXPECT_EQ(rte_mempool_avail_count(small), small0);
	rte_mempool_free(small);
}

/* A request of one frame as port RX leaves it (parsed, reassembled: data at its header),
 * made in its own mbuf into the frame that relays it with a grown header: the bytes
 * fragment() makes for that message, at both families and header parities, with and
 * without a body, both kinds, from one link_template per address made once (as egress
 * keeps a peer's); and nothing done to an mbuf that cannot be made so. */
TEST(Wire, ARequestRelayedInItsOwnMbufIsFragmentsFrame)
{
	const unsigned free0 = rte_mempool_avail_count(pool());
	auto r = make_reasm("in_place");
	ASSERT_TRUE(r);
	mbuf_stash stash(pool());
	uint32_t id = 500;
	/* the headers kept once per address, as egress keeps a peer's, for every frame */
	link_template kept[2];
	ASSERT_TRUE(kept[0].make(addr(false)));
	ASSERT_TRUE(kept[1].make(addr(true)));
	link_template mixed;
	link_addr v4_to_v6 = addr(false);
	v4_to_v6.dst = addr(true).dst;
	EXPECT_FALSE(mixed.make(v4_to_v6));
	EXPECT_FALSE(mixed.made());
	for (bool v6 : {false, true})
		for (size_t path_len : {1u, 2u, 9u, 40u})
			for (size_t body_len : {0u, 1u, 64u, 301u}) {
				const std::vector<uint8_t> old_l7 = l7_request(path_len);
				const std::vector<uint8_t> body = random_body(body_len, unsigned(id));
				rte_mbuf *in[4];
				body_ref b;
				b.data = body.data();
				b.len = static_cast<uint32_t>(body.size());
				ASSERT_EQ(fragment(addr(v6), frame_kind::request, id, 7, old_l7.data(),
						   static_cast<uint16_t>(old_l7.size()), b, 1500, pool(), in, 4),
					  1u);
				std::vector<message> got = feed(*r, {in[0]}, 1);
				ASSERT_EQ(got.size(), 1u);
				rte_mbuf *m = got[0].chain;
				/* the payload's sum, kept where parse_frame() checked the UDP checksum
				 * itself (IPv4 in one segment; not IPv6, parse_any()'s) */
				const std::vector<uint8_t> payload = bytes_of(m);
				EXPECT_EQ(got[0].payload_sum,
					  v6 ? 0u : csum_folded(payload.data(), payload.size()));
				/* the header grown as the sidecar grows it: two fields appended */
				std::vector<uint8_t> l7 = old_l7;
				l7.resize(512);
				l7_writer w = l7_writer::extend(l7.data(), old_l7.size(), l7.size());
				w.field("x-request-id", std::string(36 + path_len % 2, 'r'));
				w.field("traceparent", std::string(55, 't'));
				l7.resize(w.finish());
				const l7_summed grown{l7.data(), static_cast<uint16_t>(l7.size()),
						      l7_sum(l7.data(), static_cast<uint16_t>(l7.size()))};
				/* the relay's sum of the whole payload from port RX's, grown with the
				 * header: the body's bytes keep their parity when the header grew by
				 * an even number of bytes (else the relay sums the header alone) */
				const uint16_t old_nb = static_cast<uint16_t>(old_l7[6] << 8 | old_l7[7]);
				const bool even = (l7.size() - old_l7.size()) % 2 == 0;
				const l7_summed with_body{
					l7.data(), static_cast<uint16_t>(l7.size()),
					l7_sum_grown(got[0].payload_sum, static_cast<uint16_t>(old_l7.size()),
						     old_nb, static_cast<uint16_t>(l7.size()),
						     static_cast<uint16_t>(old_nb + 2),
						     csum_raw(l7.data() + old_l7.size(),
							      l7.size() - old_l7.size())),
					true};
				const bool from_rx = got[0].payload_sum && even;
				const std::string what = "v6 " + std::to_string(v6) + " header " +
							 std::to_string(old_l7.size()) + " -> " +
							 std::to_string(l7.size()) + " body " +
							 std::to_string(body_len);
				/* what cannot be made in place is left as it was */
				rte_mbuf_refcnt_update(m, 1);
				EXPECT_FALSE(frame_in_place(m, static_cast<uint16_t>(old_l7.size()),
							    addr(!v6), frame_kind::request, id, 9, grown,
							    1500)) << what;
				EXPECT_FALSE(frame_in_place(m, static_cast<uint16_t>(old_l7.size()),
							    addr(v6), frame_kind::request, id, 9, grown,
							    1500)) << what; /* a second reference */
				EXPECT_EQ(kept[v6].place_for(m, static_cast<uint16_t>(old_l7.size()),
							     static_cast<uint16_t>(l7.size()), 1500)
						  .body,
					  nullptr) << what;
				rte_mbuf_refcnt_update(m, -1);
				EXPECT_FALSE(frame_in_place(m, static_cast<uint16_t>(old_l7.size()),
							    addr(v6), frame_kind::request, id, 9, grown,
							    static_cast<uint16_t>(59 + l7.size()))) << what;
				EXPECT_EQ(kept[v6].place_for(m, static_cast<uint16_t>(old_l7.size()),
							     static_cast<uint16_t>(l7.size()),
							     static_cast<uint16_t>(59 + l7.size()))
						  .body,
					  nullptr) << what;
				EXPECT_EQ(bytes_of(m).size(), old_l7.size() + body_len) << what;
				rte_mbuf *want[4];
				const frame_kind kind =
					body_len % 2 ? frame_kind::response : frame_kind::request;
				/* every other one near 2^64: its checksum's 64-bit add carries */
				const uint64_t corr = id / 2 % 2 ? ~uint64_t(id) : 9 + (uint64_t(id) << 33);
				ASSERT_EQ(fragment(addr(v6), kind, id + 1, corr, l7.data(),
						   static_cast<uint16_t>(l7.size()), b, 1500, stash, want, 4),
					  1u) << what;
				/* every third one made as a relay makes it: its place found first,
				 * the header written there, the frame around it with no copy */
				const bool placed = id / 2 % 3 == 1;
				if (placed) {
					const link_template::place at = kept[v6].place_for(
						m, static_cast<uint16_t>(old_l7.size()),
						static_cast<uint16_t>(l7.size()), 1500);
					ASSERT_NE(at.body, nullptr) << what;
					uint8_t *h = at.header(static_cast<uint16_t>(l7.size()));
					std::memcpy(h, l7.data(), l7.size());
					l7_summed made = from_rx ? with_body : grown;
					made.data = h;
					kept[v6].frame_at(m, at, kind, id + 1, corr, made);
				} else {
					ASSERT_TRUE(kept[v6].frame_in_place(
						m, static_cast<uint16_t>(old_l7.size()), kind, id + 1, corr,
						from_rx ? with_body : grown, 1500))
						<< what << " from port RX's sum " << from_rx;
				}
				EXPECT_EQ(bytes_of(m), bytes_of(want[0])) << what;
				EXPECT_EQ(m->nb_segs, 1u);
				EXPECT_EQ(m->ol_flags, 0u);
				EXPECT_EQ(m->packet_type, 0u);
				/* the mbuf as a peer on net_ring receives it, the frame where the body
				 * left it (an odd address when the grown header's length is odd) */
				parsed_frame pf;
				EXPECT_EQ(parse_frame(m, 0, 1u << 20, &pf), wire_drop::none) << what;
				EXPECT_EQ(pf.msg_id, id + 1) << what;
				EXPECT_EQ(pf.l7_len, l7.size()) << what;
				EXPECT_EQ(pf.frag_len, l7.size() + body_len) << what;
				rte_pktmbuf_free(want[0]);
				rte_pktmbuf_free(m);
				id += 2;
			}
	/* a header that grew past the room in front of the body: fragment()'s job */
	{
		const std::vector<uint8_t> old_l7 = l7_request(3);
		rte_mbuf *in[1];
		ASSERT_EQ(fragment(addr(false), frame_kind::request, id, 7, old_l7.data(),
				   static_cast<uint16_t>(old_l7.size()), body_ref{}, 1500, pool(), in, 1),
			  1u);
		std::vector<message> got = feed(*r, {in[0]}, 1);
		ASSERT_EQ(got.size(), 1u);
		std::vector<uint8_t> l7 = old_l7;
		l7.resize(1024);
		l7_writer w = l7_writer::extend(l7.data(), old_l7.size(), l7.size());
		w.field("x-big", std::string(400, 'b'));
		l7.resize(w.finish());
		EXPECT_FALSE(frame_in_place(got[0].chain, static_cast<uint16_t>(old_l7.size()),
					    addr(false), frame_kind::request, id, 9,
					    l7_summed{l7.data(), static_cast<uint16_t>(l7.size()), 0}, 1500));
		EXPECT_EQ(bytes_of(got[0].chain), old_l7);
		rte_pktmbuf_free(got[0].chain);
	}
	stash.end();
	EXPECT_EQ(rte_mempool_avail_count(pool()), free0);
}

/* link_template::frame_at()'s checksums (summed onto negated constants, one fold each, no
 * all-ones test) are fragment()'s at every IPv4 id and at the UDP sum's residues all around
 * (the message id's low 16 bits sweep them), both checksums' all-ones edges hit, for
 * correlations whose 64-bit complement adds carry and do not, with a body summed here and
 * one in the header's sum. */
TEST(Wire, AFrameMadeInPlaceHasFragmentsChecksumsAtEveryId)
{
	const unsigned free0 = rte_mempool_avail_count(pool());
	csum_edges edges;
	for (bool v6 : {false, true}) {
		link_template t;
		ASSERT_TRUE(t.make(addr(v6)));
		const unsigned udp_ck_at = (v6 ? 14 + 40 : 14 + 20) + 6;
		for (uint64_t corr : {~0ull, 0ull, 0x0123456789abcdefull, 0xfffffffffff00000ull}) {
			const std::vector<uint8_t> l7 = l7_request(corr % 7);
			const uint16_t len = static_cast<uint16_t>(l7.size());
			const std::vector<uint8_t> body = random_body(corr % 5 + 30, unsigned(corr));
			body_ref b;
			b.data = body.data();
			b.len = static_cast<uint32_t>(body.size());
			const bool with_body = corr % 2;
			std::vector<uint8_t> payload = l7;
			payload.insert(payload.end(), body.begin(), body.end());
			const uint16_t sum = with_body ? csum_folded(payload.data(), payload.size())
						       : l7_sum(l7.data(), len);
			for (uint32_t lo = 0; lo < 0x10000; lo++) {
				const uint32_t id = 0x5a5a0000u | lo;
				rte_mbuf *want;
				ASSERT_EQ(fragment(addr(v6), frame_kind::request, id, corr, l7.data(),
						   len, b, 1500, pool(), &want, 1),
					  1u);
				/* the message as port RX leaves it: its header then its body */
				rte_mbuf *m = rte_pktmbuf_alloc(pool());
				ASSERT_NE(m, nullptr);
				uint8_t *d = reinterpret_cast<uint8_t *>(
					rte_pktmbuf_append(m, static_cast<uint16_t>(payload.size())));
				ASSERT_NE(d, nullptr);
				std::memcpy(d, payload.data(), payload.size());
				const link_template::place at = t.place_within(m, len, len, t.max_payload(1500));
				ASSERT_NE(at.body, nullptr);
				t.frame_at(m, at, frame_kind::request, id, corr,
					   l7_summed{at.header(len), len, sum, with_body});
				ASSERT_NO_FATAL_FAILURE(edges.expect_same(m, want, v6, udp_ck_at, id, corr));
			}
		}
	}
	EXPECT_GE(edges.ip, 4u);
	EXPECT_GE(edges.udp, 8u);
	EXPECT_EQ(rte_mempool_avail_count(pool()), free0);
}

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("wire", {}, 512));
	return RUN_ALL_TESTS();
}
