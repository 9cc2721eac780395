// SPDX-License-Identifier: BSD-3-Clause
// Fairness between network peers: a light peer beside three flooding ones on the same port gets every answer, soon;
// and beside one that sends fragments of messages that never complete, which holds no more than its share of the pool.
//
// An in-process node with one worker; its external port is made from rings (the test is the
// network). Three peers flood requests the sidecar must work for (an RS256 JWT whose
// signature no configured key made: each costs a signature check, then 401), together
// about three times what the node can check; a fourth, light peer asks an echo pod 500
// times a second. The node schedules the network's requests by source
// (docs/overload.md "Fairness between network peers"), so the test asserts that
//   - the light peer got a 200 for every request, at its rate, and soon (its p50 a quarter
//     of the floods' checked requests' at most: with one shared backlog they were alike);
//   - every flooding request got exactly one answer (401, or 503 overloaded beyond its
//     source's share), and the floods were refused beyond their share;
//   - nothing is left behind (pending requests, header buffers, messages).
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <rte_ring.h>
#include <rte_udp.h>

#include "dpumesh/wire/frame.h"
#include "dpumesh/wire/l7.h"
#include "eal_env.h"
#include "inproc_node.h"
#include "jwt_signer.h"
#include "output.h"
#include "ring_port.h"

using namespace dpumesh;
using namespace dpumesh::test;
using namespace std::chrono_literals;

namespace {

const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x02};
constexpr unsigned nb_floods = 3;
constexpr uint16_t flood_port = 41000; /* flood f sends from 41000 + f */
constexpr uint16_t light_port = 42000;

std::string json_escape(const std::string &s)
{
	std::string o;
	for (char c : s)
		o += c == '\n' ? std::string("\\n") : c == '"' ? std::string("\\\"") : std::string(1, c);
	return o;
}

std::string fair_config(const std::string &dev, const std::string &pem)
{
	return R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.0.0.1",
            "control_socket": "@SOCK@" },
  "lcores": { "idle": "adaptive", "stages": { "port_rx": 1, "port_tx": 1, "sidecar": 1, "dpa": 1 } },
  "ports": [ { "name": "net", "dev": ")" + dev + R"(", "role": "external" } ],
  "services": [ { "name": "echo", "max_pods": 4 }, { "name": "gone", "max_pods": 4 },
                { "name": "client", "max_pods": 4 } ],
  "policy": {
    "jwt": { "issuer": "fair", "audiences": [ "mesh" ],
             "keys": [ { "kid": "r1", "alg": "RS256", "pem": ")" + json_escape(pem) + R"(" } ] },
    "rbac": [ { "service": "gone", "default": "allow", "require_jwt": true, "rules": [] } ] }
})";
}

/** A request's L7 header: service, method, path and the extra fields. */
std::vector<uint8_t> l7_request(const char *service,
				const std::vector<std::pair<std::string, std::string>> &fields)
{
	std::vector<uint8_t> l7(2048);
	wire::l7_writer w(l7.data(), l7.size());
	w.request(service, "POST", "/fair");
	for (const auto &[k, v] : fields)
		w.field(k, v);
	const size_t len = w.finish();
	l7.resize(len);
	return l7;
}

struct peer_answers {
	uint64_t total = 0;
	std::map<uint16_t, uint64_t> by_status;
};

} // namespace

