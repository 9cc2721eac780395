// SPDX-License-Identifier: BSD-3-Clause
// The ingress gateway's config (JSON via jansson), route matching and HTTP <-> mesh mapping.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include <jansson.h>

#include "dpumesh/gateway/gateway.h"
#include "dpumesh/wire/l7.h"

namespace dpumesh::gateway {

std::string address::str() const
{
	return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
	       std::to_string(port);
}

result<address> parse_address(std::string_view text)
{
	address a;
	std::string_view host, port;
	if (!text.empty() && text[0] == '[') {
		size_t close = text.find(']');
		if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
			return errorf("\"%.*s\" is not [ipv6]:port", int(text.size()), text.data());
		host = text.substr(1, close - 1);
		port = text.substr(close + 2);
	} else {
		size_t colon = text.rfind(':');
		if (colon == std::string_view::npos)
			return errorf("\"%.*s\" is not host:port", int(text.size()), text.data());
		host = text.substr(0, colon);
		port = text.substr(colon + 1);
	}
	unsigned long p = 0;
	if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit) ||
	    (p = std::stoul(std::string(port))) > 65535)
		return errorf("\"%.*s\": bad port", int(text.size()), text.data());
	a.host = std::string(host);
	a.port = static_cast<uint16_t>(p);
	auto *v4 = reinterpret_cast<sockaddr_in *>(&a.sa);
	auto *v6 = reinterpret_cast<sockaddr_in6 *>(&a.sa);
	if (inet_pton(AF_INET, a.host.c_str(), &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(a.port);
		a.len = sizeof(*v4);
	} else if (inet_pton(AF_INET6, a.host.c_str(), &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(a.port);
		a.len = sizeof(*v6);
	} else {
		return errorf("\"%s\" is not an IPv4 or IPv6 address", a.host.c_str());
	}
	return a;
}

namespace {

/** Reports errors as origin:line:col: /pointer: message (positions from jansson). */
struct reader {
	std::string origin;
	status fail(json_t *at, const std::string &ptr, const std::string &msg) const
	{
		(void)at;
		return status::error(origin + ": " + ptr + ": " + msg);
	}
	status keys(json_t *obj, const std::string &ptr, std::initializer_list<const char *> allowed) const
	{
		if (!json_is_object(obj))
			return fail(obj, ptr, "expected an object");
		const char *k;
		json_t *v;
		json_object_foreach(obj, k, v) {
			if (std::none_of(allowed.begin(), allowed.end(),
					 [&](const char *a) { return std::strcmp(a, k) == 0; }))
				return fail(v, ptr + "/" + k, std::string("unknown key \"") + k + "\"");
		}
		return status::ok();
	}
	status uint(json_t *obj, const std::string &ptr, const char *key, uint32_t lo, uint32_t hi,
		    uint32_t *out) const
	{
		json_t *v = json_object_get(obj, key);
		if (!v)
			return status::ok();
		if (!json_is_integer(v))
			return fail(v, ptr + "/" + key, "expected an integer");
		json_int_t x = json_integer_value(v);
		if (x < lo || x > hi)
			return fail(v, ptr + "/" + key,
				    std::to_string(x) + " is out of range [" + std::to_string(lo) +
					    ", " + std::to_string(hi) + "]");
		*out = static_cast<uint32_t>(x);
		return status::ok();
	}
	status addr(json_t *obj, const std::string &ptr, const char *key, bool required,
		    address *out) const
	{
		json_t *v = json_object_get(obj, key);
		if (!v)
			return required ? fail(obj, ptr + "/" + key, "required") : status::ok();
		if (!json_is_string(v))
			return fail(v, ptr + "/" + key, "expected \"host:port\"");
		auto a = parse_address(json_string_value(v));
		if (!a)
			return fail(v, ptr + "/" + key, a.error().message());
		*out = a.value();
		return status::ok();
	}
};

status parse_root(const reader &r, json_t *root, config *c)
{
	DPUMESH_RETURN_IF_ERROR(r.keys(root, "", {"listen", "admin", "mesh", "nodes", "routes",
						   "limits", "timeouts"}));
	DPUMESH_RETURN_IF_ERROR(r.addr(root, "", "listen", true, &c->listen));
	DPUMESH_RETURN_IF_ERROR(r.addr(root, "", "admin", false, &c->admin));
	c->mesh_bind = parse_address("0.0.0.0:0").value();
	if (json_t *m = json_object_get(root, "mesh")) {
		DPUMESH_RETURN_IF_ERROR(r.keys(m, "/mesh", {"bind", "mtu", "rcvbuf"}));
		DPUMESH_RETURN_IF_ERROR(r.addr(m, "/mesh", "bind", false, &c->mesh_bind));
		DPUMESH_RETURN_IF_ERROR(r.uint(m, "/mesh", "mtu", 576, 9600, &c->mtu));
		DPUMESH_RETURN_IF_ERROR(r.uint(m, "/mesh", "rcvbuf", 65536, 1u << 30, &c->rcvbuf));
	}
	json_t *nodes = json_object_get(root, "nodes");
	if (!json_is_array(nodes) || json_array_size(nodes) == 0)
		return r.fail(nodes, "/nodes", "required: a non-empty array");
	size_t i;
	json_t *v;
	json_array_foreach(nodes, i, v) {
		std::string p = "/nodes/" + std::to_string(i);
		DPUMESH_RETURN_IF_ERROR(r.keys(v, p, {"name", "address"}));
		json_t *name = json_object_get(v, "name");
		if (!json_is_string(name) || json_string_length(name) == 0)
			return r.fail(v, p + "/name", "required: a non-empty string");
		node n;
		n.name = json_string_value(name);
		for (const node &o : c->nodes)
			if (o.name == n.name)
				return r.fail(name, p + "/name", "duplicate node \"" + n.name + "\"");
		DPUMESH_RETURN_IF_ERROR(r.addr(v, p, "address", true, &n.addr));
		if (n.addr.sa.ss_family != c->mesh_bind.sa.ss_family)
			return r.fail(v, p + "/address",
				      "address family differs from /mesh/bind (" +
					      c->mesh_bind.str() + ")");
		c->nodes.push_back(std::move(n));
	}
	json_t *routes = json_object_get(root, "routes");
	if (!json_is_array(routes) || json_array_size(routes) == 0)
		return r.fail(routes, "/routes", "required: a non-empty array");
	json_array_foreach(routes, i, v) {
		std::string p = "/routes/" + std::to_string(i);
		DPUMESH_RETURN_IF_ERROR(r.keys(v, p, {"prefix", "service", "nodes"}));
		route rt;
		json_t *pre = json_object_get(v, "prefix"), *svc = json_object_get(v, "service"),
		       *ns = json_object_get(v, "nodes");
		if (!json_is_string(pre) || json_string_value(pre)[0] != '/')
			return r.fail(v, p + "/prefix", "required: a path starting with '/'");
		rt.prefix = json_string_value(pre);
		for (const route &o : c->routes)
			if (o.prefix == rt.prefix)
				return r.fail(pre, p + "/prefix", "duplicate prefix \"" + rt.prefix + "\"");
		if (!json_is_string(svc) || json_string_length(svc) == 0 ||
		    json_string_length(svc) > 255)
			return r.fail(v, p + "/service", "required: a service name (1-255 bytes)");
		rt.service = json_string_value(svc);
		if (!json_is_array(ns) || json_array_size(ns) == 0)
			return r.fail(v, p + "/nodes", "required: a non-empty array of node names");
		size_t j;
		json_t *nn;
		json_array_foreach(ns, j, nn) {
			std::string np = p + "/nodes/" + std::to_string(j);
			if (!json_is_string(nn))
				return r.fail(nn, np, "expected a node name");
			auto it = std::find_if(c->nodes.begin(), c->nodes.end(), [&](const node &n) {
				return n.name == json_string_value(nn);
			});
			if (it == c->nodes.end())
				return r.fail(nn, np, std::string("\"") + json_string_value(nn) +
							      "\" is not in /nodes");
			rt.nodes.push_back(static_cast<uint32_t>(it - c->nodes.begin()));
		}
		c->routes.push_back(std::move(rt));
	}
	std::stable_sort(c->routes.begin(), c->routes.end(), [](const route &a, const route &b) {
		return a.prefix.size() > b.prefix.size();
	});
	if (json_t *l = json_object_get(root, "limits")) {
		DPUMESH_RETURN_IF_ERROR(r.keys(l, "/limits", {"max_header_bytes", "max_body_bytes",
							      "max_pending"}));
		DPUMESH_RETURN_IF_ERROR(r.uint(l, "/limits", "max_header_bytes", 1024, 65535,
					       &c->max_header_bytes));
		DPUMESH_RETURN_IF_ERROR(r.uint(l, "/limits", "max_body_bytes", 0, 64u << 20,
					       &c->max_body_bytes));
		DPUMESH_RETURN_IF_ERROR(r.uint(l, "/limits", "max_pending", 1, 1u << 20,
					       &c->max_pending));
	}
	if (json_t *t = json_object_get(root, "timeouts")) {
		DPUMESH_RETURN_IF_ERROR(r.keys(t, "/timeouts", {"request_ms", "read_ms", "idle_ms"}));
		DPUMESH_RETURN_IF_ERROR(r.uint(t, "/timeouts", "request_ms", 1, 3600000, &c->request_ms));
		DPUMESH_RETURN_IF_ERROR(r.uint(t, "/timeouts", "read_ms", 100, 3600000, &c->read_ms));
		DPUMESH_RETURN_IF_ERROR(r.uint(t, "/timeouts", "idle_ms", 100, 3600000, &c->idle_ms));
	}
	return status::ok();
}

} // namespace

result<config> parse_config(std::string_view text, std::string_view origin)
{
	json_error_t jerr;
	json_t *root = json_loadb(text.data(), text.size(), JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return errorf("%.*s:%d:%d: %s", int(origin.size()), origin.data(), jerr.line,
			      jerr.column, jerr.text);
	config c;
	status st = parse_root(reader{std::string(origin)}, root, &c);
	json_decref(root);
	if (!st)
		return st;
	return c;
}

result<config> load_config_file(const std::string &path)
{
	std::ifstream f(path);
	if (!f)
		return errorf("%s: cannot open: %s", path.c_str(), std::strerror(errno));
	std::stringstream ss;
	ss << f.rdbuf();
	return parse_config(ss.str(), path);
}

const route *match_route(const config &cfg, std::string_view path) noexcept
{
	for (const route &r : cfg.routes) /* longest first */
		if (path.substr(0, r.prefix.size()) == r.prefix)
			return &r;
	return nullptr;
}

bool is_hop_by_hop(std::string_view n) noexcept
{
	static constexpr std::string_view skip[] = {
		"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
		"trailer", "upgrade", "content-length", "expect"};
	return std::find(std::begin(skip), std::end(skip), n) != std::end(skip);
}

namespace {
bool is_tchar(unsigned char c)
{
	return std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}
} // namespace

int build_request_l7(std::string_view service, std::string_view method, std::string_view path,
		     uint32_t deadline_ms,
		     const std::vector<std::pair<std::string, std::string>> &headers,
		     std::string_view request_id, uint8_t *buf, size_t cap, size_t *len)
{
	if (path.empty() || path[0] != '/')
		return 400;
	for (unsigned char c : path)
		if (c <= 0x20 || c == 0x7f)
			return 400;
	wire::l7_writer w(buf, cap);
	w.request(service, method, path, deadline_ms);
	uint32_t nb = 0;
	std::string lower;
	bool has_id = false;
	for (const auto &[name, value] : headers) {
		if (name.empty() || name.size() > 255)
			return name.empty() ? 400 : 431;
		lower.resize(name.size());
		for (size_t i = 0; i < name.size(); i++) {
			unsigned char c = static_cast<unsigned char>(name[i]);
			if (!is_tchar(c))
				return 400;
			lower[i] = static_cast<char>(std::tolower(c));
		}
		for (unsigned char c : value)
			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return 400; /* CR, LF, NUL and other control bytes: no injection */
		if (is_hop_by_hop(lower))
			continue;
		if (value.size() > wire::l7_max_value || ++nb > wire::l7_max_fields - 1u)
			return 431;
		has_id = has_id || lower == "x-request-id";
		w.field(lower, value);
	}
	if (!has_id && !request_id.empty())
		w.field("x-request-id", request_id);
	size_t n = w.finish();
	if (n == 0) /* the values were checked above: only size is left to fail */
		return w.failed() && n == 0 ? 431 : 400;
	*len = n;
	return 0;
}

int http_status_for_mesh(uint16_t s, std::string_view reason) noexcept
{
	switch (s) {
	case 401: case 403: case 404: case 429: case 503: case 504: case 413: case 431:
		return s;
	case 400: /* the node refused a header this gateway wrote */
		return 502;
	default:
		return reason == "timeout" ? 504 : (s >= 500 && s <= 599 ? s : 502);
	}
}

std::string error_body(std::string_view reason, std::string_view hop, int status)
{
	auto esc = [](std::string_view s) {
		std::string o;
		for (char c : s) {
			if (c == '"' || c == '\\')
				o += '\\';
			if (static_cast<unsigned char>(c) < 0x20)
				continue;
			o += c;
		}
		return o;
	};
	return "{\"error\":\"" + esc(reason) + "\",\"hop\":\"" + esc(hop) +
	       "\",\"status\":" + std::to_string(status) + "}\n";
}

const char *reason_phrase(int s) noexcept
{
	switch (s) {
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 413: return "Content Too Large";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return s < 300 ? "OK" : (s < 500 ? "Client Error" : "Server Error");
	}
}

} // namespace dpumesh::gateway
