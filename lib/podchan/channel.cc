// SPDX-License-Identifier: BSD-3-Clause
// Control channel I/O: datagrams with fds, and field-by-field validation of what arrives.
#include "dpumesh/podchan/channel.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace dpumesh::podchan {

void message::close_fds() noexcept
{
	for (size_t i = 0; i < nb_fds; i++)
		fds[i].reset();
	nb_fds = 0;
}

receive_rc receive(int sock, message &m, bool dontwait, int *err) noexcept
{
	m.close_fds();
	m.len = 0;
	m.truncated = false;
	m.nb_dropped_fds = 0;
	alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_fds * 2)];
	struct iovec iov = {m.bytes, sizeof(m.bytes)};
	struct msghdr msg = {};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control;
	msg.msg_controllen = sizeof(control);
	ssize_t n;
	do {
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | (dontwait ? MSG_DONTWAIT : 0));
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (err)
			*err = errno;
		return errno == EAGAIN || errno == EWOULDBLOCK ? receive_rc::would_block
							       : receive_rc::error;
	}
	/* Take every fd first, so that every path below closes them. */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nb = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nb; i++) {
			int fd;
			std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (m.nb_fds < max_fds)
				m.fds[m.nb_fds++].reset(fd);
			else {
				::close(fd);
				m.nb_dropped_fds++;
			}
		}
	}
	if (n == 0 && m.nb_fds == 0)
		return receive_rc::closed;
	m.len = static_cast<size_t>(n);
	m.truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
	return receive_rc::message;
}

