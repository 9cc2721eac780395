// SPDX-License-Identifier: BSD-3-Clause
// The generator's trial loop: paced TX with tags, RX matching, loss and latency.
#include "dpumesh/replay/generator.h"

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_jhash.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include <unistd.h>

#include "dpumesh/common/tsan.h"
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

uint16_t flow_queue(const uint8_t *frame, uint32_t len, uint16_t queues) noexcept
{
	if (queues <= 1)
		return 0;
	const internal::l4_view v = internal::walk(frame, len);
	if (!v.ip || v.l4_len < 4 || uint32_t(v.l4) + 4 > len)
		return 0;
	/* the endpoints in one order whichever way the frame goes: address, then port */
	uint8_t ends[2][18];
	std::memcpy(ends[0], v.src, 16);
	std::memcpy(ends[0] + 16, frame + v.l4, 2);
	std::memcpy(ends[1], v.dst, 16);
	std::memcpy(ends[1] + 16, frame + v.l4 + 2, 2);
	const bool swap = std::memcmp(ends[0], ends[1], 18) > 0;
	/* a whole number of 32-bit words: rte_jhash() reads the tail of a key a word at a time */
	alignas(4) uint8_t key[40] = {};
	std::memcpy(key, ends[swap ? 1 : 0], 18);
	std::memcpy(key + 18, ends[swap ? 0 : 1], 18);
	key[36] = v.proto;
	return uint16_t(rte_jhash(key, sizeof(key), 0x6d657368) % queues);
}

status start_port(uint16_t port_id, rte_mempool *pool, uint16_t nb_desc, double retry_s,
		  uint16_t queues)
{
	if (!rte_eth_dev_is_valid_port(port_id))
		return errorf("port %u does not exist", port_id);
	if (queues < 1 || queues > max_queues)
		return errorf("port %u: %u queues: 1 to %u", port_id, queues, max_queues);
	rte_eth_dev_info info{};
	int rc = rte_eth_dev_info_get(port_id, &info);
	if (rc != 0)
		return errorf("port %u: device info: %s", port_id, rte_strerror(-rc));
	if (queues > info.max_rx_queues || queues > info.max_tx_queues)
		return errorf("port %u (%s) has at most %u RX and %u TX queues, %u asked", port_id,
			      info.driver_name ? info.driver_name : "?", info.max_rx_queues,
			      info.max_tx_queues, queues);
	rte_eth_conf conf{};
	rc = rte_eth_dev_configure(port_id, queues, queues, &conf);
	if (rc != 0)
		return errorf("port %u: rte_eth_dev_configure: %s", port_id, rte_strerror(-rc));
	uint16_t nb_rxd = nb_desc, nb_txd = nb_desc;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rxd, &nb_txd);
	if (rc != 0)
		return errorf("port %u: descriptors: %s", port_id, rte_strerror(-rc));
	int socket = rte_eth_dev_socket_id(port_id);
	unsigned s = socket < 0 ? 0 : unsigned(socket);
	for (uint16_t q = 0; q < queues; q++) {
		rc = rte_eth_rx_queue_setup(port_id, q, nb_rxd, s, nullptr, pool);
		if (rc != 0)
			return errorf("port %u: RX queue %u: %s", port_id, q, rte_strerror(-rc));
		rc = rte_eth_tx_queue_setup(port_id, q, nb_txd, s, nullptr);
		if (rc != 0)
			return errorf("port %u: TX queue %u: %s", port_id, q, rte_strerror(-rc));
	}
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

generator::generator(uint16_t port_id, rte_mempool *pool, const capture &cap, match_mode match,
		     uint16_t queues)
	: _port(port_id), _pool(pool), _cap(cap), _match(match), _queues(queues),
	  _queue_of(cap.frames.size()), _per_queue(queues), _tx(queues), _slots(nb_slots),
	  _ns_per_tsc(1e9 / double(rte_get_tsc_hz()))
{
	for (size_t i = 0; i < cap.frames.size(); i++) {
		const frame_info &f = cap.frames[i];
		_queue_of[i] = uint8_t(flow_queue(cap.bytes.data() + f.offset, f.len, queues));
		_per_queue[_queue_of[i]]++;
	}
}

