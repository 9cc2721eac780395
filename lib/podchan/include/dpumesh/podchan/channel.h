// SPDX-License-Identifier: BSD-3-Clause
// Control channel I/O: send and receive the messages of dpumesh/podchan/proto.h, with fds, and
// validate every field of what was received.
//
//   dpumesh::podchan::message m;
//   auto st = dpumesh::podchan::receive(sock, m, /*dontwait=*/true);
//   if (st == receive_rc::message && dpumesh::podchan::check(m).is_ok()) ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dpumesh/podchan/proto.h"
#include "dpumesh/common/status.h"
#include "dpumesh/common/unique_fd.h"

namespace dpumesh::podchan {

/** Most fds one message may carry; more are closed and the message refused. */
constexpr size_t max_fds = 4;

/** One received datagram and the fds that came with it (owned, closed on destruction). */
struct message {
	alignas(8) uint8_t bytes[256] = {};
	size_t len = 0;
	bool truncated = false;      /**< longer than bytes, or control data cut (MSG_CTRUNC) */
	unique_fd fds[max_fds];
	size_t nb_fds = 0;
	size_t nb_dropped_fds = 0;   /**< fds beyond max_fds: already closed, counted */

	const dpumesh_ctrl_hdr &hdr() const { return *reinterpret_cast<const dpumesh_ctrl_hdr *>(bytes); }
	template <typename T>
	const T &as() const { return *reinterpret_cast<const T *>(bytes); }
	void close_fds() noexcept;
};

enum class receive_rc {
	message,     /**< m holds a datagram (not yet validated: call check()) */
	would_block, /**< nothing queued (dontwait) */
	closed,      /**< the peer closed the connection */
	error,       /**< recvmsg failed (errno in err) */
};

/** Receives one datagram with MSG_CMSG_CLOEXEC (and MSG_DONTWAIT when asked). */
receive_rc receive(int sock, message &m, bool dontwait, int *err = nullptr) noexcept;

/** Peeks the first 4 bytes of the next datagram (MSG_PEEK|MSG_DONTWAIT): its magic. */
receive_rc peek_magic(int sock, uint32_t *magic) noexcept;

/**
 * Validates a received message: header (magic, version, a known type, length equal to the
 * datagram's and to the type's size, reserved zero), no truncation, the per-type fields
 * (reserved zero; REGISTER: a NUL-terminated service name of [a-z0-9-._] 1..63 bytes with
 * NUL padding, nb_workers 1..16, a geometry dpumesh_pod_layout_compute accepts;
 * REGISTERED: a known result, pod_id < DPUMESH_MAX_PODS, generation 1..2^24-1 when ok, a
 * NUL-terminated error), and the fd count: exactly `expected_fds`.
 *
 * @return ok; an error naming the first bad field
 */
status check(const message &m, size_t expected_fds);

/** The fd count a message of this type and result must carry. */
size_t expected_fds(const message &m) noexcept;

/** Fills a header for a message of type/size. */
dpumesh_ctrl_hdr make_hdr(dpumesh_ctrl_type type, size_t size) noexcept;

/**
 * Sends one message with fds (SCM_RIGHTS, none when nb_fds == 0). MSG_NOSIGNAL.
 *
 * @return ok, or the sendmsg error
 */
status send(int sock, const void *msg, size_t len, const int *fds = nullptr, size_t nb_fds = 0);

/** Name of a dpumesh_ctrl_result, for logs. */
const char *result_name(uint32_t result) noexcept;

/** Whether a service name is acceptable (1..63 bytes of [a-z0-9._-]). */
bool valid_service_name(std::string_view name) noexcept;

} // namespace dpumesh::podchan
