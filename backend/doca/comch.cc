// SPDX-License-Identifier: BSD-3-Clause
// DOCA comch endpoints: creation in order with undo, sends, and the progress engine's fd.
#include "dpumesh/doca/comch.h"

#include <poll.h>
#include <time.h>

#include "internal/check.h"

namespace dpumesh::doca {
namespace {

using internal::check;

/* send tasks an endpoint may have in flight: control messages only */
constexpr uint32_t send_tasks = 32;

uint64_t now_ms() noexcept
{
	timespec t{};
	clock_gettime(CLOCK_MONOTONIC, &t);
	return static_cast<uint64_t>(t.tv_sec) * 1000u + static_cast<uint64_t>(t.tv_nsec) / 1000000u;
}

} // namespace

unsigned comch_endpoint::progress() noexcept
{
	/* bounded: a peer that keeps sending cannot hold the caller's loop */
	unsigned n = 0;
	while (n < max_progress && doca_pe_progress(_pe) != 0)
		n++;
	return n;
}

status comch_endpoint::arm()
{
	return check(doca_pe_request_notification(_pe), "doca_pe_request_notification");
}

status comch_endpoint::clear()
{
	return check(doca_pe_clear_notification(_pe, _fd), "doca_pe_clear_notification");
}

status comch_endpoint::make_pe(doca_dev *dev)
{
	DPUMESH_RETURN_IF_ERROR(check(doca_comch_cap_get_max_msg_size(doca_dev_as_devinfo(dev), &_max_msg),
				      "doca_comch_cap_get_max_msg_size"));
	DPUMESH_RETURN_IF_ERROR(check(doca_pe_create(&_pe), "doca_pe_create"));
	_undo.push([pe = _pe] { doca_pe_destroy(pe); });
	return status::ok();
}

status comch_endpoint::start_ctx(doca_ctx *ctx, const std::string &what)
{
	_ctx = ctx;
	union doca_data self = {};
	self.ptr = this;
	DPUMESH_RETURN_IF_ERROR(check(doca_ctx_set_user_data(ctx, self), what + ": doca_ctx_set_user_data"));
	DPUMESH_RETURN_IF_ERROR(check(doca_pe_connect_ctx(_pe, ctx), what + ": doca_pe_connect_ctx"));
	DPUMESH_RETURN_IF_ERROR(check(doca_pe_get_notification_handle(_pe, &_fd),
				      what + ": doca_pe_get_notification_handle"));
	/* comch contexts may start asynchronously (running after progress): a start that left
	 * the context idle is the failure */
	doca_error_t e = doca_ctx_start(ctx);
	if (e != DOCA_SUCCESS) {
		enum doca_ctx_states st = DOCA_CTX_STATE_IDLE;
		if (doca_ctx_get_state(ctx, &st) != DOCA_SUCCESS || st == DOCA_CTX_STATE_IDLE)
			return check(e, what + ": doca_ctx_start");
	}
	_undo.push([this, ctx] {
		(void)doca_ctx_stop(ctx);
		/* a comch stop completes through the progress engine (bounded) */
		for (int i = 0; i < 1000; i++) {
			enum doca_ctx_states st = DOCA_CTX_STATE_IDLE;
			if (doca_ctx_get_state(ctx, &st) != DOCA_SUCCESS || st == DOCA_CTX_STATE_IDLE)
				break;
			(void)doca_pe_progress(_pe);
		}
	});
	return status::ok();
}

status comch_endpoint::submit(doca_comch_task_send *task, doca_error_t alloc_rc, const char *alloc)
{
	DPUMESH_RETURN_IF_ERROR(check(alloc_rc, std::string("comch send: ") + alloc));
	doca_task *t = doca_comch_task_send_as_task(task);
	if (status st = check(doca_task_submit(t), "comch send: doca_task_submit"); !st) {
		doca_task_free(t);
		_send_errors++;
		return st;
	}
	return status::ok();
}

void comch_endpoint::deliver(doca_comch_connection *conn, const uint8_t *buf, uint32_t len) noexcept
{
	_received++;
	if (_handlers.on_message)
		_handlers.on_message(conn, std::span<const uint8_t>(buf, len));
}

void comch_endpoint::send_done(doca_comch_task_send *task, union doca_data, union doca_data ctx_user)
{
	static_cast<comch_endpoint *>(ctx_user.ptr)->_sent++;
	doca_task_free(doca_comch_task_send_as_task(task));
}

void comch_endpoint::send_failed(doca_comch_task_send *task, union doca_data, union doca_data ctx_user)
{
	static_cast<comch_endpoint *>(ctx_user.ptr)->_send_errors++;
	doca_task_free(doca_comch_task_send_as_task(task));
}

/* ---- server (Arm) ---- */

comch_server *comch_server::of(doca_comch_connection *conn) noexcept
{
	union doca_data u = {};
	doca_comch_server *s = doca_comch_server_get_server_ctx(conn);
	if (!s || doca_ctx_get_user_data(doca_comch_server_as_ctx(s), &u) != DOCA_SUCCESS)
		return nullptr;
	return static_cast<comch_server *>(static_cast<comch_endpoint *>(u.ptr));
}

void comch_server::on_recv(doca_comch_event_msg_recv *, uint8_t *buf, uint32_t len,
			   doca_comch_connection *conn)
{
	if (comch_server *s = of(conn))
		s->deliver(conn, buf, len);
}

void comch_server::on_connect(doca_comch_event_connection_status_changed *,
			      doca_comch_connection *conn, uint8_t ok)
{
	comch_server *s = of(conn);
	if (s && ok && s->_handlers.on_connection)
		s->_handlers.on_connection(conn, true);
}

void comch_server::on_disconnect(doca_comch_event_connection_status_changed *,
				 doca_comch_connection *conn, uint8_t)
{
	comch_server *s = of(conn);
	if (s && s->_handlers.on_connection)
		s->_handlers.on_connection(conn, false);
}

result<std::unique_ptr<comch_server>> comch_server::create(doca_dev *dev, const std::string &host_pci,
							   const std::string &name,
							   comch_handlers handlers)
{
	std::unique_ptr<comch_server> s(new comch_server());
	s->_handlers = std::move(handlers);
	const std::string n = "comch server " + name + ": ";
	DPUMESH_RETURN_IF_ERROR(s->open_rep(dev, host_pci, n));
	if (status st = s->make_pe(dev); !st)
		return st.with_context("comch server " + name);
	DPUMESH_RETURN_IF_ERROR(check(doca_comch_server_create(dev, s->_rep, name.c_str(), &s->_server),
				      n + "doca_comch_server_create"));
	s->_undo.push([x = s->_server] { doca_comch_server_destroy(x); });
	DPUMESH_RETURN_IF_ERROR(check(doca_comch_server_task_send_set_conf(s->_server, &send_done, &send_failed, send_tasks),
				      n + "doca_comch_server_task_send_set_conf"));
	DPUMESH_RETURN_IF_ERROR(check(doca_comch_server_event_msg_recv_register(s->_server, &on_recv),
				      n + "doca_comch_server_event_msg_recv_register"));
	DPUMESH_RETURN_IF_ERROR(check(doca_comch_server_event_connection_status_changed_register(
					      s->_server, &on_connect, &on_disconnect),
				      n + "doca_comch_server_event_connection_status_changed_register"));
	DPUMESH_RETURN_IF_ERROR(s->start_ctx(doca_comch_server_as_ctx(s->_server), "comch server " + name));
	return s;
}

status comch_server::open_rep(doca_dev *dev, const std::string &host_pci, const std::string &n)
{
	doca_devinfo_rep **list = nullptr;
	uint32_t nb = 0;
	DPUMESH_RETURN_IF_ERROR(check(doca_devinfo_rep_create_list(dev, DOCA_DEVINFO_REP_FILTER_NET, &list, &nb),
				      n + "doca_devinfo_rep_create_list"));
	{
		undo_stack list_guard; /* the list goes on every path from here */
		list_guard.push([list] { doca_devinfo_rep_destroy_list(list); });
		doca_devinfo_rep *found = nullptr;
		for (uint32_t i = 0; i < nb && !found; i++) {
			uint8_t eq = 0;
			DPUMESH_RETURN_IF_ERROR(check(doca_devinfo_rep_is_equal_pci_addr(list[i], host_pci.c_str(), &eq),
						      n + "doca_devinfo_rep_is_equal_pci_addr(" + host_pci + ")"));
			if (eq)
				found = list[i];
		}
		if (!found)
			return errorf("%sno representor of host PF %s (%u representors found)", n.c_str(),
				      host_pci.c_str(), nb);
		DPUMESH_RETURN_IF_ERROR(check(doca_dev_rep_open(found, &_rep), n + "doca_dev_rep_open(" + host_pci + ")"));
		_undo.push([r = _rep] { doca_dev_rep_close(r); });
	}
	return status::ok();
}

status comch_server::send(doca_comch_connection *conn, std::span<const uint8_t> msg)
{
	if (msg.empty() || msg.size() > _max_msg)
		return errorf("comch server send: %zu bytes (1..%u)", msg.size(), _max_msg);
	doca_comch_task_send *task = nullptr;
	doca_error_t rc = doca_comch_server_task_send_alloc_init(_server, conn, msg.data(),
								 static_cast<uint32_t>(msg.size()), &task);
	return submit(task, rc, "doca_comch_server_task_send_alloc_init");
}

/* ---- client (host) ---- */

void comch_client::on_recv(doca_comch_event_msg_recv *, uint8_t *buf, uint32_t len,
			   doca_comch_connection *conn)
{
	union doca_data u = {};
	doca_comch_client *c = doca_comch_client_get_client_ctx(conn);
	if (c && doca_ctx_get_user_data(doca_comch_client_as_ctx(c), &u) == DOCA_SUCCESS)
		static_cast<comch_client *>(static_cast<comch_endpoint *>(u.ptr))->deliver(conn, buf, len);
}

result<std::unique_ptr<comch_client>> comch_client::create(doca_dev *dev, const std::string &name,
							   comch_handlers handlers, int timeout_ms)
{
	std::unique_ptr<comch_client> c(new comch_client());
	c->_handlers = std::move(handlers);
	const std::string n = "comch client of " + name + ": ";
	if (status st = c->make_pe(dev); !st)
		return st.with_context("comch client of " + name);
	DPUMESH_RETURN_IF_ERROR(check(doca_comch_client_create(dev, name.c_str(), &c->_client),
				      n + "doca_comch_client_create"));
	c->_undo.push([x = c->_client] { doca_comch_client_destroy(x); });
	DPUMESH_RETURN_IF_ERROR(check(doca_comch_client_task_send_set_conf(c->_client, &send_done, &send_failed, send_tasks),
				      n + "doca_comch_client_task_send_set_conf"));
	DPUMESH_RETURN_IF_ERROR(check(doca_comch_client_event_msg_recv_register(c->_client, &on_recv),
				      n + "doca_comch_client_event_msg_recv_register"));
	DPUMESH_RETURN_IF_ERROR(c->start_ctx(doca_comch_client_as_ctx(c->_client), "comch client of " + name));
	const uint64_t deadline = now_ms() + static_cast<uint64_t>(timeout_ms);
	for (;;) {
		enum doca_ctx_states st = DOCA_CTX_STATE_IDLE;
		DPUMESH_RETURN_IF_ERROR(check(doca_ctx_get_state(c->_ctx, &st), n + "doca_ctx_get_state"));
		if (st == DOCA_CTX_STATE_RUNNING)
			break;
		if (st == DOCA_CTX_STATE_IDLE)
			return errorf("%sthe connection was refused (context idle)", n.c_str());
		if (now_ms() >= deadline)
			return errorf("%sno connection within %d ms (is the node running?)", n.c_str(),
				      timeout_ms);
		if (c->progress() == 0) {
			pollfd p = {c->_fd, POLLIN, 0};
			(void)c->arm();
			(void)::poll(&p, 1, 10);
			(void)c->clear();
		}
	}
	DPUMESH_RETURN_IF_ERROR(check(doca_comch_client_get_connection(c->_client, &c->_conn),
				      n + "doca_comch_client_get_connection"));
	return c;
}

status comch_client::send(std::span<const uint8_t> msg)
{
	if (msg.empty() || msg.size() > _max_msg)
		return errorf("comch client send: %zu bytes (1..%u)", msg.size(), _max_msg);
	doca_comch_task_send *task = nullptr;
	doca_error_t rc = doca_comch_client_task_send_alloc_init(_client, _conn, msg.data(),
								 static_cast<uint32_t>(msg.size()), &task);
	return submit(task, rc, "doca_comch_client_task_send_alloc_init");
}

} // namespace dpumesh::doca
