// SPDX-License-Identifier: BSD-3-Clause
// External traffic end to end, with real dpumesh and pod processes:
//
//   Case2ReplayIntoPods   a generated capture (fragmented and not, IPv4 and IPv6, some
//                         malformed frames) replayed through net_pcap into echo pods; every
//                         answer read back from the port's written capture, byte-exact
//   Case1FromPod          a client pod calls a service of another node: its requests leave
//                         through the port (read back from the capture); unanswered, they
//                         come back to the client as 504 timeout
//   TwoNodes              two dpumesh processes on the two ends of a veth pair (af_packet):
//                         a pod on node 1 calls a service whose pod lives on node 2
//   UdpSocketClient       a plain Linux UDP socket in a network namespace exchanges messages
//                         (single and multi-fragment, IPv4 and IPv6) with dpumesh's echo pod
//
// The last two need root (veth pairs, namespaces) and skip with the reason otherwise.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <rte_byteorder.h>

#include "dpumesh/wire/frame.h"
#include "dpumesh/wire/l7.h"
#include "dpumesh/meshsock/meshsock.h"
#include "mesh_node.h"
#include "netns.h"
#include "output.h"
#include "subprocess.h"

using namespace dpumesh;
using namespace dpumesh::test;
using namespace std::chrono_literals;

namespace {

/** One line of dpumesh-pcapdump. */
struct dumped {
	std::string src, what;
	unsigned long long corr = 0;
	unsigned body = 0;
	std::string sum;
};

/** corr -> message, from `dpumesh-pcapdump [--any-port] file`; also the summary line. */
std::map<unsigned long long, dumped> dump(const std::string &pcap, bool any_port,
					  std::string *summary)
{
	std::vector<std::string> a = {bin_path("dpumesh-pcapdump")};
	if (any_port)
		a.push_back("--any-port");
	a.push_back(pcap);
	auto [rc, out] = run_command(a);
	EXPECT_EQ(rc, 0) << out;
	std::map<unsigned long long, dumped> m;
	std::istringstream in(out);
	for (std::string line; std::getline(in, line);) {
		if (line.rfind("frames=", 0) == 0) {
			*summary = line;
			continue;
		}
		/* "<frame> <src> msg <id> corr <c> <what...> header <h> body <b> sum <s>" */
		size_t c = line.find(" corr "), h = line.find(" header "), b = line.find(" body "),
		       s = line.find(" sum ");
		if (c == std::string::npos || h == std::string::npos || b == std::string::npos ||
		    s == std::string::npos)
			continue;
		dumped d;
		d.src = line.substr(line.find(' ') + 1, line.find(" msg ") - line.find(' ') - 1);
		size_t ce = line.find(' ', c + 6);
		d.corr = std::strtoull(line.substr(c + 6, ce - c - 6).c_str(), nullptr, 0);
		d.what = line.substr(ce + 1, h - ce - 1);
		d.body = static_cast<unsigned>(std::strtoul(line.c_str() + b + 6, nullptr, 10));
		d.sum = line.substr(s + 5);
		m[d.corr] = d;
	}
	return m;
}

const char *node_json_common = R"(
  "pools": { "tx_body": { "slots": 64, "slot_size": 65536 },
             "rx_body": { "slots": 64, "slot_size": 65536 } },
  "lcores": { "idle": "adaptive", "stages": { "port_rx": 1, "port_tx": 1, "sidecar": 1, "dpa": 1 } },)";