TEST(NetFair, ALightPeerIsAnsweredAtItsRateBesideThreeFloodingPeers)
{
	auto key = signing_key::rsa(2048);
	ring_port port("fair", 1);
	inproc_node n("fair", fair_config(port.name, key->public_pem()));
	ASSERT_TRUE(n.up) << n.error;
	auto echo = n.pod({"echo", n.sock}, {{"DPUMESH_POD_SERVICE", "echo"}, {"DPUMESH_POD_NOSUM", "1"}});
	ASSERT_TRUE(echo->wait_output([](const std::string &o) {
		return o.find("READY") != std::string::npos;
	}, 20s)) << echo->output();

	/* the floods' token: the right kid and claims, and the node's key's signature of other
	 * claims. Every check is a whole RSA verification that fails at the end (another key's
	 * signature is refused at once half the time, when it is larger than this modulus:
	 * then the node kept up with the floods and there was nothing to share) */
	const std::string hdr = R"({"alg":"RS256","kid":"r1"})";
	const std::string signed_other = make_jwt(*key, hdr, R"({"iss":"fair","aud":"mesh","sub":"other","exp":2000000000})");
	const std::string bad = policy::base64url_encode(hdr) + "." +
				policy::base64url_encode(
					R"({"iss":"fair","aud":"mesh","sub":"flood","exp":2000000000})") +
				signed_other.substr(signed_other.rfind('.'));
	const std::vector<uint8_t> flood_l7 = l7_request("gone", {{"authorization", "Bearer " + bad}});
	const std::vector<uint8_t> light_l7 = l7_request("echo", {});
	ASSERT_FALSE(flood_l7.empty());
	ASSERT_FALSE(light_l7.empty());

	uint64_t flood_sent[nb_floods] = {}, light_sent = 0, msg_id = 1;
	peer_answers flood_got[nb_floods], light_got;
	std::vector<std::chrono::steady_clock::time_point> light_at, flood_at[nb_floods];
	std::vector<double> light_us, flood_checked_us;
	unsigned unknown = 0;
	const auto take_answers = [&] {
		rte_mbuf *m;
		while (port.take(0, &m)) {
			const auto *udp = rte_pktmbuf_mtod_offset(m, const rte_udp_hdr *, 14 + 20);
			const uint16_t to = rte_be_to_cpu_16(udp->dst_port);
			wire::parsed_frame pf;
			wire::l7_view v;
			std::string l7;
			if (wire::parse_frame(m, udp->dst_port, 1 << 20, &pf) == wire::wire_drop::none) {
				l7.resize(pf.l7_len);
				const void *at = rte_pktmbuf_read(m, pf.payload_off, pf.l7_len, l7.data());
				if (at && at != l7.data())
					std::memcpy(l7.data(), at, pf.l7_len);
			}
			rte_pktmbuf_free(m);
			if (l7.empty() || wire::l7_decode(reinterpret_cast<const uint8_t *>(l7.data()),
							  l7.size(), &v) != wire::l7_error::ok) {
				unknown++;
				continue;
			}
			peer_answers *p = nullptr;
			if (to == light_port) {
				p = &light_got;
				if (pf.correlation < light_at.size())
					light_us.push_back(std::chrono::duration<double, std::micro>(
								   std::chrono::steady_clock::now() -
								   light_at[pf.correlation])
								   .count());
			} else if (to >= flood_port && to < flood_port + nb_floods) {
				const unsigned f = to - flood_port;
				p = &flood_got[f];
				if (v.status == 401 && pf.correlation < flood_at[f].size())
					flood_checked_us.push_back(std::chrono::duration<double, std::micro>(
									   std::chrono::steady_clock::now() -
									   flood_at[f][pf.correlation])
									   .count());
			} else {
				unknown++;
				continue;
			}
			p->total++;
			p->by_status[v.status]++;
		}
	};

	/* 3 s: the floods ~100 requests a millisecond together (about ten times what the node
	 * checks), the light peer one every 2 ms */
	const auto start = std::chrono::steady_clock::now();
	auto next_light = start;
	while (std::chrono::steady_clock::now() - start < 3s) {
		for (unsigned k = 0; k < 60; k++) {
			const unsigned f = k % nb_floods;
			flood_at[f].push_back(std::chrono::steady_clock::now());
			ASSERT_TRUE(port.send(0, RTE_IPV4(10, 0, 1, 11 + f), flood_port + f, peer_mac,
					      wire::frame_kind::request, flood_sent[f]++, flood_l7.data(),
					      static_cast<uint16_t>(flood_l7.size()), "",
					      static_cast<uint32_t>(msg_id++)));
		}
		const auto now = std::chrono::steady_clock::now();
		if (now >= next_light) {
			light_at.push_back(now);
			ASSERT_TRUE(port.send(0, RTE_IPV4(10, 0, 2, 20), light_port, peer_mac,
					      wire::frame_kind::request, light_sent++, light_l7.data(),
					      static_cast<uint16_t>(light_l7.size()), "light",
					      static_cast<uint32_t>(msg_id++)));
			next_light += 2ms;
		}
		take_answers();
		std::this_thread::sleep_for(500us);
	}
	/* every answer: the floods' backlog drains at the node's pace */
	uint64_t flood_total = 0;
	for (unsigned f = 0; f < nb_floods; f++)
		flood_total += flood_sent[f];
	const auto answered = [&] {
		uint64_t a = light_got.total;
		for (unsigned f = 0; f < nb_floods; f++)
			a += flood_got[f].total;
		return a;
	};
	for (auto end = std::chrono::steady_clock::now() + 20s;
	     answered() < flood_total + light_sent && std::chrono::steady_clock::now() < end;
	     std::this_thread::sleep_for(1ms))
		take_answers();

	/* the light peer: every request answered by the pod, at its rate, soon */
	EXPECT_GT(light_sent, 1000u); /* 1,500 in 3 s, fewer if the box stalls the test */
	EXPECT_EQ(light_got.total, light_sent);
	EXPECT_EQ(light_got.by_status[200], light_sent);
	std::sort(light_us.begin(), light_us.end());
	std::sort(flood_checked_us.begin(), flood_checked_us.end());
	const auto pct_of = [](const std::vector<double> &v, double q) {
		return v.empty() ? -1.0 : v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
	};
	const auto pct = [&](double q) { return pct_of(light_us, q); };
	const double flood_p50 = pct_of(flood_checked_us, 0.5);
	/* behind a shared backlog of the floods' requests the light peer waited as long as they
	 * did (~1,000 signature checks: p50 196 ms against their 198 ms, measured with a FIFO);
	 * in its own turn, for one of each flood's at most, while each flood's checked requests
	 * wait behind their own share. In the same run, so a box that starves the worker slows
	 * both alike */
	const control::snapshot snap = n.snapshot();
	const uint64_t share_refused = snap.sidecar_value("net_share_refused");
	/* the worker lcore's wait for a CPU (the box's other work), which latency includes */
	double runq_pct = 0;
	for (const auto &l : snap.lcore_cpu)
		if (l.wall_ns)
			runq_pct = std::max(runq_pct, 100.0 * double(l.runq_ns) / double(l.wall_ns));
	/* a quarter of the floods' p50 on a box that gives the worker its CPU; where it waited
	 * for one more than a third of its time, the light peer's answers wait for the CPU too
	 * and its p50 is a third of theirs at best (seen: 22.5 ms against 77 ms with the
	 * worker 55% of its time on the run queue, 2026-12-02): half of theirs then, which a
	 * shared FIFO (the same p50 for both) still fails */
	const double factor = runq_pct > 33.0 ? 2.0 : 4.0;
	EXPECT_GT(flood_p50, 0.0);
	EXPECT_LT(factor * pct(0.5), flood_p50)
		<< "light peer's p50 " << pct(0.5) << " us, the floods' checked requests' "
		<< flood_p50 << ", the worker on the run queue " << runq_pct << "% of its time";
	std::printf("light peer: %llu sent, %llu answered 200, latency p50 %.0f us p99 %.0f us; "
		    "floods: %llu sent, checked (401) p50 %.0f us, net_share_refused %llu; worker "
		    "lcore waited for a CPU %.1f%% of its time\n",
		    static_cast<unsigned long long>(light_sent),
		    static_cast<unsigned long long>(light_got.by_status[200]), pct(0.5), pct(0.99),
		    static_cast<unsigned long long>(flood_total), flood_p50,
		    static_cast<unsigned long long>(share_refused), runq_pct);

	/* the floods: one answer each, 401 after the check or 503 beyond their share */
	for (unsigned f = 0; f < nb_floods; f++) {
		EXPECT_EQ(flood_got[f].total, flood_sent[f]) << "flood " << f;
		EXPECT_EQ(flood_got[f].by_status[401] + flood_got[f].by_status[503], flood_sent[f])
			<< "flood " << f;
		EXPECT_GT(flood_got[f].by_status[401], 0u) << "flood " << f;
	}
	EXPECT_EQ(unknown, 0u);
	/* they offered more than the node checks: refused beyond their share, at once */
	EXPECT_GT(share_refused, 0u);

	echo->signal(SIGTERM);
	echo->wait(10s);
	const control::snapshot fin = n.stop();
	EXPECT_EQ(fin.pending, 0u);
	EXPECT_EQ(fin.hbufs_in_use, 0u);
	EXPECT_EQ(fin.sidecar_value("responses_lost"), 0u);
	EXPECT_EQ(n.msgs_in_use, 0u);
}

