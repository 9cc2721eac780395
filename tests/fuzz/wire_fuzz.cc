// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the frame parser and the reassembler on a real EAL and real mbufs.
// Input: a sequence of frames, each prefixed by a 16-bit big-endian word: bits 0-10 its
// length; bits 11-12 the port's L4 checksum verdict the mbuf carries (unknown/bad/good/none),
// bit 13 the port's "IPv4 header checksum bad"; bit 14 "expire first" (the clock jumps past
// the reassembly timeout and expire() runs); bit 15 "refuse it" (a request's first fragment
// is refused as port RX refuses one for a saturated service: reassembler::refuse, a
// tombstone). Every frame is parsed; valid ones go to one reassembler. Invariants checked:
// a frame the port called bad is dropped, a completed message is exactly msg_len bytes in as
// many segments as it has fragments, limits are never exceeded (tombstones included), a
// refused message is refused once while its tombstone lives, and after a flush every mbuf is
// back in the pool (no leak, bounded memory). A completed message is sent again through
// fragment() (its body copied from the received segments, an MTU drawn from its msg_id,
// the one-frame path when it fits): every frame parses, a message that fits makes exactly
// one frame, and the frames reassemble to the same bytes; its L7 header alone, framed from
// its sum taken once (l7_summed, as the node's error answers are), gives the same frames.
// The sweep reports timed-out requests (the 408 path) into a small array, again until it
// has room: each report is a request whose first fragment the reassembler held, reported
// once, with no chain. Every frame is parsed again in two segments: the same verdict and
// fields (the in-place path and the general one agree).
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <tuple>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <unistd.h>

#include "dpumesh/common/eal.h"
#include "dpumesh/wire/frame.h"

using namespace dpumesh::wire;