TEST(External, Case2ReplayIntoPods)
{
	temp_dir d;
	const std::string in = d.file("in.pcap"), out = d.file("out.pcap");
	auto [grc, gout] = run_command({bin_path("dpumesh-pcapgen"), "--out", in, "--messages", "400",
					"--services", "echo", "--body", "0:30000", "--ipv6-share",
					"0.4", "--malformed-share", "0.05", "--seed", "11"});
	ASSERT_EQ(grc, 0) << gout;
	const long long valid = value_of(gout, "summary", "valid_messages");
	ASSERT_GT(valid, 300);
	mesh_node n("c2", std::string(R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "192.168.50.1",
            "ipv6": "fd00:50::1", "control_socket": "@SOCK@" },
  "ports": [ { "name": "uplink", "dev": "net_pcap0", "role": "external" } ],)") +
			    node_json_common + R"(
  "services": [ { "name": "echo", "max_pods": 4 } ]
})",
		    {"--vdev=net_pcap0,rx_pcap=" + in + ",tx_pcap=" + out}, {"--wait-pods", "2"});
	ASSERT_TRUE(n.up) << n.proc->output();
	/* bodies up to 30000 B: RX body slots of 32 KiB */
	std::map<std::string, std::string> env = {{"DPUMESH_TEST_BODY_SLOT", "32768"}};
	auto e1 = n.pod({"echo", n.sock}, env);
	auto e2 = n.pod({"echo", n.sock}, env);
	ASSERT_TRUE(ready(*e1)) << e1->output();
	ASSERT_TRUE(ready(*e2)) << e2->output();
	EXPECT_TRUE(n.wait_sidecar("to_network", valid, 60s)) << n.proc->output();
	/* the incomplete requests' reassemblies time out (500 ms) and are answered 408 */
	std::this_thread::sleep_for(1500ms);
	e1->signal(SIGTERM);
	e2->signal(SIGTERM);
	e1->wait(10s);
	e2->wait(10s);
	std::string fin = n.stop();
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "net_requests"), valid) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "forwarded"), valid) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "to_network"), valid) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "responses_lost"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "pending"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final dpa", "hbufs_in_use"), 0) << fin;
	/* every mbuf and message object came back (malformed frames included) */
	EXPECT_EQ(value_of(fin, "final mempool", "mbufs_in_use"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final mempool", "rx_msgs_in_use"), 0) << fin;

	std::string in_sum, out_sum;
	auto reqs = dump(in, false, &in_sum);
	auto resps = dump(out, true, &out_sum);
	ASSERT_EQ(static_cast<long long>(reqs.size()), valid) << in_sum;
	/* the capture's incomplete requests that brought their first frame are answered 408
	 * when their reassembly times out (docs/overload.md); nothing else is answered that
	 * is not a valid request */
	size_t incomplete = 0;
	for (const auto &[corr, r] : resps) {
		if (reqs.count(corr))
			continue;
		EXPECT_EQ(r.what, "408 incomplete") << corr;
		incomplete++;
	}
	EXPECT_EQ(static_cast<long long>(incomplete),
		  value_of(fin, "final stage=port_rx", "refused_incomplete")) << fin;
	ASSERT_EQ(resps.size(), reqs.size() + incomplete) << out_sum;
	unsigned fragmented = 0, v6 = 0;
	for (const auto &[corr, q] : reqs) {
		auto it = resps.find(corr);
		ASSERT_NE(it, resps.end()) << "no answer to correlation " << corr;
		const dumped &r = it->second;
		EXPECT_EQ(r.what, "200") << corr;
		EXPECT_EQ(r.body, q.body) << corr;
		EXPECT_EQ(r.sum, q.sum) << corr; /* the echo's body is the request's, byte for byte */
		/* answered from the node's address of the requester's family, mesh port */
		bool is_v6 = q.src[0] == '[';
		EXPECT_EQ(r.src, is_v6 ? "[fd00:50::1]:7000" : "192.168.50.1:7000") << corr;
		v6 += is_v6;
		fragmented += q.body > 1400;
	}
	EXPECT_GT(fragmented, 50u);
	EXPECT_GT(v6, 50u);
}

TEST(External, Case1FromPod)
{
	temp_dir d;
	const std::string out = d.file("out.pcap");
	/* the port only sends (net_pcap with a TX capture and no RX file) */
	mesh_node n("c1", std::string(R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.1.0.1",
            "control_socket": "@SOCK@" },
  "ports": [ { "name": "uplink", "dev": "net_pcap0", "role": "external" } ],)") +
			    node_json_common + R"(
  "services": [ { "name": "billing" }, { "name": "client" } ],
  "peers": [ { "name": "n2", "mac": "02:00:00:00:00:02", "ipv4": "10.1.0.2" } ],
  "routes": [ { "service": "billing", "to": "n2" } ],
  "policy": { "timeouts": [ { "service": "billing", "timeout_ms": 300 } ] }
})",
		    {"--vdev=net_pcap0,tx_pcap=" + out});
	ASSERT_TRUE(n.up) << n.proc->output();
	auto c = n.pod({"client", n.sock, "60", "4", "20000"},
		       {{"DPUMESH_CLIENT_SERVICE", "billing"}, {"DPUMESH_TEST_BODY_SLOT", "32768"}});
	ASSERT_EQ(c->wait(60s), 0) << c->output();
	const std::string &co = c->output();
	/* nobody answers on the other side: every request times out, and says so */
	EXPECT_EQ(value_of(co, "DONE", "sent"), 60) << co;
	EXPECT_EQ(value_of(co, "DONE", "mesh_err"), 60) << co;
	EXPECT_EQ(text_of(co, "DONE", "reasons"), "timeout:60") << co;
	EXPECT_EQ(value_of(co, "DONE", "tx_done"), 60) << co; /* every TX buffer came back */
	std::string fin = n.stop();
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "to_peer"), 60) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "timeouts"), 60) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "pending"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final dpa", "hbufs_in_use"), 0) << fin;
	/* bodies (some requests have none) left zero-copy or copied, per the port */
	long long bodies = value_of(fin, "final stage=sidecar", "zero_copy") +
			   value_of(fin, "final stage=sidecar", "copied_out");
	EXPECT_GT(bodies, 40) << fin;
	EXPECT_LE(bodies, 60) << fin;

	std::string sum;
	auto reqs = dump(out, false, &sum);
	ASSERT_EQ(reqs.size(), 60u) << sum;
	std::set<unsigned long long> tokens;
	for (const auto &[corr, q] : reqs) {
		EXPECT_EQ(q.src, "10.1.0.1:7000");
		EXPECT_EQ(q.what.substr(0, 13), "POST billing ") << q.what;
		tokens.insert(corr);
	}
	EXPECT_EQ(tokens.size(), 60u); /* one pending token each */
}


