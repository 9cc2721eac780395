// SPDX-License-Identifier: BSD-3-Clause
// The ingress gateway end to end: curl -> dpumesh-gateway (in a network namespace) -> mesh
// frames over a veth pair -> dpumesh (af_packet) -> echo pods, and back.
//
//   GetPostBodies      GET and POST with bodies of 0 B .. 1 MiB, fixed length and chunked,
//                      answered byte-exact by both echo pods; mesh errors as JSON
//   KeepAlivePipelined two requests in one write on one connection, answered in order
//   StatusesWithoutABody... a pod's 204/304 go out without a body, its 1xx as 502, and the
//                      next answer on the connection stays whole
//   BodiesPastTheMemoryBound...  a bound of one body's reservation: six bodies at once wait
//                      their turn and all come back whole
//   BadHttp            malformed request line, huge header, control byte in a value, body
//                      over the limit, a slow sender: refused or closed, others still served
//   KilledPod          SIGKILL one of two pods: the other serves; kill both: 503 no_live_pod
//   JwtRbacRateLimit   the node's L7 policy through the gateway: 401 (no or bad token), 403
//                      (RBAC), 200 (allowed, body intact), 429 (rate limit), JSON bodies
//   Http10Answers...   an HTTP/1.0 answer past 256 KiB states its length, and the next
//                      answer on a keep-alive connection stays whole
//   DatagramsFromOutside...  mesh datagrams from outside the nodes take no reassembly budget
//   IngressLimits.TheAdminAddress...  the admin takes small GET and HEAD requests only
//   IngressLimits.MethodsTheGateway...  TRACE, CONNECT, unknown methods: 501, connection closed
//   IngressLimits.*    no node: connections past limits.max_connections wait in the backlog
//                      and are served when others close; out of file descriptors (a
//                      connection flood under a low fd limit), accepting pauses, without a
//                      spinning core or a log that grows by megabytes; request bytes held
//                      past limits.max_buffered_bytes: reading pauses, every request answered
//
// Needs root (namespaces, veth); skips with the reason otherwise.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "dpumesh/meshsock/meshsock.h"
#include "gateway_env.h"
#include "jwt_signer.h"
#include "telemetry_client.h"

using namespace dpumesh;
using namespace dpumesh::test;
using namespace std::chrono_literals;

namespace {

constexpr const char *node_mac = "02:00:00:00:91:01";
const std::string jwt_secret = "e2e-secret-0123456789abcdef0123456789abcdef";

/** One node with two echo pods behind an af_packet veth end; the ingress in namespace ns. */
class IngressE2E : public ::testing::Test {
protected:
	void SetUp() override
	{
		std::string why = netns_unavailable();
		if (!why.empty())
			GTEST_SKIP() << why;
		const std::string tag = std::to_string(getpid() % 100000);
		ns = "dpmi-" + tag;
		const std::string dp_if = "dpmi-" + tag, cl_if = "dpmj-" + tag;
		link = std::make_unique<veth_pair>(dp_if, cl_if, ns);
		ASSERT_TRUE(link->ok);
		ASSERT_TRUE(ip({"-n", ns, "addr", "add", "192.168.91.2/24", "dev", cl_if}));
		ASSERT_TRUE(ip({"-n", ns, "neigh", "add", "192.168.91.1", "lladdr", node_mac, "dev",
				cl_if}));
		/* 1 MiB bodies: body slots of 1 MiB + 64 KiB; the af_packet ring holds a whole
		 * 1 MiB message (~720 frames) arriving at once */
		node = std::make_unique<mesh_node>("ing", std::string(R"({
  "node": { "name": "n1", "mac": ")") + node_mac + R"(", "ipv4": "192.168.91.1",
            "control_socket": "@SOCK@" },
  "ports": [ { "name": "uplink", "dev": "net_af_packet0,iface=)" + dp_if +
						   R"(,framecnt=4096", "role": "external" } ],
  "pools": { "tx_body": { "slots": 64, "slot_size": 1114112 },
             "rx_body": { "slots": 64, "slot_size": 1114112 } },
  "lcores": { "idle": "adaptive", "stages": { "port_rx": 1, "port_tx": 1, "sidecar": 1, "dpa": 1 } },
  "services": [ { "name": "echo" }, { "name": "nopods" }, { "name": "secure" },
                { "name": "limited" } ],
  "policy": {
    "jwt": { "issuer": "dpumesh-e2e", "audiences": [ "mesh" ],
             "keys": [ { "kid": "h1", "alg": "HS256", "secret": ")" +
						   policy::base64url_encode(jwt_secret) + R"(" } ] },
    "rbac": [ { "service": "secure", "default": "deny", "require_jwt": true, "rules": [
                { "claims": { "role": "admin" } },
                { "methods": [ "GET" ], "prefix": "/secure/public/", "claims": { "role": "reader" } } ] } ],
    "rate_limits": [ { "service": "limited", "key": "route", "rate": 2, "burst": 3 } ],
    "timeouts": [ { "service": "echo", "path_prefix": "/echo/slow", "timeout_ms": 300 },
                  { "service": "nopods", "timeout_ms": 20000 } ] }
})",
						   std::vector<std::string>{});
		ASSERT_TRUE(node->up) << node->proc->output();
		for (int i = 0; i < 2; i++) {
			pods.push_back(node->pod({"echo", node->sock},
						 {{"DPUMESH_TEST_BODY_SLOT", "1114112"}}));
			ASSERT_TRUE(ready(*pods.back())) << pods.back()->output();
		}
		gw = std::make_unique<ingress_proc>(ns, R"({
  "listen": "127.0.0.1:8080", "admin": "127.0.0.1:9901",
  "mesh": { "bind": "192.168.91.2:0" },
  "nodes": [ { "name": "n1", "address": "192.168.91.1:7000" } ],
  "routes": [ { "prefix": "/echo", "service": "echo", "nodes": ["n1"] },
              { "prefix": "/nopods", "service": "nopods", "nodes": ["n1"] },
              { "prefix": "/unknown", "service": "unknown", "nodes": ["n1"] },
              { "prefix": "/secure", "service": "secure", "nodes": ["n1"] },
              { "prefix": "/limited", "service": "limited", "nodes": ["n1"] } ],
  "limits": { "max_header_bytes": 8192, "max_body_bytes": 1200000 },
  "timeouts": { "request_ms": 3000, "read_ms": 1500 }
})");
		ASSERT_TRUE(gw->up) << gw->proc->output();
	}

	void TearDown() override
	{
		if (gw)
			gw_final = gw->stop();
		for (auto &p : pods) {
			p->signal(SIGTERM);
			p->wait(10s);
		}
		if (node)
			node_final = node->stop();
	}

	std::string url(const std::string &path) const { return "http://127.0.0.1:8080" + path; }

	std::string ns;
	std::unique_ptr<veth_pair> link;
	std::unique_ptr<mesh_node> node;
	std::vector<std::unique_ptr<subprocess>> pods;
	std::unique_ptr<ingress_proc> gw;
	std::string gw_final, node_final;
	temp_dir d;
};

