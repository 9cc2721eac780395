// SPDX-License-Identifier: BSD-3-Clause
// The generator's trial loop: paced TX with tags, RX matching, loss and latency.
#include "dpumesh/replay/generator.h"

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include <unistd.h>

#include "dpumesh/wire/frame_hdr.h"
#include "internal/headers.h"

namespace dpumesh::replay {

namespace {

constexpr uint64_t tag_magic = 0xd5;
constexpr uint64_t seq_mask = (1ull << 48) - 1;
constexpr uint32_t l1_overhead = 24; /* preamble + SFD 8, FCS 4, inter-frame gap 12 */

uint64_t make_tag(uint8_t trial_id, uint64_t seq)
{
	return tag_magic << 56 | uint64_t(trial_id) << 48 | (seq & seq_mask);
}

void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = uint8_t(v);
}

uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/** RFC 1624 incremental update of a one's complement checksum for `len` (even) changed
 *  bytes at an even offset. */
void csum_update(uint8_t *csum, const uint8_t *old8, const uint8_t *new8, int len = 8)
{
	uint32_t acc = uint16_t(~internal::be16(csum));
	for (int i = 0; i < len; i += 2) {
		acc += uint16_t(~internal::be16(old8 + i));
		acc += internal::be16(new8 + i);
	}
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	uint16_t c = uint16_t(~acc);
	if (c == 0)
		c = 0xffff; /* UDP: zero means "no checksum" */
	csum[0] = uint8_t(c >> 8);
	csum[1] = uint8_t(c);
}

void csum_full(uint8_t *frame, const frame_info &f)
{
	uint8_t *l3 = frame + f.l3_offset;
	uint8_t *cs = frame + f.csum_offset;
	cs[0] = cs[1] = 0;
	uint16_t c;
	if (f.is_ipv6) {
		auto *ip = reinterpret_cast<rte_ipv6_hdr *>(l3);
		c = rte_ipv6_udptcp_cksum(ip, l3 + sizeof(*ip));
	} else {
		auto *ip = reinterpret_cast<rte_ipv4_hdr *>(l3);
		c = rte_ipv4_udptcp_cksum(ip, l3 + rte_ipv4_hdr_len(ip));
	}
	std::memcpy(cs, &c, 2);
}

} // namespace

status start_port(uint16_t port_id, rte_mempool *pool, uint16_t nb_desc, double retry_s)
{
	if (!rte_eth_dev_is_valid_port(port_id))
		return errorf("port %u does not exist", port_id);
	rte_eth_conf conf{};
	int rc = rte_eth_dev_configure(port_id, 1, 1, &conf);
	if (rc != 0)
		return errorf("port %u: rte_eth_dev_configure: %s", port_id, rte_strerror(-rc));
	uint16_t nb_rxd = nb_desc, nb_txd = nb_desc;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rxd, &nb_txd);
	if (rc != 0)
		return errorf("port %u: descriptors: %s", port_id, rte_strerror(-rc));
	int socket = rte_eth_dev_socket_id(port_id);
	unsigned s = socket < 0 ? 0 : unsigned(socket);
	rc = rte_eth_rx_queue_setup(port_id, 0, nb_rxd, s, nullptr, pool);
	if (rc != 0)
		return errorf("port %u: RX queue: %s", port_id, rte_strerror(-rc));
	rc = rte_eth_tx_queue_setup(port_id, 0, nb_txd, s, nullptr);
	if (rc != 0)
		return errorf("port %u: TX queue: %s", port_id, rte_strerror(-rc));
	/* a memif client cannot start before its server's socket exists: retry a while */
	for (double waited = 0;; waited += 0.1) {
		rc = rte_eth_dev_start(port_id);
		if (rc == 0 || waited >= retry_s)
			break;
		usleep(100000);
	}
	if (rc != 0)
		return errorf("port %u: start: %s%s", port_id, rte_strerror(-rc),
			      retry_s > 0 ? " (for the whole wait: is the peer up?)" : "");
	rte_eth_promiscuous_enable(port_id); /* not every PMD has it; answers are ours anyway */
	return status::ok();
}

generator::generator(uint16_t port_id, rte_mempool *pool, const capture &cap, match_mode match)
	: _port(port_id), _pool(pool), _cap(cap), _match(match), _slots(nb_slots),
	  _ns_per_tsc(1e9 / double(rte_get_tsc_hz()))
{
}

result<std::unique_ptr<generator>> generator::create(uint16_t port_id, rte_mempool *pool,
						     const capture &cap, match_mode match)
{
	if (cap.frames.empty())
		return errorf("the capture has no frame to send");
	if (!pool)
		return errorf("no mempool");
	uint16_t room = rte_pktmbuf_data_room_size(pool);
	for (const auto &f : cap.frames)
		if (uint32_t(f.len) + RTE_PKTMBUF_HEADROOM > room)
			return errorf("a %u-byte frame does not fit the mempool's %u-byte buffers",
				      f.len, room);
	return std::unique_ptr<generator>(new generator(port_id, pool, cap, match));
}

