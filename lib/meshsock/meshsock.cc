// SPDX-License-Identifier: BSD-3-Clause
// Mesh messages over plain UDP sockets: fragmenter, sender, bounded reassembler, receiver.
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dpumesh/meshsock/meshsock.h"

namespace dpumesh::meshsock {

using wire::wire_drop;

uint32_t slice_for_mtu(uint32_t mtu, bool v6) noexcept
{
	const uint32_t over = (v6 ? 40u : 20u) + 8u + wire::frame_hdr_size;
	return mtu > over ? mtu - over : 0;
}

fragmenter::fragmenter(const out_message &m, uint32_t max_slice) noexcept
	: _m(m), _slice(max_slice)
{
	const uint64_t len = uint64_t(m.l7.size()) + m.body.size();
	if (max_slice == 0 || m.l7.size() < 16 || m.l7.size() > 65535 || len > UINT32_MAX)
		return;
	_msg_len = static_cast<uint32_t>(len);
	_count = (_msg_len + _slice - 1) / _slice;
}

int fragmenter::datagram(uint32_t i, uint8_t *hdr, iovec *iov) const noexcept
{
	const uint32_t off = i * _slice;
	const uint32_t chunk = std::min(_slice, _msg_len - off);
	wire::frag_fields f;
	f.kind = _m.kind;
	f.msg_id = _m.msg_id;
	f.msg_len = _msg_len;
	f.frag_offset = off;
	f.l7_len = static_cast<uint16_t>(_m.l7.size());
	f.correlation = _m.correlation;
	wire::encode_frag_hdr(f, hdr);
	iov[0] = {hdr, wire::frame_hdr_size};
	int n = 1;
	const uint32_t l7_len = static_cast<uint32_t>(_m.l7.size());
	uint32_t l7_part = off < l7_len ? std::min(chunk, l7_len - off) : 0;
	if (l7_part)
		iov[n++] = {const_cast<uint8_t *>(_m.l7.data()) + off, l7_part};
	if (chunk > l7_part) {
		uint32_t body_off = off + l7_part - l7_len;
		iov[n++] = {const_cast<uint8_t *>(_m.body.data()) + body_off, chunk - l7_part};
	}
	return n;
}

int send_message(int fd, const sockaddr *to, socklen_t tolen, const out_message &m,
		 uint32_t max_slice, int wait_ms) noexcept
{
	fragmenter fr(m, max_slice);
	if (fr.count() == 0)
		return -EMSGSIZE;
	constexpr uint32_t batch = 64;
	uint8_t hdrs[batch][wire::frame_hdr_size];
	iovec iov[batch][3];
	mmsghdr msgs[batch];
	for (uint32_t base = 0; base < fr.count();) {
		const uint32_t n = std::min(batch, fr.count() - base);
		for (uint32_t k = 0; k < n; k++) {
			std::memset(&msgs[k], 0, sizeof(msgs[k]));
			msgs[k].msg_hdr.msg_name = const_cast<sockaddr *>(to);
			msgs[k].msg_hdr.msg_namelen = tolen;
			msgs[k].msg_hdr.msg_iov = iov[k];
			msgs[k].msg_hdr.msg_iovlen =
				static_cast<size_t>(fr.datagram(base + k, hdrs[k], iov[k]));
		}
		uint32_t sent = 0;
		while (sent < n) {
			int rc = sendmmsg(fd, msgs + sent, n - sent, 0);
			if (rc > 0) {
				sent += static_cast<uint32_t>(rc);
				continue;
			}
			if (rc < 0 && errno == EINTR)
				continue;
			if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
				pollfd p{fd, POLLOUT, 0};
				if (poll(&p, 1, wait_ms) <= 0)
					return -ETIMEDOUT;
				continue;
			}
			return rc < 0 ? -errno : -EIO;
		}
		base += n;
	}
	return 0;
}

size_t reassembler::key_hash::operator()(const key &k) const noexcept
{
	uint64_t h = 1469598103934665603ull;
	for (uint8_t b : k.ip)
		h = (h ^ b) * 1099511628211ull;
	h = (h ^ k.port) * 1099511628211ull;
	h = (h ^ k.msg_id) * 1099511628211ull;
	return static_cast<size_t>(h);
}

