// SPDX-License-Identifier: BSD-3-Clause
// The pod registration socket (portable stand-in for DOCA comch), served from the main lcore.
//
// No thread of its own: the main loop calls poll() periodically (or when listen_fd() or any
// connection is readable). poll() never blocks; each message is validated field by field
// (dpumesh/podchan/channel.h) and handled through pod_registry's action functions.
//
//   dpumesh::registrar srv(registry);
//   DPUMESH_RETURN_IF_ERROR(srv.listen(cfg.node.control_socket));
//   for (;;) { srv.poll(); ... }
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/region/region.h"
#include "dpumesh/common/status.h"
#include "dpumesh/common/unique_fd.h"

namespace dpumesh {

/** Counters of the control server (control thread only). */
struct registrar_counters {
	uint64_t accepted = 0;
	uint64_t closed = 0;
	uint64_t refused_connections = 0; /**< over max_connections */
	uint64_t bad_messages = 0;        /**< failed podchan::check or region import */
	uint64_t registered = 0;
	uint64_t register_refused = 0;
	uint64_t unregistered = 0;        /**< begun by UNREGISTER or by close */
	uint64_t unregister_replies = 0;  /**< UNREGISTERED sent once the pod was torn down */
	uint64_t slow_steps = 0;          /**< region imports, registrations, replies of 100 ms+ */
	uint64_t idle_closed = 0;         /**< closed with no pod for idle_close (set_idle_close) */
};

class registrar {
public:
	static constexpr size_t max_connections = 2 * DPUMESH_MAX_PODS;

	explicit registrar(pod_registry &registry) : _registry(registry) {}
	~registrar(); /* closes every connection, unregistering their pods (waits), unlinks */
	registrar(const registrar &) = delete;
	registrar &operator=(const registrar &) = delete;

	/**
	 * Binds a SOCK_SEQPACKET Unix socket at path (non-blocking, mode 0660). A stale socket
	 * file nobody listens on is replaced; a live one is an error.
	 *
	 * @return ok; an error naming the failed syscall (path too long, in use, ...)
	 */
	status listen(const std::string &path);

	/**
	 * Finishes the unregistrations whose grace period has passed (replying UNREGISTERED to
	 * the connections that asked), accepts pending connections and handles every queued
	 * message on every connection; a closed connection unregisters its pod. Never blocks:
	 * an unregistration waits for the data path's grace period in the background
	 * (pod_registry::begin_unregister), and a connection that asked for one reads nothing
	 * more until it is answered.
	 *
	 * @return how many messages and connection events were handled
	 */
	unsigned poll() noexcept;

	/**
	 * How long a connection may stay open without a pod (never registered, refused, or
	 * unregistered and answered) before poll() closes it: each one holds a slot of
	 * max_connections, so connections that never register would keep pods out. Counted
	 * from accept or the connection's last message. Default 10 s.
	 */
	void set_idle_close(std::chrono::milliseconds d) noexcept { _idle_close = d; }

	int listen_fd() const noexcept { return _listen.get(); }
	size_t nb_connections() const noexcept { return _conns.size(); }
	const registrar_counters &counters() const noexcept { return _counters; }

private:
	struct connection {
		unique_fd fd;
		std::optional<region> pending_region; /* exported before REGISTER */
		uint32_t pod_id = UINT32_MAX;         /* registered pod, if any */
		uint32_t leaving = UINT32_MAX;        /* pod whose UNREGISTERED is owed */
		std::chrono::steady_clock::time_point since; /* accept, or its last message */
	};

	bool handle_one(connection &c) noexcept; /* false: close the connection */
	void handle_register(connection &c, const dpumesh_ctrl_register &m);
	void handle_unregister(connection &c);
	void drop(connection &c) noexcept;
	bool reply_registered(connection &c, uint32_t code, const std::string &error);
	void reply_unregistered(connection &c, uint32_t code) noexcept;
	/** Logs and counts (slow_steps) a registration step that took slow_step_ms or more. */
	void note_slow(const char *what, std::chrono::steady_clock::time_point since) noexcept;
	static constexpr long long slow_step_ms = 100;

	pod_registry &_registry;
	unique_fd _listen;
	std::string _path;
	std::vector<std::unique_ptr<connection>> _conns;
	registrar_counters _counters;
	std::chrono::milliseconds _idle_close{10000};
};

} // namespace dpumesh