result<std::unique_ptr<generator>> generator::create(uint16_t port_id, rte_mempool *pool,
						     const capture &cap, match_mode match,
						     uint16_t queues)
{
	if (cap.frames.empty())
		return errorf("the capture has no frame to send");
	if (queues < 1 || queues > max_queues)
		return errorf("%u queues: 1 to %u", queues, max_queues);
	if (!pool)
		return errorf("no mempool");
	uint16_t room = rte_pktmbuf_data_room_size(pool);
	for (const auto &f : cap.frames)
		if (uint32_t(f.len) + RTE_PKTMBUF_HEADROOM > room)
			return errorf("a %u-byte frame does not fit the mempool's %u-byte buffers",
				      f.len, room);
	return std::unique_ptr<generator>(new generator(port_id, pool, cap, match, queues));
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
			uint32_t got = 0;
			for (uint16_t q = 0; q < _queues; q++) {
				const uint16_t n = rte_eth_rx_burst(_port, q, rx, 64);
				DPUMESH_TSAN_PMD_TOOK(rx, n);
				r.settled += n;
				rte_pktmbuf_free_bulk(rx, n);
				got += n;
			}
			if (got > 0) {
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

	for (tx_batch &b : _tx) {
		b.n = b.at = 0;
		b.partial = UINT64_MAX;
	}
	uint32_t nb_pend = 0;    /* frames of the burst not sent yet, every queue */
	/* frees what the burst has not sent: TX has ended */
	auto drop_pending = [&]() {
		for (tx_batch &b : _tx) {
			rte_pktmbuf_free_bulk(b.m + b.at, b.n - b.at);
			b.n = b.at = 0;
		}
		nb_pend = 0;
	};
	size_t pos = 0;          /* next frame of the capture */
	uint64_t pass = 0;       /* passes begun */
	uint64_t l1_bytes = 0;   /* sent + pending, for Gbps pacing */
	uint64_t queued = 0;     /* frames sent + pending, for pps pacing */
	bool tx_done = false;
	uint64_t tx_stop = start;
	const uint64_t progress_every =
		c.progress_seconds > 0 && c.on_progress ? uint64_t(c.progress_seconds * double(hz)) : 0;
	uint64_t next_progress = start + progress_every;
	/* one RX burst matched against what was sent; how many frames it took */
	auto take_rx = [&]() -> uint32_t {
		uint32_t got = 0;
		for (uint16_t q = 0; q < _queues; q++) {
			const uint16_t n = rte_eth_rx_burst(_port, q, rx, 64);
			DPUMESH_TSAN_PMD_TOOK(rx, n);
			if (n > 0) {
				const uint64_t t = rte_rdtsc();
				for (uint16_t i = 0; i < n; i++)
					on_rx(rx[i], t, c.trial_id, r);
				rte_pktmbuf_free_bulk(rx, n);
				got += n;
			}
		}
		return got;
	};

	for (;;) {
		uint64_t now = rte_rdtsc();
		bool worked = false;
		if (!tx_done && stop && stop->load(std::memory_order_relaxed)) {
			tx_done = true;
			tx_stop = now;
			drop_pending();
		}
		/* Pacing never looks past tx_end: a thread descheduled across the end still
		 * sends what was due by then, so a trial sends rate x seconds frames. */
		const bool past_end = now >= tx_end;
		const uint64_t pace = past_end ? tx_end : now;
		if (!tx_done && past_end && c.kind == rate_kind::unpaced) {
			/* nothing was due by a time: TX ends with its seconds */
			tx_done = true;
			tx_stop = tx_end;
			drop_pending();
		}
		if (!tx_done && past_end && now - tx_end > hz) {
			/* the port has taken nothing for a second past the end: give up */
			tx_done = true;
			tx_stop = tx_end;
			drop_pending();
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
				rte_mbuf *fresh[64];
				if (due > 0 && rte_pktmbuf_alloc_bulk(_pool, fresh, due) != 0) {
					r.alloc_fail++;
					due = 0;
				}
				for (uint16_t i = 0; i < due; i++) {
					const frame_info &fi = _cap.frames[pos];
					const uint8_t *src = _cap.bytes.data() + fi.offset;
					tx_batch &b = _tx[_queue_of[pos]];
					const uint16_t k = b.n++;
					b.m[k] = fresh[i];
					uint8_t *dst = rte_pktmbuf_mtod(fresh[i], uint8_t *);
					std::memcpy(dst, src, fi.len);
					fresh[i]->data_len = fi.len;
					fresh[i]->pkt_len = fi.len;
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
						b.seq[k] = seq;
						b.last[k] = fi.last;
					} else {
						b.seq[k] = UINT64_MAX;
						b.last[k] = 0;
					}
					b.len[k] = fi.len;
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
			for (uint16_t q = 0; nb_pend > 0 && q < _queues; q++) {
				tx_batch &b = _tx[q];
				if (b.at == b.n)
					continue;
				DPUMESH_TSAN_PMD_GIVES(b.m + b.at, uint16_t(b.n - b.at));
				const uint16_t n = rte_eth_tx_burst(_port, q, b.m + b.at,
								    uint16_t(b.n - b.at));
				const uint64_t t = rte_rdtsc();
				worked |= n > 0;
				if (c.tx_tsc_log)
					for (uint16_t i = 0; i < n && c.tx_tsc_log->size() <
							      c.tx_tsc_log->capacity(); i++)
						c.tx_tsc_log->push_back(t);
				for (uint16_t i = b.at; i < b.at + n; i++) {
					r.tx_frames++;
					r.tx_bytes += b.len[i]; /* b.m[i] belongs to the PMD now */
					if (b.seq[i] == UINT64_MAX) {
						r.tx_untracked++;
						continue;
					}
					slot &s = _slots[b.seq[i] & (nb_slots - 1)];
					if (s.seq != b.seq[i] || s.state == 0) {
						s = slot{b.seq[i], t, 0, 1, 0};
					} else if (s.state == 1) {
						s.tx_tsc = t;
					}
					r.expected += b.last[i];
					b.partial = b.last[i] ? UINT64_MAX : b.seq[i];
				}
				if (b.at + n < b.n)
					r.tx_full++;
				b.at = uint16_t(b.at + n);
				nb_pend -= n;
				if (b.at == b.n)
					b.n = b.at = 0;
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
	for (const tx_batch &b : _tx) {
		if (b.partial == UINT64_MAX)
			continue;
		const slot &s = _slots[b.partial & (nb_slots - 1)];
		if (s.seq == b.partial && s.state == 2)
			r.expected++;
	}
	r.passes = pass;
	r.tx_seconds = double(tx_stop - start) / double(hz);
	return r;
}

} // namespace dpumesh::replay