TEST_F(IngressE2E, GetPostBodies)
{
	http_result g = curl(ns, url("/echo/get?x=1"), d, "", {"-H", "Authorization: Bearer abc"});
	ASSERT_EQ(g.code, 200) << g.raw << g.headers;
	EXPECT_EQ(g.body, "");
	EXPECT_EQ(header_of(g.headers, "x-sum"), "811c9dc5"); /* FNV-1a of nothing */
	std::set<std::string> pods_seen;
	const size_t sizes[] = {0, 1, 1400, 1500, 65536, 300000, 1048576};
	uint32_t seed = 1;
	for (size_t size : sizes) {
		for (bool chunked : {false, true}) {
			SCOPED_TRACE(std::to_string(size) + (chunked ? " chunked" : ""));
			std::string body = make_body(size, seed++);
			std::string f = d.file("body." + std::to_string(seed));
			std::ofstream(f, std::ios::binary) << body;
			std::vector<std::string> extra;
			if (chunked)
				extra = {"-H", "Transfer-Encoding: chunked"};
			http_result r = curl(ns, url("/echo/post"), d, f, extra);
			ASSERT_EQ(r.code, 200) << r.raw << r.headers << r.body.substr(0, 200);
			EXPECT_EQ(r.body.size(), body.size());
			EXPECT_TRUE(r.body == body) << "body differs";
			/* the gateway answers bodies over 256 KiB chunked */
			if (size > 256 * 1024)
				EXPECT_EQ(header_of(r.headers, "transfer-encoding"), "chunked");
			else
				EXPECT_EQ(header_of(r.headers, "content-length"), std::to_string(size));
			pods_seen.insert(header_of(r.headers, "x-pod"));
		}
	}
	EXPECT_EQ(pods_seen.size(), 2u) << "both echo pods answer";
	/* mesh errors become HTTP statuses with a JSON body naming reason and hop */
	http_result nr = curl(ns, url("/unknown/x"), d);
	EXPECT_EQ(nr.code, 404) << nr.raw;
	EXPECT_EQ(nr.body, "{\"error\":\"no_route\",\"hop\":\"n1/sidecar\",\"status\":404}\n");
	http_result np = curl(ns, url("/nopods/x"), d);
	EXPECT_EQ(np.code, 503) << np.raw;
	EXPECT_NE(np.body.find("\"error\":\"no_live_pod\""), std::string::npos) << np.body;
	EXPECT_NE(np.body.find("\"hop\":\"n1/"), std::string::npos) << np.body;
	http_result ir = curl(ns, url("/elsewhere"), d);
	EXPECT_EQ(ir.code, 404);
	EXPECT_EQ(ir.body, "{\"error\":\"no_route\",\"hop\":\"ingress\",\"status\":404}\n");
	http_result m = curl(ns, "http://127.0.0.1:9901/metrics", d);
	ASSERT_EQ(m.code, 200);
	EXPECT_NE(m.body.find("dpumesh_ingress_responses_total{code=\"200\"} 15"), std::string::npos)
		<< m.body;
	EXPECT_NE(m.body.find("dpumesh_ingress_mesh_errors_total{reason=\"no_live_pod\"} 1"),
		  std::string::npos)
		<< m.body;
	EXPECT_NE(m.body.find("dpumesh_ingress_mesh_latency_seconds_count 17"), std::string::npos)
		<< m.body;
}

/** Connects to the gateway from inside ns, writes `out` (in pieces with a pause between,
 * if `pause` > 0), reads until the peer closes or `limit` passes. A client that reads
 * slowly: `hold` > 0 reads nothing for that long after its last piece, with a receive
 * buffer of `rcvbuf` bytes (0: the kernel's default). */
struct raw_result {
	std::string in;
	bool closed = false;
	std::chrono::milliseconds took{};
};
raw_result raw_http(const std::string &ns, const std::vector<std::string> &pieces,
		    std::chrono::milliseconds pause, std::chrono::milliseconds limit,
		    uint16_t port = 8080, std::chrono::milliseconds hold = 0ms, int rcvbuf = 0)
{
	raw_result r;
	in_netns(ns, [&] {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (rcvbuf > 0) { /* before connect: the window TCP offers follows it */
			ASSERT_EQ(setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
		}
		sockaddr_in a{};
		a.sin_family = AF_INET;
		a.sin_port = htons(port);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ASSERT_EQ(connect(s, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
		const auto t0 = std::chrono::steady_clock::now();
		const auto until = t0 + limit;
		auto read_some = [&](int wait_ms) {
			pollfd p{s, POLLIN, 0};
			if (poll(&p, 1, wait_ms) <= 0)
				return;
			char buf[65536];
			ssize_t n = recv(s, buf, sizeof(buf), 0);
			if (n <= 0)
				r.closed = true;
			else
				r.in.append(buf, static_cast<size_t>(n));
		};
		for (const std::string &p : pieces) {
			if (r.closed || send(s, p.data(), p.size(), MSG_NOSIGNAL) < 0) {
				r.closed = true;
				break;
			}
			if (pause.count()) {
				auto next = std::chrono::steady_clock::now() + pause;
				while (!r.closed && std::chrono::steady_clock::now() < next)
					read_some(20);
			}
		}
		std::this_thread::sleep_for(hold);
		while (!r.closed && std::chrono::steady_clock::now() < until)
			read_some(50);
		r.took = std::chrono::duration_cast<std::chrono::milliseconds>(
			std::chrono::steady_clock::now() - t0);
		close(s);
	});
	return r;
}

/** The value of metric `name` (labels included) in a Prometheus text; -1 if absent. */
long metric(const std::string &text, const std::string &name)
{
	const std::string key = "\n" + name + " ";
	size_t at = text.find(key);
	return at == std::string::npos ? -1 : std::atol(text.c_str() + at + key.size());
}

/** Every answer is 200 OK with its client's body, byte for byte (and nothing after it). */
void expect_bodies_back(const std::vector<raw_result> &got, const std::vector<std::string> &bodies)
{
	for (size_t i = 0; i < got.size(); i++) {
		SCOPED_TRACE(i);
		ASSERT_EQ(got[i].in.rfind("HTTP/1.1 200 OK", 0), 0u) << got[i].in.substr(0, 300);
		const size_t at = got[i].in.find("\r\n\r\n");
		ASSERT_NE(at, std::string::npos);
		EXPECT_EQ(got[i].in.size() - at - 4, bodies[i].size());
		EXPECT_TRUE(got[i].in.compare(at + 4, std::string::npos, bodies[i]) == 0)
			<< "body differs";
	}
}

int count_of(const std::string &s, const std::string &what)
{
	int n = 0;
	for (size_t at = 0; (at = s.find(what, at)) != std::string::npos; at += what.size())
		n++;
	return n;
}

TEST_F(IngressE2E, KeepAlivePipelined)
{
	/* two requests in one write; answers come back in order on the same connection */
	std::string body = make_body(5000, 9);
	std::string reqs = "POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nX-Seq: 1\r\n\r\n" +
			   body + "GET /echo/b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	raw_result r = raw_http(ns, {reqs}, 0ms, 10s);
	EXPECT_TRUE(r.closed);
	ASSERT_EQ(count_of(r.in, "HTTP/1.1 200 OK"), 2) << r.in.substr(0, 600);
	size_t first_body = r.in.find("\r\n\r\n");
	ASSERT_NE(first_body, std::string::npos);
	EXPECT_EQ(r.in.substr(first_body + 4, 5000), body);
	EXPECT_LT(r.in.find("Content-Length: 5000"), r.in.find("Content-Length: 0"));
}

/* limits.max_buffered_bytes with the mesh answering: a second gateway whose bound (350000 B)
 * holds one body's reservation (its 200000 B and header block) and not two. Six clients post 200000-byte bodies at once,
 * each holding back its last byte for 500 ms (so the admitted one keeps its reservation
 * while the others come): the others wait for admission, their reading paused, and every
 * body comes back whole from an echo pod. */
TEST_F(IngressE2E, BodiesPastTheMemoryBoundWaitTheirTurnAndComeBackWhole)
{
	ingress_proc small(ns, R"({
  "listen": "127.0.0.1:8081", "admin": "127.0.0.1:9902",
  "mesh": { "bind": "192.168.91.2:0" },
  "nodes": [ { "name": "n1", "address": "192.168.91.1:7000" } ],
  "routes": [ { "prefix": "/echo", "service": "echo", "nodes": ["n1"] } ],
  "limits": { "max_body_bytes": 300000, "max_buffered_bytes": 350000 },
  "timeouts": { "request_ms": 3000, "read_ms": 8000 }
})");
	ASSERT_TRUE(small.up) << small.proc->output();
	std::vector<std::string> bodies;
	std::vector<raw_result> got(6);
	std::vector<std::thread> clients;
	for (size_t i = 0; i < got.size(); i++)
		bodies.push_back(make_body(200000, 40 + static_cast<uint32_t>(i)));
	for (size_t i = 0; i < got.size(); i++)
		clients.emplace_back([&, i] {
			const std::string req = "POST /echo/bound HTTP/1.1\r\nHost: x\r\n"
						"Content-Length: 200000\r\nConnection: close\r\n\r\n" +
						bodies[i];
			got[i] = raw_http(ns, {req.substr(0, req.size() - 1), req.substr(req.size() - 1)},
					  500ms, 15s, 8081);
		});
	for (std::thread &t : clients)
		t.join();
	expect_bodies_back(got, bodies);
	http_result m = curl(ns, "http://127.0.0.1:9902/metrics", d);
	ASSERT_EQ(m.code, 200) << m.raw;
	EXPECT_GE(metric(m.body, "dpumesh_ingress_read_paused_total"), 1) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_committed_bytes"), 0) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_buffered_bytes"), 0) << m.body;
	EXPECT_LE(metric(m.body, "dpumesh_ingress_buffered_bytes_peak"), 350000 + 6 * 65536)
		<< m.body;
	small.stop();
}

