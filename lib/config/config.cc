// SPDX-License-Identifier: BSD-3-Clause
// Loads a node config from JSON (jansson) with strict validation and precise error locations.
#include "dpumesh/common/text.h"
#include "dpumesh/config/config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <set>

namespace dpumesh::config {

using json::pointer_append;

namespace {

/* The strict readers of dpumesh::json: the first error wins and stops further checks. */
using ctx = json::reader;
using obj = json::object_reader;
using json::type_name;

bool valid_name(const std::string &s)
{
	if (s.empty() || s.size() > 63)
		return false;
	if (!std::isalnum(static_cast<unsigned char>(s[0])))
		return false;
	return std::all_of(s.begin(), s.end(), [](char ch) {
		return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' ||
		       ch == '.';
	});
}

bool parse_mac(const std::string &s, uint8_t out[6])
{
	unsigned b[6];
	char tail;
	if (s.size() != 17 ||
	    std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4],
			&b[5], &tail) != 6)
		return false;
	for (int i = 0; i < 6; i++) {
		if (!std::isxdigit(static_cast<unsigned char>(s[i * 3])) ||
		    !std::isxdigit(static_cast<unsigned char>(s[i * 3 + 1])))
			return false;
		out[i] = static_cast<uint8_t>(b[i]);
	}
	return true;
}

/** Reads an object's "name" key and checks it is a valid identifier. */
void read_name(ctx &c, obj &o, std::string &out)
{
	if (o.str("name", out, true, 63) && !valid_name(out))
		c.fail(o.child("name"), "\"" + out +
					  "\" is not a valid name (letters, digits, '-', '_', '.'; "
					  "starts with a letter or digit)");
}

/** mac/ipv4/ipv6/mesh_port, shared by the node itself and its peers. */
template <typename T>
void read_addressing(ctx &c, obj &o, T &out, bool mac_required)
{
	std::string s;
	if (o.str("mac", s, mac_required)) {
		if (!parse_mac(s, out.mac))
			c.fail(o.child("mac"), "\"" + s + "\" is not a MAC address (xx:xx:xx:xx:xx:xx)");
		else if (out.mac[0] & 1)
			c.fail(o.child("mac"), "\"" + s + "\" is a multicast address; need unicast");
		else if (std::all_of(out.mac, out.mac + 6, [](uint8_t b) { return b == 0; }))
			c.fail(o.child("mac"), "\"" + s + "\" is the zero address");
	}
	if (o.str("ipv4", s)) {
		in_addr a{};
		if (inet_pton(AF_INET, s.c_str(), &a) != 1)
			c.fail(o.child("ipv4"), "\"" + s + "\" is not an IPv4 address");
		else
			out.ipv4 = a;
	}
	if (o.str("ipv6", s)) {
		in6_addr a{};
		if (inet_pton(AF_INET6, s.c_str(), &a) != 1)
			c.fail(o.child("ipv6"), "\"" + s + "\" is not an IPv6 address");
		else
			out.ipv6 = a;
	}
	o.uint("mesh_port", out.mesh_port, 1, 65535);
	if (!c.failed() && !out.ipv4 && !out.ipv6)
		c.fail(o.ptr(), "needs \"ipv4\" or \"ipv6\" (or both)");
}

void read_node(ctx &c, const json_t *v, node_config &cfg)
{
	obj o(c, v, "/node");
	read_name(c, o, cfg.node.name);
	read_addressing(c, o, cfg.node, true);
	if (!o.str("control_socket", cfg.node.control_socket, false, 107))
		cfg.node.control_socket = "/run/dpumesh/" + cfg.node.name + ".sock";
	o.done();
}

void read_ports(ctx &c, const json_t *arr, node_config &cfg)
{
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v)
	{
		port_config p;
		obj o(c, v, pointer_append("/ports", std::to_string(i)));
		read_name(c, o, p.name);
		o.str("dev", p.dev, true, 1024);
		o.enumeration("role", p.role,
			      {{"external", port_role::external}, {"replay", port_role::replay}});
		o.uint("rx_queues", p.rx_queues, 1, 16);
		o.uint("tx_queues", p.tx_queues, 1, 16);
		o.uint("rx_desc", p.rx_desc, 64, 16384);
		o.uint("tx_desc", p.tx_desc, 64, 16384);
		o.uint("mtu", p.mtu, 68, 9600);
		o.boolean("promiscuous", p.promiscuous);
		uint32_t backlog = 0;
		if (o.uint("tx_backlog", backlog, 0, 1u << 20)) {
			if (backlog && ((backlog & (backlog - 1)) != 0 || backlog < 32))
				c.fail(o.child("tx_backlog"), std::to_string(backlog) +
								     " is not 0 nor a power of two from 32");
			p.tx_backlog = backlog;
		}
		o.done();
		if (c.failed())
			return;
		for (const auto &other : cfg.ports) {
			if (other.name == p.name)
				return c.fail(o.child("name"), "duplicate port name \"" + p.name + "\"");
			if (other.dev == p.dev)
				return c.fail(o.child("dev"), "device \"" + p.dev + "\" used by two ports");
		}
		cfg.ports.push_back(std::move(p));
	}
}

