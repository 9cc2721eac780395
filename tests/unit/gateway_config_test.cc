// SPDX-License-Identifier: BSD-3-Clause
// lib/gateway without a server: config validation, routes, HTTP -> L7 mapping, mesh errors.
#include <gtest/gtest.h>

#include "dpumesh/gateway/gateway.h"
#include "dpumesh/wire/l7.h"

using namespace dpumesh;
using namespace dpumesh::gateway;

namespace {

const char *good = R"({
  "listen": "127.0.0.1:8080", "admin": "[::1]:9901",
  "nodes": [ { "name": "n1", "address": "10.0.0.1:7000" }, { "name": "n2", "address": "10.0.0.2:7000" } ],
  "routes": [ { "prefix": "/", "service": "web", "nodes": ["n1"] },
              { "prefix": "/api/", "service": "api", "nodes": ["n1", "n2"] },
              { "prefix": "/api/v2/", "service": "api2", "nodes": ["n2"] } ],
  "limits": { "max_body_bytes": 1000, "max_connections": 77, "max_buffered_bytes": 99999 },
  "timeouts": { "request_ms": 250 }
})";

TEST(IngressConfig, ParsesAndMatchesLongestPrefix)
{
	auto c = parse_config(good, "t.json");
	ASSERT_TRUE(c) << c.error().message();
	EXPECT_EQ(c.value().listen.port, 8080);
	EXPECT_EQ(c.value().admin.sa.ss_family, AF_INET6);
	EXPECT_EQ(c.value().max_body_bytes, 1000u);
	EXPECT_EQ(c.value().max_connections, 77u);
	EXPECT_EQ(c.value().max_buffered_bytes, 99999u);
	EXPECT_EQ(c.value().request_ms, 250u);
	EXPECT_EQ(match_route(c.value(), "/api/v2/x")->service, "api2");
	EXPECT_EQ(match_route(c.value(), "/api/x")->service, "api");
	EXPECT_EQ(match_route(c.value(), "/api")->service, "web");
	EXPECT_EQ(match_route(c.value(), "/api/x")->nodes.size(), 2u);
}

TEST(IngressConfig, Errors)
{
	struct {
		const char *text, *want;
	} cases[] = {
		{"{", "t.json:1:"},
		{R"({"listen": "1.2.3.4:80", "nodes": [], "routes": []})", "/nodes: required"},
		{R"({"listen": "1.2.3.4", "nodes": [{"name":"a","address":"1.1.1.1:1"}], "routes": []})",
		 "/listen: \"1.2.3.4\" is not host:port"},
		{R"({"listen": "1.2.3.4:80", "nodes": [{"name":"a","address":"1.1.1.1:1"}],
		    "routes": [{"prefix":"/","service":"s","nodes":["b"]}]})",
		 "/routes/0/nodes/0: \"b\" is not in /nodes"},
		{R"({"listen": "1.2.3.4:80", "nodes": [{"name":"a","address":"1.1.1.1:1"}],
		    "routes": [{"prefix":"x","service":"s","nodes":["a"]}]})",
		 "/routes/0/prefix: required: a path starting with '/'"},
		{R"({"listen": "1.2.3.4:80", "lsten": 1, "nodes": [{"name":"a","address":"1.1.1.1:1"}],
		    "routes": [{"prefix":"/","service":"s","nodes":["a"]}]})",
		 "/lsten: unknown key"},
		{R"({"listen": "1.2.3.4:80", "nodes": [{"name":"a","address":"1.1.1.1:1"}],
		    "routes": [{"prefix":"/","service":"s","nodes":["a"]}], "limits": {"max_header_bytes": 10}})",
		 "/limits/max_header_bytes: 10 is out of range"},
		{R"({"listen": "1.2.3.4:80", "nodes": [{"name":"a","address":"1.1.1.1:1"}],
		    "routes": [{"prefix":"/","service":"s","nodes":["a"]}], "limits": {"max_connections": 0}})",
		 "/limits/max_connections: 0 is out of range"},
		{R"({"listen": "1.2.3.4:80", "nodes": [{"name":"a","address":"1.1.1.1:1"}],
		    "routes": [{"prefix":"/","service":"s","nodes":["a"]}],
		    "limits": {"max_body_bytes": 200000, "max_buffered_bytes": 100000}})",
		 "/limits/max_buffered_bytes: 100000 is below max_body_bytes (200000)"},
		{R"({"listen": "1.2.3.4:80", "nodes": [{"name":"a","address":"1.1.1.1:1"}],
		    "routes": [{"prefix":"/","service":"s","nodes":["a"]}],
		    "limits": {"max_buffered_bytes": 1000}})",
		 "/limits/max_buffered_bytes: 1000 is out of range"},
		{R"({"listen": "1.2.3.4:80", "nodes": [{"name":"a","address":"[fd00::1]:1"}],
		    "routes": [{"prefix":"/","service":"s","nodes":["a"]}]})",
		 "/nodes/0/address: address family differs"},
	};
	for (const auto &c : cases) {
		auto r = parse_config(c.text, "t.json");
		ASSERT_FALSE(r) << c.text;
		EXPECT_NE(r.error().message().find(c.want), std::string::npos)
			<< r.error().message() << " / wanted " << c.want;
	}
}

