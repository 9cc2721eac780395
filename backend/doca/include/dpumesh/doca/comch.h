// SPDX-License-Identifier: BSD-3-Clause
// DOCA comch endpoints on a progress engine: the Arm's server and the host's client of the
// pod control channel, each on its own doca_pe whose notification handle is a pollable fd.
//
// The creation sequence is fixed and every object goes on an undo stack, so a failed call
// leaves nothing made and returns an error naming it; teardown is the same unwind (the
// context stopped, then destroyed, then its progress engine). Never run on a BlueField-3
// (docs/doca.md): compiled against the project's declarations (doca_api.h) and tested
// against link-time FAKES (tests/unit/doca_fakes.cc).
//
//   auto srv = doca::comch_server::create(arm_dev, "0000:3b:00.0", "dpumesh", handlers);
//   auto cli = doca::comch_client::create(host_dev, "dpumesh", handlers);
//   (*cli)->send(bytes);               // reaches srv's on_message on its next progress()
//   poll((*cli)->fd()) ... (*cli)->clear(); (*cli)->progress(); (*cli)->arm();
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "dpumesh/common/status.h"
#include "dpumesh/doca/doca_api.h"
#include "dpumesh/doca/dpa_runtime.h"

namespace dpumesh::doca {

/** What an endpoint calls from progress(): bytes valid only during the call. */
struct comch_handlers {
	std::function<void(doca_comch_connection *, std::span<const uint8_t>)> on_message;
	/** Server only: a client connected (true) or went away (false). */
	std::function<void(doca_comch_connection *, bool)> on_connection;
};

/** What both endpoints share: the progress engine, the context, sends and their counters. */
class comch_endpoint {
public:
	comch_endpoint(const comch_endpoint &) = delete;
	comch_endpoint &operator=(const comch_endpoint &) = delete;
	virtual ~comch_endpoint() = default;

	/** The progress engine's notification handle: readable when progress() has work
	 *  (after arm()). Goes into the owner's event loop (a pod's dpumesh_fd). */
	int fd() const noexcept { return _fd; }
	/** The progress engine: other contexts of the owner's event loop join it (a pod's
	 *  doorbell, pod_doorbell.h), so one fd wakes for all. */
	doca_pe *pe() const noexcept { return _pe; }
	/** Most events one progress() runs. */
	static constexpr unsigned max_progress = 1024;
	/** Runs ready events and completions (doca_pe_progress until idle, at most
	 *  max_progress: call again while it returns that). @return how many */
	unsigned progress() noexcept;
	/** Before sleeping on fd(): doca_pe_request_notification. */
	status arm();
	/** After fd() was readable: doca_pe_clear_notification. */
	status clear();
	/** Largest message (doca_comch_cap_get_max_msg_size). */
	uint32_t max_msg() const noexcept { return _max_msg; }

	uint64_t sent() const noexcept { return _sent; }
	uint64_t send_errors() const noexcept { return _send_errors; }
	uint64_t received() const noexcept { return _received; }

protected:
	comch_endpoint() = default;
	/** The start of both sequences: max message size, then doca_pe_create. */
	status make_pe(doca_dev *dev);
	/** The common end: user data, pe_connect_ctx, notification handle, ctx_start. */
	status start_ctx(doca_ctx *ctx, const std::string &what);
	/** Submits a send task the server's or client's alloc_init made (`alloc_rc`). */
	status submit(doca_comch_task_send *task, doca_error_t alloc_rc, const char *alloc);
	void deliver(doca_comch_connection *conn, const uint8_t *buf, uint32_t len) noexcept;

	static void send_done(doca_comch_task_send *task, union doca_data, union doca_data ctx_user);
	static void send_failed(doca_comch_task_send *task, union doca_data, union doca_data ctx_user);

	comch_handlers _handlers;
	doca_pe *_pe = nullptr;
	doca_ctx *_ctx = nullptr;
	int _fd = -1;
	uint32_t _max_msg = 0;
	uint64_t _sent = 0, _send_errors = 0, _received = 0;
	undo_stack _undo; /* unwound by the derived destructor, before its members go */
};

/** The Arm's end: serves the host PF named by PCI address (through its representor). */
class comch_server : public comch_endpoint {
public:
	/**
	 * doca_devinfo_rep_create_list (NET), doca_devinfo_rep_is_equal_pci_addr per entry,
	 * doca_dev_rep_open, doca_devinfo_rep_destroy_list; doca_comch_cap_get_max_msg_size;
	 * doca_pe_create; doca_comch_server_create;
	 * task_send_set_conf; event_msg_recv_register; event_connection_status_changed_register;
	 * doca_ctx_set_user_data; doca_pe_connect_ctx; doca_pe_get_notification_handle;
	 * doca_ctx_start.
	 * @return the server; an error naming the host PF when no representor has its address,
	 *         or naming the DOCA call that failed (everything made before it undone)
	 */
	static result<std::unique_ptr<comch_server>> create(doca_dev *dev, const std::string &host_pci,
							    const std::string &name,
							    comch_handlers handlers);
	~comch_server() override { _undo.unwind(); }
	/** One message to a connected client (doca_comch_server_task_send_alloc_init + submit). */
	status send(doca_comch_connection *conn, std::span<const uint8_t> msg);

private:
	comch_server() = default;
	static void on_recv(doca_comch_event_msg_recv *, uint8_t *buf, uint32_t len,
			    doca_comch_connection *conn);
	static void on_connect(doca_comch_event_connection_status_changed *,
			       doca_comch_connection *conn, uint8_t ok);
	static void on_disconnect(doca_comch_event_connection_status_changed *,
				  doca_comch_connection *conn, uint8_t ok);
	static comch_server *of(doca_comch_connection *conn) noexcept;
	/** The host PF's representor (the list released on every path). */
	status open_rep(doca_dev *dev, const std::string &host_pci, const std::string &n);
	doca_dev_rep *_rep = nullptr;
	doca_comch_server *_server = nullptr;
};

/** The host's end: a client of the Arm's server `name` on the PF `dev`. */
class comch_client : public comch_endpoint {
public:
	/**
	 * doca_comch_cap_get_max_msg_size; doca_pe_create; doca_comch_client_create;
	 * task_send_set_conf; event_msg_recv_register; doca_ctx_set_user_data;
	 * doca_pe_connect_ctx; doca_pe_get_notification_handle; doca_ctx_start; progress until
	 * doca_ctx_get_state says running (at most `timeout_ms`); doca_comch_client_get_connection.
	 * @return the connected client, or an error naming the call that failed or the timeout
	 */
	static result<std::unique_ptr<comch_client>> create(doca_dev *dev, const std::string &name,
							    comch_handlers handlers,
							    int timeout_ms = 5000);
	~comch_client() override { _undo.unwind(); }
	/** One message to the server. */
	status send(std::span<const uint8_t> msg);

private:
	comch_client() = default;
	static void on_recv(doca_comch_event_msg_recv *, uint8_t *buf, uint32_t len,
			    doca_comch_connection *conn);
	doca_comch_client *_client = nullptr;
	doca_comch_connection *_conn = nullptr;
};

} // namespace dpumesh::doca
