// SPDX-License-Identifier: BSD-3-Clause
// memfd regions: creation, export (header + SCM_RIGHTS fd) and validated import.
#include "dpumesh/region/region.h"

#include "dpumesh/common/unique_fd.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace dpumesh {

namespace {

constexpr size_t max_fds_per_message = 8; /* more are dropped by the kernel (MSG_CTRUNC) */

status errno_error(const char *what, int err)
{
	return errorf("%s: %s", what, std::strerror(err));
}

size_t base_page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

/* Page size of the filesystem behind fd: the huge page size on hugetlbfs. */
result<size_t> fd_page_size(int fd, bool &huge)
{
	struct statfs sfs;
	if (fstatfs(fd, &sfs) != 0)
		return errno_error("fstatfs", errno);
	huge = sfs.f_type == HUGETLBFS_MAGIC;
	return huge ? static_cast<size_t>(sfs.f_bsize) : base_page_size();
}

/* A memfd of `size` bytes (a multiple of its page size once rounded), sealed, mapped. */
struct mapped_fd {
	unique_fd fd;
	void *data = nullptr;
	size_t size = 0;
	size_t page_size = 0;
	bool huge = false;
};

result<mapped_fd> make_memfd(const std::string &name, size_t len, bool huge)
{
	unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING | (huge ? MFD_HUGETLB : 0u);
	mapped_fd m;
	m.fd = unique_fd(memfd_create(name.c_str(), flags));
	if (m.fd.get() < 0)
		return errno_error(huge ? "memfd_create(MFD_HUGETLB)" : "memfd_create", errno);
	DPUMESH_ASSIGN_OR_RETURN(m.page_size, fd_page_size(m.fd.get(), m.huge));
	if (len > SIZE_MAX - (m.page_size - 1) || len > static_cast<size_t>(INT64_MAX) / 2)
		return errorf("region of %zu bytes is too large", len);
	m.size = (len + m.page_size - 1) / m.page_size * m.page_size;
	if (ftruncate(m.fd.get(), static_cast<off_t>(m.size)) != 0)
		return errno_error("ftruncate", errno);
	if (fcntl(m.fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		return errno_error("fcntl(F_ADD_SEALS)", errno);
	m.data = mmap(nullptr, m.size, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd.get(), 0);
	if (m.data == MAP_FAILED) {
		m.data = nullptr;
		return errno_error("mmap", errno);
	}
	return m;
}

/* Sends all of buf; the fd (if >= 0) rides on the first byte. */
status send_all(int sock, const void *buf, size_t len, int fd)
{
	const char *p = static_cast<const char *>(buf);
	alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
	bool fd_sent = fd < 0;
	while (len > 0) {
		struct iovec iov = {const_cast<char *>(p), len};
		struct msghdr msg = {};
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		if (!fd_sent) {
			msg.msg_control = control;
			msg.msg_controllen = sizeof(control);
			struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
		}
		ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno_error("sendmsg", errno);
		}
		fd_sent = true;
		p += n;
		len -= static_cast<size_t>(n);
	}
	return status::ok();
}

/* The fds and bytes of one export message, as received. */
struct received {
	region_export_header hdr = {};
	unique_fd fds[max_fds_per_message * 2];
	size_t nb_fds = 0;
	size_t nb_extra_fds = 0; /* beyond what we keep: still closed, counted for the error */
};

void keep_fds(received &rx, struct msghdr &msg)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue; /* e.g. SCM_CREDENTIALS with SO_PASSCRED: carries no fd */
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (rx.nb_fds < std::size(rx.fds))
				rx.fds[rx.nb_fds++] = unique_fd(fd);
			else {
				::close(fd);
				rx.nb_extra_fds++;
			}
		}
	}
}

/* Reads exactly one header, collecting every fd that comes with any of its bytes. */
status receive_header(int sock, received &rx)
{
	char *p = reinterpret_cast<char *>(&rx.hdr);
	size_t left = sizeof(rx.hdr);
	while (left > 0) {
		alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_fds_per_message)];
		struct iovec iov = {p, left};
		struct msghdr msg = {};
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = control;
		msg.msg_controllen = sizeof(control);
		ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno_error("recvmsg", errno);
		}
		keep_fds(rx, msg);
		if (msg.msg_flags & MSG_CTRUNC)
			return errorf("export message refused: control data truncated "
				      "(more than %zu fds attached)", max_fds_per_message);
		if (msg.msg_flags & MSG_TRUNC)
			return errorf("export message refused: longer than the %zu-byte header",
				      sizeof(rx.hdr));
		if (n == 0)
			return errorf("export message refused: peer closed the socket after %zu of "
				      "%zu bytes", sizeof(rx.hdr) - left, sizeof(rx.hdr));
		p += n;
		left -= static_cast<size_t>(n);
	}
	return status::ok();
}

status check_header(const region_export_header &h)
{
	if (h.magic != region_export_magic)
		return errorf("export message refused: bad magic 0x%08x (want 0x%08x)", h.magic,
			      region_export_magic);
	if (h.version != region_export_version)
		return errorf("export message refused: version %u (want %u)", h.version,
			      region_export_version);
	if (h.reserved != 0 || h.reserved2 != 0)
		return errorf("export message refused: reserved fields not zero");
	if (h.length == 0)
		return errorf("export message refused: length 0");
	if (h.length - 1 > UINT64_MAX - h.base_va)
		return errorf("export message refused: base 0x%llx + length %llu passes 2^64",
			      static_cast<unsigned long long>(h.base_va),
			      static_cast<unsigned long long>(h.length));
	return status::ok();
}

} // namespace