/* Answers count against limits.max_buffered_bytes until written: clients that do not read
 * their answers hold them in the gateway, and past the bound the gateway takes no more bodies
 * (which would bring more answers) until they read. A bound (520000 B) of two reservations
 * (a 250000-byte body and its header block each); six clients post 250000-byte bodies and
 * read nothing for 2.5 s, through a 4 KiB receive buffer (and the namespace's TCP send
 * buffers at most 64 KiB: on loopback the kernel would take 3 MB of each answer). While they hold their answers, at most two
 * requests go to the mesh and the answers are counted; once they read, every body comes back
 * whole. Before, all six went to the mesh at once and their answers were held outside any
 * bound. */
TEST_F(IngressE2E, AnswersClientsDoNotReadCountAgainstTheBound)
{
	ingress_proc small(ns, R"({
  "listen": "127.0.0.1:8081", "admin": "127.0.0.1:9902",
  "mesh": { "bind": "192.168.91.2:0" },
  "nodes": [ { "name": "n1", "address": "192.168.91.1:7000" } ],
  "routes": [ { "prefix": "/echo", "service": "echo", "nodes": ["n1"] } ],
  "limits": { "max_body_bytes": 300000, "max_buffered_bytes": 520000 },
  "timeouts": { "request_ms": 8000, "read_ms": 12000, "idle_ms": 12000 }
})");
	ASSERT_TRUE(small.up) << small.proc->output();
	ASSERT_EQ(std::system(("ip netns exec " + ns +
			       " sysctl -qw net.ipv4.tcp_wmem='4096 16384 65536'").c_str()),
		  0);
	std::vector<std::string> bodies;
	std::vector<raw_result> got(6);
	std::vector<std::thread> clients;
	for (size_t i = 0; i < got.size(); i++)
		bodies.push_back(make_body(250000, 60 + static_cast<uint32_t>(i)));
	const auto t0 = std::chrono::steady_clock::now();
	for (size_t i = 0; i < got.size(); i++)
		clients.emplace_back([&, i] {
			const std::string req = "POST /echo/unread HTTP/1.1\r\nHost: x\r\n"
						"Content-Length: 250000\r\nConnection: close\r\n\r\n" +
						bodies[i];
			got[i] = raw_http(ns, {req}, 0ms, 20s, 8081, 2500ms, 4096);
		});
	/* while no client reads: two answers held at most, and no third request sent */
	long answered = 0, held = 0;
	while (std::chrono::steady_clock::now() - t0 < 2200ms) {
		http_result m = curl(ns, "http://127.0.0.1:9902/metrics", d);
		ASSERT_EQ(m.code, 200) << m.raw;
		answered = std::max(answered, metric(m.body, "dpumesh_ingress_responses_total{code=\"200\"}"));
		held = std::max(held, metric(m.body, "dpumesh_ingress_answer_bytes"));
		EXPECT_LE(metric(m.body, "dpumesh_ingress_pending") + std::max(0L, answered), 2) << m.body;
		EXPECT_LE(metric(m.body, "dpumesh_ingress_committed_bytes"), 520000) << m.body;
		std::this_thread::sleep_for(100ms);
	}
	EXPECT_EQ(answered, 2);
	EXPECT_GE(held, 2 * 170000) << "the two answers, less what the kernel took";
	for (std::thread &t : clients)
		t.join();
	expect_bodies_back(got, bodies);
	http_result m = curl(ns, "http://127.0.0.1:9902/metrics", d);
	ASSERT_EQ(m.code, 200) << m.raw;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_responses_total{code=\"200\"}"), 6) << m.body;
	EXPECT_GE(metric(m.body, "dpumesh_ingress_read_paused_total"), 4) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_answer_bytes"), 0) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_committed_bytes"), 0) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_buffered_bytes"), 0) << m.body;
	small.stop();
}

/* What a pod answers is passed on as HTTP allows: a 204 or 304 goes out without the body the
 * pod put in it (a body there would be read as the next answer on the connection), and a
 * 1xx, which the mesh's one answer a request cannot be, becomes 502 bad_response. Each on a
 * keep-alive connection with a request after it, whose answer must come whole and in turn. */
TEST_F(IngressE2E, StatusesWithoutABodyGoOutWithoutOne)
{
	for (const char *status : {"204", "304", "100", "101"}) {
		SCOPED_TRACE(status);
		const std::string first = std::string("POST /echo/s HTTP/1.1\r\nHost: x\r\nX-Echo-Status: ") +
					  status + "\r\nContent-Length: 5\r\n\r\nhello";
		const std::string second = "POST /echo/t HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
					   "Connection: close\r\n\r\nworld";
		raw_result r = raw_http(ns, {first + second}, 0ms, 10s);
		EXPECT_TRUE(r.closed);
		const std::string want = status[0] == '1' ? "HTTP/1.1 502 " : std::string("HTTP/1.1 ") + status + " ";
		ASSERT_EQ(r.in.rfind(want, 0), 0u) << r.in;
		const size_t end1 = r.in.find("\r\n\r\n");
		ASSERT_NE(end1, std::string::npos) << r.in;
		std::string rest = r.in.substr(end1 + 4);
		if (status[0] == '1') {
			/* the 502's JSON body, by its Content-Length */
			const std::string cl = header_of(r.in.substr(0, end1 + 2), "content-length");
			ASSERT_FALSE(cl.empty()) << r.in;
			const std::string body = rest.substr(0, std::stoul(cl));
			EXPECT_NE(body.find("\"error\":\"bad_response\""), std::string::npos) << body;
			rest = rest.substr(body.size());
		} else {
			EXPECT_EQ(r.in.substr(0, end1).find("Content-Length: 5"), std::string::npos)
				<< r.in;
		}
		/* the next answer starts right there, and is the second request's */
		ASSERT_EQ(rest.rfind("HTTP/1.1 200 OK", 0), 0u) << r.in;
		EXPECT_EQ(rest.substr(rest.size() - 5), "world") << r.in;
		EXPECT_EQ(count_of(r.in, "HTTP/1.1 "), 2) << r.in;
	}
}

/** One answer in a raw byte stream: its status line, its header block, its body. */
struct http_answer {
	std::string status_line, head, body;
	size_t end = 0; /* where the next answer begins */
};

/** The answer that begins at `at`: its body by its Content-Length, or (none) to the end of
 * the stream (close-delimited). false if no whole header block or body is there. */
bool parse_answer(const std::string &in, size_t at, http_answer *a)
{
	const size_t hend = in.find("\r\n\r\n", at);
	if (hend == std::string::npos)
		return false;
	a->head = in.substr(at, hend + 2 - at);
	a->status_line = a->head.substr(0, a->head.find("\r\n"));
	const std::string cl = header_of(a->head, "content-length");
	const size_t from = hend + 4;
	const size_t len = cl.empty() ? in.size() - from : std::stoul(cl);
	if (in.size() - from < len)
		return false;
	a->body = in.substr(from, len);
	a->end = from + len;
	return true;
}

