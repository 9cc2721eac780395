// SPDX-License-Identifier: BSD-3-Clause
// libdpumesh's DOCA path: export, REGISTER over comch, doorbells from the progress engine.
#include "dpumesh/host/doca_link.h"

#include <poll.h>
#include <time.h>

#include <cstring>

#include "dpumesh/doca/pod_channel.h"
#include "dpumesh/podchan/channel.h"

namespace dpumesh::host {
namespace {

int64_t now_ms() noexcept
{
	timespec t{};
	clock_gettime(CLOCK_MONOTONIC, &t);
	return static_cast<int64_t>(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
}

} // namespace

result<std::unique_ptr<doca_link>> doca_link::start(const doca_link_options &opt, void *mem,
						    size_t len, const dpumesh_ctrl_register &reg)
{
	if (opt.pci.empty())
		return errorf("DOCA pod link: no device (the BlueField PF's PCI address)");
	if (len < doca::comch_pod_memory_size(reg))
		return errorf("DOCA pod link: %zu bytes of pod memory, the geometry needs %llu", len,
			      static_cast<unsigned long long>(doca::comch_pod_memory_size(reg)));
	std::unique_ptr<doca_link> l(new doca_link());
	l->_nb_workers = reg.nb_workers;
	l->_sq_depth = reg.geometry.sq_depth;
	auto dev = doca::device::open(opt.pci, false);
	if (!dev)
		return dev.error().with_context("DOCA pod link");
	l->_dev = std::move(*dev);
	auto x = doca::pod_export::create(l->_dev->get(), mem, len);
	if (!x)
		return x.error().with_context("DOCA pod link: exporting pod memory");
	l->_export = std::move(*x);
	doca_link *self = l.get();
	doca::comch_handlers h;
	h.on_message = [self](doca_comch_connection *, std::span<const uint8_t> m) { self->on_message(m); };
	auto c = doca::comch_client::create(l->_dev->get(), opt.server, std::move(h), opt.timeout_ms);
	if (!c)
		return c.error().with_context("DOCA pod link");
	l->_client = std::move(*c);
	auto b = doca::pod_doorbell::create(l->_dev->get(), l->_client->pe());
	if (!b)
		return b.error().with_context("DOCA pod link: the DPA's doorbell");
	l->_bell = std::move(*b);
	const std::vector<uint8_t> msg = doca::make_register(reg, reinterpret_cast<uint64_t>(mem), len,
							     l->_export->descriptor(), l->_bell->descriptor());
	if (status st = l->_client->send(msg); !st)
		return st.with_context("DOCA pod link: REGISTER");
	return l;
}

result<bool> doca_link::registered()
{
	(void)_client->progress();
	if (!_replied)
		return false;
	const dpumesh_ctrl_registered &r = _reply;
	if (r.result != DPUMESH_CTRL_OK)
		return errorf("DOCA pod link: registration refused (%s): %s", podchan::result_name(r.result),
			      r.error);
	if (r.nb_workers != _nb_workers || r.sq_depth != _sq_depth)
		return errorf("DOCA pod link: REGISTERED does not match the request");
	if (!_tx_bell_desc.empty() && _tx_rings.empty()) {
		/* the node's TX doorbell came just before: a handle per worker thread */
		for (uint32_t w = 0; w < _nb_workers; w++) {
			auto t = doca::tx_bell_ring::create(_dev->get(), _tx_bell_desc);
			if (!t) {
				_tx_rings.clear();
				return t.error().with_context("DOCA pod link");
			}
			_tx_rings.push_back(std::move(*t));
		}
	}
	return true;
}

result<std::unique_ptr<doca_link>> doca_link::open(const doca_link_options &opt, void *mem,
						   size_t len, const dpumesh_ctrl_register &reg,
						   doca_link_outcome *why)
{
	auto l = start(opt, mem, len, reg);
	if (!l)
		return l;
	const int64_t deadline = now_ms() + opt.timeout_ms;
	for (;;) {
		auto done = (*l)->registered();
		if (!done) {
			if (why && (*l)->_replied)
				why->refused = (*l)->_reply.result;
			return done.error();
		}
		if (*done)
			return l;
		const int64_t left = deadline - now_ms();
		if (left <= 0) {
			if (why)
				why->timed_out = true;
			return errorf("DOCA pod link: no REGISTERED within %d ms", opt.timeout_ms);
		}
		DPUMESH_RETURN_IF_ERROR((*l)->_client->arm());
		pollfd p = {(*l)->_client->fd(), POLLIN, 0};
		(void)::poll(&p, 1, static_cast<int>(left));
		DPUMESH_RETURN_IF_ERROR((*l)->_client->clear());
	}
}

namespace {

status send_unregister(doca::comch_client &c)
{
	dpumesh_ctrl_unregister u{};
	u.hdr = podchan::make_hdr(DPUMESH_CTRL_UNREGISTER, sizeof(u));
	return c.send(std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(&u), sizeof(u)));
}

} // namespace

status doca_link::unregister(int timeout_ms)
{
	if (!_client || !_replied || _reply.result != DPUMESH_CTRL_OK || _unregistered)
		return {};
	DPUMESH_RETURN_IF_ERROR(send_unregister(*_client).with_context("DOCA pod link: UNREGISTER"));
	const int64_t deadline = now_ms() + timeout_ms;
	for (;;) {
		(void)_client->progress();
		if (_unregistered)
			return {};
		const int64_t left = deadline - now_ms();
		if (left <= 0)
			return errorf("DOCA pod link: no UNREGISTERED within %d ms", timeout_ms);
		DPUMESH_RETURN_IF_ERROR(_client->arm());
		pollfd p = {_client->fd(), POLLIN, 0};
		(void)::poll(&p, 1, static_cast<int>(left));
		DPUMESH_RETURN_IF_ERROR(_client->clear());
	}
}

doca_link::~doca_link()
{
	if (_client && _replied && _reply.result == DPUMESH_CTRL_OK && !_unregistered) {
		(void)send_unregister(*_client);
		(void)_client->progress();
	}
	_tx_rings.clear();
	_bell.reset();
	_client.reset();
	_export.reset();
	_dev.reset();
}

unsigned doca_link::progress()
{
	const uint64_t before = _doorbells;
	(void)_client->clear();
	(void)_client->progress();
	return static_cast<unsigned>(_doorbells - before);
}

void doca_link::on_message(std::span<const uint8_t> msg)
{
	dpumesh_ctrl_hdr h{};
	if (msg.size() < sizeof(h)) {
		_bad++;
		return;
	}
	std::memcpy(&h, msg.data(), sizeof(h));
	if (h.magic != DPUMESH_CTRL_MAGIC || h.length != msg.size()) {
		_bad++;
		return;
	}
	if (h.type == doca::comch_doorbell_type && msg.size() == sizeof(h)) {
		_doorbells++;
		return;
	}
	if (h.type == doca::comch_tx_bell_type && msg.size() > sizeof(h) &&
	    msg.size() - sizeof(h) <= doca::comch_max_desc && !_replied && _tx_bell_desc.empty()) {
		_tx_bell_desc.assign(msg.begin() + sizeof(h), msg.end());
		return;
	}
	if (h.type == DPUMESH_CTRL_REGISTERED && msg.size() == sizeof(_reply) && !_replied) {
		std::memcpy(&_reply, msg.data(), sizeof(_reply));
		_reply.error[sizeof(_reply.error) - 1] = 0;
		_replied = true;
		return;
	}
	if (h.type == DPUMESH_CTRL_UNREGISTERED && msg.size() == sizeof(dpumesh_ctrl_unregister)) {
		_unregistered = true;
		return;
	}
	_bad++;
}

} // namespace dpumesh::host
