// SPDX-License-Identifier: BSD-3-Clause
// Control server: accept, receive, validate, register/unregister, reply.
#include "dpumesh/podreg/registrar.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "dpumesh/podchan/channel.h"
#include "dpumesh/common/log.h"

namespace dpumesh {

using podchan::receive_rc;

registrar::~registrar()
{
	for (auto &c : _conns)
		drop(*c);
	_conns.clear();
	/* the node stops: every teardown completes now, while the data path still runs and
	 * reports quiescence (node::instance::stop) */
	uint32_t done[DPUMESH_MAX_PODS];
	while (_registry.nb_retiring() != 0)
		if (_registry.poll_retiring(done, DPUMESH_MAX_PODS) == 0)
			usleep(100);
	if (_listen && !_path.empty())
		::unlink(_path.c_str());
}

status registrar::listen(const std::string &path)
{
	sockaddr_un addr = {};
	addr.sun_family = AF_UNIX;
	if (path.empty() || path.size() >= sizeof(addr.sun_path))
		return errorf("control socket path \"%s\": empty or longer than %zu bytes",
			      path.c_str(), sizeof(addr.sun_path) - 1);
	std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
	unique_fd s(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (!s)
		return errorf("socket(AF_UNIX, SOCK_SEQPACKET): %s", std::strerror(errno));
	{
		/* Someone listening there already? Then it is not stale. */
		unique_fd probe(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
		if (probe && ::connect(probe.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) == 0)
			return errorf("control socket %s is in use by another process", path.c_str());
	}
	::unlink(path.c_str());
	if (::bind(s.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0)
		return errorf("bind %s: %s", path.c_str(), std::strerror(errno));
	::chmod(path.c_str(), 0660);
	if (::listen(s.get(), 64) != 0)
		return errorf("listen %s: %s", path.c_str(), std::strerror(errno));
	_listen = std::move(s);
	_path = path;
	DPUMESH_LOG(INFO, podchan, "control socket listening on %s", path.c_str());
	return status::ok();
}

void registrar::drop(connection &c) noexcept
{
	if (c.pod_id != UINT32_MAX) {
		status st = _registry.begin_unregister(c.pod_id); /* finished by poll() */
		if (st)
			_counters.unregistered++;
		c.pod_id = UINT32_MAX;
	}
	c.leaving = UINT32_MAX; /* its retirement goes on; nobody to answer */
	c.pending_region.reset();
	c.fd.reset();
	_counters.closed++;
}

unsigned registrar::poll() noexcept
{
	unsigned handled = 0;
	if (!_listen)
		return 0;
	const auto now = std::chrono::steady_clock::now(); /* accepts, messages, idle closes */
	uint32_t done[DPUMESH_MAX_PODS];
	const unsigned nb_done = _registry.poll_retiring(done, DPUMESH_MAX_PODS);
	for (unsigned d = 0; d < nb_done; d++)
		for (auto &c : _conns)
			if (c->leaving == done[d]) {
				reply_unregistered(*c, DPUMESH_CTRL_OK);
				c->leaving = UINT32_MAX;
				c->since = now;
				_counters.unregister_replies++;
				handled++;
			}
	for (;;) {
		int fd = ::accept4(_listen.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			break;
		handled++;
		if (_conns.size() >= max_connections) {
			::close(fd);
			_counters.refused_connections++;
			continue;
		}
		try {
			auto c = std::make_unique<connection>();
			c->fd.reset(fd);
			c->since = now;
			_conns.push_back(std::move(c));
			_counters.accepted++;
		} catch (...) {
			::close(fd);
			_counters.refused_connections++;
		}
	}
	for (size_t i = 0; i < _conns.size();) {
		connection &c = *_conns[i];
		bool keep = true;
		/* A bounded number of messages per connection per call; none while its
		 * UNREGISTERED is owed (what it sends next follows the answer). */
		for (int n = 0; n < 8 && keep && c.leaving == UINT32_MAX; n++) {
			uint32_t magic = 0;
			receive_rc rc = podchan::peek_magic(c.fd.get(), &magic);
			if (rc == receive_rc::would_block)
				break;
			handled++;
			keep = rc == receive_rc::message && handle_one(c);
			c.since = now;
		}
		if (keep && c.pod_id == UINT32_MAX && c.leaving == UINT32_MAX &&
		    now - c.since > _idle_close) {
			/* no pod on it, nothing owed, nothing said for _idle_close */
			_counters.idle_closed++;
			DPUMESH_LOG(NOTICE, podchan,
				    "control connection closed: no pod registered on it for %lld ms",
				    static_cast<long long>(_idle_close.count()));
			keep = false;
			handled++;
		}
		if (!keep) {
			drop(c);
			_conns.erase(_conns.begin() + static_cast<std::ptrdiff_t>(i));
		} else
			i++;
	}
	return handled;
}

bool registrar::handle_one(connection &c) noexcept
{
	try {
		uint32_t magic = 0;
		if (podchan::peek_magic(c.fd.get(), &magic) != receive_rc::message)
			return false;
		if (magic == region_export_magic) {
			/* The pod's region, for the REGISTER that follows. */
			const auto t0 = std::chrono::steady_clock::now();
			auto r = region::import_from(c.fd.get());
			note_slow("importing a pod's region", t0);
			if (!r) {
				_counters.bad_messages++;
				DPUMESH_LOG(NOTICE, podchan, "region export refused: %s",
					    r.error().message().c_str());
				c.pending_region.reset();
				return true; /* the REGISTER will be refused with NO_REGION */
			}
			if (r->tag() != DPUMESH_REGION_TAG_POD) {
				_counters.bad_messages++;
				c.pending_region.reset();
				return true;
			}
			c.pending_region.emplace(std::move(r).value());
			return true;
		}
		podchan::message m;
		receive_rc rc = podchan::receive(c.fd.get(), m, true);
		if (rc == receive_rc::closed || rc == receive_rc::error)
			return false;
		if (rc != receive_rc::message)
			return true;
		status st = podchan::check(m, 0);
		m.close_fds(); /* no pod -> DPU message carries fds */
		if (!st || (m.hdr().type != DPUMESH_CTRL_REGISTER &&
			    m.hdr().type != DPUMESH_CTRL_UNREGISTER)) {
			_counters.bad_messages++;
			DPUMESH_LOG(NOTICE, podchan, "%s", st ? "unexpected message type" : st.message().c_str());
			reply_registered(c, DPUMESH_CTRL_ERR_MESSAGE,
					 st ? std::string("unexpected message type") : st.message());
			return true;
		}
		if (m.hdr().type == DPUMESH_CTRL_REGISTER)
			handle_register(c, m.as<dpumesh_ctrl_register>());
		else
			handle_unregister(c);
		return true;
	} catch (...) {
		return false; /* out of memory: drop the connection (unregisters its pod) */
	}
}

bool registrar::reply_registered(connection &c, uint32_t code, const std::string &error)
{
	dpumesh_ctrl_registered r = {};
	r.hdr = podchan::make_hdr(DPUMESH_CTRL_REGISTERED, sizeof(r));
	r.result = code;
	std::snprintf(r.error, sizeof(r.error), "%s", error.c_str());
	if (code != DPUMESH_CTRL_OK)
		return podchan::send(c.fd.get(), &r, sizeof(r)).is_ok();
	auto reg = _registry.registration(c.pod_id);
	if (!reg)
		return false;
	r.pod_id = reg->pod_id;
	r.generation = reg->generation;
	r.mkey = reg->mkey;
	r.nb_workers = reg->nb_workers;
	r.sq_depth = reg->sq_depth;
	const int fds[2] = {reg->doorbell_fd, reg->tx_doorbell_fd};
	if (!podchan::send(c.fd.get(), &r, sizeof(r), fds, 2))
		return false;
	return reg->tx_region->export_to(c.fd.get(), DPUMESH_REGION_TAG_TX_SQ).is_ok();
}

void registrar::handle_register(connection &c, const dpumesh_ctrl_register &m)
{
	if (c.pod_id != UINT32_MAX) {
		/* Idempotent: the same registration again; a region sent with it is dropped. */
		c.pending_region.reset();
		reply_registered(c, DPUMESH_CTRL_OK, "");
		return;
	}
	if (!c.pending_region) {
		_counters.register_refused++;
		reply_registered(c, DPUMESH_CTRL_ERR_NO_REGION,
				 "REGISTER without a region export (tag POD1) before it");
		return;
	}
	register_request req;
	req.service.assign(m.service, strnlen(m.service, sizeof(m.service)));
	req.nb_workers = m.nb_workers;
	req.geometry = m.geometry;
	uint32_t code = DPUMESH_CTRL_ERR_INTERNAL;
	region r = std::move(*c.pending_region);
	c.pending_region.reset();
	const auto t0 = std::chrono::steady_clock::now();
	auto reg = _registry.register_pod(req, std::move(r), &code);
	note_slow("registering a pod", t0);
	if (!reg) {
		_counters.register_refused++;
		DPUMESH_LOG(NOTICE, podchan, "REGISTER refused (%s): %s", podchan::result_name(code),
			    reg.error().message().c_str());
		reply_registered(c, code, reg.error().message());
		return;
	}
	_counters.registered++;
	c.pod_id = reg->pod_id;
	const auto t1 = std::chrono::steady_clock::now();
	reply_registered(c, DPUMESH_CTRL_OK, "");
	note_slow("sending REGISTERED", t1);
}

void registrar::note_slow(const char *what, std::chrono::steady_clock::time_point since) noexcept
{
	/* a step of a registration that took long enough to matter to a pod waiting 5 s */
	const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
				std::chrono::steady_clock::now() - since)
				.count();
	if (ms < slow_step_ms)
		return;
	_counters.slow_steps++;
	DPUMESH_LOG(NOTICE, podchan, "%s took %lld ms (the control thread did nothing else)",
		    what, static_cast<long long>(ms));
}

void registrar::handle_unregister(connection &c)
{
	const uint32_t id = c.pod_id;
	c.pod_id = UINT32_MAX;
	if (id != UINT32_MAX && _registry.begin_unregister(id)) {
		/* answered by poll() once the pod is torn down: its memory is unused then */
		_counters.unregistered++;
		c.leaving = id;
		return;
	}
	reply_unregistered(c, DPUMESH_CTRL_ERR_NOT_REGISTERED);
}

void registrar::reply_unregistered(connection &c, uint32_t code) noexcept
{
	dpumesh_ctrl_unregister r = {};
	r.hdr = podchan::make_hdr(DPUMESH_CTRL_UNREGISTERED, sizeof(r));
	r.result = code;
	(void)podchan::send(c.fd.get(), &r, sizeof(r));
}

} // namespace dpumesh