std::string two_node_json(int self, int other, const std::string &iface)
{
	std::string n = std::to_string(self), o = std::to_string(other);
	return std::string(R"({
  "node": { "name": "node)") + n + R"(", "mac": "02:00:00:00:01:0)" + n +
	       R"(", "ipv4": "192.168.60.)" + n + R"(", "control_socket": "@SOCK@" },
  "ports": [ { "name": "uplink", "dev": "net_af_packet)" + n + ",iface=" + iface +
	       R"(", "role": "external" } ],)" + node_json_common + R"(
  "services": [ { "name": "frontend" }, { "name": "billing" }, { "name": "client" } ],
  "peers": [ { "name": "node)" + o + R"(", "mac": "02:00:00:00:01:0)" + o +
	       R"(", "ipv4": "192.168.60.)" + o + R"(" } ],
  "routes": [ { "service": "billing", "to": ")" + (self == 2 ? std::string("local") : "node2") +
	       R"(" } ]
})";
}

TEST(External, TwoNodes)
{
	std::string why = netns_unavailable();
	if (!why.empty())
		GTEST_SKIP() << why;
	const std::string tag = std::to_string(getpid() % 100000);
	veth_pair link("dpm1-" + tag, "dpm2-" + tag);
	ASSERT_TRUE(link.ok);
	/* DPDK 22.11's af_packet names its PACKET_FANOUT group pid ^ ifindex: two processes
	 * started one after the other on the two ends of a new veth pair can pick the same
	 * group, and the second one's probe fails (EINVAL). A new process gets a new pid. */
	auto start = [&](int self, int other) {
		std::unique_ptr<mesh_node> n;
		for (int attempt = 0; attempt < 4; attempt++) {
			n = std::make_unique<mesh_node>(
				"n" + std::to_string(self),
				two_node_json(self, other, "dpm" + std::to_string(self) + "-" + tag),
				std::vector<std::string>{});
			if (n->up || n->proc->output().find("PACKET_FANOUT") == std::string::npos)
				break;
		}
		return n;
	};
	std::unique_ptr<mesh_node> p1 = start(1, 2), p2 = start(2, 1);
	mesh_node &n1 = *p1, &n2 = *p2;
	ASSERT_TRUE(n1.up) << n1.proc->output();
	ASSERT_TRUE(n2.up) << n2.proc->output();
	auto billing = n2.pod({"echo", n2.sock}, {{"DPUMESH_POD_SERVICE", "billing"},
						   {"DPUMESH_TEST_BODY_SLOT", "32768"}});
	ASSERT_TRUE(ready(*billing)) << billing->output();
	/* a pod on node 1 calls billing, which only node 2 serves; bodies up to 20 000 B
	 * (15 frames), checked byte for byte by the client against the echo */
	auto c = n1.pod({"client", n1.sock, "1000", "9", "20000"},
			{{"DPUMESH_CLIENT_SERVICE", "billing"}, {"DPUMESH_TEST_BODY_SLOT", "32768"}});
	ASSERT_EQ(c->wait(120s), 0) << c->output();
	const std::string &co = c->output();
	EXPECT_EQ(value_of(co, "DONE", "sent"), 1000) << co;
	EXPECT_EQ(value_of(co, "DONE", "ok"), 1000) << co;
	EXPECT_EQ(value_of(co, "DONE", "bad"), 0) << co;
	EXPECT_EQ(value_of(co, "DONE", "tx_done"), 1000) << co;
	billing->signal(SIGTERM);
	billing->wait(10s);
	std::string f1 = n1.stop(), f2 = n2.stop();
	EXPECT_EQ(value_of(f1, "final stage=sidecar", "to_peer"), 1000) << f1;
	EXPECT_EQ(value_of(f1, "final stage=sidecar", "net_responses"), 1000) << f1;
	EXPECT_EQ(value_of(f2, "final stage=sidecar", "net_requests"), 1000) << f2;
	EXPECT_EQ(value_of(f2, "final stage=sidecar", "to_network"), 1000) << f2;
	for (const std::string *f : {&f1, &f2}) {
		EXPECT_EQ(value_of(*f, "final mempool", "mbufs_in_use"), 0) << *f;
		EXPECT_EQ(value_of(*f, "final stage=sidecar", "pending"), 0) << *f;
		EXPECT_EQ(value_of(*f, "final dpa", "hbufs_in_use"), 0) << *f;
		EXPECT_EQ(value_of(*f, "final stage=sidecar", "egress_no_mbuf"), 0) << *f;
	}
}

