// SPDX-License-Identifier: BSD-3-Clause
// Two run-to-completion workers (`lcores.workers` 2) on a 2-core box: an in-process node whose
// two worker lcores may share a core (EAL --lcores 0@0,1@1,2@1, adaptive idle), real pod
// processes, and a two-queue port made from rings that the test feeds and drains as the
// network. Each worker has its own RX queue, reassembler, sidecar shard and DPA thread; the
// cases check what sharding must not break and what it must do:
//
//   Case 3 across shards: a client and echo pods owned by different shards, byte-exact,
//     per-SQ order kept, commands and responses handed between shards;
//   Case 2, 64 network flows: spread over the two RX queues by the Toeplitz hash a NIC's RSS
//     uses, balanced within 20% per shard, every flow's answers in order;
//   Case 1 with the answer on the other shard: a client pod's requests leave for a peer (the
//     test), the peer answers on the other RX queue, the answer finds its request's shard;
//   a rate limit of R/s is R/s for the node, not workers x R.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <chrono>
#include <functional>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <rte_byteorder.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_thash.h>
#include <rte_udp.h>

#include "dpumesh/common/fnv.h"
#include "dpumesh/sidecar/sidecar.h"
#include "dpumesh/wire/frame.h"
#include "dpumesh/wire/l7.h"
#include "eal_env.h"
#include "inproc_node.h"
#include "ring_port.h"
#include "output.h"

using namespace dpumesh;
using namespace dpumesh::test;
using namespace std::chrono_literals;

namespace {

constexpr uint16_t mesh_port = 7000;
const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x02};
constexpr uint32_t node_ip = RTE_IPV4(10, 0, 0, 1);
constexpr uint32_t peer_ip = RTE_IPV4(10, 0, 0, 2);

/** The 40-byte Toeplitz key NICs use by default (the RSS specification's example key). */
const uint8_t rss_key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
	0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
	0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

/** A frame the node sent, single-frame messages only. */
struct sent_frame {
	int queue;
	wire::parsed_frame pf;
	wire::l7_view view;
	std::string l7, body;
	uint16_t dport;
};

/** Takes what the node sent on both TX queues, until `want` frames or the time is up. */
std::vector<sent_frame> collect(ring_port &p, size_t want, std::chrono::seconds limit,
				const std::function<void(const sent_frame &)> &each = {})
{
	std::vector<sent_frame> out;
	const auto end = std::chrono::steady_clock::now() + limit;
	do {
		bool any = false;
		for (int q = 0; q < 2; q++) {
			rte_mbuf *m;
			while (p.take(q, &m)) {
				any = true;
				sent_frame s{};
				s.queue = q;
				const auto *udp = rte_pktmbuf_mtod_offset(m, const rte_udp_hdr *, 14 + 20);
				s.dport = rte_be_to_cpu_16(udp->dst_port);
				EXPECT_EQ(wire::parse_frame(m, udp->dst_port, 1 << 20, &s.pf),
					  wire::wire_drop::none);
				EXPECT_EQ(s.pf.frag_len, s.pf.msg_len) << "single-frame messages only";
				/* the body may be a second (zero-copy) segment */
				std::string pl(s.pf.frag_len, '\0');
				const void *at = rte_pktmbuf_read(m, s.pf.payload_off, s.pf.frag_len, pl.data());
				if (at != pl.data())
					std::memcpy(pl.data(), at, s.pf.frag_len);
				s.l7 = pl.substr(0, s.pf.l7_len);
				s.body = pl.substr(s.pf.l7_len);
				rte_pktmbuf_free(m);
				EXPECT_EQ(wire::l7_decode(reinterpret_cast<const uint8_t *>(s.l7.data()),
							  s.l7.size(), &s.view),
					  wire::l7_error::ok);
				if (each)
					each(s);
				out.push_back(std::move(s));
			}
		}
		if (!any && out.size() < want)
			std::this_thread::sleep_for(200us);
	} while (out.size() < want && std::chrono::steady_clock::now() < end);
	return out;
}

