// SPDX-License-Identifier: BSD-3-Clause
// The ingress gateway's config (JSON via dpumesh::json), route matching and HTTP <-> mesh mapping.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "dpumesh/gateway/gateway.h"
#include "dpumesh/json/json.h"
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
	const auto digit = [](char c) { return c >= '0' && c <= '9'; };
	if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), digit) ||
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

/* One mesh address "host:port" or "[v6]:port" at key (absent: left as is). */
void read_address(json::object_reader &o, const char *key, bool required, address *out)
{
	std::string s;
	if (!o.str(key, s, required, 1024))
		return;
	auto a = parse_address(s);
	if (!a)
		return o.fail(key, a.error().message());
	*out = a.value();
}

void read_nodes(json::object_reader &root, config *c)
{
	const json_t *nodes = root.array("nodes", false, 4096);
	if (root.r().failed())
		return;
	if (!nodes || json_array_size(nodes) == 0)
		return root.fail("nodes", "required: a non-empty array");
	size_t i;
	const json_t *v;
	json_array_foreach(nodes, i, v) {
		json::object_reader o(root.r(), v, json::pointer_append("/nodes", i));
		node n;
		if (!o.str("name", n.name, false, 255))
			return o.fail("name", "required: a non-empty string");
		for (const node &other : c->nodes)
			if (other.name == n.name)
				return o.fail("name", "duplicate node \"" + n.name + "\"");
		read_address(o, "address", true, &n.addr);
		o.done();
		if (o.r().failed())
			return;
		if (n.addr.sa.ss_family != c->mesh_bind.sa.ss_family)
			return o.fail("address", "address family differs from /mesh/bind (" +
							  c->mesh_bind.str() + ")");
		c->nodes.push_back(std::move(n));
	}
}

void read_routes(json::object_reader &root, config *c)
{
	const json_t *routes = root.array("routes", false, 4096);
	if (root.r().failed())
		return;
	if (!routes || json_array_size(routes) == 0)
		return root.fail("routes", "required: a non-empty array");
	size_t i;
	const json_t *v;
	json_array_foreach(routes, i, v) {
		json::object_reader o(root.r(), v, json::pointer_append("/routes", i));
		route rt;
		if (!o.str("prefix", rt.prefix, false, 4096) || rt.prefix[0] != '/')
			return o.fail("prefix", "required: a path starting with '/'");
		for (const route &other : c->routes)
			if (other.prefix == rt.prefix)
				return o.fail("prefix", "duplicate prefix \"" + rt.prefix + "\"");
		if (!o.str("service", rt.service, false, 255))
			return o.fail("service", "required: a service name (1-255 bytes)");
		const json_t *ns = o.array("nodes", false, 4096);
		if (o.r().failed())
			return;
		if (!ns || json_array_size(ns) == 0)
			return o.fail("nodes", "required: a non-empty array of node names");
		size_t j;
		const json_t *nn;
		json_array_foreach(ns, j, nn) {
			std::string np = json::pointer_append(o.child("nodes"), j);
			if (!json_is_string(nn))
				return o.r().fail(np, "expected a node name");
			auto it = std::find_if(c->nodes.begin(), c->nodes.end(), [&](const node &n) {
				return n.name == json_string_value(nn);
			});
			if (it == c->nodes.end())
				return o.r().fail(np, std::string("\"") + json_string_value(nn) +
							      "\" is not in /nodes");
			rt.nodes.push_back(static_cast<uint32_t>(it - c->nodes.begin()));
		}
		o.done();
		if (o.r().failed())
			return;
		c->routes.push_back(std::move(rt));
	}
	std::stable_sort(c->routes.begin(), c->routes.end(), [](const route &a, const route &b) {
		return a.prefix.size() > b.prefix.size();
	});
}