TEST(IngressMapping, HeadersBecomeFields)
{
	uint8_t buf[65535];
	size_t len = 0;
	std::vector<std::pair<std::string, std::string>> h = {
		{"Host", "example"}, {"Authorization", "Bearer x.y.z"}, {"Connection", "keep-alive"},
		{"Content-Length", "5"}, {"X-Trace", "a\tb"}};
	ASSERT_EQ(build_request_l7("api", "POST", "/api/x?q=1", 100, h, "rid-1", buf, sizeof(buf), &len), 0);
	wire::l7_view v;
	ASSERT_EQ(wire::l7_decode(buf, len, &v), wire::l7_error::ok);
	EXPECT_EQ(v.service, "api");
	EXPECT_EQ(v.method, "POST");
	EXPECT_EQ(v.path, "/api/x?q=1");
	EXPECT_EQ(v.deadline_ms, 100u);
	std::vector<std::string> names;
	v.for_each([&](std::string_view n, std::string_view) { names.emplace_back(n); });
	EXPECT_EQ(names, (std::vector<std::string>{"host", "authorization", "x-trace", "x-request-id"}));
	std::string_view auth;
	ASSERT_TRUE(v.find("authorization", &auth));
	EXPECT_EQ(auth, "Bearer x.y.z");
}

TEST(IngressMapping, Refusals)
{
	uint8_t buf[65535];
	size_t len;
	using hv = std::vector<std::pair<std::string, std::string>>;
	EXPECT_EQ(build_request_l7("s", "GET", "/", 0, hv{{"X-A", "a\rb"}}, "", buf, sizeof(buf), &len), 400);
	EXPECT_EQ(build_request_l7("s", "GET", "/", 0, hv{{"X-A", std::string("a\0b", 3)}}, "", buf, sizeof(buf), &len), 400);
	EXPECT_EQ(build_request_l7("s", "GET", "/", 0, hv{{"X A", "v"}}, "", buf, sizeof(buf), &len), 400);
	EXPECT_EQ(build_request_l7("s", "GET", "/", 0, hv{{std::string("X\0A", 3), "v"}}, "", buf, sizeof(buf), &len), 400);
	EXPECT_EQ(build_request_l7("s", "GET", "/a b", 0, hv{}, "", buf, sizeof(buf), &len), 400);
	EXPECT_EQ(build_request_l7("s", "GET", "/", 0, hv{{"X-A", std::string(20000, 'v')}}, "", buf, sizeof(buf), &len), 431);
	hv many;
	for (int i = 0; i < 200; i++)
		many.emplace_back("x-" + std::to_string(i), "v");
	EXPECT_EQ(build_request_l7("s", "GET", "/", 0, many, "", buf, sizeof(buf), &len), 431);
	hv big;
	for (int i = 0; i < 5; i++)
		big.emplace_back("x-" + std::to_string(i), std::string(16000, 'v'));
	EXPECT_EQ(build_request_l7("s", "GET", "/", 0, big, "", buf, sizeof(buf), &len), 431);
}

TEST(IngressMapping, MeshErrors)
{
	EXPECT_EQ(http_status_for_mesh(503, "no_live_pod"), 503);
	EXPECT_EQ(http_status_for_mesh(504, "timeout"), 504);
	EXPECT_EQ(http_status_for_mesh(401, "jwt_missing"), 401);
	EXPECT_EQ(http_status_for_mesh(403, "rbac_denied"), 403);
	EXPECT_EQ(http_status_for_mesh(429, "rate_limited"), 429);
	EXPECT_EQ(http_status_for_mesh(404, "no_route"), 404);
	EXPECT_EQ(http_status_for_mesh(400, "bad_header"), 502);
	EXPECT_EQ(error_body("no\"route", "n1/sidecar", 404),
		  "{\"error\":\"no\\\"route\",\"hop\":\"n1/sidecar\",\"status\":404}\n");
}

/* A pod may answer with the mesh_generated flag and any :reason and :hop (no CR, LF, NUL):
 * the body stays valid JSON (UTF-8 kept, other bytes U+FFFD, controls left out) and the
 * metrics label a token or "invalid". */
