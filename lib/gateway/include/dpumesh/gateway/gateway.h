// SPDX-License-Identifier: BSD-3-Clause
// The ingress gateway: HTTP/1.1 in (libevent's evhttp), mesh messages out over UDP
// (dpumesh/meshsock/meshsock.h), mesh responses back as HTTP. docs/gateway.md has the model.
//
// The control-path pieces are here apart from the server so they can be tested alone:
// the config (JSON, dpumesh::json), route matching, the HTTP header -> L7 header mapping and the
// mesh error -> HTTP status mapping. The server (gateway) runs on one libevent loop.
//
//   auto cfg = server::load_config_file("conf/ingress.json");
//   if (!cfg) die(cfg.error().message());
//   auto gw = gateway::server::create(cfg.value(), base);
//   event_base_dispatch(base);
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dpumesh/common/status.h"

struct event_base;

namespace dpumesh::gateway {

/** host:port, as parsed from "a.b.c.d:p" or "[v6]:p". */
struct address {
	std::string host;
	uint16_t port = 0;
	sockaddr_storage sa{};
	socklen_t len = 0;
	std::string str() const;
};

struct node {
	std::string name;
	address addr; /**< the node's mesh address and port */
};

/** A path prefix served by one mesh service, on one or more nodes (round robin). */
struct route {
	std::string prefix; /**< starts with '/' */
	std::string service;
	std::vector<uint32_t> nodes; /**< indexes into config::nodes */
};

struct config {
	address listen;
	address admin; /**< port 0: no admin listener */
	address mesh_bind;
	uint32_t mtu = 1500;
	uint32_t rcvbuf = 16u << 20;
	std::vector<node> nodes;
	std::vector<route> routes; /**< longest prefix first */
	uint32_t max_header_bytes = 16384;
	uint32_t max_body_bytes = 1u << 20;
	uint32_t max_pending = 4096;
	/** open client connections at most; past it new ones wait in the listen backlog
	 * (also held below the process's file descriptor limit: docs/gateway.md) */
	uint32_t max_connections = 10000;
	/** request bytes held at most, over every connection (bodies being read, bodies of
	 * requests waiting for the mesh): past it, reading pauses (docs/gateway.md) */
	uint64_t max_buffered_bytes = 256ull << 20;
	uint32_t request_ms = 5000; /**< mesh deadline and the gateway's own time-out */
	uint32_t read_ms = 10000;   /**< accept/previous reply -> a whole request read */
	uint32_t idle_ms = 30000;   /**< socket inactivity (evhttp) */
};

/** Parses and validates a config; errors carry line:column and the JSON pointer. */
result<config> parse_config(std::string_view text, std::string_view origin);
result<config> load_config_file(const std::string &path);

/** The longest-prefix route for a path, or nullptr. */
const route *match_route(const config &cfg, std::string_view path) noexcept;

/** Parses "host:port" / "[v6]:port" into sa. */
result<address> parse_address(std::string_view text);

/** Headers the gateway does not forward (hop-by-hop, framing). name is lowercase. */
bool is_hop_by_hop(std::string_view name) noexcept;

/**
 * Writes the mesh L7 request header for an HTTP request into buf.
 * @param headers the request's header lines as received (any case)
 * @return 0 and *len set; or the HTTP status to refuse with: 400 (a name that is not a
 *         token, a value with CR, LF, NUL or another control byte, a bad method or path),
 *         431 (more than 128 fields, a value over 16 KiB, or a header over 64 KiB)
 */
int build_request_l7(std::string_view service, std::string_view method, std::string_view path,
		     uint32_t deadline_ms,
		     const std::vector<std::pair<std::string, std::string>> &headers,
		     std::string_view request_id, uint8_t *buf, size_t cap, size_t *len);

/** The HTTP status for a mesh-generated response (status and :reason from the mesh). */
int http_status_for_mesh(uint16_t mesh_status, std::string_view reason) noexcept;

/** {"error":reason,"hop":hop,"status":N}: valid JSON whatever the bytes (escapes for '"' and
 * '\\', control bytes left out, U+FFFD for bytes that are not UTF-8). */
std::string error_body(std::string_view reason, std::string_view hop, int status);

/** A mesh error's `:reason` as a metrics label: itself when it is 1-64 bytes of [a-z0-9_]
 * (every reason the mesh makes), else "invalid" (a pod may answer with the mesh_generated
 * flag and any reason: it must not break the Prometheus text). */
std::string_view mesh_reason_label(std::string_view reason) noexcept;

/**
 * Finds the end of an HTTP/1.x request's header block in its bytes as they are read, a
 * piece at a time, and the length of the body it announces (the gateway's memory bound
 * admits a body only once its header block has ended, and reserves what it announces:
 * docs/gateway.md, "Memory"). Lines end with LF, a CR anywhere is left out (evhttp's
 * EVBUFFER_EOL_CRLF takes both "\r\n" and "\n"), empty lines before the request line are
 * skipped, and the first empty line after it ends the block.
 */
struct head_scanner {
	/** bytes of a header line kept to read a Content-Length from: the name, its colon and
	 * a value of up to 19 digits with room for blanks around it */
	static constexpr uint32_t line_keep = 64;