receive_rc peek_magic(int sock, uint32_t *magic) noexcept
{
	/* A 4-byte buffer: MSG_PEEK leaves the datagram (and its fds) queued. */
	uint32_t v = 0;
	ssize_t n;
	do {
		n = recv(sock, &v, sizeof(v), MSG_PEEK | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? receive_rc::would_block
							       : receive_rc::error;
	if (n == 0)
		return receive_rc::closed;
	*magic = v;
	return receive_rc::message;
}

dpumesh_ctrl_hdr make_hdr(dpumesh_ctrl_type type, size_t size) noexcept
{
	dpumesh_ctrl_hdr h = {};
	h.magic = DPUMESH_CTRL_MAGIC;
	h.version = DPUMESH_CTRL_VERSION;
	h.type = static_cast<uint16_t>(type);
	h.length = static_cast<uint32_t>(size);
	return h;
}

status send(int sock, const void *msg, size_t len, const int *fds, size_t nb_fds)
{
	if (nb_fds > max_fds)
		return errorf("control message: %zu fds (at most %zu)", nb_fds, max_fds);
	alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_fds)] = {};
	struct iovec iov = {const_cast<void *>(msg), len};
	struct msghdr m = {};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	if (nb_fds > 0) {
		m.msg_control = control;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nb_fds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nb_fds);
		std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nb_fds);
	}
	ssize_t n;
	do {
		n = sendmsg(sock, &m, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errorf("control message: sendmsg: %s", std::strerror(errno));
	if (static_cast<size_t>(n) != len)
		return errorf("control message: sent %zd of %zu bytes", n, len);
	return status::ok();
}

const char *result_name(uint32_t result) noexcept
{
	switch (result) {
	case DPUMESH_CTRL_OK: return "ok";
	case DPUMESH_CTRL_ERR_MESSAGE: return "malformed message";
	case DPUMESH_CTRL_ERR_NO_REGION: return "no region";
	case DPUMESH_CTRL_ERR_SERVICE: return "unknown service";
	case DPUMESH_CTRL_ERR_GEOMETRY: return "bad geometry";
	case DPUMESH_CTRL_ERR_LIMITS: return "over limits";
	case DPUMESH_CTRL_ERR_SERVICE_FULL: return "service full";
	case DPUMESH_CTRL_ERR_TABLE_FULL: return "table full";
	case DPUMESH_CTRL_ERR_INTERNAL: return "internal error";
	case DPUMESH_CTRL_ERR_NOT_REGISTERED: return "not registered";
	default: return "unknown result";
	}
}

bool valid_service_name(std::string_view name) noexcept
{
	if (name.empty() || name.size() > DPUMESH_SERVICE_NAME_MAX)
		return false;
	for (char c : name) {
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
			  c == '_';
		if (!ok)
			return false;
	}
	return true;
}

namespace {

size_t type_size(uint16_t type)
{
	switch (type) {
	case DPUMESH_CTRL_REGISTER: return sizeof(dpumesh_ctrl_register);
	case DPUMESH_CTRL_REGISTERED: return sizeof(dpumesh_ctrl_registered);
	case DPUMESH_CTRL_UNREGISTER:
	case DPUMESH_CTRL_UNREGISTERED: return sizeof(dpumesh_ctrl_unregister);
	default: return 0;
	}
}

/* A fixed char field: NUL-terminated within its size, all NUL after the terminator. */
bool fixed_string(const char *s, size_t size, std::string_view *out)
{
	const void *nul = std::memchr(s, 0, size);
	if (nul == nullptr)
		return false;
	size_t len = static_cast<size_t>(static_cast<const char *>(nul) - s);
	for (size_t i = len; i < size; i++)
		if (s[i] != 0)
			return false;
	*out = std::string_view(s, len);
	return true;
}

} // namespace

size_t expected_fds(const message &m) noexcept
{
	if (m.len >= sizeof(dpumesh_ctrl_registered) && m.hdr().type == DPUMESH_CTRL_REGISTERED &&
	    m.as<dpumesh_ctrl_registered>().result == DPUMESH_CTRL_OK)
		return 2;
	return 0;
}

status check(const message &m, size_t want_fds)
{
	if (m.truncated)
		return errorf("control message refused: truncated (longer than %zu bytes or too "
			      "many fds)", sizeof(m.bytes));
	if (m.nb_fds + m.nb_dropped_fds != want_fds)
		return errorf("control message refused: %zu fds attached (want %zu)",
			      m.nb_fds + m.nb_dropped_fds, want_fds);
	if (m.len < sizeof(dpumesh_ctrl_hdr))
		return errorf("control message refused: %zu bytes, shorter than the header", m.len);
	const dpumesh_ctrl_hdr &h = m.hdr();
	if (h.magic != DPUMESH_CTRL_MAGIC)
		return errorf("control message refused: bad magic 0x%08x", h.magic);
	if (h.version != DPUMESH_CTRL_VERSION)
		return errorf("control message refused: version %u (want %u)", h.version,
			      DPUMESH_CTRL_VERSION);
	if (h.reserved != 0)
		return errorf("control message refused: reserved header field not zero");
	size_t size = type_size(h.type);
	if (size == 0)
		return errorf("control message refused: unknown type %u", h.type);
	if (h.length != size || m.len != size)
		return errorf("control message refused: type %u with length %u, %zu bytes received "
			      "(want %zu)", h.type, h.length, m.len, size);
	switch (h.type) {
	case DPUMESH_CTRL_REGISTER: {
		const auto &r = m.as<dpumesh_ctrl_register>();
		std::string_view name;
		if (!fixed_string(r.service, sizeof(r.service), &name) || !valid_service_name(name))
			return errorf("REGISTER refused: service name is not 1..%u bytes of "
				      "[a-z0-9._-], NUL-terminated and NUL-padded",
				      DPUMESH_SERVICE_NAME_MAX);
		if (r.nb_workers == 0 || r.nb_workers > DPUMESH_MAX_WORKERS)
			return errorf("REGISTER refused: %u workers (1..%u)", r.nb_workers,
				      DPUMESH_MAX_WORKERS);
		if (r.reserved != 0)
			return errorf("REGISTER refused: reserved field not zero");
		dpumesh_pod_layout l;
		int rc = dpumesh_pod_layout_compute(&r.geometry, &l);
		if (rc != DPUMESH_LAYOUT_OK)
			return errorf("REGISTER refused: invalid geometry (layout error %d)", rc);
		break;
	}
	case DPUMESH_CTRL_REGISTERED: {
		const auto &r = m.as<dpumesh_ctrl_registered>();
		std::string_view err;
		if (r.result > DPUMESH_CTRL_ERR_NOT_REGISTERED)
			return errorf("REGISTERED refused: unknown result %u", r.result);
		if (!fixed_string(r.error, sizeof(r.error), &err))
			return errorf("REGISTERED refused: error text not NUL-terminated");
		if (r.reserved[0] != 0 || r.reserved[1] != 0)
			return errorf("REGISTERED refused: reserved fields not zero");
		if (r.result == DPUMESH_CTRL_OK &&
		    (r.pod_id >= DPUMESH_MAX_PODS || r.generation == 0 ||
		     r.generation > DPUMESH_GENERATION_MAX || r.nb_workers == 0 ||
		     r.nb_workers > DPUMESH_MAX_WORKERS || r.sq_depth < DPUMESH_LAYOUT_MIN_SQ_DEPTH ||
		     r.sq_depth > DPUMESH_LAYOUT_MAX_SQ_DEPTH || (r.sq_depth & (r.sq_depth - 1))))
			return errorf("REGISTERED refused: pod_id %u, generation %u, %u workers, "
				      "sq_depth %u out of range", r.pod_id, r.generation,
				      r.nb_workers, r.sq_depth);
		break;
	}
	case DPUMESH_CTRL_UNREGISTER:
	case DPUMESH_CTRL_UNREGISTERED: {
		const auto &r = m.as<dpumesh_ctrl_unregister>();
		if (r.reserved[0] != 0 || r.reserved[1] != 0 || r.reserved[2] != 0)
			return errorf("UNREGISTER refused: reserved fields not zero");
		if (h.type == DPUMESH_CTRL_UNREGISTER && r.result != 0)
			return errorf("UNREGISTER refused: result field not zero");
		if (r.result > DPUMESH_CTRL_ERR_NOT_REGISTERED)
			return errorf("UNREGISTERED refused: unknown result %u", r.result);
		break;
	}
	}
	return status::ok();
}

} // namespace dpumesh::podchan
