// SPDX-License-Identifier: BSD-3-Clause
// The pod control channel on DOCA comch: REGISTER checks, import, admission, doorbells.
#include "dpumesh/doca/pod_channel.h"

#include <cstring>
#include <string_view>

#include "dpumesh/podchan/channel.h"
#include "dpumesh/podlayout/pod_layout.h"

namespace dpumesh::doca {

result<std::unique_ptr<pod_channel_server>> pod_channel_server::create(doca_dev *dev,
									const std::string &host_pci,
									const std::string &name,
									pod_channel_hooks hooks,
									doca_dpa *dpa)
{
	if (!hooks.admit)
		return errorf("pod channel %s: no admission hook", name.c_str());
	std::unique_ptr<pod_channel_server> p(new pod_channel_server());
	p->_dev = dev;
	p->_dpa = dpa;
	p->_hooks = std::move(hooks);
	pod_channel_server *self = p.get();
	comch_handlers h;
	h.on_message = [self](doca_comch_connection *c, std::span<const uint8_t> m) { self->on_message(c, m); };
	h.on_connection = [self](doca_comch_connection *c, bool up) {
		if (!up)
			self->drop(c);
	};
	auto srv = comch_server::create(dev, host_pci, name, std::move(h));
	if (!srv)
		return srv.error().with_context("pod channel");
	p->_server = std::move(*srv);
	return p;
}

void pod_channel_server::on_message(doca_comch_connection *conn, std::span<const uint8_t> msg)
{
	dpumesh_ctrl_hdr h{};
	if (msg.size() >= sizeof(h))
		std::memcpy(&h, msg.data(), sizeof(h));
	if (msg.size() >= sizeof(h) && h.magic == DPUMESH_CTRL_MAGIC && h.type == DPUMESH_CTRL_UNREGISTER &&
	    msg.size() == sizeof(dpumesh_ctrl_unregister) && h.length == msg.size()) {
		const bool had = [&] {
			for (const pod &p : _pods)
				if (p.conn == conn)
					return true;
			return false;
		}();
		drop(conn);
		dpumesh_ctrl_unregister r{};
		r.hdr = podchan::make_hdr(DPUMESH_CTRL_UNREGISTERED, sizeof(r));
		r.result = had ? DPUMESH_CTRL_OK : DPUMESH_CTRL_ERR_NOT_REGISTERED;
		(void)_server->send(conn, std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(&r), sizeof(r)));
		return;
	}
	on_register(conn, msg); /* anything else must be a REGISTER: answered either way */
}

void pod_channel_server::on_register(doca_comch_connection *conn, std::span<const uint8_t> msg)
{
	auto v = parse_register(msg);
	if (!v)
		return refuse(conn, DPUMESH_CTRL_ERR_MESSAGE, v.error().message());
	for (const pod &p : _pods)
		if (p.conn == conn)
			return refuse(conn, DPUMESH_CTRL_ERR_MESSAGE, "REGISTER: this connection has a pod");
	auto mem = pod_import::create(_dev, v->desc);
	if (!mem)
		return refuse(conn, DPUMESH_CTRL_ERR_NO_REGION, mem.error().message());
	/* the pod's doorbell, where it sent one and the node has a DPA to ring it from; without
	 * it the DPA rings nothing (handle 0) and the pod polls */
	std::unique_ptr<doorbell_import> bell;
	if (!v->bell.empty() && _dpa) {
		auto b = doorbell_import::create(_dev, _dpa, v->bell);
		if (!b)
			return refuse(conn, DPUMESH_CTRL_ERR_NO_REGION, "doorbell: " + b.error().message());
		bell = std::move(*b);
		v->doorbell = bell->handle();
	}
	pod_admission a = _hooks.admit(*v, (*mem)->handle());
	if (a.result != DPUMESH_CTRL_OK)
		return refuse(conn, a.result, a.error);
	dpumesh_ctrl_registered r{};
	r.hdr = podchan::make_hdr(DPUMESH_CTRL_REGISTERED, sizeof(r));
	r.result = DPUMESH_CTRL_OK;
	r.pod_id = a.pod_id;
	r.generation = a.generation;
	r.mkey = (*mem)->handle();
	r.nb_workers = v->reg.nb_workers;
	r.sq_depth = v->reg.geometry.sq_depth;
	_pods.push_back({conn, a.pod_id, std::move(*mem), std::move(bell)});
	if (!a.tx_bell.empty()) {
		/* the TX doorbell first: the pod has it when REGISTERED arrives (in order) */
		std::vector<uint8_t> m(sizeof(dpumesh_ctrl_hdr) + a.tx_bell.size());
		dpumesh_ctrl_hdr h = podchan::make_hdr(DPUMESH_CTRL_REGISTERED, sizeof(h));
		h.type = comch_tx_bell_type;
		h.length = static_cast<uint32_t>(m.size());
		std::memcpy(m.data(), &h, sizeof(h));
		std::memcpy(m.data() + sizeof(h), a.tx_bell.data(), a.tx_bell.size());
		if (status st = _server->send(conn, m); !st) {
			drop(conn); /* admitted without its bell it would sleep through its posts */
			return refuse(conn, DPUMESH_CTRL_ERR_INTERNAL, "TX doorbell: " + st.message());
		}
	}
	reply(conn, r);
}

void pod_channel_server::reply(doca_comch_connection *conn, const dpumesh_ctrl_registered &r)
{
	/* a failed send is counted by the endpoint; the pod times out waiting */
	(void)_server->send(conn, std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(&r), sizeof(r)));
}

void pod_channel_server::refuse(doca_comch_connection *conn, uint32_t result, const std::string &why)
{
	_refused++;
	dpumesh_ctrl_registered r{};
	r.hdr = podchan::make_hdr(DPUMESH_CTRL_REGISTERED, sizeof(r));
	r.result = result;
	std::snprintf(r.error, sizeof(r.error), "%s", why.c_str());
	reply(conn, r);
}

void pod_channel_server::drop(doca_comch_connection *conn)
{
	for (auto it = _pods.begin(); it != _pods.end(); ++it) {
		if (it->conn != conn)
			continue;
		/* the node first takes the pod out of the DPA's tables and waits until no DPA
		 * thread holds it (the gone hook), then the import goes: the DPA handle (mkey)
		 * is dead from here */
		if (_hooks.gone)
			_hooks.gone(it->pod_id);
		_pods.erase(it);
		return;
	}
}

uint64_t pod_channel_server::doorbell(uint32_t pod_id) const noexcept
{
	for (const pod &p : _pods)
		if (p.pod_id == pod_id)
			return p.bell ? p.bell->handle() : 0;
	return 0;
}

status pod_channel_server::ring(uint32_t pod_id)
{
	for (const pod &p : _pods) {
		if (p.pod_id != pod_id)
			continue;
		dpumesh_ctrl_hdr h{};
		h.magic = DPUMESH_CTRL_MAGIC;
		h.version = DPUMESH_CTRL_VERSION;
		h.type = comch_doorbell_type;
		h.length = sizeof(h);
		return _server->send(p.conn, std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(&h), sizeof(h)));
	}
	return errorf("pod channel: no pod %u to ring", pod_id);
}

} // namespace dpumesh::doca