void generator::answered(slot &s, uint64_t tsc, trial_result &r) noexcept
{
	if (s.state == 2) {
		r.duplicates++;
		return;
	}
	s.state = 2;
	r.answered++;
	uint64_t d = tsc > s.tx_tsc ? tsc - s.tx_tsc : 0;
	r.latency.record(uint64_t(double(d) * _ns_per_tsc));
	switch (s.cls) {
	case 2: r.classes.ok_2xx++; break;
	case 4: r.classes.c4xx++; break;
	case 5: r.classes.c5xx++; break;
	case 9: r.classes.mesh_error++; break;
	default: r.classes.other++; break;
	}
}

generator::slot *generator::slot_of(uint64_t tag, uint8_t trial_id, trial_result &r) noexcept
{
	if ((tag >> 56) != tag_magic || uint8_t(tag >> 48) != trial_id) {
		r.rx_other++;
		return nullptr;
	}
	slot &s = _slots[(tag & seq_mask) & (nb_slots - 1)];
	if (s.state == 0 || (s.seq & seq_mask) != (tag & seq_mask)) {
		r.stale++;
		return nullptr;
	}
	return &s;
}

void generator::on_rx(rte_mbuf *m, uint64_t tsc, uint8_t trial_id, trial_result &r) noexcept
{
	uint32_t len = rte_pktmbuf_pkt_len(m);
	r.rx_frames++;
	r.rx_bytes += len;
	uint8_t buf[176];
	if (_match == match_mode::frame) {
		if (len < 8) {
			r.rx_other++;
			return;
		}
		auto *p = static_cast<const uint8_t *>(rte_pktmbuf_read(m, len - 8, 8, buf));
		slot *s = slot_of(get_be64(p), trial_id, r);
		if (!s)
			return;
		s->cls = 2;
		answered(*s, tsc, r);
		return;
	}
	uint32_t want = std::min<uint32_t>(len, sizeof(buf));
	auto *f = static_cast<const uint8_t *>(rte_pktmbuf_read(m, 0, want, buf));
	internal::l4_view v = internal::walk(f, len);
	/* a fragment header must be there; the L7 status only in a first fragment (below): a
	 * last fragment may carry a single byte, and it completes its answer all the same */
	if (!v.ip || v.proto != internal::proto_udp || v.l4_len < 8 + wire::frame_hdr_size ||
	    v.l4 + 8u + wire::frame_hdr_size > want) {
		r.rx_other++;
		return;
	}
	const uint8_t *fh = f + v.l4 + 8;
	uint32_t frag_len = v.l4_len - 8 - uint32_t(wire::frame_hdr_size);
	wire::frag_fields ff;
	if (wire::decode_frag_hdr(fh, frag_len, 16u << 20, &ff) != wire::wire_drop::none ||
	    ff.kind != wire::frame_kind::response) {
		r.rx_other++;
		return;
	}
	slot *sp = slot_of(ff.correlation, trial_id, r);
	if (!sp)
		return;
	slot &s = *sp;
	const bool has_status = frag_len >= 12 && v.l4 + 8u + wire::frame_hdr_size + 12u <= want;
	if (ff.frag_offset == 0 && has_status) {
		const uint8_t *l7 = fh + wire::frame_hdr_size;
		uint16_t st = internal::be16(l7 + 8), flags = internal::be16(l7 + 10);
		s.cls = (flags & 1) ? 9 : (st >= 200 && st < 300) ? 2 : (st >= 400 && st < 500) ? 4
			: (st >= 500 && st < 600) ? 5 : 0;
	}
	s.rx_bytes += frag_len;
	if (s.rx_bytes >= ff.msg_len)
		answered(s, tsc, r);
}