std::string field_of(const wire::l7_view &v, const char *name)
{
	std::string_view s;
	return v.find(name, &s) ? std::string(s) : std::string();
}

/** The node: two workers, two DPA threads, a two-queue external port, a peer. */
std::string shards_config(const std::string &dev, const std::string &policy = "")
{
	return R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.0.0.1",
            "control_socket": "@SOCK@" },
  "lcores": { "idle": "adaptive", "workers": 2 },
  "dpa": { "threads": 2 },
  "ports": [ { "name": "net", "dev": ")" + dev +
	       R"(", "role": "external", "rx_queues": 2, "tx_queues": 2 } ],
  "pools": { "tx_body": { "slots": 256, "slot_size": 8192 },
             "rx_body": { "slots": 256, "slot_size": 8192 } },
  "services": [ { "name": "echo", "max_pods": 4 }, { "name": "client", "max_pods": 4 },
                { "name": "billing" } ],
  "peers": [ { "name": "n2", "mac": "02:00:00:00:00:02", "ipv4": "10.0.0.2" } ],
  "routes": [ { "service": "billing", "to": "n2" } ])" +
	       (policy.empty() ? "" : ",\n  \"policy\": " + policy) + R"(
})";
}

bool ready(subprocess &p)
{
	return p.wait_output([](const std::string &o) { return o.find("READY") != std::string::npos; },
			     20s);
}

const std::map<std::string, std::string> slot = {{"DPUMESH_TEST_BODY_SLOT", "8192"}};

std::vector<sidecar::stage *> shards_of(const inproc_node &n) { return n.control().shards(); }

/** Waits (up to 2 s) until the hbufs are at rest: zero-copy frames the test freed last
 *  complete their senders' TX on the shard's next poll. */
void settle(const inproc_node &n)
{
	for (int i = 0; i < 200 && n.snapshot().hbufs_in_use != 0; i++)
		std::this_thread::sleep_for(10ms);
}

/** After stop(): nothing pending, every hbuf, mbuf and message back. */
void expect_idle(const control::snapshot &fin, const inproc_node &n)
{
	EXPECT_EQ(fin.pending, 0u);
	EXPECT_EQ(fin.hbufs_in_use, 0u);
	EXPECT_EQ(fin.sidecar_value("handoff_full"), 0u);
	EXPECT_EQ(n.msgs_in_use, 0u);
}

} // namespace

TEST(Shards, Case3AcrossShardsKeepsBytesAndOrder)
{
	ring_port port("shc3");
	inproc_node n("c3", shards_config(port.name));
	ASSERT_TRUE(n.up) << n.error;
	ASSERT_EQ(shards_of(n).size(), 2u);
	/* `show lcores` (control::lcores): each worker lcore, its RX queue, shard, DPA thread */
	std::vector<std::string> placed;
	for (const control::lcore_view &l : control::lcores(n.control()))
		if (l.worker >= 0)
			placed.push_back(std::to_string(l.id) + " " + l.placement);
	ASSERT_EQ(placed.size(), 2u);
	EXPECT_EQ(placed[0], "1 rx=net:0 shard=0 dpa=0");
	EXPECT_EQ(placed[1], "2 rx=net:1 shard=1 dpa=1");
	/* pod ids 1.. go to DPA threads id % 2: echo 1 and the client 3 on shard 1, echo 2 on 0 */
	auto e1 = n.pod({"echo", n.sock}, slot);
	ASSERT_TRUE(ready(*e1)) << e1->output();
	auto e2 = n.pod({"echo", n.sock}, slot);
	ASSERT_TRUE(ready(*e2)) << e2->output();
	auto c = n.pod({"client", n.sock, "3000", "7", "4096"}, slot);
	ASSERT_EQ(c->wait(120s), 0) << c->output();
	const std::string out = c->output();
	EXPECT_EQ(value_of(out, "DONE", "ok"), 3000) << out;
	EXPECT_EQ(value_of(out, "DONE", "bad"), 0) << out;
	EXPECT_EQ(value_of(out, "DONE", "mesh_err"), 0) << out;
	EXPECT_EQ(value_of(out, "DONE", "order_bad"), 0) << out;
	EXPECT_EQ(value_of(out, "DONE", "tx_done"), 3000) << out;
	/* both echo pods served: half of the requests crossed shards, and their answers back */
	const std::string pods = text_of(out, "DONE", "pods");
	unsigned a = 0, b = 0, ida = 0, idb = 0;
	ASSERT_EQ(std::sscanf(pods.c_str(), "%u:%u,%u:%u", &ida, &a, &idb, &b), 4) << out;
	EXPECT_GT(a, 1000u);
	EXPECT_GT(b, 1000u);
	uint64_t in = 0, forwarded = 0;
	for (sidecar::stage *s : shards_of(n)) {
		in += s->stats().handoff_in.get();
		forwarded += s->stats().forwarded.get();
	}
	EXPECT_EQ(forwarded, 3000u);
	EXPECT_GE(in, 1000u); /* commands to the other shard's DPA thread, responses back */
	e1->signal(SIGKILL);
	e2->signal(SIGKILL);
	e1->wait(5s);
	e2->wait(5s);
	settle(n);
	auto fin = n.stop();
	EXPECT_EQ(fin.sidecar_value("answered"), 3000u);
	EXPECT_EQ(fin.sidecar_value("handoff_in"), fin.sidecar_value("handoff_out"));
	expect_idle(fin, n);
}