	uint32_t line_len = 0; /**< the current line's length so far (CRs left out) */
	uint32_t lines = 0;    /**< non-empty lines ended so far */
	char method[8] = {};   /**< the request line's first bytes (CRs left out) */
	uint8_t method_len = 0;
	bool done = false;     /**< the block has ended */

	/* the body's length as the header lines announce it */
	char line[line_keep] = {}; /* the current header line's first bytes (CRs left out) */
	bool cr = false;	   /* the byte before was a CR */
	bool line_cr = false;	   /* the current line has a CR other than one before its LF */
	bool last_cl = false;	   /* the last header line (continuations aside) was a length */
	uint8_t lengths = 0;	   /* Content-Length lines, up to 2 */
	bool unknown = false;	   /* a body of a length not announced, or announced unclearly */
	uint64_t length = 0;	   /* the one Content-Length's value */

	/** Scans p[0, n): the bytes taken, up to and including the LF that ends the block (all
	 * n while it has not ended; none once done). */
	size_t feed(const uint8_t *p, size_t n) noexcept;
	/** The request line's method may carry a body: evhttp 2.1.12 reads the body of a POST,
	 * PUT, PATCH, GET, DELETE, OPTIONS and CONNECT (which the gateway refuses once read), of no
	 * HEAD and no TRACE (nor of a method evhttp does not know). */
	bool body_method() const noexcept;
	/** Once the block has ended: the bytes of body that follow it as evhttp 2.1.12 reads
	 * them, or `most` where the block does not say how many in a way read only one way. 0
	 * for a method without a body and for a request with neither Content-Length nor
	 * Transfer-Encoding (evhttp reads no body then); the one Content-Length's value (at most
	 * `most`: a longer body is refused, 413, unread) where it is 1 to 19 digits between
	 * blanks; `most` for any Transfer-Encoding (chunked: not known before the end), and for
	 * any Content-Length that is not that: two of them, an empty or signed one, one with a
	 * continuation line, a CR or another byte in it, or on a line past `line_keep` bytes. */
	uint64_t body_bytes(uint64_t most) const noexcept;

private:
	void header_line() noexcept;
};

/** Standard reason phrase ("OK", "Not Found", ...). */
const char *reason_phrase(int status) noexcept;

/** The server. */
class server {
public:
	static result<std::unique_ptr<server>> create(const config &cfg, event_base *base);
	~server();
	server(const server &) = delete;
	server &operator=(const server &) = delete;

	/** Prometheus text of the counters (also served on the admin address at /metrics). */
	std::string metrics() const;
	/** One "key=value ..." line of the main counters. */
	std::string summary() const;
	/** The connection cap in force: config::max_connections, or lower where the process's
	 * file descriptor limit could not be raised to hold it. */
	uint32_t max_connections() const;

	struct impl;

private:
	explicit server(std::unique_ptr<impl> p);
	std::unique_ptr<impl> _p;
};

} // namespace dpumesh::gateway