/* Answers over 256 KiB go out streamed (chunked to HTTP/1.1 clients). HTTP/1.0 has no chunked
 * coding, and evhttp gave the streamed answer to a 1.0 keep-alive request the Content-Length
 * of what it held when the answer began: 0. The client read an empty body, then took the
 * body for the next answer. A 1.0 keep-alive POST of 300000 bytes and a request after it on
 * the same connection now both come back whole; a 1.0 request without keep-alive gets its
 * whole body too, and its connection closed. */
TEST_F(IngressE2E, Http10AnswersPastTheStreamingSizeStateTheirLength)
{
	const std::string body = make_body(300000, 91);
	const std::string first = "POST /echo/ka HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n"
				  "Content-Length: 300000\r\n\r\n" +
				  body;
	const std::string second =
		"POST /echo/next HTTP/1.0\r\nHost: x\r\nContent-Length: 5\r\n\r\nworld";
	raw_result r = raw_http(ns, {first + second}, 0ms, 10s);
	EXPECT_TRUE(r.closed);
	http_answer a1, a2;
	ASSERT_TRUE(parse_answer(r.in, 0, &a1)) << r.in.substr(0, 300);
	EXPECT_EQ(a1.status_line, "HTTP/1.0 200 OK") << a1.head;
	EXPECT_EQ(header_of(a1.head, "content-length"), "300000") << a1.head;
	EXPECT_EQ(header_of(a1.head, "transfer-encoding"), "") << a1.head;
	EXPECT_EQ(a1.body.size(), body.size());
	EXPECT_TRUE(a1.body == body) << "body differs";
	ASSERT_TRUE(parse_answer(r.in, a1.end, &a2)) << r.in.substr(a1.end, 300);
	EXPECT_EQ(a2.status_line.substr(0, 40), "HTTP/1.0 200 OK");
	EXPECT_EQ(a2.body, "world");
	EXPECT_EQ(a2.end, r.in.size());

	raw_result c = raw_http(
		ns, {"POST /echo/close HTTP/1.0\r\nHost: x\r\nContent-Length: 300000\r\n\r\n" + body},
		0ms, 10s);
	EXPECT_TRUE(c.closed);
	http_answer a3;
	ASSERT_TRUE(parse_answer(c.in, 0, &a3)) << c.in.substr(0, 300);
	EXPECT_EQ(a3.status_line, "HTTP/1.0 200 OK") << a3.head;
	EXPECT_TRUE(a3.body == body) << "body differs: " << a3.body.size() << " bytes";
	EXPECT_EQ(a3.end, c.in.size());
}

/* The gateway's mesh socket takes datagrams from the config's nodes only. A sender elsewhere
 * sends the first fragments of four messages that say 16 MiB each: the reassembler held
 * their buffers (its 64 MiB budget) until request_ms, and dropped every answer of more than
 * one datagram from the node meanwhile (memory_limit): a 300000-byte echo came back 504.
 * They are now dropped before reassembly, and counted. */
TEST_F(IngressE2E, DatagramsFromOutsideTheNodesTakeNoReassemblyBudget)
{
	/* a gateway whose mesh port is known */
	ingress_proc fixed(ns, R"({
  "listen": "127.0.0.1:8081", "admin": "127.0.0.1:9902",
  "mesh": { "bind": "192.168.91.2:7101" },
  "nodes": [ { "name": "n1", "address": "192.168.91.1:7000" } ],
  "routes": [ { "prefix": "/echo", "service": "echo", "nodes": ["n1"] } ],
  "timeouts": { "request_ms": 3000 }
})");
	ASSERT_TRUE(fixed.up) << fixed.proc->output();
	const std::vector<uint8_t> l7(16), big((16u << 20) - 16);
	in_netns(ns, [&] {
		int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		ASSERT_GE(s, 0);
		sockaddr_in to{};
		to.sin_family = AF_INET;
		to.sin_port = htons(7101);
		ASSERT_EQ(inet_pton(AF_INET, "192.168.91.2", &to.sin_addr), 1);
		for (uint32_t i = 0; i < 4; i++) {
			meshsock::out_message m{wire::frame_kind::response, 100 + i, 1000 + i, l7, big};
			meshsock::fragmenter fr(m, meshsock::slice_for_mtu(1500, false));
			ASSERT_GT(fr.count(), 1u);
			uint8_t hdr[wire::frame_hdr_size];
			iovec iov[3];
			msghdr mh{};
			mh.msg_name = &to;
			mh.msg_namelen = sizeof(to);
			mh.msg_iov = iov;
			mh.msg_iovlen = static_cast<size_t>(fr.datagram(0, hdr, iov));
			ASSERT_GT(sendmsg(s, &mh, 0), 0) << std::strerror(errno);
		}
		close(s);
	});
	const std::string body = make_body(300000, 93);
	const std::string f = d.file("foreign.body");
	std::ofstream(f, std::ios::binary) << body;
	http_result r = curl(ns, "http://127.0.0.1:8081/echo/foreign", d, f);
	EXPECT_EQ(r.code, 200) << r.raw << r.body.substr(0, 200);
	EXPECT_TRUE(r.body == body) << "body differs";
	http_result m = curl(ns, "http://127.0.0.1:9902/metrics", d);
	ASSERT_EQ(m.code, 200) << m.raw;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_foreign_datagrams_total"), 4) << m.body;
	EXPECT_EQ(m.body.find("reason=\"memory_limit\""), std::string::npos) << m.body;
	fixed.stop();
}

/* HTTP/1.1 frames a message by its Content-Length or Transfer-Encoding whatever the method
 * (RFC 9112 6.3). evhttp 2.1.12 reads the body of a GET, DELETE or OPTIONS as of a POST, but
 * not of a HEAD: that was parsed as the connection's next request, and answered. A proxy in
 * front that forwards the HEAD with its body sees one request and gets two answers, the
 * second handed to whoever asks next on that connection (request smuggling). The same comes
 * of two Content-Lengths (evhttp goes by the first) and of a Transfer-Encoding beside a
 * Content-Length (evhttp refuses that itself, with its own 400 page, on POST). Each is
 * refused with 400 and its connection closed, what follows never read as a request. And a
 * GET's body of 200000 B, which the memory bound's admission took for a method without one
 * and left waiting for read_ms, comes back whole from the echo pod. */