TEST(Shards, SixtyFourNetworkFlowsBalanceAndKeepOrder)
{
	ring_port port("shc2");
	inproc_node n("c2", shards_config(port.name));
	ASSERT_TRUE(n.up) << n.error;
	/* one echo pod: every flow's requests reach it in order, half of them across shards */
	auto e = n.pod({"echo", n.sock}, slot);
	ASSERT_TRUE(ready(*e)) << e->output();

	/* 64 flows (distinct source ports), spread over the 2 RX queues as a NIC's RSS does it:
	 * Toeplitz hash of the 4-tuple with the usual key, redirection table entry i -> i % 2 */
	/* a wave: 16 flows x 3 back-to-back requests = 48 outstanding, under the echo pod's 64
	 * RX slots (order is promised while the destination has room) */
	constexpr unsigned flows = 64, per_round = 3, rounds = 16, wave = 16;
	const uint32_t client_ip = RTE_IPV4(10, 0, 0, 9);
	int queue_of[flows];
	unsigned per_queue[2] = {};
	for (unsigned f = 0; f < flows; f++) {
		rte_ipv4_tuple t{};
		t.src_addr = client_ip;
		t.dst_addr = node_ip;
		t.sport = static_cast<uint16_t>(40000 + f);
		t.dport = mesh_port;
		uint32_t h = rte_softrss(reinterpret_cast<uint32_t *>(&t), RTE_THASH_V4_L4_LEN,
					 rss_key);
		queue_of[f] = static_cast<int>(h % 2);
		per_queue[queue_of[f]]++;
	}
	ASSERT_GT(per_queue[0], 0u);
	ASSERT_GT(per_queue[1], 0u);

	long long next_seq[flows] = {}, got_seq[flows];
	std::fill(std::begin(got_seq), std::end(got_seq), -1);
	unsigned out_of_order = 0, bad = 0, msg_id = 1;
	for (unsigned r = 0; r < rounds * (flows / wave); r++) {
		const unsigned first = (r % (flows / wave)) * wave;
		for (unsigned f = first; f < first + wave; f++)
			for (unsigned k = 0; k < per_round; k++) {
				const long long seq = next_seq[f]++;
				uint8_t l7[256];
				wire::l7_writer w(l7, sizeof(l7));
				w.request("echo", "POST", "/flow");
				const std::string xs = "f" + std::to_string(f) + "." + std::to_string(seq);
				w.field("x-seq", xs);
				const uint16_t len = static_cast<uint16_t>(w.finish());
				ASSERT_GT(len, 0u);
				const std::string body = "flow " + std::to_string(f) + " message " +
							 std::to_string(seq);
				ASSERT_TRUE(port.send(queue_of[f], client_ip,
						      static_cast<uint16_t>(40000 + f), peer_mac,
						      wire::frame_kind::request,
						      (uint64_t(f) << 32) | uint64_t(seq), l7, len, body,
						      msg_id++));
			}
		auto got = collect(port, wave * per_round, 30s, [&](const sent_frame &s) {
			const unsigned f = s.dport - 40000;
			const long long seq = static_cast<long long>(s.pf.correlation & 0xffffffff);
			if (f >= flows || (s.pf.correlation >> 32) != f || s.view.status != 200 ||
			    s.body != "flow " + std::to_string(f) + " message " + std::to_string(seq) ||
			    field_of(s.view, "x-order") != "ok") {
				if (bad++ == 0)
					ADD_FAILURE() << "first bad answer: port " << s.dport << " corr "
						      << s.pf.correlation << " status " << s.view.status
						      << " body \"" << s.body << "\" x-order "
						      << field_of(s.view, "x-order") << " reason "
						      << field_of(s.view, ":reason");
				return;
			}
			if (seq <= got_seq[f])
				out_of_order++;
			got_seq[f] = seq;
		});
		if (got.size() != wave * per_round) { /* what the node did with the frames */
			const control::snapshot snap = n.snapshot();
			for (const auto &x : snap.sidecar)
				if (x.value)
					std::printf("  sidecar %s %" PRIu64 "\n", x.name, x.value);
			for (const port::rx_ctx *rx : n.control().rx())
				std::printf("  port_rx frames %" PRIu64 " accepted %" PRIu64 "\n",
					    rx->stats.frames.get(), rx->stats.accepted.get());
			std::printf("  test rings: rx %u %u, tx %u %u\n", rte_ring_count(port.rx[0]),
				    rte_ring_count(port.rx[1]), rte_ring_count(port.tx[0]),
				    rte_ring_count(port.tx[1]));
		}
		ASSERT_EQ(got.size(), wave * per_round) << "wave " << r;
	}
	EXPECT_EQ(bad, 0u);
	EXPECT_EQ(out_of_order, 0u);

	/* each worker took its queue's flows: messages per shard within 20% of each other */
	const auto sh = shards_of(n);
	ASSERT_EQ(sh.size(), 2u);
	const uint64_t m0 = sh[0]->stats().net_requests.get(), m1 = sh[1]->stats().net_requests.get();
	EXPECT_EQ(m0 + m1, uint64_t(flows) * per_round * rounds);
	EXPECT_EQ(m0, uint64_t(per_queue[0]) * per_round * rounds);
	EXPECT_EQ(m1, uint64_t(per_queue[1]) * per_round * rounds);
	const double ratio = double(std::max(m0, m1)) / double(std::max<uint64_t>(1, std::min(m0, m1)));
	EXPECT_LE(ratio, 1.2) << "shard 0: " << m0 << ", shard 1: " << m1;
	std::printf("64 flows: shard 0 took %llu messages, shard 1 %llu (max/min %.3f)\n",
		    static_cast<unsigned long long>(m0), static_cast<unsigned long long>(m1), ratio);

	e->signal(SIGKILL);
	e->wait(5s);
	settle(n);
	auto fin = n.stop();
	EXPECT_EQ(fin.sidecar_value("to_network"), uint64_t(flows) * per_round * rounds);
	/* order is promised while the destination has room (docs/architecture.md) */
	EXPECT_EQ(fin.sidecar_value("parked"), 0u);
	EXPECT_EQ(fin.sidecar_value("dest_full"), 0u);
	expect_idle(fin, n);
}