void read_mempool(ctx &c, const json_t *v, node_config &cfg)
{
	obj o(c, v, "/mempool");
	o.uint("mbufs", cfg.mempool.mbufs, 512, 1u << 24);
	o.uint("cache", cfg.mempool.cache, 0, 512);
	o.uint("data_room", cfg.mempool.data_room, 256, 65535);
	o.done();
}

void read_lcores(ctx &c, const json_t *v, node_config &cfg)
{
	obj o(c, v, "/lcores");
	o.enumeration("idle", cfg.lcores.idle,
		      {{"busy", idle_policy::busy}, {"adaptive", idle_policy::adaptive}});
	o.uint("idle_polls", cfg.lcores.idle_polls, 1, 1u << 24);
	o.uint("max_sleep_us", cfg.lcores.max_sleep_us, 1, 100000);
	o.uint("spin_us", cfg.lcores.spin_us, 0, 1000000);
	o.uint("control_priority", cfg.lcores.control_priority, 0, 99);
	o.uint("workers", cfg.lcores.workers, 1, 16);
	if (const json_t *st = o.get("stages", false)) {
		obj so(c, st, o.child("stages"));
		for (std::string_view name : stage_names) {
			std::string key(name);
			unsigned lcore;
			if (so.uint(key.c_str(), lcore, 0, 1023))
				cfg.lcores.stages[key] = lcore;
		}
		so.done();
	}
	o.done();
}

void read_geometry(ctx &c, obj &parent, const char *key, pool_geometry &g, uint32_t max_size)
{
	const json_t *v = parent.get(key, false);
	if (!v)
		return;
	obj o(c, v, parent.child(key));
	o.uint("slots", g.slots, 1, 65536);
	o.uint("slot_size", g.slot_size, 64, max_size);
	o.done();
}

void read_pools(ctx &c, const json_t *v, node_config &cfg)
{
	obj o(c, v, "/pools");
	read_geometry(c, o, "tx_header", cfg.pools.tx_header, 65536);
	read_geometry(c, o, "tx_body", cfg.pools.tx_body, 16u << 20);
	read_geometry(c, o, "rx_header", cfg.pools.rx_header, 65536);
	read_geometry(c, o, "rx_body", cfg.pools.rx_body, 16u << 20);
	if (o.uint("sq_depth", cfg.pools.sq_depth, 16, 65536) &&
	    (cfg.pools.sq_depth & (cfg.pools.sq_depth - 1)))
		c.fail(o.child("sq_depth"),
		       std::to_string(cfg.pools.sq_depth) + " is not a power of two");
	if (const json_t *q = o.get("dest_queue", false)) {
		obj qo(c, q, o.child("dest_queue"));
		qo.uint("entries", cfg.pools.dest_queue_entries, 1024, 1u << 20);
		if (qo.uint("per_destination", cfg.pools.dest_queue_share, 1, 1u << 20) &&
		    cfg.pools.dest_queue_share > cfg.pools.dest_queue_entries)
			c.fail(qo.child("per_destination"),
			       std::to_string(cfg.pools.dest_queue_share) + " is more than entries (" +
				       std::to_string(cfg.pools.dest_queue_entries) + ")");
		qo.uint("admit_beyond_slots", cfg.pools.admit_beyond_slots, 0, 1u << 20);
		qo.done();
	}
	if (const json_t *n = o.get("network", false)) {
		obj no(c, n, o.child("network"));
		no.uint("backlog", cfg.pools.network_backlog, 1, 4095);
		no.uint("queued", cfg.pools.network_queued, 1, 4095);
		no.done();
	}
	if (const json_t *q = o.get("quota", false)) {
		obj qo(c, q, o.child("quota"));
		qo.uint("requests_per_pod", cfg.pools.quota.requests_per_pod, 1, 65536);
		qo.uint("requests_per_source", cfg.pools.quota.requests_per_source, 1, 65536);
		qo.uint("answers_per_pod", cfg.pools.quota.answers_per_pod, 1, 1u << 20);
		qo.uint("answer_wait_ms", cfg.pools.quota.answer_wait_ms, 1, 600000);
		qo.uint("rx_stall_ms", cfg.pools.quota.rx_stall_ms, 1, 600000);
		qo.done();
	}
	o.done();
}