TEST_F(IngressE2E, FramingAProxyCouldReadOtherwiseIsRefusedNotTakenForTheNextRequest)
{
	const std::string smuggled = "GET /echo/smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
	const std::string n = std::to_string(smuggled.size());
	char hex[16];
	std::snprintf(hex, sizeof(hex), "%zx", smuggled.size());
	const std::string chunked = std::string(hex) + "\r\n" + smuggled + "\r\n0\r\n\r\n";
	const struct {
		std::string request, reason;
	} cases[] = {
		{"HEAD /echo/a HTTP/1.1\r\nHost: x\r\nContent-Length: " + n + "\r\n\r\n" + smuggled,
		 "body_not_allowed"},
		{"GET /echo/a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: " + n +
			 "\r\n\r\n" + smuggled,
		 "bad_framing"},
		{"POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" +
			 chunked,
		 ""},
	};
	for (const auto &c : cases) {
		SCOPED_TRACE(c.request.substr(0, c.request.find("\r\n\r\n")));
		raw_result r = raw_http(ns, {c.request}, 0ms, 5s);
		EXPECT_TRUE(r.closed) << r.in;
		EXPECT_EQ(r.in.rfind("HTTP/1.1 400 ", 0), 0u) << r.in;
		if (!c.reason.empty()) {
			EXPECT_NE(r.in.find("\"error\":\"" + c.reason + "\""), std::string::npos) << r.in;
		}
		EXPECT_EQ(count_of(r.in, "HTTP/1.1 "), 1) << r.in;
		EXPECT_EQ(r.in.find("smuggled"), std::string::npos) << r.in;
	}
	/* bodies evhttp reads: whole, and the next request on the connection is the next one */
	const std::string body = make_body(200000, 77);
	raw_result get = raw_http(
		ns, {"GET /echo/g HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n" + body +
		     "DELETE /echo/d HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
		     "GET /echo/b HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
		0ms, 10s);
	EXPECT_TRUE(get.closed);
	EXPECT_EQ(count_of(get.in, "HTTP/1.1 200 OK"), 3) << get.in.substr(0, 400);
	const size_t at = get.in.find("\r\n\r\n");
	ASSERT_NE(at, std::string::npos) << get.in.substr(0, 400);
	EXPECT_TRUE(get.in.compare(at + 4, body.size(), body) == 0) << "the GET's body differs";
	EXPECT_NE(get.in.find("hello", at + 4 + body.size()), std::string::npos);
	http_result m = curl(ns, "http://127.0.0.1:9901/metrics", d);
	for (const char *want : {"dpumesh_ingress_refused_total{reason=\"body_not_allowed\"} 1",
				 "dpumesh_ingress_refused_total{reason=\"bad_framing\"} 1"})
		EXPECT_NE(m.body.find(want), std::string::npos) << want << "\n" << m.body;
}

TEST_F(IngressE2E, BadHttp)
{
	/* a malformed request line: 400 or closed, never an answer from the mesh */
	raw_result bad = raw_http(ns, {"THIS IS NOT HTTP\r\n\r\n"}, 0ms, 5s);
	EXPECT_TRUE(bad.closed);
	EXPECT_TRUE(bad.in.empty() || bad.in.rfind("HTTP/1.1 400", 0) == 0) << bad.in;
	raw_result bad2 = raw_http(ns, {"GET /echo/x HTTP/9.9\r\nHost: x\r\n\r\n"}, 0ms, 5s);
	EXPECT_TRUE(bad2.closed);
	EXPECT_EQ(bad2.in.find("HTTP/1.1 200"), std::string::npos) << bad2.in;
	/* a header larger than max_header_bytes (8 KiB) */
	raw_result huge = raw_http(
		ns, {"GET /echo/x HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n"},
		0ms, 5s);
	EXPECT_TRUE(huge.closed);
	EXPECT_TRUE(huge.in.empty() || huge.in.find(" 200 ") == std::string::npos) << huge.in.substr(0, 200);
	/* a control byte in a header value: the gateway's own 400 */
	raw_result ctl = raw_http(
		ns, {std::string("GET /echo/x HTTP/1.1\r\nHost: x\r\nX-A: a\x01") + "b\r\nConnection: close\r\n\r\n"},
		0ms, 5s);
	EXPECT_EQ(ctl.in.rfind("HTTP/1.1 400", 0), 0u) << ctl.in;
	EXPECT_NE(ctl.in.find("\"error\":\"bad_header\""), std::string::npos) << ctl.in;
	/* a body larger than max_body_bytes (1 200 000 B): 413, announced or chunked */
	std::string big = make_body(1300000, 4);
	std::string f = d.file("big");
	std::ofstream(f, std::ios::binary) << big;
	http_result tl = curl(ns, url("/echo/big"), d, f);
	EXPECT_TRUE(tl.code == 413 || tl.code == 0) << tl.raw;
	http_result tlc = curl(ns, url("/echo/big"), d, f, {"-H", "Transfer-Encoding: chunked"});
	EXPECT_TRUE(tlc.code == 413 || tlc.code == 0) << tlc.raw;
	/* a slow sender (a header line every 400 ms, never finishing) is closed after read_ms
	 * (1.5 s), while other clients are served meanwhile */
	std::vector<std::string> drip = {"GET /echo/slowloris HTTP/1.1\r\n"};
	for (int i = 0; i < 20; i++)
		drip.push_back("X-Drip-" + std::to_string(i) + ": y\r\n");
	http_result during;
	std::thread other([&] {
		std::this_thread::sleep_for(500ms);
		during = curl(ns, url("/echo/during"), d);
	});
	raw_result slow = raw_http(ns, drip, 400ms, 10s);
	other.join();
	EXPECT_TRUE(slow.closed);
	EXPECT_LT(slow.took, 5000ms) << "closed after " << slow.took.count() << " ms";
	EXPECT_EQ(slow.in.find(" 200 "), std::string::npos) << slow.in;
	EXPECT_EQ(during.code, 200) << during.raw;
	/* and the gateway still serves */
	http_result after = curl(ns, url("/echo/after"), d);
	EXPECT_EQ(after.code, 200) << after.raw;
	http_result m = curl(ns, "http://127.0.0.1:9901/metrics", d);
	EXPECT_NE(m.body.find("dpumesh_ingress_slow_closed_total 1"), std::string::npos) << m.body;
	EXPECT_NE(m.body.find("dpumesh_ingress_refused_total{reason=\"bad_header\"} 1"),
		  std::string::npos)
		<< m.body;
}

TEST_F(IngressE2E, KilledPod)
{
	std::set<std::string> seen;
	for (int i = 0; i < 6; i++)
		seen.insert(header_of(curl(ns, url("/echo/k"), d).headers, "x-pod"));
	ASSERT_EQ(seen.size(), 2u);
	pods[0]->signal(SIGKILL);
	pods[0]->wait(5s);
	/* while the node notices, answers are 200 (the other pod) or 503/504, never a hang;
	 * then every request is served by the survivor */
	int ok = 0, unavailable = 0;
	for (int i = 0; i < 30; i++) {
		http_result r = curl(ns, url("/echo/k" + std::to_string(i)), d);
		ASSERT_TRUE(r.code == 200 || r.code == 503 || r.code == 504) << r.raw << r.body;
		(r.code == 200 ? ok : unavailable)++;
	}
	EXPECT_GE(ok, 25) << unavailable << " unavailable";
	std::set<std::string> after;
	for (int i = 0; i < 5; i++) {
		http_result r = curl(ns, url("/echo/k"), d);
		EXPECT_EQ(r.code, 200) << r.raw;
		after.insert(header_of(r.headers, "x-pod"));
	}
	EXPECT_EQ(after.size(), 1u);
	/* no pod left: the node answers 503 no_live_pod, the gateway passes it on */
	pods[1]->signal(SIGKILL);
	pods[1]->wait(5s);
	http_result r;
	for (int i = 0; i < 20; i++) {
		r = curl(ns, url("/echo/none"), d);
		if (r.code == 503 && r.body.find("no_live_pod") != std::string::npos)
			break;
		std::this_thread::sleep_for(100ms);
	}
	EXPECT_EQ(r.code, 503) << r.raw;
	EXPECT_NE(r.body.find("\"error\":\"no_live_pod\""), std::string::npos) << r.body;
	pods.clear();
}

/* A pod that leaves with a request from the network it will never answer (a sink as
 * service nopods, killed): the HTTP client hears 503 dest_gone through the gateway, not the
 * gateway's own 504 at its 3 s request_ms nor the node's at the route's 20 s. */
TEST_F(IngressE2E, APodThatLeavesWithARequestIs503DestGone)
{
	auto sink = node->pod({"sink", node->sock}, {{"DPUMESH_POD_SERVICE", "nopods"}});
	ASSERT_TRUE(ready(*sink)) << sink->output();
	http_result r;
	std::thread call([&] { r = curl(ns, url("/nopods/held"), d); });
	telemetry_client t;
	std::string hello;
	uint64_t pending = 0;
	if (t.connect(runtime_dir(node->prefix) + "/dpdk_telemetry.v2", &hello)) {
		for (int i = 0; i < 200 && pending != 1; i++) {
			std::this_thread::sleep_for(10ms);
			json_ptr p = t.query("/dpumesh/pending");
			pending = p ? u64_at(p.get(), "total", 0) : 0;
		}
	}
	EXPECT_EQ(pending, 1u);
	const auto killed = std::chrono::steady_clock::now();
	sink->signal(SIGKILL);
	sink->wait(5s);
	call.join();
	const auto took = std::chrono::steady_clock::now() - killed;
	EXPECT_EQ(r.code, 503) << r.raw << r.body;
	EXPECT_NE(r.body.find("\"error\":\"dest_gone\""), std::string::npos) << r.body;
	EXPECT_LT(took, 2500ms);
}

TEST_F(IngressE2E, JwtRbacRateLimit)
{
	pods.push_back(node->pod({"echo", node->sock}, {{"DPUMESH_POD_SERVICE", "secure"}}));
	ASSERT_TRUE(ready(*pods.back())) << pods.back()->output();
	pods.push_back(node->pod({"echo", node->sock}, {{"DPUMESH_POD_SERVICE", "limited"}}));
	ASSERT_TRUE(ready(*pods.back())) << pods.back()->output();
	auto key = signing_key::hmac(jwt_secret);
	auto other = signing_key::hmac("not-the-node-secret-0123456789abcdef012345");
	const long exp = static_cast<long>(std::time(nullptr)) + 600;
	auto token = [&](const signing_key &k, const std::string &role) {
		return make_jwt(k, R"({"alg":"HS256","typ":"JWT","kid":"h1"})",
				R"({"iss":"dpumesh-e2e","aud":"mesh","sub":"alice","role":")" + role +
					R"(","exp":)" + std::to_string(exp) + "}");
	};
	auto auth = [](const std::string &t) {
		return std::vector<std::string>{"-H", "Authorization: Bearer " + t};
	};
	http_result none = curl(ns, url("/secure/x"), d);
	EXPECT_EQ(none.code, 401) << none.body;
	EXPECT_EQ(none.body, "{\"error\":\"jwt_missing\",\"hop\":\"n1/sidecar\",\"status\":401}\n");
	http_result forged = curl(ns, url("/secure/x"), d, "", auth(token(*other, "admin")));
	EXPECT_EQ(forged.code, 401) << forged.body;
	EXPECT_NE(forged.body.find("\"error\":\"jwt_bad_signature\""), std::string::npos) << forged.body;
	std::string f = d.file("payload");
	std::ofstream(f, std::ios::binary) << "order 42";
	http_result denied = curl(ns, url("/secure/admin"), d, f, auth(token(*key, "reader")));
	EXPECT_EQ(denied.code, 403) << denied.body;
	EXPECT_NE(denied.body.find("\"error\":\"rbac_denied\""), std::string::npos) << denied.body;
	http_result reader = curl(ns, url("/secure/public/doc"), d, "", auth(token(*key, "reader")));
	EXPECT_EQ(reader.code, 200) << reader.body;
	http_result admin = curl(ns, url("/secure/admin"), d, f, auth(token(*key, "admin")));
	EXPECT_EQ(admin.code, 200) << admin.body;
	EXPECT_EQ(admin.body, "order 42");

	/* 2 tokens/s, burst 3: a quick run of 20 gets a few 200s and then 429s */
	int ok = 0, limited = 0;
	std::string body429;
	for (int i = 0; i < 20; i++) {
		http_result r = curl(ns, url("/limited/x"), d);
		ASSERT_TRUE(r.code == 200 || r.code == 429) << r.raw << r.body;
		if (r.code == 429) {
			limited++;
			body429 = r.body;
		} else {
			ok++;
		}
	}
	EXPECT_GE(ok, 3);
	EXPECT_GE(limited, 5) << ok << " answered";
	EXPECT_NE(body429.find("\"error\":\"rate_limited\""), std::string::npos) << body429;
	http_result m = curl(ns, "http://127.0.0.1:9901/metrics", d);
	EXPECT_NE(m.body.find("dpumesh_ingress_responses_total{code=\"429\"} " + std::to_string(limited)),
		  std::string::npos)
		<< m.body;
	EXPECT_NE(m.body.find("dpumesh_ingress_responses_total{code=\"401\"} 2"), std::string::npos)
		<< m.body;
}