TEST(Shards, Case1AnswerOnTheOtherShardFindsItsRequest)
{
	ring_port port("shc1");
	inproc_node n("c1", shards_config(port.name));
	ASSERT_TRUE(n.up) << n.error;
	std::map<std::string, std::string> env = slot;
	env["DPUMESH_CLIENT_SERVICE"] = "billing";
	env["DPUMESH_CLIENT_WINDOW"] = "16";
	constexpr unsigned count = 400;
	auto c = n.pod({"client", n.sock, std::to_string(count), "9", "1000"}, env);

	/* the test is peer n2: each request is answered on the RX queue its request did NOT
	 * leave by, so the answer reaches the other worker, whose shard hands it over */
	unsigned answered = 0, crossed = 0, msg_id = 1;
	const auto end = std::chrono::steady_clock::now() + 60s;
	while (answered < count && std::chrono::steady_clock::now() < end) {
		auto got = collect(port, 1, 1s);
		for (const sent_frame &s : got) {
			ASSERT_EQ(s.pf.kind, wire::frame_kind::request);
			ASSERT_EQ(s.dport, mesh_port);
			uint8_t l7[256];
			wire::l7_writer w(l7, sizeof(l7));
			w.response(200);
			char sum[16];
			std::snprintf(sum, sizeof(sum), "%08x",
				      fnv1a(reinterpret_cast<const uint8_t *>(s.body.data()), s.body.size()));
			w.field("x-sum", sum);
			w.field("x-pod", "n2");
			const std::string ts = field_of(s.view, "x-ts");
			if (!ts.empty())
				w.field("x-ts", ts);
			const uint16_t len = static_cast<uint16_t>(w.finish());
			const int q = 1 - s.queue;
			ASSERT_TRUE(port.send(q, peer_ip, mesh_port, peer_mac, wire::frame_kind::response,
					      s.pf.correlation, l7, len, s.body, msg_id++));
			answered++;
			crossed++;
		}
	}
	ASSERT_EQ(c->wait(60s), 0) << c->output();
	const std::string out = c->output();
	EXPECT_EQ(value_of(out, "DONE", "ok"), count) << out;
	EXPECT_EQ(value_of(out, "DONE", "bad"), 0) << out;
	EXPECT_EQ(value_of(out, "DONE", "mesh_err"), 0) << out;
	EXPECT_EQ(crossed, count);
	const auto sh = shards_of(n);
	/* every answer arrived on the shard that did not send the request, and was handed over */
	const uint64_t to_peer = sh[0]->stats().to_peer.get() + sh[1]->stats().to_peer.get();
	const uint64_t answers_in = sh[0]->stats().net_responses.get() + sh[1]->stats().net_responses.get();
	EXPECT_EQ(to_peer, count);
	EXPECT_GE(answers_in, count);
	EXPECT_GE(sh[0]->stats().handoff_in.get() + sh[1]->stats().handoff_in.get(), count);
	settle(n);
	auto fin = n.stop();
	EXPECT_EQ(fin.sidecar_value("answered"), count);
	EXPECT_EQ(fin.sidecar_value("no_match"), 0u);
	expect_idle(fin, n);
}

