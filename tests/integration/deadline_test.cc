// SPDX-License-Identifier: BSD-3-Clause
// The deadline a pod sees is the one the mesh holds its request to: a node built in this
// process (lib/node: sidecar + DPA emulator) and pods on libdpumesh, an echo pod on a thread
// that answers with the deadline_ms it read (dpumesh_msg_deadline_ms) and the client on the
// test's own thread. The smaller of the caller's budget and the route's timeout reaches the
// pod, and so does the time a request waited in the mesh for room in its pod. With the test
// as a peer node behind a port of rings: the deadline a request for another node leaves
// with, and how such requests end (the peer's failures, timeouts) feeding the breaker here.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <rte_ip.h>
#include <rte_mbuf.h>

#include "dpumesh/host/dpumesh.h"
#include "dpumesh/wire/frame.h"
#include "dpumesh/wire/l7.h"
#include "eal_env.h"
#include "inproc_node.h"
#include "ring_port.h"

using namespace dpumesh;
using namespace dpumesh::test;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

/* echo: a route timeout of 400 ms; patient: 10 s */
std::string deadline_config()
{
	return R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.0.0.1",
            "control_socket": "@SOCK@" },
  "lcores": { "idle": "adaptive", "max_sleep_us": 50, "stages": { "sidecar": 1, "dpa": 1 } },
  "pools": { "tx_header": { "slots": 64, "slot_size": 1024 }, "tx_body": { "slots": 64, "slot_size": 4096 },
             "rx_header": { "slots": 64, "slot_size": 1024 }, "rx_body": { "slots": 64, "slot_size": 4096 },
             "sq_depth": 128 },
  "services": [ { "name": "echo", "max_pods": 1 }, { "name": "patient", "max_pods": 1 },
                { "name": "client", "max_pods": 1 } ],
  "policy": { "timeouts": [ { "service": "echo", "timeout_ms": 400 },
                            { "service": "patient", "timeout_ms": 10000 } ] }
})";
}

/* the client's node, with a peer n2 behind a port of rings (`dev`) that serves remote
 * (route timeout 400 ms) and far (the default route's 5000 ms); `policy`: more members of
 * the policy object */
std::string peer_config(const std::string &dev, const std::string &policy = "")
{
	return R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.0.0.1",
            "control_socket": "@SOCK@" },
  "lcores": { "idle": "adaptive", "max_sleep_us": 50, "stages": { "sidecar": 1, "dpa": 1 } },
  "ports": [ { "name": "net", "dev": ")" +
	       dev + R"(", "role": "external" } ],
  "pools": { "tx_header": { "slots": 64, "slot_size": 1024 }, "tx_body": { "slots": 64, "slot_size": 4096 },
             "rx_header": { "slots": 64, "slot_size": 1024 }, "rx_body": { "slots": 64, "slot_size": 4096 },
             "sq_depth": 128 },
  "services": [ { "name": "client", "max_pods": 1 }, { "name": "remote" }, { "name": "far" } ],
  "peers": [ { "name": "n2", "mac": "02:00:00:00:00:02", "ipv4": "10.0.0.2" } ],
  "routes": [ { "service": "remote", "to": "n2" }, { "service": "far", "to": "n2" } ],
  "policy": { "default_timeout_ms": 5000,
              "timeouts": [ { "service": "remote", "timeout_ms": 400 } ])" +
	       policy + R"( }
})";
}

dpumesh_options pod_options(const std::string &sock, const char *service, uint32_t rx_slots)
{
	dpumesh_options o{};
	o.socket_path = sock.c_str();
	o.service = service;
	o.nb_workers = 1;
	o.geometry = dpumesh_default_geometry();
	o.geometry.tx_header.slots = o.geometry.tx_body.slots = 64;
	o.geometry.rx_header.slots = o.geometry.rx_body.slots = rx_slots;
	o.geometry.tx_body.slot_size = o.geometry.rx_body.slot_size = 4096;
	o.geometry.sq_depth = 128;
	return o;
}

/** A pod on its own thread that answers each request with x-deadline, the deadline_ms it
 * read, but none (and releases none: its RX slots stay taken) until `hold` after its first
 * request came. */
struct deadline_echo {
	std::thread thread;
	std::atomic<bool> stop{false};
	std::atomic<int> open_rc{1};
	std::atomic<int> fd{-1};
	std::chrono::milliseconds hold;
	std::vector<dpumesh_msg *> held;
	steady::time_point first{};

	static void on_request(dpumesh_t *, dpumesh_msg *m, void *user)
	{
		auto *e = static_cast<deadline_echo *>(user);
		if (e->held.empty() && e->first == steady::time_point{})
			e->first = steady::now();
		e->held.push_back(m);
	}