/** A network namespace of its own (loopback up), deleted at the end. */
struct lone_netns {
	explicit lone_netns(std::string n) : name(std::move(n))
	{
		run_command({which("ip"), "netns", "del", name}, 10s); /* left over by a killed run */
		ok = ip({"netns", "add", name}) && ip({"-n", name, "link", "set", "lo", "up"});
	}
	~lone_netns() { run_command({which("ip"), "netns", "del", name}, 10s); }
	std::string name;
	bool ok = false;
};

/** CPU time (user + system) of process pid so far, in clock ticks; -1 if unknown. */
long cpu_ticks(pid_t pid)
{
	std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
	std::string all((std::istreambuf_iterator<char>(f)), {});
	size_t at = all.rfind(')');
	if (at == std::string::npos)
		return -1;
	std::istringstream rest(all.substr(at + 2));
	std::string field;
	long ticks = 0;
	for (int i = 3; i <= 15 && rest >> field; i++)
		if (i == 14 || i == 15) /* utime, stime */
			ticks += std::stol(field);
	return ticks;
}

/** n TCP connections to 127.0.0.1:port made from inside ns (left open). */
std::vector<int> connect_many(const std::string &ns, uint16_t port, int n)
{
	std::vector<int> fds;
	in_netns(ns, [&] {
		for (int i = 0; i < n; i++) {
			int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			ASSERT_GE(s, 0);
			sockaddr_in a{};
			a.sin_family = AF_INET;
			a.sin_port = htons(port);
			a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			/* completes in the kernel (the listen backlog) whether or not the
			 * gateway accepts it */
			ASSERT_EQ(connect(s, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0)
				<< std::strerror(errno);
			fds.push_back(s);
		}
	});
	return fds;
}

/* The gateway with no node (127.0.0.1:7000 answers nothing), its limits and its timeouts
 * (the members of each object), read_ms and idle_ms 60 s. */
std::string lone_gateway_config(const std::string &limits, const std::string &timeouts = "")
{
	return R"({
  "listen": "127.0.0.1:8080", "admin": "127.0.0.1:9901",
  "mesh": { "bind": "127.0.0.1:0" },
  "nodes": [ { "name": "n1", "address": "127.0.0.1:7000" } ],
  "routes": [ { "prefix": "/s0", "service": "s0", "nodes": ["n1"] } ],
  "limits": { )" + limits + R"( },
  "timeouts": { )" + timeouts + (timeouts.empty() ? "" : ", ") +
	       R"("read_ms": 60000, "idle_ms": 60000 }
})";
}

/* limits.max_connections: the 9th to 20th connections wait unaccepted while 8 are open; the
 * cap is in the READY line and the metrics, and closing 5 lets 5 in. */
TEST(IngressLimits, ConnectionsPastTheCapWaitInTheBacklog)
{
	std::string why = netns_unavailable();
	if (!why.empty())
		GTEST_SKIP() << why;
	lone_netns ns("dpmk-" + std::to_string(getpid() % 100000));
	ASSERT_TRUE(ns.ok);
	temp_dir d;
	ingress_proc gw(ns.name, lone_gateway_config(R"("max_connections": 8)"));
	ASSERT_TRUE(gw.up) << gw.proc->output();
	EXPECT_NE(gw.proc->output().find("max_connections=8"), std::string::npos)
		<< gw.proc->output();
	std::vector<int> held = connect_many(ns.name, 8080, 20);
	ASSERT_EQ(held.size(), 20u);
	std::this_thread::sleep_for(400ms);
	http_result m = curl(ns.name, "http://127.0.0.1:9901/metrics", d);
	ASSERT_EQ(m.code, 200) << m.raw;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_max_connections"), 8) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_connections_open"), 8) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_connections_total"), 8) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_accept_paused_total{reason=\"max_connections\"}"),
		  1)
		<< m.body;
	/* five of the accepted ones close: five of the waiting ones are taken in their place */
	for (int i = 0; i < 5; i++)
		close(held[i]);
	std::this_thread::sleep_for(500ms);
	m = curl(ns.name, "http://127.0.0.1:9901/metrics", d);
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_connections_open"), 8) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_connections_total"), 13) << m.body;
	for (size_t i = 5; i < held.size(); i++)
		close(held[i]);
	/* all gone: a new client is answered (no route: the gateway's own 404) */
	std::this_thread::sleep_for(300ms);
	http_result r = curl(ns.name, "http://127.0.0.1:8080/elsewhere", d);
	EXPECT_EQ(r.code, 404) << r.raw;
	gw.stop();
}