result<region> region::create(std::string_view name, size_t len, bool try_hugepages)
{
	if (len == 0)
		return errorf("region \"%.*s\": length 0", static_cast<int>(name.size()), name.data());
	std::string n(name);
	result<mapped_fd> m = errorf("not tried");
	if (try_hugepages)
		m = make_memfd(n, len, true); /* fails without reserved hugepages: fall back */
	if (!m.is_ok())
		m = make_memfd(n, len, false);
	if (!m.is_ok())
		return m.error().with_context("creating region \"" + n + "\"");
	region r;
	r._data = m->data;
	r._size = m->size;
	r._page_size = m->page_size;
	r._hugepages = m->huge;
	r._remote_base = reinterpret_cast<uintptr_t>(m->data);
	r._fd = m->fd.release();
	return r;
}

result<region> region::import_from(int sock)
{
	received rx;
	DPUMESH_RETURN_IF_ERROR(receive_header(sock, rx));
	DPUMESH_RETURN_IF_ERROR(check_header(rx.hdr));
	if (rx.nb_fds == 0)
		return errorf("export message refused: no file descriptor attached");
	if (rx.nb_fds + rx.nb_extra_fds != 1)
		return errorf("export message refused: %zu file descriptors attached (want 1)",
			      rx.nb_fds + rx.nb_extra_fds);
	const auto *desc = reinterpret_cast<const uint8_t *>(&rx.hdr);
	return create_from_export(std::span<const uint8_t>(desc, sizeof(rx.hdr)),
				  rx.fds[0].release());
}

result<region> region::create_from_export(std::span<const uint8_t> desc, int fd_in)
{
	unique_fd owned(fd_in); /* closed on every refusal */
	if (desc.size() != sizeof(region_export_header))
		return errorf("export message refused: descriptor of %zu bytes (want %zu)",
			      desc.size(), sizeof(region_export_header));
	region_export_header h;
	std::memcpy(&h, desc.data(), sizeof(h));
	DPUMESH_RETURN_IF_ERROR(check_header(h));
	if (fd_in < 0)
		return errorf("export message refused: no file descriptor attached");
	int fd = owned.get();

	struct stat st;
	if (fstat(fd, &st) != 0)
		return errno_error("export message refused: fstat", errno);
	if (!S_ISREG(st.st_mode))
		return errorf("export message refused: the fd is not a memory file (mode 0%o)",
			      static_cast<unsigned>(st.st_mode));
	if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) < h.length)
		return errorf("export message refused: length %llu larger than the fd's %lld bytes",
			      static_cast<unsigned long long>(h.length),
			      static_cast<long long>(st.st_size));
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return errorf("export message refused: the fd is not sealed against shrinking "
			      "(F_SEAL_SHRINK)");
	bool huge = false;
	DPUMESH_ASSIGN_OR_RETURN(size_t page, fd_page_size(fd, huge));
	if (h.length % page != 0)
		return errorf("export message refused: length %llu not a multiple of the page "
			      "size %zu", static_cast<unsigned long long>(h.length), page);
	if (h.length > SIZE_MAX)
		return errorf("export message refused: length %llu too large",
			      static_cast<unsigned long long>(h.length));
	void *data = mmap(nullptr, static_cast<size_t>(h.length), PROT_READ | PROT_WRITE,
			  MAP_SHARED, fd, 0);
	if (data == MAP_FAILED)
		return errno_error("importing region: mmap", errno);

	region r;
	r._data = data;
	r._size = static_cast<size_t>(h.length);
	r._page_size = page;
	r._hugepages = huge;
	r._remote_base = h.base_va;
	r._tag = h.tag;
	r._fd = owned.release();
	return r;
}

std::vector<uint8_t> region::export_desc(uint32_t tag) const
{
	region_export_header h = {};
	h.magic = region_export_magic;
	h.version = region_export_version;
	h.tag = tag;
	h.length = _size;
	h.base_va = _remote_base;
	const auto *b = reinterpret_cast<const uint8_t *>(&h);
	return std::vector<uint8_t>(b, b + sizeof(h));
}

status region::export_to(int sock, uint32_t tag) const
{
	if (_data == nullptr)
		return errorf("exporting region: empty region");
	const std::vector<uint8_t> desc = export_desc(tag);
	return send_all(sock, desc.data(), desc.size(), _fd).with_context("exporting region");
}

region::region(region &&o) noexcept
	: _data(std::exchange(o._data, nullptr)), _size(std::exchange(o._size, 0)),
	  _page_size(std::exchange(o._page_size, 0)), _remote_base(std::exchange(o._remote_base, 0)),
	  _tag(std::exchange(o._tag, 0)), _fd(std::exchange(o._fd, -1)),
	  _hugepages(std::exchange(o._hugepages, false))
{
}

region &region::operator=(region &&o) noexcept
{
	if (this != &o) {
		reset();
		_data = std::exchange(o._data, nullptr);
		_size = std::exchange(o._size, 0);
		_page_size = std::exchange(o._page_size, 0);
		_remote_base = std::exchange(o._remote_base, 0);
		_tag = std::exchange(o._tag, 0);
		_fd = std::exchange(o._fd, -1);
		_hugepages = std::exchange(o._hugepages, false);
	}
	return *this;
}

region::~region() { reset(); }

void region::reset() noexcept
{
	if (_data != nullptr)
		munmap(_data, _size);
	if (_fd >= 0)
		::close(_fd);
	_data = nullptr;
	_size = 0;
	_fd = -1;
}

} // namespace dpumesh