	deadline_echo(const std::string &sock, const char *service, uint32_t rx_slots,
		      std::chrono::milliseconds hold_)
	    : hold(hold_)
	{
		thread = std::thread([this, sock, service, rx_slots] {
			dpumesh_options o = pod_options(sock, service, rx_slots);
			o.callbacks.on_request = on_request;
			o.user = this;
			dpumesh_t *h = nullptr;
			char err[128] = "";
			int rc = dpumesh_open(&o, &h, err, sizeof(err));
			if (rc == 0)
				fd.store(dpumesh_fd(h));
			else
				std::fprintf(stderr, "deadline_echo: %s\n", err);
			open_rc.store(rc);
			if (rc != 0)
				return;
			while (!stop.load()) {
				(void)dpumesh_wait(h, 5);
				if (held.empty() || steady::now() < first + hold)
					continue;
				for (dpumesh_msg *m : held) {
					char v[16];
					std::snprintf(v, sizeof(v), "%u", dpumesh_msg_deadline_ms(m));
					const dpumesh_field f[1] = {{"x-deadline", v}};
					(void)dpumesh_send_response(h, 0, m, 200, f, 1, nullptr, 0);
					dpumesh_msg_release(h, m);
				}
				held.clear();
			}
			dpumesh_close(h);
		});
		while (open_rc.load() == 1)
			std::this_thread::sleep_for(1ms);
	}
	~deadline_echo()
	{
		stop.store(true);
		uint64_t one = 1; /* wake it from its wait */
		if (fd.load() >= 0)
			(void)!::write(fd.load(), &one, sizeof(one));
		thread.join();
	}
};

/** The client, on the test's thread: what each answer said, by req_id (x-deadline, or -1
 * for an answer without it, such as a mesh error; its status, and a mesh error's reason). */
struct deadline_client {
	dpumesh_t *h = nullptr;
	std::map<uint32_t, long> seen;
	std::map<uint32_t, std::pair<uint16_t, std::string>> status;
	std::string error;

	static void on_response(dpumesh_t *h, dpumesh_msg *m, void *user)
	{
		auto *c = static_cast<deadline_client *>(user);
		const char *v = nullptr;
		size_t len = 0;
		long d = -1;
		if (m->http_status == 200 && dpumesh_msg_field(m, "x-deadline", &v, &len) == 0)
			d = std::strtol(std::string(v, len).c_str(), nullptr, 10);
		c->seen[m->req_id] = d;
		c->status[m->req_id] = {m->http_status, m->reason ? std::string(m->reason, m->reason_len)
								  : std::string()};
		dpumesh_msg_release(h, m);
	}

	explicit deadline_client(const std::string &sock)
	{
		dpumesh_options o = pod_options(sock, "client", 64);
		o.callbacks.on_response = on_response;
		o.user = this;
		char err[128] = "";
		if (dpumesh_open(&o, &h, err, sizeof(err)) != 0)
			error = err;
	}
	~deadline_client()
	{
		if (h)
			dpumesh_close(h);
	}

	bool send(const char *service, uint32_t req_id, uint32_t deadline_ms,
		  const char *path = "/")
	{
		static const uint8_t body[16] = {7};
		dpumesh_request r{};
		r.service = service;
		r.method = "GET";
		r.path = path;
		r.body = body;
		r.body_len = sizeof(body);
		r.req_id = req_id;
		r.deadline_ms = deadline_ms;
		return dpumesh_send_request(h, 0, &r) == 0;
	}
	bool wait_for(size_t n, std::chrono::milliseconds limit)
	{
		const auto end = steady::now() + limit;
		while (seen.size() < n) {
			if (steady::now() > end)
				return false;
			(void)dpumesh_wait(h, 10);
		}
		return true;
	}
};

/* A route's timeout shorter than the caller's budget is what the pod sees: a budget of 10 s,
 * and none at all, reach echo (timeout 400 ms) as at most 400 ms; a budget of 150 ms stays
 * 150 ms at most. Before 2026-12-07 the pod read the caller's header as it was: 10000, 0
 * (none) and 150, and a pod passing its request's deadline on (call_spec::within) gave its
 * own calls 10 s where the mesh would answer 504 after 400 ms. */
TEST(Deadline, APodSeesTheRoutesTimeoutWhereItIsTheShorter)
{
	inproc_node n("deadline-route", deadline_config());
	ASSERT_TRUE(n.up) << n.error;
	deadline_echo echo(n.sock, "echo", 64, 0ms);
	ASSERT_EQ(echo.open_rc.load(), 0);
	deadline_client c(n.sock);
	ASSERT_TRUE(c.error.empty()) << c.error;
	ASSERT_TRUE(c.send("echo", 1, 10000));
	ASSERT_TRUE(c.send("echo", 2, 0));
	ASSERT_TRUE(c.send("echo", 3, 150));
	ASSERT_TRUE(c.wait_for(3, 10s)) << c.seen.size() << " answers";
	/* (less the time to its delivery: on a loaded box up to a few hundred ms) */
	EXPECT_GT(c.seen[1], 100);
	EXPECT_LE(c.seen[1], 400);
	EXPECT_GT(c.seen[2], 100);
	EXPECT_LE(c.seen[2], 400);
	EXPECT_GT(c.seen[3], 0);
	EXPECT_LE(c.seen[3], 150);
}