void read_services(ctx &c, const json_t *arr, node_config &cfg)
{
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v)
	{
		service_config s;
		obj o(c, v, pointer_append("/services", std::to_string(i)));
		read_name(c, o, s.name);
		o.uint("max_pods", s.max_pods, 1, DPUMESH_MAX_PODS);
		o.done();
		if (c.failed())
			return;
		if (cfg.find_service(s.name))
			return c.fail(o.child("name"), "duplicate service \"" + s.name + "\"");
		cfg.services.push_back(std::move(s));
	}
}

void read_peers(ctx &c, const json_t *arr, node_config &cfg)
{
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v)
	{
		peer_config p;
		obj o(c, v, pointer_append("/peers", std::to_string(i)));
		read_name(c, o, p.name);
		read_addressing(c, o, p, false);
		o.done();
		if (c.failed())
			return;
		if (p.name == cfg.node.name || p.name == "local")
			return c.fail(o.child("name"), "peer name \"" + p.name +
							       "\" is reserved (node's own name or \"local\")");
		if (cfg.find_peer(p.name))
			return c.fail(o.child("name"), "duplicate peer \"" + p.name + "\"");
		cfg.peers.push_back(std::move(p));
	}
}

void check_service_ref(ctx &c, const node_config &cfg, obj &o, const std::string &service)
{
	if (!c.failed() && !cfg.find_service(service))
		c.fail(o.child("service"), "unknown service \"" + service + "\"");
}

void read_routes(ctx &c, const json_t *arr, node_config &cfg)
{
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v)
	{
		route_config r;
		obj o(c, v, pointer_append("/routes", std::to_string(i)));
		o.str("service", r.service, true, 63);
		o.str("to", r.to, true, 63);
		o.done();
		check_service_ref(c, cfg, o, r.service);
		if (c.failed())
			return;
		if (!r.is_local() && !cfg.find_peer(r.to))
			return c.fail(o.child("to"), "\"" + r.to +
							     "\" is neither \"local\" nor a peer in /peers");
		if (cfg.find_route(r.service))
			return c.fail(o.child("service"),
				      "duplicate route for service \"" + r.service + "\"");
		cfg.routes.push_back(std::move(r));
	}
}

void read_policy(ctx &c, const json_t *v, node_config &cfg)
{
	policy::read_config(c, v, "/policy",
			    [&](std::string_view service) { return cfg.find_service(service) != nullptr; },
			    cfg.policy);
}

void read_dpa(ctx &c, const json_t *v, node_config &cfg)
{
	obj o(c, v, "/dpa");
	o.enumeration("backend", cfg.dpa.backend,
		      {{"emu", dpa_backend::emu}, {"doca", dpa_backend::doca}});
	o.uint("threads", cfg.dpa.threads, 1, 16);
	if (o.str("device", cfg.dpa.device, false, 12) && !valid_pci_address(cfg.dpa.device))
		c.fail(o.child("device"), "\"" + cfg.dpa.device +
					    "\" is not a PCI address ([DDDD:]BB:DD.F, e.g. 0000:03:00.0)");
	if (o.str("host_device", cfg.dpa.host_device, false, 12) &&
	    !valid_pci_address(cfg.dpa.host_device))
		c.fail(o.child("host_device"), "\"" + cfg.dpa.host_device +
						 "\" is not a PCI address ([DDDD:]BB:DD.F, e.g. 0000:3b:00.0)");
	o.done();
}

void read_dma(ctx &c, const json_t *v, node_config &cfg)
{
	obj o(c, v, "/dma");
	o.enumeration("backend", cfg.dma.backend,
		      {{"cpu", dma_backend::cpu}, {"dmadev", dma_backend::dmadev}});
	o.str("device", cfg.dma.device, false, 1024);
	o.done();
	if (!c.failed() && cfg.dma.backend == dma_backend::dmadev && cfg.dma.device.empty())
		c.fail(o.ptr(), "backend \"dmadev\" needs \"device\" (e.g. \"dma_skeleton\")");
}