/* Out of file descriptors: under a limit of 48 the cap is held to 24 (48 less the 32 kept
 * is below 32: half of 48), and a flood of admin connections (not capped) runs the process
 * out of descriptors. Accepting pauses and tries again every 100 ms: the gateway uses
 * (nearly) no CPU and logs one line, where it used to log a warning per try on a busy core
 * (~16 MB of log a second); once the flood closes, both listeners serve again. */
TEST(IngressLimits, OutOfFileDescriptorsAcceptingPausesWithoutSpinning)
{
	std::string why = netns_unavailable();
	if (!why.empty())
		GTEST_SKIP() << why;
	if (which("prlimit").empty())
		GTEST_SKIP() << "needs prlimit (util-linux)";
	lone_netns ns("dpml-" + std::to_string(getpid() % 100000));
	ASSERT_TRUE(ns.ok);
	temp_dir d;
	ingress_proc gw(ns.name, lone_gateway_config(R"("max_connections": 10000)"),
			{which("prlimit"), "--nofile=48:48"});
	ASSERT_TRUE(gw.up) << gw.proc->output();
	EXPECT_NE(gw.proc->output().find("max_connections=24"), std::string::npos)
		<< gw.proc->output();
	std::vector<int> held = connect_many(ns.name, 8080, 30);
	std::vector<int> flood = connect_many(ns.name, 9901, 40);
	ASSERT_EQ(held.size() + flood.size(), 70u);
	std::this_thread::sleep_for(300ms);
	const long t0 = cpu_ticks(gw.proc->pid());
	std::this_thread::sleep_for(2s);
	const long t1 = cpu_ticks(gw.proc->pid());
	ASSERT_GE(t0, 0);
	/* 2 s of a spinning core are ~200 ticks; a try every 100 ms a few */
	EXPECT_LT(t1 - t0, 40) << "CPU ticks over 2 s with accepting paused";
	const std::string out = gw.proc->output();
	EXPECT_LT(out.size(), 4096u) << out.substr(0, 1000);
	EXPECT_NE(out.find("accept: Too many open files"), std::string::npos) << out;
	for (int s : flood)
		close(s);
	std::this_thread::sleep_for(400ms);
	http_result m = curl(ns.name, "http://127.0.0.1:9901/metrics", d);
	ASSERT_EQ(m.code, 200) << m.raw;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_max_connections"), 24) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_connections_open"), 24) << m.body;
	EXPECT_GE(metric(m.body, "dpumesh_ingress_accept_paused_total{reason=\"fd_limit\"}"), 1)
		<< m.body;
	for (int s : held)
		close(s);
	std::this_thread::sleep_for(300ms);
	http_result r = curl(ns.name, "http://127.0.0.1:8080/elsewhere", d);
	EXPECT_EQ(r.code, 404) << r.raw;
	gw.stop();
}

/* The gateway with no node (127.0.0.1:7000 does not answer: every request waits for the
 * mesh until its 504), 24 clients sending bodies of `body_len` (256 KiB, max_body_bytes,
 * unless told) at once, announced by Content-Length or chunked, each request's last byte
 * `hold` after the rest, and the bound on request bytes held at max_buffered_bytes: the
 * Prometheus text after. */
std::string flood_of_bodies(const std::string &ns_name, uint64_t max_buffered,
			    unsigned request_ms, const temp_dir &d, size_t body_len = 262144,
			    bool chunked = false, std::chrono::milliseconds hold = 0ms)
{
	ingress_proc gw(ns_name,
			lone_gateway_config(R"("max_body_bytes": 262144, "max_buffered_bytes": )" +
						    std::to_string(max_buffered),
					    R"("request_ms": )" + std::to_string(request_ms)));
	EXPECT_TRUE(gw.up) << gw.proc->output();
	if (!gw.up)
		return "";
	const std::string body = make_body(body_len, 5);
	char chunk[32];
	std::snprintf(chunk, sizeof(chunk), "%zx\r\n", body_len);
	const std::string req =
		"POST /s0/upload HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
		(chunked ? "Transfer-Encoding: chunked\r\n\r\n" + std::string(chunk) + body + "\r\n0\r\n\r\n"
			 : "Content-Length: " + std::to_string(body_len) + "\r\n\r\n" + body);
	std::vector<raw_result> got(24);
	std::vector<std::thread> clients;
	for (size_t i = 0; i < got.size(); i++)
		clients.emplace_back([&, i] {
			got[i] = hold == 0ms ? raw_http(ns_name, {req}, 0ms, 40s)
					     : raw_http(ns_name, {req.substr(0, req.size() - 1), req.substr(req.size() - 1)},
							hold, 40s);
		});
	for (std::thread &t : clients)
		t.join();
	for (size_t i = 0; i < got.size(); i++) {
		/* each request answered once: the gateway's 504, then the connection closed */
		EXPECT_TRUE(got[i].closed) << i;
		EXPECT_EQ(count_of(got[i].in, "HTTP/1.1 "), 1) << i << ": " << got[i].in;
		EXPECT_EQ(got[i].in.rfind("HTTP/1.1 504", 0), 0u) << i << ": " << got[i].in;
	}
	http_result m = curl(ns_name, "http://127.0.0.1:9901/metrics", d);
	EXPECT_EQ(m.code, 200) << m.raw;
	gw.stop();
	return m.body;
}

/* limits.max_buffered_bytes: 24 bodies of 256 KiB (6 MiB) against a bound of 1 MiB. A body
 * is read once admitted (a reservation of max_body_bytes within the bound): the rest wait,
 * their reading paused after the header block, and are admitted in turn as the waiting
 * requests are answered. The most held at once stays within the bound and a read a
 * connection, where without the bound all 6 MiB are held at once; every request is
 * answered. */
TEST(IngressLimits, RequestBytesPastTheBoundPauseReadingAndEveryRequestIsAnswered)
{
	std::string why = netns_unavailable();
	if (!why.empty())
		GTEST_SKIP() << why;
	lone_netns ns("dpmm-" + std::to_string(getpid() % 100000));
	ASSERT_TRUE(ns.ok);
	temp_dir d;
	const long body = 262144, bound = 1048576, clients = 24;

	const std::string bounded = flood_of_bodies(ns.name, bound, 150, d);
	ASSERT_FALSE(bounded.empty());
	EXPECT_EQ(metric(bounded, "dpumesh_ingress_max_buffered_bytes"), bound) << bounded;
	EXPECT_EQ(metric(bounded, "dpumesh_ingress_requests_total"), clients) << bounded;
	EXPECT_EQ(metric(bounded, "dpumesh_ingress_mesh_errors_total{reason=\"timeout\"}"),
		  clients)
		<< bounded;
	/* three reservations of a body and a header block fit in the bound: the others wait
	 * (all but three when every header block comes within the first request_ms; at least
	 * half of them on a loaded box) */
	EXPECT_GE(metric(bounded, "dpumesh_ingress_read_paused_total"), clients / 2) << bounded;
	EXPECT_EQ(metric(bounded, "dpumesh_ingress_buffered_bytes"), 0) << bounded;
	EXPECT_EQ(metric(bounded, "dpumesh_ingress_committed_bytes"), 0) << bounded;
	const long peak = metric(bounded, "dpumesh_ingress_buffered_bytes_peak");
	EXPECT_GE(peak, 3 * body) << bounded;
	EXPECT_LE(peak, bound + clients * 65536) << bounded;

	/* the same flood with a bound it never reaches, and the requests held 2 s (on a loaded
	 * box the 24 may come over more than 150 ms): every body held at once */
	const std::string unbounded = flood_of_bodies(ns.name, 1ull << 30, 2000, d);
	ASSERT_FALSE(unbounded.empty());
	EXPECT_EQ(metric(unbounded, "dpumesh_ingress_read_paused_total"), 0) << unbounded;
	EXPECT_GE(metric(unbounded, "dpumesh_ingress_buffered_bytes_peak"), clients * body)
		<< unbounded;
}

/* A body reserves the length it announces: 24 bodies of 16 KiB, each with its
 * Content-Length and its last byte 300 ms after the rest (so every reservation is held
 * while the others come), against the bound of 1 MiB that holds three reservations of
 * max_body_bytes (256 KiB) are all read at once and none waits. The same bodies chunked,
 * whose length is not known before their end, reserve max_body_bytes each and wait as
 * 256 KiB ones do. Before 2026-12-07 every body reserved max_body_bytes: the first flood
 * waited like the second. */