/* The time a request waits in the mesh for room in its pod is off the deadline the pod
 * sees: echo (4 RX slots) takes the first four of eight requests and holds them 300 ms, so
 * the other four wait in the mesh until it lets go. Each of the others sees at least 200 ms
 * less than any of the first four. */
TEST(Deadline, TimeWaitedInTheMeshIsOffTheDeadlineAPodSees)
{
	inproc_node n("deadline-wait", deadline_config());
	ASSERT_TRUE(n.up) << n.error;
	deadline_echo echo(n.sock, "patient", 4, 300ms);
	ASSERT_EQ(echo.open_rc.load(), 0);
	deadline_client c(n.sock);
	ASSERT_TRUE(c.error.empty()) << c.error;
	for (uint32_t id = 1; id <= 8; id++)
		ASSERT_TRUE(c.send("patient", id, 3000));
	ASSERT_TRUE(c.wait_for(8, 10s)) << c.seen.size() << " answers";
	long first_least = 1L << 30, rest_most = 0;
	for (uint32_t id = 1; id <= 8; id++) {
		EXPECT_GT(c.seen[id], 0) << id;
		if (id <= 4)
			first_least = std::min(first_least, c.seen[id]);
		else
			rest_most = std::max(rest_most, c.seen[id]);
	}
	EXPECT_LE(first_least, 3000);
	EXPECT_GE(first_least - rest_most, 200) << first_least << " " << rest_most;
}

/* A request a pod sends to a service another node serves (Case 1) leaves with the deadline
 * this node holds it to: the smaller of its budget and its route's timeout, whole (it leaves
 * in the pass it was admitted in), for the peer to count from its own arrival. The test is
 * the peer n2 on the far side of a port of rings, and answers each. Before 2026-12-07 the
 * header left as the pod wrote it: 10000 and 0 (none), and the peer gave such a request its
 * own timeout while this node answered 504 after 400 ms. */
TEST(Deadline, ARequestForAnotherNodeLeavesWithTheDeadlineItIsHeldToHere)
{
	ring_port port("dlpeer", 1);
	inproc_node n("deadline-peer", peer_config(port.name));
	ASSERT_TRUE(n.up) << n.error;
	deadline_client c(n.sock);
	ASSERT_TRUE(c.error.empty()) << c.error;
	/* path: which request; the deadline the peer must read */
	const std::map<std::string, uint32_t> want = {
		{"/remote/10000", 400}, {"/remote/0", 400}, {"/remote/150", 150},
		{"/far/0", 5000},	{"/far/10000", 5000}, {"/far/300", 300}};
	uint32_t id = 1;
	for (const auto &[path, ms] : want) {
		const std::string svc = path.substr(1, path.find('/', 1) - 1);
		const uint32_t budget = static_cast<uint32_t>(std::stoul(path.substr(path.rfind('/') + 1)));
		ASSERT_TRUE(c.send(svc.c_str(), id++, budget, path.c_str()));
	}
	std::map<std::string, uint32_t> got;
	const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x02};
	uint32_t msg_id = 1;
	const auto end = steady::now() + 10s;
	while (got.size() < want.size() && steady::now() < end) {
		(void)dpumesh_wait(c.h, 5); /* the client's loop takes its TX completions */
		rte_mbuf *f;
		while (port.take(0, &f)) {
			wire::parsed_frame pf;
			const auto *udp = rte_pktmbuf_mtod_offset(f, const rte_udp_hdr *, 14 + 20);
			ASSERT_EQ(wire::parse_frame(f, udp->dst_port, 1 << 20, &pf), wire::wire_drop::none);
			std::vector<uint8_t> l7(pf.l7_len);
			const auto *at = static_cast<const uint8_t *>(
				rte_pktmbuf_read(f, pf.payload_off, pf.l7_len, l7.data()));
			wire::l7_view v;
			ASSERT_EQ(wire::l7_decode(at, pf.l7_len, &v), wire::l7_error::ok);
			got[std::string(v.path)] = v.deadline_ms;
			uint8_t answer[64];
			wire::l7_writer w(answer, sizeof(answer));
			w.response(200);
			const uint16_t len = static_cast<uint16_t>(w.finish());
			ASSERT_TRUE(port.send(0, RTE_IPV4(10, 0, 0, 2), port.mesh_port, peer_mac,
					      wire::frame_kind::response, pf.correlation, answer, len, "",
					      msg_id++));
			rte_pktmbuf_free(f);
		}
	}
	EXPECT_EQ(got, want);
	ASSERT_TRUE(c.wait_for(want.size(), 10s)) << c.seen.size() << " answers";
}

