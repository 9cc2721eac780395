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
  "limits": { "max_body_bytes": 1000, "max_connections": 77 },
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