namespace {
rte_mempool *g_pool;
reassembler *g_reasm;
reasm_config g_cfg;
reassembler *g_again; /* the re-sent messages' */
unsigned g_idle;

/* Requests whose first fragment the reassembler took and holds, by its key (source ip,
 * port, msg_id), with their correlation: what a sweep may report, each once. */
using req_key = std::tuple<std::string, uint16_t, uint32_t>;
std::map<req_key, uint64_t> g_first_held;

req_key key_of(const endpoint &src, uint32_t msg_id)
{
	return {std::string(reinterpret_cast<const char *>(src.ip), 16), src.port, msg_id};
}

/* The sweep, reporting into a small array until one call leaves it room. */
void expire_reporting(uint64_t now)
{
	expired_request out[3];
	uint32_t n = 0;
	do {
		n = 0;
		g_reasm->expire(now, out, 3, &n);
		if (n > 3)
			std::abort();
		for (uint32_t i = 0; i < n; i++) {
			const message &m = out[i].msg;
			const auto it = g_first_held.find(key_of(m.src, m.msg_id));
			if (m.chain != nullptr || m.kind != frame_kind::request ||
			    it == g_first_held.end() || it->second != m.correlation)
				std::abort(); /* not a held request's, or a second report */
			g_first_held.erase(it);
		}
	} while (n == 3);
}

/* The whole message of a chain, as bytes. */
std::string bytes_of(const rte_mbuf *m)
{
	std::string out(m->pkt_len, '\0');
	const void *p = rte_pktmbuf_read(m, 0, m->pkt_len, out.data());
	if (p != out.data())
		std::memcpy(out.data(), p, m->pkt_len);
	return out;
}

void same_with_sum(const link_addr &a, const message &msg, const uint8_t *l7, uint16_t mtu);

/* The same frame in two segments (split after `split` bytes, 1 <= split < len) parses as
 * the one-segment frame did: parse_frame() reads the mesh's IPv4 frames of one segment in
 * place and everything else through rte_pktmbuf_read(), and both must reach one verdict
 * (the same drop reason) and the same fields. */
void same_in_two_segments(const uint8_t *frame, size_t len, size_t split, uint64_t verdicts,
			  uint16_t port_be, wire_drop want, const parsed_frame &pf)
{
	rte_mbuf *a = rte_pktmbuf_alloc(g_pool), *b = rte_pktmbuf_alloc(g_pool);
	if (!a || !b)
		std::abort();
	std::memcpy(rte_pktmbuf_append(a, static_cast<uint16_t>(split)), frame, split);
	std::memcpy(rte_pktmbuf_append(b, static_cast<uint16_t>(len - split)), frame + split,
		    len - split);
	if (rte_pktmbuf_chain(a, b) != 0)
		std::abort();
	a->ol_flags |= verdicts;
	parsed_frame f;
	const wire_drop why = parse_frame(a, port_be, g_cfg.max_message, &f);
	if (why != want)
		std::abort();
	if (why == wire_drop::none &&
	    (!(f.src == pf.src) || !(f.dst == pf.dst) ||
	     std::memcmp(f.src_mac, pf.src_mac, sizeof(f.src_mac)) != 0 || f.kind != pf.kind ||
	     f.msg_id != pf.msg_id || f.msg_len != pf.msg_len || f.frag_offset != pf.frag_offset ||
	     f.frag_len != pf.frag_len || f.l7_len != pf.l7_len ||
	     f.correlation != pf.correlation || f.payload_off != pf.payload_off))
		std::abort();
	rte_pktmbuf_free(a);
}

/* A completed message (its sender's addresses in pf) fragmented again and reassembled. */
void send_again(const message &msg, const parsed_frame &pf, uint16_t port_be)
{
	const std::string in = bytes_of(msg.chain);
	link_addr a{};
	a.src = pf.src;
	a.dst = pf.dst;
	a.dst.port = rte_be_to_cpu_16(port_be);
	const bool v6 = !a.src.is_v4();
	const uint16_t mtu = static_cast<uint16_t>(128 + msg.msg_id % 1400);
	body_ref b;
	b.len = msg.msg_len - msg.l7_len;
	b.seg = msg.chain;
	b.seg_off = msg.l7_len;
	rte_mbuf *frames[64];
	const uint32_t need = frames_needed(msg.msg_len, mtu, v6);
	const uint16_t n = fragment(a, msg.kind, msg.msg_id, msg.correlation,
				    reinterpret_cast<const uint8_t *>(in.data()), msg.l7_len, b, mtu,
				    g_pool, frames, 64);
	if (need > 64) {
		if (n != 0)
			std::abort();
		return;
	}
	if (n != need)
		std::abort(); /* the pool has room for them: only a bug makes fewer */
	message out{};
	bool done = false;
	for (uint16_t i = 0; i < n; i++) {
		parsed_frame f;
		if (parse_frame(frames[i], port_be, g_cfg.max_message, &f) != wire_drop::none ||
		    done || f.msg_id != msg.msg_id || f.correlation != msg.correlation) {
			std::abort(); /* the mesh's own frame refused, or one frame too many */
		}
		done = g_again->input(frames[i], f, 1, &out) == reasm_result::complete;
	}
	if (!done || bytes_of(out.chain) != in || out.l7_len != msg.l7_len)
		std::abort();
	rte_pktmbuf_free(out.chain);
	same_with_sum(a, msg, reinterpret_cast<const uint8_t *>(in.data()), mtu);
}

/* Its L7 header alone as an answer made here would send it (wire::l7_summed, the sum taken
 * once): the same frames as fragment() makes of the same header read again. */
void same_with_sum(const link_addr &a, const message &msg, const uint8_t *l7, uint16_t mtu)
{
	rte_mbuf *plain[64], *summed[64];
	mbuf_stash stash(g_pool);
	const uint16_t n = fragment(a, msg.kind, msg.msg_id, msg.correlation, l7, msg.l7_len,
				    body_ref{}, mtu, stash, plain, 64);
	const uint16_t k = fragment(a, msg.kind, msg.msg_id, msg.correlation,
				    l7_summed{l7, msg.l7_len, l7_sum(l7, msg.l7_len)}, mtu, stash,
				    summed, 64);
	if (n != k || (n == 0 && msg.l7_len >= 16 && frames_needed(msg.l7_len, mtu, !a.src.is_v4()) <= 64))
		std::abort();
	for (uint16_t i = 0; i < n; i++) {
		if (bytes_of(plain[i]) != bytes_of(summed[i]))
			std::abort();
		rte_pktmbuf_free(plain[i]);
		rte_pktmbuf_free(summed[i]);
	}
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
	std::string prefix = "--file-prefix=dpumesh-wire-fuzz-" + std::to_string(getpid());
	const char *args[] = {"wire_fuzz", "--no-huge", "-m", "256", "--no-pci", "--no-shconf",
			      prefix.c_str(), "--log-level=*:error", "-l", "0"};
	if (rte_eal_init(static_cast<int>(std::size(args)), const_cast<char **>(args)) < 0)
		std::abort();
	/* libFuzzer leaves by exit(): EAL's runtime directory goes with it */
	std::atexit([] { (void)dpumesh::eal_cleanup(); });
	g_pool = rte_pktmbuf_pool_create("fuzz", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	g_cfg.max_message = 1u << 16;
	g_cfg.max_reassemblies = 8;
	g_cfg.max_per_source = 4;
	g_cfg.max_mbufs = 64;
	g_cfg.max_frags = 32;
	auto r = reassembler::create(g_cfg, "fuzz", 0);
	if (!g_pool || !r)
		std::abort();
	g_reasm = r->release();
	reasm_config again = g_cfg;
	again.max_frags = 64;
	again.max_mbufs = 64;
	auto r2 = reassembler::create(again, "fuzz_again", 0);
	if (!r2)
		std::abort();
	g_again = r2->release();
	g_idle = rte_mempool_avail_count(g_pool);
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint16_t port_be = rte_cpu_to_be_16(7000);
	uint64_t now = 1;
	const uint64_t past_timeout = rte_get_tsc_hz() / 1000 * (g_cfg.timeout_ms + 1);
	while (size >= 2) {
		const unsigned word = (unsigned(data[0]) << 8) | data[1];
		const bool refuse_it = word & 0x8000;
		if (word & 0x4000) {
			now += past_timeout;
			expire_reporting(now);
		}
		data += 2;
		size -= 2;
		const size_t len = std::min<size_t>(word & 0x7ff, size);
		static constexpr uint64_t l4_verdicts[4] = {
			RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN, RTE_MBUF_F_RX_L4_CKSUM_BAD,
			RTE_MBUF_F_RX_L4_CKSUM_GOOD, RTE_MBUF_F_RX_L4_CKSUM_NONE};
		const uint64_t verdicts = l4_verdicts[(word >> 11) & 3] |
					  (word & 0x2000 ? RTE_MBUF_F_RX_IP_CKSUM_BAD : 0);
		rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
		if (!m)
			std::abort(); /* the pool drained: something leaked */
		if (len > rte_pktmbuf_tailroom(m)) {
			rte_pktmbuf_free(m);
			break;
		}
		std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(len)), data, len);
		const uint8_t *frame = data;
		data += len;
		size -= len;
		m->ol_flags |= verdicts;
		parsed_frame pf;
		const wire_drop why = parse_frame(m, port_be, g_cfg.max_message, &pf);
		if (len >= 2) /* split where the frame's last byte says */
			same_in_two_segments(frame, len, 1 + frame[len - 1] % (len - 1), verdicts,
					     port_be, why, pf);
		if (why == wire_drop::none && (verdicts & RTE_MBUF_F_RX_IP_CKSUM_BAD) &&
		    pf.src.is_v4())
			std::abort(); /* the port said the IPv4 header is bad */
		if (why != wire_drop::none) {
			rte_pktmbuf_free(m);
			continue;
		}
		if (pf.frag_offset + uint64_t(pf.frag_len) > pf.msg_len)
			std::abort();
		/* a payload sum kept by the UDP check is the payload's (frag_len bytes after the
		 * fragment header), what a relay frames the message from */
		if (pf.payload_sum &&
		    (pf.payload_off + uint64_t(pf.frag_len) > m->data_len ||
		     pf.payload_sum !=
			     dpumesh::csum_folded(
				     rte_pktmbuf_mtod_offset(m, const uint8_t *, pf.payload_off),
				     pf.frag_len)))
			std::abort();
		if (refuse_it && pf.kind == frame_kind::request && pf.frag_offset == 0 &&
		    pf.frag_len < pf.msg_len) {
			rte_mbuf *again = rte_pktmbuf_copy(m, g_pool, 0, UINT32_MAX);
			if (!again)
				std::abort();
			g_first_held.erase(key_of(pf.src, pf.msg_id)); /* freed, tombstoned */
			const reasm_refusal first = g_reasm->refuse(m, pf, now++);
			const reasm_refusal second = g_reasm->refuse(again, pf, now++);
			if (first == reasm_refusal::tombstone && second != reasm_refusal::repeat)
				std::abort(); /* two answers for one request */
			if (g_reasm->in_flight() > g_cfg.max_reassemblies ||
			    g_reasm->mbufs_held() > g_cfg.max_mbufs)
				std::abort();
			continue;
		}
		message msg;
		const bool first = pf.kind == frame_kind::request && pf.frag_offset == 0;
		const reasm_result rr = g_reasm->input(m, pf, now++, &msg);
		if (rr == reasm_result::held && first)
			g_first_held[key_of(pf.src, pf.msg_id)] = pf.correlation;
		if (rr == reasm_result::complete) {
			if (pf.frag_len != pf.msg_len) /* a one-frame message leaves the table alone */
				g_first_held.erase(key_of(msg.src, msg.msg_id));
			uint32_t total = 0;
			unsigned segs = 0;
			for (rte_mbuf *s = msg.chain; s; s = s->next) {
				total += s->data_len;
				segs++;
			}
			if (total != msg.msg_len || msg.chain->pkt_len != msg.msg_len ||
			    segs != msg.chain->nb_segs || msg.l7_len > msg.msg_len)
				std::abort();
			send_again(msg, pf, port_be);
			rte_pktmbuf_free(msg.chain);
		}
		if (g_reasm->in_flight() > g_cfg.max_reassemblies ||
		    g_reasm->mbufs_held() > g_cfg.max_mbufs)
			std::abort();
	}
	g_reasm->flush();
	g_first_held.clear();
	if (rte_mempool_avail_count(g_pool) != g_idle)
		std::abort();
	return 0;
}