/* The test as peer n2: answers every request on the ring with `status` (none while it is
 * 0); the number of requests it saw. */
size_t peer_answers(ring_port &port, deadline_client &c, uint16_t status,
		    std::chrono::milliseconds for_, uint32_t *msg_id)
{
	const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x02};
	size_t n = 0;
	const auto end = steady::now() + for_;
	while (steady::now() < end) {
		(void)dpumesh_wait(c.h, 5);
		rte_mbuf *f;
		while (port.take(0, &f)) {
			n++;
			wire::parsed_frame pf;
			const auto *udp = rte_pktmbuf_mtod_offset(f, const rte_udp_hdr *, 14 + 20);
			EXPECT_EQ(wire::parse_frame(f, udp->dst_port, 1 << 20, &pf), wire::wire_drop::none);
			uint8_t answer[64];
			wire::l7_writer w(answer, sizeof(answer));
			w.response(status);
			const uint16_t len = static_cast<uint16_t>(w.finish());
			if (status != 0) {
				EXPECT_TRUE(port.send(0, RTE_IPV4(10, 0, 0, 2), port.mesh_port, peer_mac,
						      wire::frame_kind::response, pf.correlation, answer,
						      len, "", (*msg_id)++));
			}
			rte_pktmbuf_free(f);
		}
	}
	return n;
}

/* A pod's requests for a peer's service are outcomes for that service's breaker on this
 * node, where they are admitted: two failures in a row (consecutive_failures 2) open it, and
 * the next request is refused here with 503 circuit_open and never sent. Failures are the
 * peer's 503s for remote, and timeouts (504 after the route's 400 ms) for far2. Before
 * 2026-12-08 a pod's request only asked the breaker and it never heard how one ended: the
 * third request went to the peer (and a half-open probe it let through was never
 * reported, so the breaker stayed half-open). */
TEST(Deadline, APeersFailuresOpenItsBreakerForAPodsRequests)
{
	ring_port port("brpeer", 1);
	inproc_node n("breaker-peer",
		      peer_config(port.name, R"(,
              "circuit_breakers": [
                { "service": "remote", "consecutive_failures": 2, "min_requests": 1000, "open_ms": 60000 },
                { "service": "far", "consecutive_failures": 2, "min_requests": 1000, "open_ms": 60000 } ])"));
	ASSERT_TRUE(n.up) << n.error;
	deadline_client c(n.sock);
	ASSERT_TRUE(c.error.empty()) << c.error;
	uint32_t msg_id = 1;
	/* remote: the peer answers 503 twice */
	for (uint32_t id = 1; id <= 2; id++) {
		ASSERT_TRUE(c.send("remote", id, 0));
		EXPECT_EQ(peer_answers(port, c, 503, 200ms, &msg_id), 1u) << id;
		ASSERT_TRUE(c.wait_for(id, 5s));
		EXPECT_EQ(c.status[id].first, 503);
		EXPECT_EQ(c.status[id].second, "") << "the peer's own 503, not the mesh's";
	}
	ASSERT_TRUE(c.send("remote", 3, 0));
	ASSERT_TRUE(c.wait_for(3, 5s));
	EXPECT_EQ(c.status[3].first, 503);
	EXPECT_EQ(c.status[3].second, "circuit_open");
	EXPECT_EQ(peer_answers(port, c, 503, 100ms, &msg_id), 0u) << "refused here, not sent";
	/* far: the peer never answers, each request 504s after far's deadline (300 ms) */
	for (uint32_t id = 4; id <= 5; id++) {
		ASSERT_TRUE(c.send("far", id, 300));
		EXPECT_EQ(peer_answers(port, c, 0, 100ms, &msg_id), 1u) << id;
		ASSERT_TRUE(c.wait_for(id, 5s));
		EXPECT_EQ(c.status[id].first, 504);
		EXPECT_EQ(c.status[id].second, "timeout");
	}
	ASSERT_TRUE(c.send("far", 6, 300));
	ASSERT_TRUE(c.wait_for(6, 5s));
	EXPECT_EQ(c.status[6].first, 503);
	EXPECT_EQ(c.status[6].second, "circuit_open");
	EXPECT_EQ(peer_answers(port, c, 0, 100ms, &msg_id), 0u) << "refused here, not sent";
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("deadline", {}, 512));
	return RUN_ALL_TESTS();
}
