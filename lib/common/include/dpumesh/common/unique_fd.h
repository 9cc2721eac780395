// SPDX-License-Identifier: BSD-3-Clause
// unique_fd: owns a file descriptor and closes it on destruction (move-only).
//
//   dpumesh::unique_fd efd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
//   if (!efd) return errorf("eventfd: %s", strerror(errno));
#pragma once

#include <unistd.h>

#include <utility>

namespace dpumesh {

class unique_fd {
public:
	unique_fd() = default;
	explicit unique_fd(int fd) noexcept : _fd(fd) {}
	unique_fd(unique_fd &&o) noexcept : _fd(std::exchange(o._fd, -1)) {}
	unique_fd &operator=(unique_fd &&o) noexcept
	{
		if (this != &o) {
			reset();
			_fd = std::exchange(o._fd, -1);
		}
		return *this;
	}
	unique_fd(const unique_fd &) = delete;
	unique_fd &operator=(const unique_fd &) = delete;
	~unique_fd() { reset(); }

	int get() const noexcept { return _fd; }
	explicit operator bool() const noexcept { return _fd >= 0; }
	int release() noexcept { return std::exchange(_fd, -1); }
	void reset(int fd = -1) noexcept
	{
		if (_fd >= 0)
			::close(_fd);
		_fd = fd;
	}

private:
	int _fd = -1;
};

} // namespace dpumesh
