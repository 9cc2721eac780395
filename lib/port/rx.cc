// SPDX-License-Identifier: BSD-3-Clause
// Port RX stage: rx_burst, parse and validate mesh frames, reassemble, hand messages on.
#include "dpumesh/port/rx.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dpumesh/common/tsan.h"
#include "dpumesh/wire/l7.h"

namespace dpumesh::port {

namespace {

/* The gate's index of a request's service, from its first frame, when the gate says it is
 * saturated, else UINT32_MAX. The L7 header is read in place from the first segment
 * (bounds-checked against it, the fragment and the message); anything unusual goes on to
 * the sidecar as usual. */
uint32_t gated_service(const service_gate &gate, const rte_mbuf *m,
		       const wire::parsed_frame &pf) noexcept
{
	if (pf.l7_len > pf.frag_len || uint32_t(pf.payload_off) + pf.l7_len > m->data_len)
		return UINT32_MAX;
	std::string_view name;
	if (wire::l7_peek_service(rte_pktmbuf_mtod_offset(m, const uint8_t *, pf.payload_off),
				  pf.l7_len, &name) != wire::l7_error::ok)
		return UINT32_MAX;
	const uint32_t svc = gate.find(name);
	return gate.saturated(svc) ? svc : UINT32_MAX;
}

/* What the sidecar needs to answer a refused request: the message's addresses and ids
 * (Frame: a wire::parsed_frame or a whole wire::message, which name them alike). */
/* A frame's (or a reassembled message's) addresses and ids into an rx_msg's message. */
template <typename Frame>
inline void msg_fields_of(const Frame &pf, rx_msg *rm) noexcept
{
	if constexpr (std::is_same_v<Frame, wire::parsed_frame>) {
		/* a frame's head is laid out as a message's from src on (frame.h): one 48-byte
		 * copy, not a load and a store a field (~20 instructions a message) */
		std::memcpy(reinterpret_cast<char *>(&rm->msg) + offsetof(wire::message, src), &pf,
			    wire::msg_head_size);
	} else {
		rm->msg.src = pf.src;
		std::memcpy(rm->msg.src_mac, pf.src_mac, sizeof(rm->msg.src_mac));
		rm->msg.kind = pf.kind;
		rm->msg.msg_id = pf.msg_id;
		rm->msg.msg_len = pf.msg_len;
		rm->msg.l7_len = pf.l7_len;
		rm->msg.payload_sum = pf.payload_sum;
		rm->msg.correlation = pf.correlation;
	}
}

template <typename Frame>
void refusal_of(const Frame &pf, rx_refusal why, rx_msg *rm) noexcept
{
	rm->body = {};
	rm->msg = {};
	msg_fields_of(pf, rm);
	rm->refusal = why;
}

/* Whether two 16-byte addresses are the same: two word compares (memcmp() was a libc call
 * per frame) */
inline bool same_ip(const uint8_t *a, const uint8_t *b) noexcept
{
	uint64_t a0, a1, b0, b1;
	std::memcpy(&a0, a, 8);
	std::memcpy(&a1, a + 8, 8);
	std::memcpy(&b0, b, 8);
	std::memcpy(&b1, b + 8, 8);
	return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

/* An rx_msg when the burst's own are used up: the pool's, or for a refusal the reserve's
 * (*reserve set). */
rx_msg *msg_beyond_burst(const rx_ctx &c, bool refusal, bool *reserve) noexcept
{
	void *obj;
	if (rte_mempool_get(c.msg_pool, &obj) == 0)
		return static_cast<rx_msg *>(obj);
	if (refusal && c.reserve_pool && rte_mempool_get(c.reserve_pool, &obj) == 0) {
		*reserve = true;
		return static_cast<rx_msg *>(obj);
	}
	return nullptr;
}

/* The reassembly sweep; each request that timed out with its first frame held goes on as a
 * refusal to be answered (408 incomplete): its sender hears of it rather than nothing
 * (docs/overload.md, "A reassembly the node itself stalled"). */
[[gnu::cold]] void sweep(rx_ctx &c, uint64_t reasm_now, uint64_t now) noexcept
{
	wire::expired_request ex[rx_ctx::burst];
	uint32_t nb = 0;
	c.reasm->expire(reasm_now, ex, rx_ctx::burst, &nb);
	rx_msg *refs[rx_ctx::burst];
	unsigned k = 0;
	for (uint32_t i = 0; i < nb; i++) {
		bool reserve = false;
		rx_msg *rm = msg_beyond_burst(c, true, &reserve);
		if (!rm) {
			(c.reserve_pool ? c.stats.reserve_empty : c.stats.msg_pool_empty).inc();
			continue;
		}
		rm->body = {};
		rm->msg = ex[i].msg; /* no chain: the reassembler freed the fragments */
		rm->refusal = rx_refusal::incomplete;
		rm->rx_tsc = now;
		rm->port_id = ex[i].port;
		rm->svc = UINT32_MAX;
		refs[k++] = rm;
	}
	if (k == 0)
		return;
	rte_ring *to = c.refusals ? c.refusals : c.next;
	const unsigned sent =
		to ? rte_ring_enqueue_burst(to, reinterpret_cast<void **>(refs), k, nullptr) : 0;
	if (sent < k) {
		(to ? c.stats.ring_full : c.stats.no_consumer).add(k - sent);
		for (unsigned i = sent; i < k; i++)
			rx_msg_free(refs[i]);
	}
	c.stats.messages.add(sent);
	c.stats.refused_incomplete.add(sent);
}

} // namespace

void rx_msg_free(rx_msg *m) noexcept
{
	rte_pktmbuf_free(m->msg.chain);
	rte_pktmbuf_free(m->body.chain);
	m->msg.chain = m->body.chain = nullptr;
	rte_mempool_put(rte_mempool_from_obj(m), m);
}

void rx_msg_free_bulk(rx_msg *const *msgs, unsigned n) noexcept
{
	constexpr unsigned chunk = 32;
	for (unsigned at = 0; at < n; at += chunk) {
		const unsigned k = std::min(chunk, n - at);
		rte_mbuf *chains[2 * chunk];
		unsigned nb = 0;
		/* whether they are all of the first one's pool (all of them but for refusals
		 * from the reserve), found in the same pass: one put then, no second pass over
		 * them (~5 instructions a message less) */
		rte_mempool *const first = rte_mempool_from_obj(msgs[at]);
		bool one_pool = true;
		for (unsigned i = 0; i < k; i++) {
			rx_msg *m = msgs[at + i];
			/* a relayed message's chain is the frame's already: nothing to clear */
			if (m->msg.chain || m->body.chain) {
				if (m->msg.chain)
					chains[nb++] = m->msg.chain;
				if (m->body.chain)
					chains[nb++] = m->body.chain;
				m->msg.chain = m->body.chain = nullptr;
			}
			one_pool &= rte_mempool_from_obj(m) == first;
		}
		if (nb)
			rte_pktmbuf_free_bulk(chains, nb);
		if (one_pool) [[likely]] {
			rte_mempool_put_bulk(first, reinterpret_cast<void *const *>(msgs + at), k);
			continue;
		}
		for (unsigned i = 0; i < k;) {
			rte_mempool *mp = rte_mempool_from_obj(msgs[at + i]);
			unsigned j = i + 1;
			while (j < k && rte_mempool_from_obj(msgs[at + j]) == mp)
				j++;
			rte_mempool_put_bulk(mp, reinterpret_cast<void *const *>(msgs + at + i), j - i);
			i = j;
		}
	}
}

uint16_t rx_poll(void *arg) noexcept
{
	auto &c = *static_cast<rx_ctx *>(arg);
	if (c.queues.empty()) [[unlikely]]
		return 0;
	const rx_ctx::queue &q = c.queues[c.next_queue];
	c.next_queue = c.next_queue + 1 == c.queues.size() ? 0 : c.next_queue + 1;
	const uint64_t now = rte_rdtsc();
	/* reassembly ages by this clock: not while the lcore itself was descheduled */
	if (c.stall_tsc == 0) [[unlikely]]
		c.stall_tsc = rx_ctx::stall_tsc_for(0);
	const uint64_t reasm_now = reasm_clock(c, now);
	if (++c.polls == rx_ctx::expire_every) {
		c.polls = 0;
		sweep(c, reasm_now, now);
	}

	/* two past the burst: the last frame again, so that the prefetch two ahead needs no
	 * compare and branch a frame (~4 instructions a message) */
	rte_mbuf *pkts[rx_ctx::burst + 2];
	/* a smaller share while pods' messages pass through the shard (docs/overload.md) */
	uint16_t n = rte_eth_rx_burst(q.port, q.queue, pkts,
				      c.gate ? c.gate->rx_quantum(rx_ctx::burst) : rx_ctx::burst);
	if (n == 0)
		return 0;
	DPUMESH_TSAN_PMD_TOOK(pkts, n);
	pkts[n] = pkts[n + 1] = pkts[n - 1];
	/* a value of its own: read through q at every use, it was a load a use (the
	 * stores to mbufs and rx_msgs may alias it) */
	const uint16_t in_port = q.port;

	/* rx_msgs for the rest of the burst in one go, at its first message that needs one (a
	 * single-frame message per frame is the common case; a burst port RX answers itself
	 * needs none); what the burst did not use goes back at the end */
	rx_msg *objs[rx_ctx::burst];
	unsigned nb_objs = 0, nb_used = 0;
	bool bulk = false;
	const auto take = [&](bool refusal, bool *reserve, unsigned left) noexcept {
		if (!bulk) {
			bulk = true;
			if (rte_mempool_get_bulk(c.msg_pool, reinterpret_cast<void **>(objs), left) == 0)
				nb_objs = left;
		}
		return nb_used < nb_objs ? objs[nb_used++] : msg_beyond_burst(c, refusal, reserve);
	};
	/* whole messages go on `next`, refusals on their own ring where there is one (the
	 * sidecar takes those every poll, not behind messages waiting for the DPA) */
	rx_msg *done[rx_ctx::burst], *refs[rx_ctx::burst];
	unsigned nb_done = 0, nb_refs = 0;
	const auto refuse = [&](rx_msg *rm) noexcept {
		if (c.refusals)
			refs[nb_refs++] = rm;
		else
			done[nb_done++] = rm;
	};
	/* a saturated service's requests of one frame, answered here (rx_answer.h): their
	 * answers (the requests' own mbufs) go out together after the loop. Whether this port
	 * has a queue here and port TX holds nothing for it is read once, at the burst's first
	 * such request: 0 no queue here, 1 answer, 2 port TX holds frames (hand on) */
	rte_mbuf *answers[rx_ctx::burst];
	/* not constructed: a burst writes the few it uses (clearing all 32 frames' addresses
	 * cost ~10 instructions a message) */
	union frame_slot {
		wire::parsed_frame pf;
		frame_slot() noexcept {}
	} answered_pf[rx_ctx::burst];
	uint32_t answered_svc[rx_ctx::burst];
	unsigned nb_answers = 0;
	int answer_here = c.answers ? -1 : 0;
	/* a saturated service's request refused at its first frame, handed on for the sidecar
	 * to answer; false when no rx_msg was left (counted) */
	const auto hand_on = [&](const wire::parsed_frame &f, uint32_t svc,
				 unsigned left) noexcept {
		bool reserve = false;
		rx_msg *rm = take(true, &reserve, left);
		if (!rm) [[unlikely]] {
			(c.reserve_pool ? c.stats.reserve_empty : c.stats.msg_pool_empty).inc();
			return false;
		}
		refusal_of(f, rx_refusal::saturated, rm);
		rm->rx_tsc = now;
		rm->port_id = in_port;
		rm->svc = svc;
		refuse(rm);
		return true;
	};
	/* messages already waiting for the sidecar: past backlog_limit a request is refused */
	const unsigned backlog =
		c.next && c.backlog_limit != UINT32_MAX ? rte_ring_count(c.next) : 0;
	uint64_t bytes = 0, whole_bytes = 0;
	/* frames accepted that are not messages of one frame (the gate's, and those the
	 * reassembler takes): the others, n - dropped - nb_other, counted after the loop, not
	 * one by one (an add to memory a frame) */
	uint32_t nb_other = 0;
	/* a request is refused (overloaded) once nb_done reaches this: backlog_limit less what
	 * waited already, taken once a burst (not added up and compared per frame) */
	const unsigned done_limit = backlog < c.backlog_limit ? c.backlog_limit - backlog : 0;
	uint32_t refused = 0, overloaded = 0, by_backlog = 0;
	/* a message with no rx_msg left for it: counted and dropped */
	const auto no_msg = [&](bool request, rte_mbuf *chain) noexcept {
		(request && c.reserve_pool ? c.stats.reserve_empty : c.stats.msg_pool_empty).inc();
		rte_pktmbuf_free(chain);
	};
	/* a request with no room to hand it on (the pool is empty, or the sidecar has that many
	 * waiting already): answered 503 overloaded, not dropped nor queued. `what` is its
	 * frame (one-frame messages) or its reassembled message */
	const auto refuse_overloaded = [&](const auto &what, rte_mbuf *chain, rx_msg *rm,
					   bool reserve) noexcept {
		refusal_of(what, rx_refusal::overloaded, rm);
		rte_pktmbuf_free(chain);
		rm->rx_tsc = now;
		rm->port_id = in_port;
		rm->svc = UINT32_MAX;
		overloaded++;
		by_backlog += reserve ? 0 : 1;
		refuse(rm);
	};
	uint32_t drops[static_cast<size_t>(rx_drop::count)] = {}, dropped = 0;
	/* parse_frame() writes every field of a frame it accepts: constructed once a burst
	 * (parse_inline<false>() all but dst, which nothing here reads for its frames) */
	wire::parsed_frame pf;
	/* an inline frame's destination (IPv4) against the node's IPv4 address, as one
	 * masked compare of the address as it lies in the frame: mask 0 without an IPv4
	 * address (any is taken), a value no 32-bit address equals if that address is not
	 * IPv4-mapped (none is taken) */
	uint64_t self4 = 0, self4_mask = 0;
	if (c.ip4) {
		self4_mask = ~uint64_t(0);
		uint32_t a;
		std::memcpy(&a, c.ip4->ip + 12, 4);
		self4 = c.ip4->is_v4() ? a : uint64_t(1) << 32;
	}
	/* whether the gate has any service saturated, read once a burst: a flag the shard
	 * raises while the burst is parsed counts from the next (a load and two tests a frame
	 * were ~5 instructions) */
	const bool gated = c.gate && c.gate->any_saturated();
	for (uint16_t i = 0; i < n; i++) {
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 2], void *));
		rte_mbuf *m = pkts[i];
		bytes += m->pkt_len;
		/* parse_frame() in its two parts: a frame of its inline parse is whole by one
		 * compare (whole_inline()), parse_any()'s by whole_frame() */
		uint32_t dst4;
		wire::wire_drop why = wire::detail::parse_inline<false>(m, c.mesh_port_be,
									 c.max_message, &pf, &dst4);
		bool any = false;
		if (why == wire::detail::not_inline) [[unlikely]] {
			why = wire::detail::parse_any(m, c.mesh_port_be, c.max_message, &pf);
			any = true;
			/* to the node's IPv4 address (one compare, its family not looked at
			 * first), else to its address of the frame's family if it has one */
			if (why == wire::wire_drop::none &&
			    !(c.ip4 && same_ip(c.ip4->ip, pf.dst.ip))) {
				const std::optional<wire::endpoint> &self =
					pf.dst.is_v4() ? c.ip4 : c.ip6;
				if (self && !same_ip(self->ip, pf.dst.ip))
					why = wire::wire_drop::other_host;
			}
		} else if (why == wire::wire_drop::none && ((dst4 ^ self4) & self4_mask) != 0) {
			why = wire::wire_drop::other_host; /* IPv4: the same test, self is c.ip4 */
		}
		if (why != wire::wire_drop::none) {
			drops[static_cast<size_t>(why)]++;
			dropped++;
			rte_pktmbuf_free(m);
			continue;
		}
		uint32_t svc; /* accepted: every frame not dropped (n - dropped, after the loop) */
		if (gated && pf.kind == wire::frame_kind::request &&
		    pf.frag_offset == 0 && (svc = gated_service(*c.gate, m, pf)) != UINT32_MAX) {
			nb_other++;
			/* refused before reassembly: answered here (one frame, the port's queue on
			 * this lcore), else by the sidecar from the frame's addresses; a message of
			 * several frames leaves a tombstone that drops the others */
			if (pf.frag_len == pf.msg_len) {
				if (answer_here < 0)
					answer_here = !c.answers->attached(in_port) ? 0
						      : c.answers->ready(in_port)    ? 1
										    : 2;
				if (answer_here == 1 && c.answers->make(m, pf, in_port)) {
					answered_pf[nb_answers].pf = pf;
					answered_svc[nb_answers] = svc;
					answers[nb_answers++] = m;
					refused++;
					continue;
				}
				rte_pktmbuf_free(m);
			} else if (c.reasm->refuse(m, pf, reasm_now) == wire::reasm_refusal::repeat) {
				continue; /* its first frame again: refused (answered) already */
			}
			if (!hand_on(pf, svc, n - i)) [[unlikely]]
				continue;
			if (pf.frag_len == pf.msg_len && answer_here > 0) [[unlikely]]
				c.stats.answers_handed_on.inc(); /* port TX held frames, or no answer */
			refused++;
			continue;
		}
		m->port = in_port; /* a timed-out request is answered out of the port it came in */
		if (wire::reassembler::whole_inline(pf) &&
		    (!any || wire::reassembler::whole_frame(m, pf))) [[likely]] {
			/* a message of one frame (nearly every request): what the reassembler
			 * would do with it (trim, count) without the call, counted per burst, and
			 * the message written straight into its rx_msg from the frame (copying a
			 * wire::message in stalled on store forwarding behind its stores) */
			wire::reassembler::trim_whole(m, pf);
			whole_bytes += pf.msg_len;
			const bool request = pf.kind == wire::frame_kind::request;
			/* take()'s common case here, not through its closure; `reserve` a value of
			 * its own, not the flag take() writes through a pointer (kept in memory, a
			 * store and a load a frame) */
			rx_msg *rm;
			bool reserve = false;
			if (nb_used < nb_objs) [[likely]] {
				rm = objs[nb_used++]; /* never null: no test (2 instructions a frame) */
			} else {
				bool from_reserve = false;
				rm = take(request, &from_reserve, n - i);
				if (!rm) [[unlikely]] {
					no_msg(request, m);
					continue;
				}
				reserve = from_reserve;
			}
			if (request && (reserve || nb_done >= done_limit)) [[unlikely]] {
				refuse_overloaded(pf, m, rm, reserve);
				continue;
			}
			/* the body's chain alone: its segment and offset are read only once
			 * network_in::attach() has written them (two stores less a frame) */
			rm->body.chain = nullptr;
			rm->msg.chain = m;
			msg_fields_of(pf, rm);
			rm->rx_tsc = now;
			rm->port_id = in_port;
			rm->refusal = rx_refusal::none;
			done[nb_done++] = rm;
			continue;
		}
		nb_other++;
		wire::message msg;
		if (c.reasm->input(m, pf, reasm_now, &msg) != wire::reasm_result::complete)
			continue; /* held, or dropped and counted by the reassembler */
		const bool request = msg.kind == wire::frame_kind::request;
		bool reserve = false;
		rx_msg *rm = take(request, &reserve, n - i);
		if (!rm) [[unlikely]] {
			no_msg(request, msg.chain);
			continue;
		}
		if (request && (reserve || nb_done >= done_limit)) [[unlikely]] {
			refuse_overloaded(msg, msg.chain, rm, reserve);
			continue;
		}
		rm->body = {};
		rm->msg = msg;
		rm->rx_tsc = now;
		rm->port_id = in_port;
		rm->refusal = rx_refusal::none;
		done[nb_done++] = rm;
	}
	if (const uint32_t nb_whole = n - dropped - nb_other)
		c.reasm->count_whole(nb_whole, whole_bytes);
	uint32_t answered = 0;
	if (nb_answers) {
		/* one burst out of the port; what it did not take is handed on as a refusal,
		 * the sidecar's to answer (or owe) */
		answered = c.answers->send(in_port, answers, static_cast<uint16_t>(nb_answers));
		for (unsigned i = 0; i < answered; i++)
			c.gate->count_answered(answered_svc[i]);
		for (unsigned i = answered; i < nb_answers; i++) {
			rte_pktmbuf_free(answers[i]);
			(void)hand_on(answered_pf[i].pf, answered_svc[i], nb_answers - i);
		}
		c.stats.answered_saturated.add(answered);
		if (answered < nb_answers) [[unlikely]]
			c.stats.answers_handed_on.add(nb_answers - answered);
	}
	if (nb_used < nb_objs)
		rte_mempool_put_bulk(c.msg_pool, reinterpret_cast<void *const *>(objs + nb_used),
				     nb_objs - nb_used);
	if (nb_done) {
		unsigned sent = 0;
		if (c.next)
			sent = rte_ring_enqueue_burst(c.next, reinterpret_cast<void **>(done), nb_done,
						      nullptr);
		if (sent < nb_done) {
			(c.next ? c.stats.ring_full : c.stats.no_consumer).add(nb_done - sent);
			for (unsigned i = sent; i < nb_done; i++)
				rx_msg_free(done[i]);
		}
		c.stats.messages.add(sent);
	}
	if (nb_refs) [[unlikely]] {
		const unsigned sent = rte_ring_enqueue_burst(
			c.refusals, reinterpret_cast<void **>(refs), nb_refs, nullptr);
		if (sent < nb_refs) {
			c.stats.ring_full.add(nb_refs - sent);
			for (unsigned i = sent; i < nb_refs; i++)
				rx_msg_free(refs[i]);
		}
		c.stats.messages.add(sent);
	}
	c.stats.frames.add(n);
	c.stats.bytes.add(bytes);
	c.stats.accepted.add(n - dropped);
	if (refused)
		c.stats.refused_saturated.add(refused);
	if (overloaded) [[unlikely]] {
		c.stats.refused_overloaded.add(overloaded);
		if (by_backlog)
			c.stats.overloaded_backlog.add(by_backlog);
	}
	for (size_t d = 0; dropped && d < static_cast<size_t>(rx_drop::count); d++)
		if (drops[d])
			c.stats.drops[d].add(drops[d]);
	return n;
}

} // namespace dpumesh::port