void read_root(ctx &c, const json_t *root, node_config &cfg)
{
	obj o(c, root, "");
	o.uint("version", cfg.version, 1, 1);
	read_node(c, o.get("node", true), cfg);
	if (c.failed())
		return;
	if (const json_t *a = o.array("ports", false, 32))
		read_ports(c, a, cfg);
	if (const json_t *m = o.get("mempool", false))
		read_mempool(c, m, cfg);
	/* what port TX may owe a slow peer stays within half the packet pool (RX needs the rest) */
	for (size_t i = 0; i < cfg.ports.size() && !c.failed(); i++)
		if (cfg.ports[i].tx_backlog && *cfg.ports[i].tx_backlog > cfg.mempool.mbufs / 2)
			c.fail(pointer_append("/ports", std::to_string(i)) + "/tx_backlog",
			       std::to_string(*cfg.ports[i].tx_backlog) +
				       " frames is more than half the packet pool (mempool.mbufs " +
				       std::to_string(cfg.mempool.mbufs) + ")");
	if (const json_t *l = o.get("lcores", false))
		read_lcores(c, l, cfg);
	if (const json_t *p = o.get("pools", false))
		read_pools(c, p, cfg);
	if (const json_t *a = o.array("services", false, 1024))
		read_services(c, a, cfg);
	if (const json_t *a = o.array("peers", false, 256))
		read_peers(c, a, cfg);
	if (const json_t *a = o.array("routes", false, 1024))
		read_routes(c, a, cfg);
	if (const json_t *p = o.get("policy", false))
		read_policy(c, p, cfg);
	if (const json_t *d = o.get("dpa", false))
		read_dpa(c, d, cfg);
	if (const json_t *d = o.get("dma", false))
		read_dma(c, d, cfg);
	o.done();
}

} // namespace

std::string node_config::where(const std::string &pointer) const
{
	auto it = positions.find(pointer);
	if (it == positions.end())
		return source;
	return source + ":" + std::to_string(it->second.line) + ":" +
	       std::to_string(it->second.column);
}

const service_config *node_config::find_service(std::string_view name) const
{
	for (const auto &s : services)
		if (s.name == name)
			return &s;
	return nullptr;
}

const peer_config *node_config::find_peer(std::string_view name) const
{
	for (const auto &p : peers)
		if (p.name == name)
			return &p;
	return nullptr;
}

uint32_t node_config::tx_backlog_of(const port_config &p) const
{
	if (p.tx_backlog)
		return *p.tx_backlog;
	uint32_t n = 32;
	while (n * 2 <= mempool.mbufs / 4)
		n *= 2;
	return n;
}

const route_config *node_config::find_route(std::string_view service) const
{
	for (const auto &r : routes)
		if (r.service == service)
			return &r;
	return nullptr;
}

result<node_config> load_string(std::string_view text, const std::string &source)
{
	DPUMESH_ASSIGN_OR_RETURN(json::document doc, json::document::parse(text, source));
	return load_document(std::move(doc));
}

result<node_config> load_file(const std::string &path)
{
	DPUMESH_ASSIGN_OR_RETURN(json::document doc, json::document::load_file(path, 16u << 20));
	return load_document(std::move(doc));
}

result<node_config> load_document(json::document doc)
{
	node_config cfg;
	cfg.source = doc.source();
	ctx c(doc);
	read_root(c, doc.root(), cfg);
	if (c.failed())
		return *c.error();
	cfg.text = doc.text();
	cfg.positions = doc.take_value_positions();
	return cfg;
}

std::string_view to_string(port_role r)
{
	return r == port_role::external ? "external" : "replay";
}
bool set_workers(node_config &cfg, uint32_t workers)
{
	cfg.lcores.workers = workers;
	if (workers <= 1 || cfg.lcores.stages.empty())
		return false;
	cfg.lcores.stages.clear();
	return true;
}

std::string_view to_string(idle_policy p) { return p == idle_policy::busy ? "busy" : "adaptive"; }
bool valid_pci_address(std::string_view s)
{
	auto hex = [](std::string_view v, size_t n) {
		return v.size() == n && std::all_of(v.begin(), v.end(), [](char ch) {
			       return std::isxdigit(static_cast<unsigned char>(ch)) != 0;
		       });
	};
	if (s.size() == 12) {
		if (!hex(s.substr(0, 4), 4) || s[4] != ':')
			return false;
		s.remove_prefix(5);
	}
	if (s.size() != 7 || !hex(s.substr(0, 2), 2) || s[2] != ':' || !hex(s.substr(3, 2), 2) ||
	    s[5] != '.' || s[6] < '0' || s[6] > '7')
		return false;
	return std::strtoul(std::string(s.substr(3, 2)).c_str(), nullptr, 16) <= 0x1f;
}

std::string_view to_string(dpa_backend b) { return b == dpa_backend::emu ? "emu" : "doca"; }
std::string_view to_string(dma_backend b) { return b == dma_backend::cpu ? "cpu" : "dmadev"; }

} // namespace dpumesh::config