void read_root(json::reader &r, const json_t *root, config *c)
{
	json::object_reader o(r, root, "");
	read_address(o, "listen", true, &c->listen);
	read_address(o, "admin", false, &c->admin);
	c->mesh_bind = parse_address("0.0.0.0:0").value();
	if (const json_t *m = o.get("mesh")) {
		json::object_reader mo(r, m, "/mesh");
		read_address(mo, "bind", false, &c->mesh_bind);
		mo.uint("mtu", c->mtu, 576, 9600);
		mo.uint("rcvbuf", c->rcvbuf, 65536, 1u << 30);
		mo.done();
	}
	read_nodes(o, c);
	read_routes(o, c);
	if (const json_t *l = o.get("limits")) {
		json::object_reader lo(r, l, "/limits");
		lo.uint("max_header_bytes", c->max_header_bytes, 1024, 65535);
		lo.uint("max_body_bytes", c->max_body_bytes, 0, 64u << 20);
		lo.uint("max_pending", c->max_pending, 1, 1u << 20);
		lo.uint("max_connections", c->max_connections, 1, 1000000);
		if (lo.uint("max_buffered_bytes", c->max_buffered_bytes, 65536, 1ull << 40) &&
		    c->max_buffered_bytes < c->max_body_bytes)
			/* a body of max_body_bytes could never be read whole */
			lo.fail("max_buffered_bytes",
				std::to_string(c->max_buffered_bytes) +
					" is below max_body_bytes (" +
					std::to_string(c->max_body_bytes) +
					"): a body of that size could never be read");
		lo.done();
	}
	if (const json_t *t = o.get("timeouts")) {
		json::object_reader to(r, t, "/timeouts");
		to.uint("request_ms", c->request_ms, 1, 3600000);
		to.uint("read_ms", c->read_ms, 100, 3600000);
		to.uint("idle_ms", c->idle_ms, 100, 3600000);
		to.done();
	}
	o.done();
}

result<config> parse_document(const json::document &doc)
{
	config c;
	json::reader r(doc);
	read_root(r, doc.root(), &c);
	if (r.failed())
		return *r.error();
	return c;
}

} // namespace

result<config> parse_config(std::string_view text, std::string_view origin)
{
	DPUMESH_ASSIGN_OR_RETURN(json::document doc,
				 json::document::parse(text, std::string(origin)));
	return parse_document(doc);
}

result<config> load_config_file(const std::string &path)
{
	DPUMESH_ASSIGN_OR_RETURN(json::document doc, json::document::load_file(path, 16u << 20));
	return parse_document(doc);
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
/* RFC 9110's tchar. Not strchr() alone: it finds NUL too (the terminator), which made a
 * NUL in a name a token character */
bool is_tchar(unsigned char c)
{
	return std::isalnum(c) || (c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
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

namespace {
/* The length of the UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF); 0 where none starts there. */
size_t utf8_seq(std::string_view s, size_t i) noexcept
{
	const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
	const auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xc0) == 0x80; };
	const unsigned char c = b(0);
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return cont(1) ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (!cont(1) || !cont(2) || (c == 0xe0 && b(1) < 0xa0) || (c == 0xed && b(1) > 0x9f))
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (!cont(1) || !cont(2) || !cont(3) || (c == 0xf0 && b(1) < 0x90) ||
		    (c == 0xf4 && b(1) > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}
} // namespace

std::string error_body(std::string_view reason, std::string_view hop, int status)
{
	/* the reason and hop come from the mesh's answer, which a pod can make (any bytes but
	 * CR, LF and NUL): JSON wants valid UTF-8, and escapes for '"', '\\' and controls */
	auto esc = [](std::string_view s) {
		std::string o;
		for (size_t i = 0; i < s.size();) {
			const unsigned char c = static_cast<unsigned char>(s[i]);
			if (c < 0x80) {
				if (c == '"' || c == '\\')
					o += '\\';
				if (c >= 0x20)
					o += static_cast<char>(c);
				i++;
				continue;
			}
			const size_t n = utf8_seq(s, i);
			if (n == 0) {
				o += "\xef\xbf\xbd"; /* U+FFFD for a byte that starts no sequence */
				i++;
			} else {
				o.append(s.substr(i, n));
				i += n;
			}
		}
		return o;
	};
	return "{\"error\":\"" + esc(reason) + "\",\"hop\":\"" + esc(hop) +
	       "\",\"status\":" + std::to_string(status) + "}\n";
}

std::string_view mesh_reason_label(std::string_view reason) noexcept
{
	if (reason.empty() || reason.size() > 64)
		return "invalid";
	for (unsigned char c : reason)
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			return "invalid";
	return reason;
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