trial_result generator::run(const trial_config &c, const std::atomic<bool> *stop)
{
	trial_result r;
	r.config = c;
	for (auto &s : _slots)
		s = slot{};
	const uint64_t hz = rte_get_tsc_hz();
	const uint16_t burst = std::clamp<uint16_t>(c.burst, 1, 64);
	const size_t nb_frames = _cap.frames.size();
	rte_mbuf *rx[64];
	if (c.settle_quiet_seconds > 0) {
		const uint64_t t0 = rte_rdtsc();
		const uint64_t quiet = uint64_t(c.settle_quiet_seconds * double(hz));
		const uint64_t most = uint64_t(c.settle_max_seconds * double(hz));
		uint64_t last = t0;
		for (uint64_t now = t0; now - last < quiet && now - t0 < most; now = rte_rdtsc()) {
			uint16_t n = rte_eth_rx_burst(_port, 0, rx, 64);
			if (n > 0) {
				r.settled += n;
				rte_pktmbuf_free_bulk(rx, n);
				last = rte_rdtsc();
			} else if (c.idle_sleep_us) {
				usleep(c.idle_sleep_us);
			}
		}
	}
	const uint64_t start = rte_rdtsc();
	const uint64_t tx_end = c.seconds > 0 ? start + uint64_t(c.seconds * double(hz)) : UINT64_MAX;
	const double frames_per_tsc = c.kind == rate_kind::pps ? c.value / double(hz) : 0;
	const double bytes_per_tsc = c.kind == rate_kind::gbps ? c.value * 1e9 / 8 / double(hz) : 0;
	const double speed = c.kind == rate_kind::timing && c.value > 0 ? c.value : 1.0;

	rte_mbuf *pend[64];
	uint64_t pend_seq[64];
	uint8_t pend_last[64];
	uint16_t pend_len[64];
	uint16_t nb_pend = 0;
	size_t pos = 0;          /* next frame of the capture */
	uint64_t pass = 0;       /* passes begun */
	uint64_t l1_bytes = 0;   /* sent + pending, for Gbps pacing */
	uint64_t queued = 0;     /* frames sent + pending, for pps pacing */
	uint64_t partial = UINT64_MAX; /* a message begun and not sent whole yet */
	bool tx_done = false;
	uint64_t tx_stop = start;
	const uint64_t progress_every =
		c.progress_seconds > 0 && c.on_progress ? uint64_t(c.progress_seconds * double(hz)) : 0;
	uint64_t next_progress = start + progress_every;
	/* one RX burst matched against what was sent; how many frames it took */
	auto take_rx = [&]() -> uint16_t {
		const uint16_t n = rte_eth_rx_burst(_port, 0, rx, 64);
		if (n > 0) {
			const uint64_t t = rte_rdtsc();
			for (uint16_t i = 0; i < n; i++)
				on_rx(rx[i], t, c.trial_id, r);
			rte_pktmbuf_free_bulk(rx, n);
		}
		return n;
	};

	for (;;) {
		uint64_t now = rte_rdtsc();
		bool worked = false;
		if (!tx_done && stop && stop->load(std::memory_order_relaxed)) {
			tx_done = true;
			tx_stop = now;
			rte_pktmbuf_free_bulk(pend, nb_pend);
			nb_pend = 0;
		}
		/* Pacing never looks past tx_end: a thread descheduled across the end still
		 * sends what was due by then, so a trial sends rate x seconds frames. */
		const bool past_end = now >= tx_end;
		const uint64_t pace = past_end ? tx_end : now;
		if (!tx_done && past_end && c.kind == rate_kind::unpaced) {
			/* nothing was due by a time: TX ends with its seconds */
			tx_done = true;
			tx_stop = tx_end;
			rte_pktmbuf_free_bulk(pend, nb_pend);
			nb_pend = 0;
		}
		if (!tx_done && past_end && now - tx_end > hz) {
			/* the port has taken nothing for a second past the end: give up */
			tx_done = true;
			tx_stop = tx_end;
			rte_pktmbuf_free_bulk(pend, nb_pend);
			nb_pend = 0;
		}
		if (!tx_done) {
			if (nb_pend == 0) {
				/* how many frames are due now */
				uint16_t due = 0;
				double el = double(pace - start);
				if (c.kind == rate_kind::unpaced) {
					due = burst; /* whatever the port takes */
				} else if (c.kind == rate_kind::pps) {
					double d = el * frames_per_tsc - double(queued);
					due = d >= double(burst) ? burst : d >= 1 ? uint16_t(d) : 0;
				} else if (c.kind == rate_kind::gbps) {
					double budget = el * bytes_per_tsc;
					size_t p = pos;
					uint64_t b = l1_bytes;
					while (due < burst) {
						b += _cap.frames[p].len + l1_overhead;
						if (double(b) > budget)
							break;
						due++;
						if (++p == nb_frames)
							p = 0;
					}
				} else {
					double now_ns = el * _ns_per_tsc * speed;
					size_t p = pos;
					uint64_t ps = pass;
					while (due < burst && (!c.passes || ps < c.passes)) {
						double t = double(ps) * double(_cap.span_ns) +
							   double(_cap.frames[p].ts_ns);
						if (t > now_ns)
							break;
						due++;
						if (++p == nb_frames) {
							p = 0;
							ps++;
						}
					}
				}
				if (c.passes) {
					uint64_t left = pass >= c.passes ? 0
						: (c.passes - pass) * nb_frames - pos;
					due = uint16_t(std::min<uint64_t>(due, left));
				}
				if (due > 0 && rte_pktmbuf_alloc_bulk(_pool, pend, due) != 0) {
					r.alloc_fail++;
					due = 0;
				}
				for (uint16_t i = 0; i < due; i++) {
					const frame_info &fi = _cap.frames[pos];
					const uint8_t *src = _cap.bytes.data() + fi.offset;
					uint8_t *dst = rte_pktmbuf_mtod(pend[i], uint8_t *);
					std::memcpy(dst, src, fi.len);
					pend[i]->data_len = fi.len;
					pend[i]->pkt_len = fi.len;
					if (fi.msg >= 0) {
						uint64_t seq = pass * _cap.nb_messages + uint64_t(fi.msg);
						uint8_t t[8];
						put_be64(t, make_tag(c.trial_id, seq));
						std::memcpy(dst + fi.tag_offset, t, 8);
						/* each pass's copy of a message is a new message:
						 * its own id (the capture's repeat every pass) */
						uint8_t id[4] = {uint8_t(seq >> 24), uint8_t(seq >> 16),
								 uint8_t(seq >> 8), uint8_t(seq)};
						if (fi.msgid_offset)
							std::memcpy(dst + fi.msgid_offset, id, 4);
						if (fi.csum_offset && fi.csum_full) {
							csum_full(dst, fi);
						} else if (fi.csum_offset) {
							csum_update(dst + fi.csum_offset, src + fi.tag_offset, t);
							if (fi.msgid_offset)
								csum_update(dst + fi.csum_offset,
									    src + fi.msgid_offset, id, 4);
						}
						pend_seq[i] = seq;
						pend_last[i] = fi.last;
					} else {
						pend_seq[i] = UINT64_MAX;
						pend_last[i] = 0;
					}
					pend_len[i] = fi.len;
					l1_bytes += fi.len + l1_overhead;
					queued++;
					if (++pos == nb_frames) {
						pos = 0;
						pass++;
					}
				}
				nb_pend = due;
				bool passes_done = c.passes && pass >= c.passes;
				if (due == 0 && (past_end || passes_done)) {
					tx_done = true;
					tx_stop = past_end ? tx_end : now;
				}
			}
			if (nb_pend > 0) {
				uint16_t n = rte_eth_tx_burst(_port, 0, pend, nb_pend);
				uint64_t t = rte_rdtsc();
				worked |= n > 0;
				if (c.tx_tsc_log)
					for (uint16_t i = 0; i < n && c.tx_tsc_log->size() <
							      c.tx_tsc_log->capacity(); i++)
						c.tx_tsc_log->push_back(t);
				for (uint16_t i = 0; i < n; i++) {
					r.tx_frames++;
					r.tx_bytes += pend_len[i]; /* pend[i] belongs to the PMD now */
					if (pend_seq[i] == UINT64_MAX) {
						r.tx_untracked++;
						continue;
					}
					slot &s = _slots[pend_seq[i] & (nb_slots - 1)];
					if (s.seq != pend_seq[i] || s.state == 0) {
						s = slot{pend_seq[i], t, 0, 1, 0};
					} else if (s.state == 1) {
						s.tx_tsc = t;
					}
					r.expected += pend_last[i];
					partial = pend_last[i] ? UINT64_MAX : pend_seq[i];
				}
				if (n < nb_pend) {
					r.tx_full++;
					std::memmove(pend, pend + n, (nb_pend - n) * sizeof(pend[0]));
					std::memmove(pend_seq, pend_seq + n, (nb_pend - n) * sizeof(pend_seq[0]));
					std::memmove(pend_last, pend_last + n, (nb_pend - n) * sizeof(pend_last[0]));
					std::memmove(pend_len, pend_len + n, (nb_pend - n) * sizeof(pend_len[0]));
				}
				nb_pend = uint16_t(nb_pend - n);
			}
		}
		if (tx_done && now >= tx_stop + uint64_t(c.drain_seconds * double(hz))) {
			/* what is in the RX queue already came before this look: a generator the
			 * scheduler kept off its CPU through the drain (SCHED_IDLE on a loaded box)
			 * takes it now rather than counting it lost (a bounded sweep: the queue) */
			for (unsigned b = 0; b < 1024 && take_rx() != 0; b++) {
			}
			break;
		}
		if (progress_every && now >= next_progress) {
			next_progress += progress_every;
			r.tx_seconds = double(now - start) / double(hz);
			c.on_progress(r);
		}
		if (take_rx() > 0)
			worked = true;
		if (!worked && c.idle_sleep_us)
			usleep(c.idle_sleep_us);
	}
	/* the trial ended inside a message: answered anyway (a node may refuse a request at its
	 * first frame), it expected that answer; not answered, it expected none */
	if (partial != UINT64_MAX) {
		const slot &s = _slots[partial & (nb_slots - 1)];
		if (s.seq == partial && s.state == 2)
			r.expected++;
	}
	r.passes = pass;
	r.tx_seconds = double(tx_stop - start) / double(hz);
	return r;
}

} // namespace dpumesh::replay