/* ---- a plain UDP socket speaking the wire protocol (docs/wire.md) ---- */

/** Sends one message as numbered fragments of at most `per` message bytes (lib/meshsock). */
void send_message(int s, const sockaddr *to, socklen_t tolen, uint32_t msg_id, uint64_t corr,
		  const std::vector<uint8_t> &l7, const std::vector<uint8_t> &body, uint32_t per)
{
	meshsock::out_message m{wire::frame_kind::request, msg_id, corr, l7, body};
	ASSERT_EQ(meshsock::send_message(s, to, tolen, m, per), 0);
}

struct reply {
	uint64_t corr = 0;
	uint16_t status = 0;
	std::string reason;
	std::vector<uint8_t> body;
};

/** Receives whole messages (fragments in any order) until `want` arrived or 10 s passed. */
std::vector<reply> receive(int s, size_t want)
{
	meshsock::reassembler r(meshsock::reasm_limits{});
	meshsock::receiver rx(16);
	std::vector<reply> out;
	const auto until = std::chrono::steady_clock::now() + 10s;
	while (out.size() < want && std::chrono::steady_clock::now() < until) {
		pollfd p{s, POLLIN, 0};
		if (poll(&p, 1, 100) <= 0)
			continue;
		std::vector<meshsock::message> done;
		if (rx.drain(s, r, 0, &done) < 0)
			break;
		for (meshsock::message &m : done) {
			reply rp;
			rp.corr = m.correlation;
			wire::l7_view v;
			if (wire::l7_decode(m.data.data(), m.l7_len, &v) == wire::l7_error::ok) {
				rp.status = v.status;
				rp.reason = std::string(v.reason);
			}
			rp.body.assign(m.body().begin(), m.body().end());
			out.push_back(std::move(rp));
		}
	}
	return out;
}