TEST(IngressMapping, ReasonsFromPodsStayValidJsonAndLabels)
{
	EXPECT_EQ(error_body("caf\xc3\xa9 \xe2\x82\xac", "h", 502),
		  "{\"error\":\"caf\xc3\xa9 \xe2\x82\xac\",\"hop\":\"h\",\"status\":502}\n");
	/* a lone continuation byte, a truncated sequence; an overlong '/', a surrogate, past
	 * U+10FFFF, 0xff: each byte of them one U+FFFD (2 + 3 + 4 + 1) */
	EXPECT_EQ(error_body("a\x80" "b\xe2\x82", "\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xff", 502),
		  "{\"error\":\"a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd\",\"hop\":\""
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\",\"status\":502}\n");
	EXPECT_EQ(error_body("t\tab\x01\\", "h", 502),
		  "{\"error\":\"tab\\\\\",\"hop\":\"h\",\"status\":502}\n");
	EXPECT_EQ(mesh_reason_label("no_live_pod"), "no_live_pod");
	EXPECT_EQ(mesh_reason_label("rate_limited2"), "rate_limited2");
	EXPECT_EQ(mesh_reason_label(""), "invalid");
	EXPECT_EQ(mesh_reason_label("a\"} 1"), "invalid");
	EXPECT_EQ(mesh_reason_label("Upper"), "invalid");
	EXPECT_EQ(mesh_reason_label(std::string(64, 'a')), std::string(64, 'a'));
	EXPECT_EQ(mesh_reason_label(std::string(65, 'a')), "invalid");
}

} // namespace

/* The end of a request's header block, found in its bytes a piece at a time (the memory
 * bound admits a body there): CRLF or LF line ends, empty lines before the request line
 * skipped, the bytes after the block left for the body. */
TEST(IngressHead, TheHeaderBlockEndsAtTheFirstEmptyLineAfterTheRequestLine)
{
	struct scanned {
		size_t taken;
		bool done, body;
		std::string method;
	};
	auto scan = [](std::string_view text, size_t piece) {
		gateway::head_scanner h;
		size_t taken = 0;
		for (size_t at = 0; at < text.size() && !h.done; at += piece) {
			const size_t n = std::min(piece, text.size() - at);
			const size_t k =
				h.feed(reinterpret_cast<const uint8_t *>(text.data()) + at, n);
			EXPECT_TRUE(k == n || h.done) << text;
			taken += k;
		}
		return scanned{taken, h.done, h.body_method(), std::string(h.method, h.method_len)};
	};
	const std::string post = "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n";
	for (size_t piece : {size_t(1), size_t(2), size_t(3), size_t(7), size_t(1000)}) {
		scanned s = scan(post + "abc", piece);
		EXPECT_TRUE(s.done);
		EXPECT_EQ(s.taken, post.size()) << piece; /* "abc" is the body's */
		EXPECT_TRUE(s.body);
		EXPECT_EQ(s.method, "POST /a ");
	}
	/* LF alone, and a CR before each LF or not */
	EXPECT_EQ(scan("PUT / HTTP/1.1\nA: b\n\nxyz", 4).taken, 21u);
	EXPECT_TRUE(scan("PATCH / HTTP/1.1\r\n\nxyz", 1).body);
	/* empty lines before the request line are skipped, as evhttp does */
	scanned lead = scan("\r\n\r\nGET / HTTP/1.1\r\n\r\n", 5);
	EXPECT_TRUE(lead.done);
	EXPECT_EQ(lead.taken, 22u);
	EXPECT_TRUE(lead.body);
	EXPECT_EQ(lead.method, "GET / HT");
	/* not ended yet: every byte taken */
	scanned part = scan("POST /a HTTP/1.1\r\nHost: x\r\n", 3);
	EXPECT_FALSE(part.done);
	EXPECT_EQ(part.taken, 27u);
	/* evhttp 2.1.12 reads a body of GET, DELETE and OPTIONS too (a body of 100 KB did not
	 * fit the allowance of a method without one, and waited for read_ms); of no HEAD; a
	 * method that only begins like one */
	EXPECT_TRUE(scan("GET / HTTP/1.1\r\n\r\n", 100).body);
	EXPECT_TRUE(scan("DELETE / HTTP/1.1\r\n\r\n", 100).body);
	EXPECT_TRUE(scan("OPTIONS / HTTP/1.1\r\n\r\n", 3).body);
	EXPECT_FALSE(scan("HEAD / HTTP/1.1\r\n\r\n", 100).body);
	/* and of a CONNECT (which it refuses once read), of no TRACE */
	EXPECT_TRUE(scan("CONNECT a:1 HTTP/1.1\r\n\r\n", 2).body);
	EXPECT_FALSE(scan("TRACE / HTTP/1.1\r\n\r\n", 100).body);
	EXPECT_FALSE(scan("POSTX / HTTP/1.1\r\n\r\n", 100).body);
	EXPECT_FALSE(scan("GETS / HTTP/1.1\r\n\r\n", 100).body);
	/* a finished scanner takes nothing more */
	gateway::head_scanner h;
	const std::string get = "GET / HTTP/1.1\r\n\r\n";
	EXPECT_EQ(h.feed(reinterpret_cast<const uint8_t *>(get.data()), get.size()), get.size());
	EXPECT_EQ(h.feed(reinterpret_cast<const uint8_t *>(get.data()), get.size()), 0u);
}