/* One source sends only the later frames of requests of 28 frames (none ever completes), as
 * fast as a 64-frame RX ring takes them, each frame an mbuf of the node's own packet pool as
 * a NIC's RX fills it; beside it a light peer asks a service with no pod (the node answers
 * it itself, 503) every 10 ms. The reassembler holds at most its share of the pool (a
 * quarter; half of it a source): the flood never finds the pool empty, and every light
 * request is answered. Before that bound the reassembler held every mbuf (max_mbufs
 * 32768): the flood found the pool empty 1352 times in its 1.5 s, where a NIC's RX could
 * not have refilled (the light peer's answers still came here, from the lcore's mempool
 * cache). */
TEST(NetFair, ASourceOfFragmentsThatNeverCompleteLeavesThePoolToOthers)
{
	ring_port port("frag", 1);
	inproc_node n("frag", R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.0.0.1",
            "control_socket": "@SOCK@" },
  "mempool": { "mbufs": 1023, "cache": 32 },
  "lcores": { "idle": "adaptive", "stages": { "port_rx": 1, "port_tx": 1, "sidecar": 1, "dpa": 1 } },
  "ports": [ { "name": "net", "dev": ")" + port.name + R"(", "role": "external" } ],
  "services": [ { "name": "nopods", "max_pods": 4 } ]
})");
	ASSERT_TRUE(n.up) << n.error;
	rte_mempool *pkt = rte_mempool_lookup("dpumesh_pkt");
	ASSERT_NE(pkt, nullptr);
	const std::vector<uint8_t> l7 = l7_request("nopods", {});
	const std::string body(40000, 'f');
	wire::link_addr a{};
	std::memcpy(a.src_mac, peer_mac, 6);
	std::memcpy(a.dst_mac, port.node_mac, 6);
	a.src = wire::endpoint::from_v4(rte_cpu_to_be_32(RTE_IPV4(10, 0, 3, 9)), 43000);
	a.dst = wire::endpoint::from_v4(rte_cpu_to_be_32(port.node_ip), port.mesh_port);

	uint64_t flood_msgs = 0, dry = 0, light_sent = 0, light_got = 0, other = 0;
	const auto take_answers = [&] {
		rte_mbuf *m;
		while (port.take(0, &m)) {
			const auto *udp = rte_pktmbuf_mtod_offset(m, const rte_udp_hdr *, 14 + 20);
			if (rte_be_to_cpu_16(udp->dst_port) == light_port)
				light_got++;
			else
				other++;
			rte_pktmbuf_free(m);
		}
	};
	const auto start = std::chrono::steady_clock::now();
	auto next_light = start;
	uint32_t msg_id = 1;
	/* 1.5 s: three reassembly timeouts */
	while (std::chrono::steady_clock::now() - start < 1500ms) {
		rte_mbuf *f[32];
		const uint16_t nb = wire::fragment(a, wire::frame_kind::request, msg_id, msg_id,
						   l7.data(), static_cast<uint16_t>(l7.size()),
						   wire::body_ref{reinterpret_cast<const uint8_t *>(body.data()),
								  static_cast<uint32_t>(body.size())},
						   1500, pkt, f, 32);
		if (nb == 0) {
			dry++; /* RX would find no mbuf to refill with */
			std::this_thread::sleep_for(1ms);
		} else {
			ASSERT_EQ(nb, 28u);
			msg_id++;
			flood_msgs++;
			rte_pktmbuf_free(f[0]);
			DPUMESH_TSAN_PMD_GIVES(f + 1, nb - 1u);
			for (uint16_t i = 1; i < nb; i++)
				while (rte_ring_count(port.rx[0]) >= 64 ||
				       rte_ring_enqueue(port.rx[0], f[i]) != 0)
					std::this_thread::sleep_for(50us);
		}
		if (std::chrono::steady_clock::now() >= next_light) {
			ASSERT_TRUE(port.send(0, RTE_IPV4(10, 0, 2, 20), light_port, peer_mac,
					      wire::frame_kind::request, light_sent++, l7.data(),
					      static_cast<uint16_t>(l7.size()), "light", msg_id++));
			next_light += 10ms;
		}
		take_answers();
	}
	for (auto end = std::chrono::steady_clock::now() + 5s;
	     light_got < light_sent && std::chrono::steady_clock::now() < end;
	     std::this_thread::sleep_for(1ms))
		take_answers();

	std::printf("flood: %llu messages of 27 later frames, the pool empty %llu times; light "
		    "peer: %llu sent, %llu answered\n",
		    static_cast<unsigned long long>(flood_msgs), static_cast<unsigned long long>(dry),
		    static_cast<unsigned long long>(light_sent),
		    static_cast<unsigned long long>(light_got));
	EXPECT_GT(flood_msgs, 100u) << "the flood ran";
	EXPECT_EQ(dry, 0u) << "the flood emptied the packet pool";
	EXPECT_GT(light_sent, 50u);
	EXPECT_EQ(light_got, light_sent);
	EXPECT_EQ(other, 0u) << "a flooded request without its first frame is not answered";
	const control::snapshot fin = n.stop();
	EXPECT_GT(fin.rx.drops[static_cast<size_t>(wire::wire_drop::source_limit)], 0u);
	EXPECT_EQ(fin.rx.drops[static_cast<size_t>(wire::wire_drop::memory_limit)], 0u);
	EXPECT_EQ(fin.pending, 0u);
	EXPECT_EQ(n.msgs_in_use, 0u);
}

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("netfair", {}, 512));
	return RUN_ALL_TESTS();
}