TEST(Shards, RateLimitIsForTheNodeNotPerWorker)
{
	/* 200/s for service echo, per route (one bucket), burst 200: two workers take requests
	 * from 32 flows on both queues for 2 s; the node admits about 200 + 2 x 200, not twice
	 * that (a burst of a second's worth: a shard descheduled for a while on a loaded box
	 * loses no tokens, so the lower bound holds too) */
	ring_port port("shrl");
	inproc_node n("rl", shards_config(port.name,
					  R"({ "rate_limits": [ { "service": "echo", "key": "route",
					       "rate": 200, "burst": 200 } ] })"));
	ASSERT_TRUE(n.up) << n.error;
	auto e = n.pod({"echo", n.sock}, slot);
	ASSERT_TRUE(ready(*e)) << e->output();
	const uint32_t client_ip = RTE_IPV4(10, 0, 0, 9);
	unsigned ok = 0, limited = 0, other = 0, sent = 0, msg_id = 1;
	const auto start = std::chrono::steady_clock::now();
	/* the node admits while it still has requests to look at, after the sending stopped on
	 * a slow box too: the bound runs to the last admitted answer seen */
	auto last_ok = start;
	auto count = [&](const std::vector<sent_frame> &got) {
		for (const sent_frame &s : got) {
			if (s.view.status == 200) {
				ok++;
				last_ok = std::chrono::steady_clock::now();
			} else {
				(s.view.status == 429 ? limited : other)++;
			}
		}
	};
	const auto end = start + 2s;
	while (std::chrono::steady_clock::now() < end) {
		/* 32 requests every 10 ms: 3200/s offered, half on each queue */
		for (unsigned f = 0; f < 32; f++) {
			uint8_t l7[128];
			wire::l7_writer w(l7, sizeof(l7));
			w.request("echo", "GET", "/");
			const uint16_t len = static_cast<uint16_t>(w.finish());
			ASSERT_TRUE(port.send(static_cast<int>(f % 2), client_ip,
					      static_cast<uint16_t>(41000 + f), peer_mac,
					      wire::frame_kind::request, sent, l7, len, "", msg_id++));
			sent++;
		}
		count(collect(port, 1, 0s));
		std::this_thread::sleep_for(10ms);
	}
	const double send_secs =
		std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	const auto drain_end = std::chrono::steady_clock::now() + 30s;
	while (ok + limited + other < sent && std::chrono::steady_clock::now() < drain_end)
		count(collect(port, sent - ok - limited - other, 1s));
	const double secs = std::chrono::duration<double>(last_ok - start).count();
	/* every request has one answer: admitted, limited, or refused for another reason */
	EXPECT_EQ(ok + limited + other, sent);
	const double allowed = 200 + 200 * std::max(secs, send_secs);
	std::printf("rate limit 200/s, burst 200, 2 workers, sent for %.2f s, last admitted at "
		    "%.2f s: %u admitted, %u limited, %u other, of %u (limit %.0f)\n",
		    send_secs, secs, ok, limited, other, sent, allowed);
	EXPECT_LE(ok, allowed * 1.1 + 2) << "the limit applied per worker";
	EXPECT_GE(ok, 200 * send_secs * 0.8) << "fewer admitted than the rate";
	/* both shards refused some: each checked the one shared bucket */
	const auto sh = shards_of(n);
	EXPECT_GT(sh[0]->stats().policy_refused.get(), 0u);
	EXPECT_GT(sh[1]->stats().policy_refused.get(), 0u);
	e->signal(SIGKILL);
	e->wait(5s);
	settle(n);
	auto fin = n.stop();
	expect_idle(fin, n);
}