/* The length of the body a header block announces, as evhttp 2.1.12 would read it, for the
 * memory bound's reservation: the one Content-Length, none for no body, and the most
 * (max_body_bytes) wherever the block does not say in a way read only one way. Each read in
 * pieces of 1, 5 and all at once. */
TEST(IngressHead, TheBodyLengthIsTheOneContentLengthOrTheMostWhereItIsNotClear)
{
	constexpr uint64_t most = 1000000;
	auto body_of = [](std::string_view block, size_t piece) {
		gateway::head_scanner h;
		for (size_t at = 0; at < block.size() && !h.done; at += piece)
			h.feed(reinterpret_cast<const uint8_t *>(block.data()) + at,
			       std::min(piece, block.size() - at));
		EXPECT_TRUE(h.done) << block;
		return h.body_bytes(most);
	};
	const struct {
		const char *headers; /* between the request line and the empty line */
		uint64_t post, head; /* the body's bytes for a POST, for a HEAD */
	} cases[] = {
		{"Host: x\r\n", 0, 0},
		{"Content-Length: 3\r\n", 3, 0},
		{"content-LENGTH:17\n", 17, 0},
		{"Content-Length: \t 0042 \t\r\n", 42, 0},
		{"Content-Length: 0\r\n", 0, 0},
		{"Host: x\r\nContent-Length: 2000000\r\nA: b\r\n", most, 0},
		{"Content-Length: 9999999999999999999\r\n", most, 0},
		{"Content-Length: 99999999999999999999\r\n", most, 0}, /* 20 digits */
		{"Transfer-Encoding: chunked\r\n", most, 0},
		{"transfer-encoding: gzip\r\nContent-Length: 5\r\n", most, 0},
		{"Content-Length: 5\r\nContent-Length: 5\r\n", most, 0},
		{"Content-Length: 5\r\nContent-Length: 6\r\n", most, 0},
		{"Content-Length:\r\n", most, 0},
		{"Content-Length: +5\r\n", most, 0},
		{"Content-Length: -5\r\n", most, 0},
		{"Content-Length: 5x\r\n", most, 0},
		{"Content-Length: 5 5\r\n", most, 0},
		{"Content-Length: 5\r\r\n", most, 0},	 /* a CR not before the LF */
		{"Content-\rLength: 5\r\n", most, 0},
		{"Content-Length: 5\r\n  7\r\n", most, 0}, /* a continuation line */
		{"Content-Length: 5\r\nA: b\r\n  7\r\n", 5, 0},
		{"Content-Length : 5\r\n", 0, 0},	 /* not the name evhttp finds */
		{"X-Content-Length: 5\r\n", 0, 0},
		{"Content-Length: 5                                                  \r\n", most, 0},
		{"X-Padding-Longer-Than-The-Bytes-Kept-Of-A-Line-Aaaaaaaaaaaaaaaaaaaaaaaaaaa: "
		 "Content-Length: 5\r\n",
		 0, 0},
	};
	for (const auto &c : cases)
		for (size_t piece : {size_t(1), size_t(5), size_t(4096)}) {
			EXPECT_EQ(body_of(std::string("POST /a HTTP/1.1\r\n") + c.headers + "\r\n", piece),
				  c.post)
				<< c.headers << " in pieces of " << piece;
			EXPECT_EQ(body_of(std::string("HEAD /a HTTP/1.1\r\n") + c.headers + "\r\n", piece),
				  c.head)
				<< c.headers;
		}
	/* the request line is not a header line, and LF alone ends lines as CRLF does */
	EXPECT_EQ(body_of("POST /Content-Length:5 HTTP/1.1\n\n", 3), 0u);
	EXPECT_EQ(body_of("PUT / HTTP/1.1\nContent-Length: 12\n\n", 1), 12u);
	EXPECT_EQ(body_of("GET / HTTP/1.1\nContent-Length: 12\n\n", 1), 12u);
}