size_t reassembler::ip_hash::operator()(const std::array<uint8_t, 16> &ip) const noexcept
{
	uint64_t h = 1469598103934665603ull;
	for (uint8_t b : ip)
		h = (h ^ b) * 1099511628211ull;
	return static_cast<size_t>(h);
}

reassembler::reassembler(const reasm_limits &limits) : _lim(limits) {}

reasm_result reassembler::drop(wire_drop d, wire_drop *why) noexcept
{
	_stats.drops[static_cast<size_t>(d)]++;
	if (why)
		*why = d;
	return reasm_result::dropped;
}

void reassembler::release(std::unordered_map<key, entry, key_hash>::iterator it)
{
	_bytes -= it->second.data.size();
	auto src = _per_source.find(it->first.ip);
	if (src != _per_source.end() && --src->second == 0)
		_per_source.erase(src);
	_ages.erase(it->second.age);
	_msgs.erase(it);
}

reasm_result reassembler::input(const wire::endpoint &src, const uint8_t *dgram, size_t len,
				uint64_t now_ms, message *out, wire_drop *why)
{
	_stats.datagrams++;
	if (why)
		*why = wire_drop::none;
	if (len < wire::frame_hdr_size)
		return drop(wire_drop::truncated, why);
	if (len - wire::frame_hdr_size > UINT32_MAX)
		return drop(wire_drop::bad_length, why);
	wire::frag_fields f;
	wire_drop d = wire::decode_frag_hdr(
		dgram, static_cast<uint32_t>(len - wire::frame_hdr_size), _lim.max_message, &f);
	if (d != wire_drop::none)
		return drop(d, why);
	const uint8_t *slice = dgram + wire::frame_hdr_size;
	auto fill = [&](message *m) {
		m->src = src;
		m->kind = f.kind;
		m->msg_id = f.msg_id;
		m->l7_len = f.l7_len;
		m->correlation = f.correlation;
	};

	key k;
	std::memcpy(k.ip.data(), src.ip, 16);
	k.port = src.port;
	k.msg_id = f.msg_id;
	auto it = _msgs.find(k);
	if (it == _msgs.end()) {
		if (f.frag_len == f.msg_len) { /* the whole message in one datagram */
			fill(out);
			out->data.assign(slice, slice + f.frag_len);
			_stats.messages++;
			_stats.bytes += f.msg_len;
			return reasm_result::complete;
		}
		if (_msgs.size() >= _lim.max_in_flight)
			return drop(wire_drop::table_full, why);
		auto src_it = _per_source.find(k.ip);
		if (src_it != _per_source.end() && src_it->second >= _lim.max_per_source)
			return drop(wire_drop::source_limit, why);
		if (_bytes + f.msg_len > _lim.max_bytes)
			return drop(wire_drop::memory_limit, why);
		it = _msgs.emplace(k, entry{}).first;
		entry &e = it->second;
		e.first = f;
		e.data.resize(f.msg_len);
		e.started_ms = now_ms;
		e.age = _ages.insert(_ages.end(), k);
		_per_source[k.ip]++;
		_bytes += f.msg_len;
	}
	entry &e = it->second;
	if (f.kind != e.first.kind || f.msg_len != e.first.msg_len ||
	    f.l7_len != e.first.l7_len || f.correlation != e.first.correlation)
		return drop(wire_drop::mismatch, why);
	/* the slice held at or before frag_offset, and the one after */
	auto next = e.got.lower_bound(f.frag_offset);
	if (next != e.got.end() && next->first == f.frag_offset && next->second == f.frag_len) {
		_stats.duplicates++;
		return reasm_result::held;
	}
	bool overlap = next != e.got.end() && next->first < f.frag_offset + f.frag_len;
	if (next != e.got.begin()) {
		auto prev = std::prev(next);
		overlap = overlap || prev->first + prev->second > f.frag_offset;
	}
	if (overlap) {
		release(it);
		return drop(wire_drop::overlap, why);
	}
	if (e.got.size() >= _lim.max_frags) {
		release(it);
		return drop(wire_drop::too_many_frags, why);
	}
	e.got.emplace(f.frag_offset, f.frag_len);
	std::memcpy(e.data.data() + f.frag_offset, slice, f.frag_len);
	e.received += f.frag_len;
	if (e.received < f.msg_len)
		return reasm_result::held;
	fill(out);
	out->data = std::move(e.data);
	e.data.clear();
	_bytes -= f.msg_len; /* release() subtracts data.size(), now 0 */
	release(it);
	_stats.messages++;
	_stats.bytes += f.msg_len;
	return reasm_result::complete;
}