/* The shards config with its "lcores" workers entry replaced: the node must refuse it with
 * an error that contains `want`. */
void expect_lcores_refused(const char *tag, const char *workers_entry, const char *want)
{
	ring_port port(std::string("sh") + tag);
	std::string cfg = shards_config(port.name);
	cfg.replace(cfg.find("\"workers\": 2"), 12, workers_entry);
	inproc_node n(tag, cfg);
	EXPECT_FALSE(n.up);
	EXPECT_NE(n.error.find(want), std::string::npos) << n.error;
}

TEST(Shards, TooFewWorkerLcoresIsAClearError)
{
	expect_lcores_refused("err", "\"workers\": 3", "3 workers need 3 worker lcores");
}

TEST(Shards, StagePlacementWithWorkersIsAClearError)
{
	expect_lcores_refused("stg", "\"workers\": 2, \"stages\": {\"sidecar\": 2}",
			      "stage placement is for one worker");
}

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	/* two worker lcores that may share a core: lcore 0 main, workers 1 and 2 */
	const std::string lcores = sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? "0@0,1@1,2@1" : "0@0,1@0,2@0";
	::testing::AddGlobalTestEnvironment(
		new dpumesh::test::eal_env("shards", {}, 512, lcores));
	return RUN_ALL_TESTS();
}