TEST(External, UdpSocketClient)
{
	std::string why = netns_unavailable();
	if (!why.empty())
		GTEST_SKIP() << why;
	const std::string tag = std::to_string(getpid() % 100000);
	const std::string ns = "dpmu-" + tag, dp_if = "dpmu-" + tag, cl_if = "dpmv-" + tag;
	veth_pair link(dp_if, cl_if, ns);
	ASSERT_TRUE(link.ok);
	/* the client's side: addresses, and the node's MAC as a static neighbour (dpumesh
	 * answers mesh traffic only, not ARP or neighbour discovery) */
	ASSERT_TRUE(ip({"-n", ns, "addr", "add", "192.168.77.2/24", "dev", cl_if}));
	ASSERT_TRUE(ip({"-n", ns, "addr", "add", "fd00:77::2/64", "dev", cl_if, "nodad"}));
	ASSERT_TRUE(ip({"-n", ns, "neigh", "add", "192.168.77.1", "lladdr", "02:00:00:00:77:01",
			"dev", cl_if}));
	ASSERT_TRUE(ip({"-n", ns, "neigh", "add", "fd00:77::1", "lladdr", "02:00:00:00:77:01",
			"dev", cl_if}));
	mesh_node n("udp", std::string(R"({
  "node": { "name": "n1", "mac": "02:00:00:00:77:01", "ipv4": "192.168.77.1",
            "ipv6": "fd00:77::1", "control_socket": "@SOCK@" },
  "ports": [ { "name": "uplink", "dev": "net_af_packet0,iface=)") + dp_if +
			     R"(", "role": "external" } ],)" + node_json_common + R"(
  "services": [ { "name": "echo" } ]
})",
		    {});
	ASSERT_TRUE(n.up) << n.proc->output();
	auto e = n.pod({"echo", n.sock}, {{"DPUMESH_TEST_BODY_SLOT", "32768"}});
	ASSERT_TRUE(ready(*e)) << e->output();

	std::mt19937 rng(5);
	const uint32_t sizes[] = {0, 1, 100, 1399, 1400, 5000, 20000};
	for (int family : {AF_INET, AF_INET6}) {
		SCOPED_TRACE(family == AF_INET ? "IPv4" : "IPv6");
		in_netns(ns, [&] {
			int s = socket(family, SOCK_DGRAM | SOCK_NONBLOCK, 0);
			ASSERT_GE(s, 0);
			sockaddr_storage to{};
			socklen_t tolen;
			if (family == AF_INET) {
				auto *a = reinterpret_cast<sockaddr_in *>(&to);
				a->sin_family = AF_INET;
				a->sin_port = htons(7000);
				inet_pton(AF_INET, "192.168.77.1", &a->sin_addr);
				tolen = sizeof(*a);
			} else {
				auto *a = reinterpret_cast<sockaddr_in6 *>(&to);
				a->sin6_family = AF_INET6;
				a->sin6_port = htons(7000);
				inet_pton(AF_INET6, "fd00:77::1", &a->sin6_addr);
				tolen = sizeof(*a);
			}
			std::map<uint64_t, std::vector<uint8_t>> sent;
			uint32_t id = 0;
			for (uint32_t size : sizes) {
				std::vector<uint8_t> body(size);
				for (auto &b : body)
					b = static_cast<uint8_t>(rng());
				uint8_t l7[256];
				wire::l7_writer w(l7, sizeof(l7));
				w.request("echo", "POST", "/udp", 2000);
				size_t l7_len = w.finish();
				uint64_t corr = 0xabc00000ull + (family << 8) + id;
				send_message(s, reinterpret_cast<sockaddr *>(&to), tolen, ++id, corr,
					     std::vector<uint8_t>(l7, l7 + l7_len), body, 1400);
				sent[corr] = body;
			}
			/* and one for a service nobody serves: the mesh answers 404 itself */
			uint8_t l7[256];
			wire::l7_writer w(l7, sizeof(l7));
			w.request("nosuch", "GET", "/", 2000);
			size_t l7_len = w.finish();
			send_message(s, reinterpret_cast<sockaddr *>(&to), tolen, ++id, 0x404,
				     std::vector<uint8_t>(l7, l7 + l7_len), {}, 1400);
			std::vector<reply> got = receive(s, sent.size() + 1);
			ASSERT_EQ(got.size(), sent.size() + 1);
			for (const reply &r : got) {
				if (r.corr == 0x404) {
					EXPECT_EQ(r.status, 404);
					EXPECT_EQ(r.reason, "no_route");
					continue;
				}
				auto it = sent.find(r.corr);
				ASSERT_NE(it, sent.end()) << r.corr;
				EXPECT_EQ(r.status, 200);
				EXPECT_EQ(r.body, it->second) << "body of " << it->second.size() << " B";
				sent.erase(it);
			}
			close(s);
		});
	}
	e->signal(SIGTERM);
	e->wait(10s);
	std::string fin = n.stop();
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "net_requests"), 16) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "to_network"), 14) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "no_route"), 2) << fin;
}

} // namespace