TEST(IngressLimits, ABodyReservesTheLengthItAnnouncesAndAChunkedOneTheMost)
{
	std::string why = netns_unavailable();
	if (!why.empty())
		GTEST_SKIP() << why;
	lone_netns ns("dpmc-" + std::to_string(getpid() % 100000));
	ASSERT_TRUE(ns.ok);
	temp_dir d;
	const long body = 16384, bound = 1048576, clients = 24;

	/* held 2 s, so that on a loaded box the 24 still come while the first wait */
	const std::string announced = flood_of_bodies(ns.name, bound, 2000, d, body, false, 300ms);
	ASSERT_FALSE(announced.empty());
	EXPECT_EQ(metric(announced, "dpumesh_ingress_mesh_errors_total{reason=\"timeout\"}"),
		  clients)
		<< announced;
	EXPECT_EQ(metric(announced, "dpumesh_ingress_read_paused_total"), 0) << announced;
	EXPECT_GE(metric(announced, "dpumesh_ingress_buffered_bytes_peak"), clients * body)
		<< announced;
	EXPECT_EQ(metric(announced, "dpumesh_ingress_committed_bytes"), 0) << announced;

	const std::string chunked = flood_of_bodies(ns.name, bound, 150, d, body, true, 300ms);
	ASSERT_FALSE(chunked.empty());
	EXPECT_EQ(metric(chunked, "dpumesh_ingress_mesh_errors_total{reason=\"timeout\"}"),
		  clients)
		<< chunked;
	EXPECT_GE(metric(chunked, "dpumesh_ingress_read_paused_total"), clients / 2) << chunked;
	EXPECT_EQ(metric(chunked, "dpumesh_ingress_committed_bytes"), 0) << chunked;
}

/* The admin address takes small GET and HEAD requests only. evhttp's defaults have no limit
 * on a header block or a body: a POST /metrics of 8 MiB was read whole (and answered with
 * the metrics). A body is now refused with 413 as its header block ends (announced or
 * chunked), a header block over 8 KiB is refused, another method gets 501, and the admin
 * still serves. */
TEST(IngressLimits, TheAdminAddressTakesSmallGetsOnly)
{
	std::string why = netns_unavailable();
	if (!why.empty())
		GTEST_SKIP() << why;
	lone_netns ns("dpma-" + std::to_string(getpid() % 100000));
	ASSERT_TRUE(ns.ok);
	temp_dir d;
	ingress_proc gw(ns.name, lone_gateway_config(""));
	ASSERT_TRUE(gw.up) << gw.proc->output();
	const std::string mib2(2u << 20, 'a');
	raw_result announced = raw_http(
		ns.name,
		{"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 8388608\r\n\r\n", mib2, mib2,
		 mib2, mib2},
		50ms, 5s, 9901);
	EXPECT_TRUE(announced.closed);
	EXPECT_EQ(announced.in.rfind("HTTP/1.1 413 ", 0), 0u) << announced.in.substr(0, 300);
	raw_result chunked = raw_http(
		ns.name,
		{"POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n200000\r\n",
		 mib2, "\r\n0\r\n\r\n"},
		50ms, 5s, 9901);
	EXPECT_TRUE(chunked.closed);
	EXPECT_EQ(chunked.in.rfind("HTTP/1.1 413 ", 0), 0u) << chunked.in.substr(0, 300);
	raw_result header = raw_http(
		ns.name,
		{"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n"},
		0ms, 5s, 9901);
	EXPECT_TRUE(header.closed);
	EXPECT_EQ(header.in.find(" 200 "), std::string::npos) << header.in.substr(0, 300);
	for (const char *method : {"POST", "PUT", "DELETE"}) {
		SCOPED_TRACE(method);
		raw_result r = raw_http(ns.name,
					{std::string(method) +
					 " /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"},
					0ms, 5s, 9901);
		EXPECT_TRUE(r.closed);
		EXPECT_EQ(r.in.rfind("HTTP/1.1 501 ", 0), 0u) << r.in.substr(0, 300);
	}
	raw_result head = raw_http(
		ns.name, {"HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"}, 0ms, 5s,
		9901);
	EXPECT_EQ(head.in.rfind("HTTP/1.1 200 ", 0), 0u) << head.in.substr(0, 300);
	http_result m = curl(ns.name, "http://127.0.0.1:9901/metrics", d);
	EXPECT_EQ(m.code, 200) << m.raw;
	EXPECT_GE(metric(m.body, "dpumesh_ingress_connections_open"), 0) << m.body;
	http_result h = curl(ns.name, "http://127.0.0.1:9901/healthz", d);
	EXPECT_EQ(h.code, 200) << h.raw;
	EXPECT_EQ(h.body, "ok\n");
}

/* A method the gateway does not serve is refused with 501 Not Implemented and Connection:
 * close, one answer, and what follows on the connection is never read as a request: TRACE
 * and CONNECT by the gateway (JSON, method_not_implemented), one evhttp does not know by
 * evhttp. Before: evhttp refused TRACE and CONNECT itself, and 2.1.12 keeps a connection open
 * after any answer to a CONNECT (for a tunnel): the request after it was parsed and answered.
 * And evhttp reads a CONNECT's body, which the memory bound's admission took for a method
 * without one: its reading paused past a header block's allowance, and a CONNECT with a
 * 200000-byte body got no answer before read_ms. */
TEST(IngressLimits, MethodsTheGatewayDoesNotServeAre501AndClose)
{
	std::string why = netns_unavailable();
	if (!why.empty())
		GTEST_SKIP() << why;
	lone_netns ns("dpmv-" + std::to_string(getpid() % 100000));
	ASSERT_TRUE(ns.ok);
	temp_dir d;
	ingress_proc gw(ns.name, lone_gateway_config(""));
	ASSERT_TRUE(gw.up) << gw.proc->output();
	/* a request after it, which would be answered 404 no_route */
	const std::string next = "GET /none HTTP/1.1\r\nHost: x\r\n\r\n";
	const std::string body = make_body(200000, 95);
	const std::string requests[] = {
		"TRACE /s0/t HTTP/1.1\r\nHost: x\r\n\r\n" + next,
		"BREW /s0/t HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + next,
		"CONNECT s0:80 HTTP/1.1\r\nHost: x\r\n\r\n" + next,
		"CONNECT s0:80 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + next,
		"CONNECT s0:80 HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n" + body + next,
		"CONNECT s0:80 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n30d40\r\n" +
			body + "\r\n0\r\n\r\n" + next,
	};
	for (const std::string &request : requests) {
		SCOPED_TRACE(request.substr(0, request.find("\r\n\r\n")));
		raw_result r = raw_http(ns.name, {request}, 0ms, 5s);
		EXPECT_TRUE(r.closed);
		EXPECT_LT(r.took, 2000ms);
		EXPECT_EQ(r.in.rfind("HTTP/1.1 501 ", 0), 0u) << r.in.substr(0, 300);
		EXPECT_NE(r.in.find("\r\nConnection: close\r\n"), std::string::npos) << r.in;
		EXPECT_EQ(count_of(r.in, "HTTP/1.1 "), 1) << r.in;
		if (request.rfind("BREW", 0) != 0) {
			EXPECT_NE(r.in.find("\"error\":\"method_not_implemented\""), std::string::npos)
				<< r.in;
		}
	}
	std::this_thread::sleep_for(300ms); /* the sweep forgets the closed connections */
	http_result m = curl(ns.name, "http://127.0.0.1:9901/metrics", d);
	ASSERT_EQ(m.code, 200) << m.raw;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_requests_total"), 5) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_refused_total{reason=\"method\"}"), 5) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_slow_closed_total"), 0) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_committed_bytes"), 0) << m.body;
	EXPECT_EQ(metric(m.body, "dpumesh_ingress_buffered_bytes"), 0) << m.body;
}

} // namespace
