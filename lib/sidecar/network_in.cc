// SPDX-License-Identifier: BSD-3-Clause
// Network-in: an rx_msg's L7 header decoded in the sidecar's header buffer or an hbuf; its body stays in its mbufs.
#include "internal/network_in.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <type_traits>

#include "dpumesh/common/copy.h"
#include "internal/outbox.h"
#include "dpumesh/sidecar/sidecar.h"

namespace dpumesh::sidecar {

namespace {

/* copy_from_chain() of a header that is not within the first segment's room, a segment
 * at a time */
[[gnu::noinline]] void copy_from_segments(const rte_mbuf *m, uint32_t len, uint8_t *dst) noexcept
{
	while (m && len) {
		uint32_t n = std::min<uint32_t>(m->data_len, len);
		std::memcpy(dst, rte_pktmbuf_mtod(m, const uint8_t *), n);
		dst += n;
		len -= n;
		m = m->next;
	}
}

/* `len` bytes from the start of a chain to `dst`, which has `room` bytes: a header within
 * the first segment in whole chunks, inline (libc's memcpy of ~60 bytes was 1.6% of the
 * forward path's worker; a call of its own, ~12 instructions a message), when both the
 * segment's buffer and `dst` have room for them */
template <bool RoomForTwo = false>
[[gnu::always_inline]] inline void copy_from_chain(const rte_mbuf *m, uint32_t len, uint8_t *dst,
						   uint32_t room) noexcept
{
	constexpr uint32_t two = 2 * copy_chunk;
	if (m && len <= m->data_len) [[likely]] {
		const auto *src = rte_pktmbuf_mtod(m, const uint8_t *);
		/* a header of up to two chunks (a one-frame request's: ~60 bytes), both copied
		 * with no loop (its compare and branch a chunk were ~6 instructions); RoomForTwo:
		 * the caller's dst has room for two chunks (not compared) */
		if (len <= two && (RoomForTwo || two <= room) && m->data_off + two <= m->buf_len)
			[[likely]] {
			std::memcpy(dst, src, copy_chunk);
			std::memcpy(dst + copy_chunk, src + copy_chunk, copy_chunk);
			return;
		}
		if (copy_chunks_len(len) <= room && m->data_off + copy_chunks_len(len) <= m->buf_len) {
			copy_chunks(dst, src, len);
			return;
		}
	}
	copy_from_segments(m, len, dst);
}

/* A view of a header at `from` made a view of its copy at `to`. */
void move_view(wire::l7_view &v, const uint8_t *from, const uint8_t *to) noexcept
{
	const auto at = [&](const void *p) { return to + (static_cast<const uint8_t *>(p) - from); };
	for (std::string_view *s :
	     {&v.service, &v.method, &v.path, &v.reason, &v.hop, &v.authorization})
		if (s->data())
			*s = std::string_view(reinterpret_cast<const char *>(at(s->data())), s->size());
	if (v.fields)
		v.fields = at(v.fields);
	if (v.end)
		v.end = at(v.end);
}

/* A fresh hbuf's header area: its meta cleared by a copy from a zero object (GCC makes a
 * constant-size memset `rep stos`, whose start-up was 11% of take()'s samples). */
uint8_t *fresh_hbuf(void *obj) noexcept
{
	static constexpr dpa_hbuf_meta zero_meta{};
	std::memcpy(obj, &zero_meta, sizeof(zero_meta));
	return static_cast<uint8_t *>(obj) + DPA_HBUF_META_SIZE;
}

/* A delivery command's header, body (none yet) and lengths, a request's and a
 * response's alike */
inline void command_lengths(dpa_command &c, const wire::message &msg) noexcept
{
	c.header = 0;
	c.body = 0;
	c.header_len = msg.l7_len;
	c.body_len = msg.msg_len - msg.l7_len;
}

/* A delivery command's fields but its header, body and lengths, a store per field:
 * `cmd = dpa_command{}` made a copy on the stack and read it back in 16-byte loads behind
 * its narrow stores, a store-forwarding stall that took 60% of take()'s samples */
void command_rest(dpa_command &c, dpa_command::op what) noexcept
{
	static_assert(sizeof(dpa_command) == 64, "a new field of dpa_command: write it here");
	c.what = what;
	c.flow = DPUMESH_CASE_INGRESS;
	c.hold = c.resume = c.notify = false;
	c.status = DPUMESH_STATUS_OK;
	c.dst = 0;
	c.req_id = 0;
	c.step_id = 0;
}

} // namespace

/* The command of a message whose header is in the hbuf at `hdr`: the body stays in the
 * received mbufs (the command's handle), or the rx_msg goes when there is none. */
void network_in::attach(net_message &out, port::rx_msg *m, uint8_t *hdr) noexcept
{
	const wire::message &msg = m->msg;
	dpa_command &c = out.cmd;
	c.header = reinterpret_cast<uint64_t>(hdr);
	out.l7 = hdr;
	if (c.body_len) {
		/* the body starts l7_len bytes into the chain */
		rte_mbuf *seg = msg.chain;
		uint32_t off = msg.l7_len;
		while (seg && off >= seg->data_len) {
			off -= seg->data_len;
			seg = seg->next;
		}
		m->body.chain = msg.chain;
		m->body.first = seg;
		m->body.first_off = off;
		m->msg.chain = nullptr;
		c.body = reinterpret_cast<uint64_t>(&m->body);
	} else {
		port::rx_msg_free(m);
	}
}

/* A message that cannot be delivered: its view and command empty. */
void network_in::failed(net_message &out, net_message::kind why, port::rx_msg *m) noexcept
{
	out.what = why;
	out.view = wire::l7_view{};
	out.cmd = dpa_command{};
	out.l7 = nullptr;
	out.held = nullptr;
	port::rx_msg_free(m);
}

/* take() into `out`, made by its default constructor or as net_message::unwritten (what,
 * request, source, view, cmd, l7, held, reply_to, from and correlation are written below
 * on every path): inline in take() and in take_burst()'s loop. */
[[gnu::always_inline]] inline void network_in::take_into(net_message &out, port::rx_msg *m,
							  uint8_t *buf, tally &t) noexcept
{
	const wire::message &msg = m->msg;
	out.request = msg.kind == wire::frame_kind::request;
	out.from = msg.src;
	out.correlation = msg.correlation;
	out.source = m->source_bucket;
	t.taken++;
	if (out.request) {
		t.requests++;
		_egress.remote_of(*m, out.reply_to);
	} else {
		out.reply_to = remote{};
	}
	if (msg.l7_len > _max_header) {
		_stats.net_header_too_large.inc();
		failed(out, net_message::kind::too_large, m);
		return;
	}
	/* a request: its header into network-in's own buffer (a relay never takes an hbuf;
	 * a delivery to a pod does, to_hbuf()); a response: into an hbuf. Each kind on a path
	 * of its own from here, its decode's kind check against a constant (the frame's kind
	 * read again after the call, and an hbuf handle kept in memory for a request, were ~4
	 * instructions a message). A request's command: its lengths, no header or body; the
	 * rest is written by to_hbuf(), which a delivery to a pod takes (a relay reads the
	 * lengths alone: ~5 instructions a message less) */
	dpa_command &c = out.cmd;
	if (out.request) {
		uint8_t *hdr = buf;
		static_assert(min_hdr_words * 8 >= 2 * copy_chunk);
		copy_from_chain<true>(msg.chain, msg.l7_len, hdr, _hdr_words * 8);
		wire::l7_error err = wire::l7_decode(hdr, msg.l7_len, &out.view);
		if (err == wire::l7_error::ok && out.view.kind != wire::l7_kind::request) [[unlikely]]
			err = wire::l7_error::bad_kind; /* frame and header disagree */
		if (err != wire::l7_error::ok) [[unlikely]]
			return bad_header(out, err, nullptr, m);
		command_lengths(c, msg);
		out.what = net_message::kind::request;
		t.decoded++;
		out.l7 = hdr;
		out.held = m;
		return;
	}
	void *obj;
	if (rte_mempool_get(_hbufs, &obj) != 0) {
		_stats.hbuf_empty.inc();
		failed(out, net_message::kind::no_hbuf, m);
		return;
	}
	uint8_t *hdr = fresh_hbuf(obj);
	copy_from_chain(msg.chain, msg.l7_len, hdr, _max_header);
	wire::l7_error err = wire::l7_decode(hdr, msg.l7_len, &out.view);
	if (err == wire::l7_error::ok && out.view.kind == wire::l7_kind::request)
		err = wire::l7_error::bad_kind; /* frame and header disagree */
	if (err != wire::l7_error::ok)
		return bad_header(out, err, obj, m);
	command_lengths(c, msg);
	out.what = net_message::kind::response;
	command_rest(c, dpa_command::op::deliver_response);
	out.held = nullptr;
	attach(out, m, hdr);
}

/* A header that did not decode (err), counted: its hbuf (obj, a response's) back, the
 * message failed. */
void network_in::bad_header(net_message &out, wire::l7_error err, void *obj,
			    port::rx_msg *m) noexcept
{
	_stats.bad_header.inc();
	_stats.l7_errors[static_cast<size_t>(err)].inc();
	out.error = err;
	if (obj)
		rte_mempool_put(_hbufs, obj);
	failed(out, net_message::kind::bad_header, m);
}

/* A tally's counts into the counters, once a take() or a take_burst() (two counters' load,
 * add and store a message, with the counters' address read again after each store: ~6
 * instructions a message) */
void network_in::count(const tally &t) noexcept
{
	if (t.requests)
		_stats.net_requests.add(t.requests);
	if (t.taken != t.requests)
		_stats.net_responses.add(t.taken - t.requests);
	if (t.decoded)
		_stats.decoded_without_hbuf.add(t.decoded);
}

net_message network_in::take(port::rx_msg *m, unsigned buf) noexcept
{
	net_message out;
	tally t;
	take_into(out, m, reinterpret_cast<uint8_t *>(_hdr.get() + (buf % nb_buffers) * _hdr_words),
		  t);
	count(t);
	return out;
}

/* One frame for the burst (take() called once a message, its saved registers and the
 * burst's pointers read again after each call, was ~14 instructions a message). */
void network_in::take_burst(port::rx_msg *const *msgs, unsigned n, net_message *out) noexcept
{
	static_assert(std::is_trivially_destructible_v<net_message>);
	if (n > nb_buffers) [[unlikely]] { /* a buffer each: nb_buffers at a time */
		take_burst(msgs, nb_buffers, out);
		return take_burst(msgs + nb_buffers, n - nb_buffers, out + nb_buffers);
	}
	/* header buffer i for message i, a step along them (its index multiplied was ~5
	 * instructions a message) */
	auto *buf = reinterpret_cast<uint8_t *>(_hdr.get());
	const size_t step = size_t(_hdr_words) * 8;
	tally t;
	for (unsigned i = 0; i < n; i++, buf += step) {
		if (i + decode_ahead < n && msgs[i + decode_ahead]->refusal == port::rx_refusal::none)
			prefetch_header(msgs[i + decode_ahead]->msg);
		if (msgs[i]->refusal == port::rx_refusal::none)
			take_into(*new (&out[i]) net_message(net_message::unwritten{}), msgs[i], buf,
				  t);
	}
	count(t);
}

bool network_in::to_hbuf(net_message &m) noexcept
{
	if (!m.held)
		return true;
	void *obj;
	if (rte_mempool_get(_hbufs, &obj) != 0) {
		_stats.hbuf_empty.inc();
		return false;
	}
	uint8_t *hdr = fresh_hbuf(obj);
	std::memcpy(hdr, m.l7, m.cmd.header_len);
	move_view(m.view, m.l7, hdr);
	port::rx_msg *rm = m.held;
	m.held = nullptr;
	command_rest(m.cmd, dpa_command::op::deliver_request);
	attach(m, rm, hdr);
	return true;
}

void network_in::free_spent() noexcept
{
	port::rx_msg_free_bulk(_spent, _nb_spent);
	_nb_spent = 0;
}

/* release() of a message whose rx_msg the burst's spent list has no room for, or that
 * holds an hbuf (to_hbuf()) or nothing. */
void network_in::release_other(net_message &m) noexcept
{
	if (m.held) {
		/* freed with the burst's others (rte_pktmbuf_free one mbuf at a time was 2.8% of
		 * the forward path's samples) */
		if (_nb_spent == nb_buffers)
			free_spent();
		_spent[_nb_spent++] = m.held;
		m.held = nullptr;
	} else if (m.cmd.header) {
		/* an hbuf from our pool (to_hbuf): the network path runs on the emulator only */
		if (m.cmd.network_body())
			dpa::release_local_body(m.cmd.body);
		rte_mempool_put(_hbufs, hbuf_meta(m.cmd.header));
	}
	m.cmd.header = m.cmd.body = 0;
	m.l7 = nullptr;
}

} // namespace dpumesh::sidecar