uint32_t reassembler::expire(uint64_t now_ms)
{
	uint32_t n = 0;
	while (!_ages.empty()) {
		auto it = _msgs.find(_ages.front());
		if (now_ms - it->second.started_ms < _lim.timeout_ms)
			break;
		release(it);
		_stats.drops[static_cast<size_t>(wire_drop::timeout)]++;
		n++;
	}
	return n;
}

wire::endpoint endpoint_of(const sockaddr_storage &sa) noexcept
{
	wire::endpoint e;
	if (sa.ss_family == AF_INET) {
		const auto *a = reinterpret_cast<const sockaddr_in *>(&sa);
		e = wire::endpoint::from_v4(a->sin_addr.s_addr, ntohs(a->sin_port));
	} else if (sa.ss_family == AF_INET6) {
		const auto *a = reinterpret_cast<const sockaddr_in6 *>(&sa);
		e = wire::endpoint::from_v6(a->sin6_addr.s6_addr, ntohs(a->sin6_port));
	}
	return e;
}

namespace {
constexpr size_t dgram_max = 65536;

/* The order of receiver::_sources: address bytes, then port. */
bool before(const wire::endpoint &a, const wire::endpoint &b) noexcept
{
	const int c = std::memcmp(a.ip, b.ip, sizeof(a.ip));
	return c < 0 || (c == 0 && a.port < b.port);
}
} // namespace

receiver::receiver(unsigned batch)
	: _batch(batch ? batch : 1), _bufs(new uint8_t[size_t(_batch) * dgram_max]), _iov(_batch),
	  _hdrs(_batch), _addrs(_batch)
{
}

void receiver::only_from(std::vector<wire::endpoint> sources)
{
	std::sort(sources.begin(), sources.end(), before);
	sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
	_sources = std::move(sources);
}

int receiver::drain(int fd, reassembler &r, uint64_t now_ms, std::vector<message> *out)
{
	int total = 0;
	for (;;) {
		for (unsigned k = 0; k < _batch; k++) {
			_iov[k] = {_bufs.get() + k * dgram_max, dgram_max};
			std::memset(&_hdrs[k], 0, sizeof(_hdrs[k]));
			_hdrs[k].msg_hdr.msg_name = &_addrs[k];
			_hdrs[k].msg_hdr.msg_namelen = sizeof(_addrs[k]);
			_hdrs[k].msg_hdr.msg_iov = &_iov[k];
			_hdrs[k].msg_hdr.msg_iovlen = 1;
		}
		int n = recvmmsg(fd, _hdrs.data(), _batch, MSG_DONTWAIT, nullptr);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return total;
			return total ? total : -errno;
		}
		for (int k = 0; k < n; k++) {
			const wire::endpoint src = endpoint_of(_addrs[k]);
			if (!_sources.empty() &&
			    !std::binary_search(_sources.begin(), _sources.end(), src, before)) {
				_foreign++;
				continue;
			}
			message m;
			if (r.input(src, static_cast<uint8_t *>(_iov[k].iov_base), _hdrs[k].msg_len,
				    now_ms, &m) == reasm_result::complete)
				out->push_back(std::move(m));
		}
		total += n;
		if (static_cast<unsigned>(n) < _batch)
			return total;
	}
}

} // namespace dpumesh::meshsock
