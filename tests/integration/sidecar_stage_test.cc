// SPDX-License-Identifier: BSD-3-Clause
// The sidecar stage in-process: a real EAL, pod registry, DPA emulator (its queues; its
// threads are not run), ingress and TX rings. Messages from the network go in through the
// ingress ring, the poll runs here, and the answers are read off the port's TX ring: every
// refused request gets exactly one answer with its status, reason and correlation, answers
// that match nothing get none, and every hbuf, mbuf and rx_msg goes back.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dpumesh/config/config.h"
#include "dpumesh/dpa/emulator.h"
#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/policy/trace.h"
#include "dpumesh/port/rx.h"
#include "dpumesh/sidecar/sidecar.h"
#include "dpumesh/wire/frame.h"
#include "dpumesh/wire/l7.h"
#include "eal_env.h"
#include "internal/net_sched.h"
#include "internal/outbox.h"
#include "internal/quota.h"

using namespace dpumesh;

namespace {

const char *node_json = R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.0.0.1", "mesh_port": 7000 },
  "peers": [ { "name": "n2", "mac": "02:00:00:00:00:02", "ipv4": "10.0.0.2", "mesh_port": 7000 } ],
  "services": [ { "name": "echo", "max_pods": 4 }, { "name": "billing", "max_pods": 4 },
		{ "name": "ledger", "max_pods": 4 }, { "name": "slow", "max_pods": 4 },
		{ "name": "brittle", "max_pods": 4 } ],
  "routes": [ { "service": "billing", "to": "n2" }, { "service": "ledger", "to": "n2" },
	      { "service": "slow", "to": "n2" }, { "service": "brittle", "to": "n2" } ],
  "policy": {
    "rate_limits": [ { "service": "ledger", "key": "route", "rate": 1, "burst": 1 } ],
    "circuit_breakers": [ { "service": "brittle", "consecutive_failures": 2, "min_requests": 1000,
			    "open_ms": 60000, "half_open_probes": 1 } ],
    "timeouts": [ { "service": "slow", "timeout_ms": 20 }, { "service": "brittle", "timeout_ms": 20 } ]
  },
  "dpa": { "backend": "emu", "threads": 1 },
  "dma": { "backend": "cpu" }
})";

/** One message read off a TX ring (relays: whole frames, headers and body). */
struct frame_out {
	wire::parsed_frame pf{};
	uint8_t dst_mac[6] = {};
	wire::frame_kind kind{};
	uint16_t status = 0;
	std::string service, reason, request_id, traceparent, path;
	std::vector<uint8_t> l7, body;
	uint16_t nb_segs = 0;
	uint32_t deadline = 0; /**< the header's deadline_ms */
	bool checksum_ok = false;
};

/** One answer read off the TX ring. */
struct answer {
	uint16_t status = 0;
	std::string reason, hop;
	uint64_t correlation = 0;
	bool mesh = false;
};

class sidecar_stage : public ::testing::Test {
public:
	static void SetUpTestSuite()
	{
		auto c = config::load_string(node_json, "sidecar_stage_test");
		ASSERT_TRUE(c) << c.error().message();
		cfg = new config::node_config(std::move(*c));
		reg = new pod_registry(cfg->pools, cfg->services);
		/* three DPA threads: a stage of three shards may be made (one shard owns all) */
		auto e = dpa::emulator::create(*cfg, *reg, 3);
		ASSERT_TRUE(e) << e.error().message();
		emu = e->release();
		pkts = rte_pktmbuf_pool_create("st_pkts", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					       SOCKET_ID_ANY);
		msgs = rte_mempool_create("st_msgs", 63, sizeof(port::rx_msg), 0, 0, nullptr, nullptr,
					  nullptr, nullptr, SOCKET_ID_ANY, 0);
		ingress = rte_ring_create("st_ingress", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		tx = rte_ring_create("st_tx", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		ASSERT_TRUE(pkts && msgs && ingress && tx);
		sidecar::network net;
		net.ingress = ingress;
		net.pkts = pkts;
		/* port 0 takes chained mbufs (bodies attached), port 1 does not (copied) */
		tx2 = rte_ring_create("st_tx2", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		ASSERT_TRUE(tx2);
		net.ports.push_back({0, 1500, true, true, tx});
		net.ports.push_back({1, 1500, true, false, tx2});
		auto s = sidecar::stage::create(*cfg, *reg, emu->side(), net);
		ASSERT_TRUE(s) << s.error().message();
		stage = s->release();
	}
	static void TearDownTestSuite()
	{
		delete stage;
		delete emu;
		delete reg;
		delete cfg;
		rte_ring_free(tx);
		rte_ring_free(tx2);
		rte_ring_free(ingress);
		rte_mempool_free(msgs);
		rte_mempool_free(pkts);
	}
	void SetUp() override { hbufs_before = rte_mempool_avail_count(emu->hbufs()); }
	void TearDown() override
	{
		/* nothing kept: hbufs, packet mbufs and rx_msgs all back */
		EXPECT_EQ(rte_mempool_avail_count(emu->hbufs()), hbufs_before);
		EXPECT_EQ(rte_mempool_avail_count(pkts), 1023u);
		EXPECT_EQ(rte_mempool_avail_count(msgs), 63u);
		EXPECT_EQ(stage->pending().size(), 0u);
	}

	/* a whole message from the peer 10.0.0.2, as port RX hands it over */
	static void from_network(const std::vector<uint8_t> &l7, bool request, uint64_t corr)
	{
		void *obj;
		ASSERT_EQ(rte_mempool_get(msgs, &obj), 0);
		auto *m = new (obj) port::rx_msg();
		rte_mbuf *b = rte_pktmbuf_alloc(pkts);
		std::memcpy(rte_pktmbuf_append(b, static_cast<uint16_t>(l7.size())), l7.data(), l7.size());
		m->msg.chain = b;
		m->msg.src = wire::endpoint::from_v4(0x0200000a, 7000);
		const uint8_t mac[6] = {2, 0, 0, 0, 0, 2};
		std::memcpy(m->msg.src_mac, mac, 6);
		m->msg.kind = request ? wire::frame_kind::request : wire::frame_kind::response;
		m->msg.msg_len = static_cast<uint32_t>(l7.size());
		m->msg.l7_len = static_cast<uint16_t>(l7.size());
		m->msg.correlation = corr;
		m->port_id = 0;
		ASSERT_EQ(rte_ring_enqueue(ingress, m), 0);
	}
	/* a message from a network client (not a peer) or the peer, its body in a second
	 * segment: as port RX hands over a message reassembled from two frames */
	static void from_host(uint32_t ip_be, uint16_t port_id, const std::vector<uint8_t> &l7,
			      const std::vector<uint8_t> &body, bool request, uint64_t corr,
			      bool summed = false)
	{
		void *obj;
		ASSERT_EQ(rte_mempool_get(msgs, &obj), 0);
		auto *m = new (obj) port::rx_msg();
		rte_mbuf *a = rte_pktmbuf_alloc(pkts), *b = rte_pktmbuf_alloc(pkts);
		ASSERT_TRUE(a && b);
		const size_t split = std::min<size_t>(body.size(), 100);
		/* as port RX leaves a frame: its Ethernet, IPv4, UDP and fragment headers taken
		 * off the front (rte_pktmbuf_adj), the message where they ended */
		a->data_off = static_cast<uint16_t>(a->data_off + 14 + 20 + 8 + wire::frame_hdr_size);
		auto *p = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(a, static_cast<uint16_t>(l7.size() + split)));
		std::memcpy(p, l7.data(), l7.size());
		if (split)
			std::memcpy(p + l7.size(), body.data(), split);
		if (body.size() > split) {
			std::memcpy(rte_pktmbuf_append(b, static_cast<uint16_t>(body.size() - split)),
				    body.data() + split, body.size() - split);
			ASSERT_EQ(rte_pktmbuf_chain(a, b), 0);
		} else {
			rte_pktmbuf_free(b);
		}
		m->msg.chain = a;
		m->msg.src = wire::endpoint::from_v4(ip_be, 40001);
		const uint8_t mac[6] = {2, 0, 0, 0, 0, static_cast<uint8_t>(ip_be >> 24)};
		std::memcpy(m->msg.src_mac, mac, 6);
		m->msg.kind = request ? wire::frame_kind::request : wire::frame_kind::response;
		m->msg.msg_len = static_cast<uint32_t>(l7.size() + body.size());
		m->msg.l7_len = static_cast<uint16_t>(l7.size());
		m->msg.correlation = corr;
		m->port_id = port_id;
		if (summed) { /* as port RX leaves the sum it took of the payload checking it */
			std::vector<uint8_t> payload = l7;
			payload.insert(payload.end(), body.begin(), body.end());
			m->msg.payload_sum = csum_folded(payload.data(), payload.size());
		}
		ASSERT_EQ(rte_ring_enqueue(ingress, m), 0);
	}
	/* a request from the client 10.0.0.9 on port 1, its header split over two segments
	 * (the body after it in the second) */
	static void from_client_split(const std::vector<uint8_t> &req,
				      const std::vector<uint8_t> &body, uint64_t corr)
	{
		void *obj;
		ASSERT_EQ(rte_mempool_get(msgs, &obj), 0);
		auto *m = new (obj) port::rx_msg();
		rte_mbuf *a = rte_pktmbuf_alloc(pkts), *b = rte_pktmbuf_alloc(pkts);
		ASSERT_TRUE(a && b);
		const size_t half = req.size() / 2;
		std::memcpy(rte_pktmbuf_append(a, static_cast<uint16_t>(half)), req.data(), half);
		auto *p = reinterpret_cast<uint8_t *>(
			rte_pktmbuf_append(b, static_cast<uint16_t>(req.size() - half + body.size())));
		std::memcpy(p, req.data() + half, req.size() - half);
		std::memcpy(p + req.size() - half, body.data(), body.size());
		ASSERT_EQ(rte_pktmbuf_chain(a, b), 0);
		m->msg.chain = a;
		m->msg.src = wire::endpoint::from_v4(client_ip, 40001);
		const uint8_t mac[6] = {2, 0, 0, 0, 0, 9};
		std::memcpy(m->msg.src_mac, mac, 6);
		m->msg.kind = wire::frame_kind::request;
		m->msg.msg_len = static_cast<uint32_t>(req.size() + body.size());
		m->msg.l7_len = static_cast<uint16_t>(req.size());
		m->msg.correlation = corr;
		m->port_id = 1;
		ASSERT_EQ(rte_ring_enqueue(ingress, m), 0);
	}
	/* every frame on a TX ring, whole (each message fits one frame) */
	static std::vector<frame_out> frames(rte_ring *r)
	{
		std::vector<frame_out> out;
		void *obj;
		while (rte_ring_dequeue(r, &obj) == 0) {
			auto *m = static_cast<rte_mbuf *>(obj);
			frame_out f;
			f.nb_segs = m->nb_segs;
			EXPECT_EQ(wire::parse_frame(m, 0, 1u << 20, &f.pf), wire::wire_drop::none);
			EXPECT_EQ(f.pf.frag_len, f.pf.msg_len);
			std::vector<uint8_t> flat(m->pkt_len);
			const auto *p = static_cast<const uint8_t *>(rte_pktmbuf_read(m, 0, m->pkt_len, flat.data()));
			if (p != flat.data())
				std::memcpy(flat.data(), p, flat.size());
			std::memcpy(f.dst_mac, flat.data(), 6);
			const auto *ip = reinterpret_cast<const rte_ipv4_hdr *>(flat.data() + sizeof(rte_ether_hdr));
			f.checksum_ok = rte_ipv4_udptcp_cksum_verify(ip, ip + 1) == 0;
			f.kind = f.pf.kind;
			wire::l7_view v;
			EXPECT_EQ(wire::l7_decode(flat.data() + f.pf.payload_off, f.pf.l7_len, &v),
				  wire::l7_error::ok);
			f.status = v.status;
			f.deadline = v.deadline_ms;
			f.service = std::string(v.service);
			f.reason = std::string(v.reason);
			f.path = std::string(v.path);
			std::string_view rid;
			if (v.find("x-request-id", &rid))
				f.request_id = std::string(rid);
			std::string_view tp;
			if (v.find("traceparent", &tp))
				f.traceparent = std::string(tp);
			f.l7.assign(flat.begin() + f.pf.payload_off,
				    flat.begin() + f.pf.payload_off + f.pf.l7_len);
			f.body.assign(flat.begin() + f.pf.payload_off + f.pf.l7_len, flat.end());
			out.push_back(f);
			rte_pktmbuf_free(m);
		}
		return out;
	}
	static std::vector<uint8_t> response(uint16_t status)
	{
		std::vector<uint8_t> b(256);
		wire::l7_writer w(b.data(), b.size());
		w.response(status);
		b.resize(w.finish());
		return b;
	}
	static std::vector<uint8_t> bytes(size_t n, uint8_t seed)
	{
		std::vector<uint8_t> b(n);
		for (size_t i = 0; i < n; i++)
			b[i] = static_cast<uint8_t>(seed + i * 7);
		return b;
	}
	static constexpr uint32_t client_ip = 0x0900000a; /* 10.0.0.9: no peer */
	static constexpr uint32_t peer_ip = 0x0200000a;   /* 10.0.0.2: peer n2 */

	static void run_polls(unsigned n = 4)
	{
		lcore::stage_def def = stage->lcore_stage();
		for (unsigned i = 0; i < n; i++)
			def.poll(def.arg);
	}
	/* every frame on the TX ring, decoded (answers made here fit one frame) */
	static std::vector<answer> answers()
	{
		std::vector<answer> out;
		void *obj;
		while (rte_ring_dequeue(tx, &obj) == 0) {
			auto *m = static_cast<rte_mbuf *>(obj);
			wire::parsed_frame pf;
			EXPECT_EQ(wire::parse_frame(m, 0, 1u << 20, &pf), wire::wire_drop::none);
			EXPECT_EQ(pf.frag_len, pf.msg_len); /* one frame */
			wire::l7_view v;
			const uint8_t *l7 = rte_pktmbuf_mtod_offset(m, const uint8_t *, pf.payload_off);
			EXPECT_EQ(wire::l7_decode(l7, pf.l7_len, &v), wire::l7_error::ok);
			answer a;
			a.status = v.status;
			a.reason = std::string(v.reason);
			a.hop = std::string(v.hop);
			a.mesh = v.flags & wire::l7_flag_mesh_generated;
			a.correlation = pf.correlation;
			EXPECT_EQ(pf.kind, wire::frame_kind::response);
			out.push_back(a);
			rte_pktmbuf_free(m);
		}
		return out;
	}
	static std::vector<uint8_t> request(std::string_view service)
	{
		std::vector<uint8_t> b(256);
		wire::l7_writer w(b.data(), b.size());
		w.request(service, "GET", "/", 0, 0);
		b.resize(w.finish());
		return b;
	}

	static config::node_config *cfg;
	static pod_registry *reg;
	static dpa::emulator *emu;
	static rte_mempool *pkts, *msgs;
	static rte_ring *ingress, *tx, *tx2;
	static sidecar::stage *stage;
	unsigned hbufs_before = 0;
};

config::node_config *sidecar_stage::cfg;
pod_registry *sidecar_stage::reg;
dpa::emulator *sidecar_stage::emu;
rte_mempool *sidecar_stage::pkts, *sidecar_stage::msgs;
rte_ring *sidecar_stage::ingress, *sidecar_stage::tx, *sidecar_stage::tx2;
sidecar::stage *sidecar_stage::stage;

TEST_F(sidecar_stage, each_refused_network_request_gets_one_answer_with_its_reason)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t no_route = st.no_route.get(), no_pod = st.no_live_pod.get(),
		       misrouted = st.misrouted.get();
	from_network(request("nope"), true, 101);
	from_network(request("echo"), true, 102);    /* served here, but no pod */
	from_network(request("billing"), true, 103); /* the peer's own service */
	run_polls();
	std::vector<answer> got = answers();
	ASSERT_EQ(got.size(), 3u);
	EXPECT_EQ(got[0].correlation, 101u);
	EXPECT_EQ(got[0].status, 404);
	EXPECT_EQ(got[0].reason, "no_route");
	EXPECT_EQ(got[1].correlation, 102u);
	EXPECT_EQ(got[1].status, 503);
	EXPECT_EQ(got[1].reason, "no_live_pod");
	EXPECT_EQ(got[2].correlation, 103u);
	EXPECT_EQ(got[2].status, 503);
	EXPECT_EQ(got[2].reason, "misrouted");
	for (const answer &a : got) {
		EXPECT_TRUE(a.mesh);
		EXPECT_EQ(a.hop, "n1/sidecar");
	}
	EXPECT_EQ(st.no_route.get(), no_route + 1);
	EXPECT_EQ(st.no_live_pod.get(), no_pod + 1);
	EXPECT_EQ(st.misrouted.get(), misrouted + 1);
	/* per-service metrics: the echo request was taken and refused */
	bool found = false;
	for (uint32_t s = 0; s < stage->nb_services(); s++)
		if (stage->service_name(s) == "echo") {
			found = true;
			sidecar::l7_metrics m;
			stage->add_service_metrics(s, m);
			EXPECT_GE(m.refused.get(), 1u);
		}
	EXPECT_TRUE(found);
}

TEST_F(sidecar_stage, a_clients_request_for_a_peers_service_is_relayed_and_answered_back)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t relayed = st.relayed.get(), answers = st.relayed_answers.get(),
		       misrouted = st.misrouted.get(), zc = st.zero_copy.get(),
		       copied = st.copied_out.get();
	const auto client_quota = [&] {
		for (const auto &[ep, u] : stage->source_quotas())
			if (ep.ip[15] == 9)
				return u;
		return sidecar::quota_usage{};
	};
	/* the fixture's stage is shared: an earlier test (in a shuffled order) may have raised the
	 * client's peak already */
	const uint64_t peak0 = client_quota().peak;
	std::vector<uint8_t> req(256);
	{
		wire::l7_writer w(req.data(), req.size());
		w.request("billing", "POST", "/pay", 0, 0);
		req.resize(w.finish());
	}
	const std::vector<uint8_t> body = bytes(700, 3);
	from_host(client_ip, 1, req, body, true, 777);
	run_polls();
	EXPECT_TRUE(frames(tx2).empty()); /* nothing back to the client yet */
	std::vector<frame_out> out = frames(tx);
	ASSERT_EQ(out.size(), 1u);
	const frame_out &f = out[0];
	EXPECT_EQ(f.kind, wire::frame_kind::request);
	const uint8_t peer_mac[6] = {2, 0, 0, 0, 0, 2};
	EXPECT_EQ(std::memcmp(f.dst_mac, peer_mac, 6), 0);
	EXPECT_EQ(f.pf.dst.ip[12], 10);
	EXPECT_EQ(f.pf.dst.ip[15], 2);
	EXPECT_EQ(f.pf.dst.port, 7000);
	EXPECT_EQ(f.pf.src.ip[15], 1);
	EXPECT_EQ(f.service, "billing");
	EXPECT_FALSE(f.request_id.empty()); /* the relay gave it trace ids */
	EXPECT_EQ(f.body, body);
	EXPECT_GT(f.nb_segs, 1u); /* port 0 takes chains: the body went by reference */
	EXPECT_TRUE(f.checksum_ok);
	const uint64_t token = f.pf.correlation;
	EXPECT_NE(token, 777u); /* the peer answers our token */
	EXPECT_EQ(st.relayed.get(), relayed + 1);
	EXPECT_EQ(st.zero_copy.get(), zc + 1);
	EXPECT_EQ(st.misrouted.get(), misrouted);
	EXPECT_EQ(stage->pending().size(), 1u);
	EXPECT_EQ(rte_mempool_avail_count(msgs), 63u); /* the received message is freed */
	/* charged to the client's address (its bucket kept from the intake), until answered */
	EXPECT_EQ(client_quota().in_flight, 1u);

	/* the peer's answer, from the peer, goes back to the client with its correlation */
	const std::vector<uint8_t> rbody = bytes(300, 9);
	from_host(peer_ip, 0, response(201), rbody, false, token);
	run_polls();
	EXPECT_TRUE(frames(tx).empty());
	out = frames(tx2);
	ASSERT_EQ(out.size(), 1u);
	EXPECT_EQ(out[0].kind, wire::frame_kind::response);
	EXPECT_EQ(out[0].pf.correlation, 777u);
	EXPECT_EQ(out[0].status, 201);
	EXPECT_EQ(out[0].body, rbody);
	EXPECT_EQ(out[0].nb_segs, 1u); /* port 1 takes no chains: copied */
	EXPECT_TRUE(out[0].checksum_ok);
	const uint8_t client_mac[6] = {2, 0, 0, 0, 0, 9};
	EXPECT_EQ(std::memcmp(out[0].dst_mac, client_mac, 6), 0);
	EXPECT_EQ(out[0].pf.dst.ip[15], 9);
	EXPECT_EQ(out[0].pf.dst.port, 40001);
	EXPECT_EQ(st.relayed_answers.get(), answers + 1);
	EXPECT_EQ(st.copied_out.get(), copied + 1);
	EXPECT_EQ(stage->pending().size(), 0u);
	EXPECT_EQ(client_quota().in_flight, 0u);
	EXPECT_EQ(client_quota().peak, std::max<uint64_t>(peak0, 1));

	/* the same answer again, or one from the client itself: matches nothing */
	const uint64_t no_match = st.no_match.get();
	from_host(peer_ip, 0, response(201), {}, false, token);
	from_host(client_ip, 1, response(200), {}, false, token);
	run_polls();
	EXPECT_TRUE(frames(tx).empty());
	EXPECT_TRUE(frames(tx2).empty());
	EXPECT_EQ(st.no_match.get(), no_match + 2);
}

/* The intake hashes a source address once for a run of requests from it: requests from two
 * clients, in runs and interleaved, are each charged to their own address's bucket. */
TEST_F(sidecar_stage, interleaved_clients_are_each_charged_to_their_own_bucket)
{
	const uint32_t a_ip = client_ip;
	uint32_t b_ip = 0x0b00000a; /* 10.0.0.11, or the next client in another bucket */
	while (sidecar::quota::bucket_of(wire::endpoint::from_v4(b_ip, 0)) ==
	       sidecar::quota::bucket_of(wire::endpoint::from_v4(a_ip, 0)))
		b_ip += 1u << 24;
	std::vector<uint8_t> req(256);
	{
		wire::l7_writer w(req.data(), req.size());
		w.request("billing", "POST", "/pay", 0, 0);
		req.resize(w.finish());
	}
	const uint32_t order[] = {a_ip, a_ip, b_ip, a_ip, b_ip, b_ip, a_ip};
	uint64_t corr = 900;
	for (uint32_t ip : order)
		from_host(ip, 1, req, {}, true, corr++);
	run_polls();
	const std::vector<frame_out> out = frames(tx);
	ASSERT_EQ(out.size(), 7u);
	const auto in_flight = [&](uint32_t ip_be) {
		const wire::endpoint ep = wire::endpoint::from_v4(ip_be, 0);
		for (const auto &[seen, u] : stage->source_quotas())
			if (std::memcmp(seen.ip, ep.ip, 16) == 0)
				return u.in_flight;
		return uint64_t(0);
	};
	EXPECT_EQ(in_flight(a_ip), 4u);
	EXPECT_EQ(in_flight(b_ip), 3u);
	for (const frame_out &f : out)
		from_host(peer_ip, 0, response(200), {}, false, f.pf.correlation);
	run_polls();
	EXPECT_EQ(frames(tx2).size(), 7u);
	EXPECT_EQ(in_flight(a_ip), 0u);
	EXPECT_EQ(in_flight(b_ip), 0u);
	EXPECT_EQ(stage->pending().size(), 0u);
}

/* The intake takes a poll's requests into a FIFO per source and serves them one per source
 * per turn; a poll whose requests are all from one source, with nothing waiting, takes them
 * where they lie (stage::from_network_sources()). Either way the relays go out in the
 * order a turn-by-turn model of the FIFOs gives: sources in turns from the first one seen,
 * each source's requests in the order they came, a poll's leftovers in the next. */
TEST_F(sidecar_stage, the_network_s_requests_are_taken_in_turns_by_source)
{
	const uint32_t a_ip = client_ip;
	uint32_t b_ip = 0x0b00000a, c_ip; /* clients whose requests land in other buckets */
	const auto bucket = [](uint32_t ip) {
		return sidecar::quota::bucket_of(wire::endpoint::from_v4(ip, 0)) %
		       sidecar::net_sched::nb_queues;
	};
	while (bucket(b_ip) == bucket(a_ip))
		b_ip += 1u << 24;
	for (c_ip = b_ip + (1u << 24); bucket(c_ip) == bucket(a_ip) || bucket(c_ip) == bucket(b_ip);)
		c_ip += 1u << 24;
	const auto req = [](unsigned i) {
		std::vector<uint8_t> b(256);
		wire::l7_writer w(b.data(), b.size());
		w.request("billing", "POST", "/t/" + std::to_string(i), 0, 0);
		b.resize(w.finish());
		return b;
	};
	/* rounds of turns over the sources in the order first seen, one request each */
	const auto in_turns = [](const std::vector<std::pair<uint32_t, unsigned>> &in) {
		std::vector<uint32_t> turn;
		std::vector<std::vector<unsigned>> fifo;
		for (const auto &[ip, i] : in) {
			const auto at = std::find(turn.begin(), turn.end(), ip) - turn.begin();
			if (at == static_cast<long>(turn.size())) {
				turn.push_back(ip);
				fifo.emplace_back();
			}
			fifo[at].push_back(i);
		}
		std::vector<unsigned> out;
		for (size_t round = 0; out.size() < in.size(); round++)
			for (const auto &f : fifo)
				if (round < f.size())
					out.push_back(f[round]);
		return out;
	};
	const std::vector<std::vector<uint32_t>> polls = {
		{a_ip, a_ip, a_ip, b_ip, a_ip, b_ip, b_ip, a_ip},
		{a_ip, a_ip, a_ip, a_ip, b_ip},
		{b_ip, a_ip, a_ip, a_ip, c_ip, a_ip, c_ip},
		{c_ip, c_ip, c_ip, c_ip, c_ip, c_ip},
	};
	unsigned i = 0;
	std::vector<uint64_t> tokens;
	for (const auto &ips : polls) {
		std::vector<std::pair<uint32_t, unsigned>> in;
		for (uint32_t ip : ips) {
			from_host(ip, 1, req(i), {}, true, 3000 + i);
			in.emplace_back(ip, i++);
		}
		run_polls(1);
		const std::vector<frame_out> out = frames(tx);
		const std::vector<unsigned> want = in_turns(in);
		ASSERT_EQ(out.size(), want.size());
		for (size_t k = 0; k < out.size(); k++) {
			EXPECT_EQ(out[k].path, "/t/" + std::to_string(want[k])) << "poll of " << ips.size();
			tokens.push_back(out[k].pf.correlation);
		}
	}
	/* 40 from one source, more than a poll takes (a burst): the first 32 in order, the
	 * rest waiting for the next poll, where another source's request takes the second
	 * turn */
	for (unsigned k = 0; k < 40; k++)
		from_host(a_ip, 1, req(i + k), {}, true, 3000 + i + k);
	run_polls(1);
	std::vector<frame_out> out = frames(tx);
	ASSERT_EQ(out.size(), 32u);
	from_host(b_ip, 1, req(i + 40), {}, true, 3000 + i + 40);
	run_polls(1);
	std::vector<frame_out> more = frames(tx);
	ASSERT_EQ(more.size(), 9u);
	out.insert(out.end(), more.begin(), more.end());
	for (unsigned k = 0; k < 41; k++) {
		const unsigned want = k < 33 ? k : k == 33 ? 40 : k - 1;
		EXPECT_EQ(out[k].path, "/t/" + std::to_string(i + want)) << k;
		tokens.push_back(out[k].pf.correlation);
	}
	for (size_t k = 0; k < tokens.size(); k += 32) {
		for (size_t j = k; j < std::min(tokens.size(), k + 32); j++)
			from_host(peer_ip, 0, response(200), {}, false, tokens[j]);
		run_polls();
	}
	EXPECT_EQ(frames(tx2).size(), tokens.size());
	EXPECT_EQ(stage->pending().size(), 0u);
}

/* A relayed request up to the peer, and the peer's answer handed in: what the client then
 * gets is read off tx2 by the caller. Returns the token the peer answered. */
static uint64_t relay_and_answer(uint64_t corr, const std::vector<uint8_t> &rbody,
				 const std::function<void()> &before_answer)
{
	std::vector<uint8_t> req(256);
	{
		wire::l7_writer w(req.data(), req.size());
		w.request("billing", "POST", "/pay", 0, 0);
		req.resize(w.finish());
	}
	sidecar_stage::from_host(sidecar_stage::client_ip, 1, req, {}, true, corr);
	sidecar_stage::run_polls();
	std::vector<frame_out> out = sidecar_stage::frames(sidecar_stage::tx);
	EXPECT_EQ(out.size(), 1u);
	const uint64_t token = out.empty() ? 0 : out[0].pf.correlation;
	sidecar_stage::from_host(sidecar_stage::peer_ip, 0, sidecar_stage::response(200), rbody,
				 false, token);
	before_answer();
	sidecar_stage::run_polls();
	return token;
}

/* Polls until something is on tx2 (the owed answer is tried again 100 us after a failure). */
static std::vector<frame_out> client_frames_soon()
{
	std::vector<frame_out> got;
	for (int i = 0; i < 200 && got.empty(); i++) {
		usleep(1000);
		sidecar_stage::run_polls();
		got = sidecar_stage::frames(sidecar_stage::tx2);
	}
	return got;
}

TEST_F(sidecar_stage, a_relayed_answer_that_finds_the_tx_ring_full_becomes_one_502)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t lost = st.responses_lost.get(), deferred = st.answers_deferred.get(),
		       owed = st.answers_owed.get(), ring_full = st.egress_ring_full.get();
	/* the client's port TX ring full when the peer's answer comes */
	std::vector<void *> filler;
	relay_and_answer(4242, bytes(300, 5), [&] {
		static int dummy;
		while (rte_ring_enqueue(tx2, &dummy) == 0)
			filler.push_back(&dummy);
	});
	EXPECT_GE(st.egress_ring_full.get(), ring_full + 1);
	EXPECT_EQ(st.answers_deferred.get(), deferred + 1);
	EXPECT_EQ(st.answers_owed.get(), owed + 1);
	EXPECT_EQ(st.responses_lost.get(), lost);
	run_polls(16); /* still full: it stays owed */
	EXPECT_EQ(rte_ring_count(tx2), filler.size());
	/* the port drains: exactly one answer, 502 egress_failed, with the client's correlation */
	void *obj;
	while (rte_ring_dequeue(tx2, &obj) == 0) {
	}
	std::vector<frame_out> got = client_frames_soon();
	ASSERT_EQ(got.size(), 1u);
	EXPECT_EQ(got[0].kind, wire::frame_kind::response);
	EXPECT_EQ(got[0].pf.correlation, 4242u);
	EXPECT_EQ(got[0].status, 502);
	EXPECT_EQ(got[0].reason, "egress_failed");
	usleep(2000);
	run_polls(16);
	EXPECT_TRUE(frames(tx2).empty()); /* one answer, not two */
	EXPECT_TRUE(frames(tx).empty());
	EXPECT_EQ(st.responses_lost.get(), lost);
	EXPECT_EQ(stage->pending().size(), 0u);
}

TEST_F(sidecar_stage, a_relayed_answer_that_finds_no_mbuf_becomes_one_502)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t lost = st.responses_lost.get(), deferred = st.answers_deferred.get(),
		       no_mbuf = st.egress_no_mbuf.get();
	/* every packet mbuf taken when the peer's answer comes (its own are allocated); the
	 * 502 goes out as soon as mbufs are back: here, those of the answer it replaces */
	std::vector<rte_mbuf *> taken;
	relay_and_answer(4343, bytes(900, 7), [&] {
		while (rte_mbuf *m = rte_pktmbuf_alloc(pkts))
			taken.push_back(m);
	});
	EXPECT_GE(st.egress_no_mbuf.get(), no_mbuf + 1);
	EXPECT_EQ(st.answers_deferred.get(), deferred + 1);
	EXPECT_EQ(st.responses_lost.get(), lost);
	for (rte_mbuf *m : taken)
		rte_pktmbuf_free(m);
	std::vector<frame_out> got = client_frames_soon();
	ASSERT_EQ(got.size(), 1u);
	EXPECT_EQ(got[0].pf.correlation, 4343u);
	EXPECT_EQ(got[0].status, 502);
	EXPECT_EQ(got[0].reason, "egress_failed");
	usleep(2000);
	run_polls(16);
	EXPECT_TRUE(frames(tx2).empty()); /* one answer, not two */
	EXPECT_EQ(st.responses_lost.get(), lost);
}

/* A sweep whose client's TX ring fills after two of its 504s: those two go out, the rest
 * are owed (and, once one is owed, every later one of the burst behind it: the kept
 * frame's path is taken only while nothing is owed), then sent in their order when the
 * ring drains; each request answered once. */
TEST_F(sidecar_stage, a_sweep_s_504s_past_a_full_ring_are_owed_and_go_out_in_order)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t owed = st.answers_owed.get(), timeouts = st.timeouts.get(),
		       unsent = st.answers_unsent.get();
	run_polls(); /* nothing left over */
	frames(tx2).clear();
	constexpr unsigned nb = 6;
	for (unsigned i = 0; i < nb; i++)
		from_host(client_ip, 1, request("slow"), bytes(10, uint8_t(i)), true, 9100 + i);
	run_polls();
	ASSERT_EQ(frames(tx).size(), nb); /* relayed */
	/* room for two frames on the client's ring when the deadlines (20 ms) pass */
	std::vector<void *> filler;
	static int dummy;
	while (rte_ring_free_count(tx2) > 2 && rte_ring_enqueue(tx2, &dummy) == 0)
		filler.push_back(&dummy);
	for (int i = 0; i < 200 && st.timeouts.get() < timeouts + nb; i++) {
		usleep(1000);
		run_polls(8);
	}
	ASSERT_EQ(st.timeouts.get(), timeouts + nb);
	EXPECT_EQ(stage->pending().size(), 0u);
	EXPECT_EQ(rte_ring_count(tx2), filler.size() + 2);
	const uint64_t owed_now = st.answers_owed.get() - owed;
	EXPECT_EQ(owed_now, nb - 2);
	void *obj;
	for (size_t k = 0; k < filler.size(); k++)
		ASSERT_EQ(rte_ring_dequeue(tx2, &obj), 0);
	std::vector<frame_out> got = frames(tx2);
	ASSERT_EQ(got.size(), 2u);
	for (const frame_out &f : client_frames_soon())
		got.push_back(f);
	for (int i = 0; i < 20 && got.size() < nb; i++) {
		usleep(1000);
		run_polls(8);
		for (const frame_out &f : frames(tx2))
			got.push_back(f);
	}
	ASSERT_EQ(got.size(), nb);
	for (unsigned i = 0; i < nb; i++) {
		EXPECT_EQ(got[i].pf.correlation, 9100u + i) << i;
		EXPECT_EQ(got[i].status, 504) << i;
		EXPECT_EQ(got[i].reason, "timeout") << i;
	}
	usleep(2000);
	run_polls(16);
	EXPECT_TRUE(frames(tx2).empty()); /* one answer each */
	EXPECT_EQ(st.answers_unsent.get(), unsent);
}

TEST_F(sidecar_stage, a_timeout_that_finds_no_mbuf_is_owed_until_mbufs_return)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t owed = st.answers_owed.get(), timeouts = st.timeouts.get(),
		       unsent = st.answers_unsent.get();
	from_host(client_ip, 1, request("slow"), bytes(40, 1), true, 902);
	run_polls();
	std::vector<frame_out> to_peer = frames(tx);
	ASSERT_EQ(to_peer.size(), 1u);
	/* no packet mbuf left when its deadline (20 ms) passes: the 504 cannot be made */
	std::vector<rte_mbuf *> taken;
	while (rte_mbuf *m = rte_pktmbuf_alloc(pkts))
		taken.push_back(m);
	for (int i = 0; i < 200 && st.timeouts.get() == timeouts; i++) {
		usleep(1000);
		run_polls(8);
	}
	ASSERT_EQ(st.timeouts.get(), timeouts + 1);
	EXPECT_EQ(st.answers_owed.get(), owed + 1);
	usleep(1000);
	run_polls(16);
	EXPECT_TRUE(frames(tx2).empty()); /* still owed */
	EXPECT_EQ(stage->pending().size(), 0u); /* the request itself ended */
	for (rte_mbuf *m : taken)
		rte_pktmbuf_free(m);
	std::vector<frame_out> got = client_frames_soon();
	ASSERT_EQ(got.size(), 1u);
	EXPECT_EQ(got[0].pf.correlation, 902u);
	EXPECT_EQ(got[0].status, 504);
	EXPECT_EQ(got[0].reason, "timeout");
	usleep(2000);
	run_polls(16);
	EXPECT_TRUE(frames(tx2).empty());
	EXPECT_EQ(st.answers_unsent.get(), unsent);
}

/* A relayed request takes no hbuf (its header is decoded in the sidecar's header buffer):
 * its own trace ids go on as they are, missing ones are added; a header split over two
 * segments is gathered the same way, and the peer gets the same message either way. */
TEST_F(sidecar_stage, relayed_requests_take_no_hbuf_and_keep_their_trace_ids)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t decoded = st.decoded_without_hbuf.get(), relayed = st.relayed.get(),
		       ids = st.request_ids.get(), in_place = st.relayed_in_place.get();
	std::vector<uint8_t> traced(512);
	{
		wire::l7_writer w(traced.data(), traced.size());
		w.request("billing", "POST", "/pay", 0, 0);
		w.field("x-request-id", "0f8fad5b-d9cb-469f-a165-70867728950e");
		w.field("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
		traced.resize(w.finish());
	}
	const std::vector<uint8_t> body = bytes(50, 5);
	from_host(client_ip, 1, traced, body, true, 1001);
	run_polls();
	std::vector<frame_out> out = frames(tx);
	ASSERT_EQ(out.size(), 1u);
	EXPECT_EQ(out[0].request_id, "0f8fad5b-d9cb-469f-a165-70867728950e");
	EXPECT_EQ(out[0].pf.l7_len, traced.size()); /* nothing added */
	EXPECT_EQ(out[0].body, body);
	EXPECT_TRUE(out[0].checksum_ok);
	EXPECT_EQ(st.decoded_without_hbuf.get(), decoded + 1);
	EXPECT_EQ(st.request_ids.get(), ids);
	EXPECT_EQ(st.relayed_in_place.get(), in_place + 1); /* one segment: its own mbuf */
	const uint64_t t1 = out[0].pf.correlation;

	/* the header split over two segments: the same relay */
	from_client_split(request("billing"), body, 1002);
	run_polls();
	out = frames(tx);
	ASSERT_EQ(out.size(), 1u);
	EXPECT_EQ(out[0].service, "billing");
	EXPECT_FALSE(out[0].request_id.empty()); /* added */
	EXPECT_EQ(out[0].body, body);
	EXPECT_TRUE(out[0].checksum_ok);
	EXPECT_EQ(st.decoded_without_hbuf.get(), decoded + 2);
	EXPECT_EQ(st.request_ids.get(), ids + 1);
	EXPECT_EQ(st.relayed.get(), relayed + 2);
	EXPECT_EQ(st.relayed_in_place.get(), in_place + 1); /* two segments: a fresh frame */
	const uint64_t t2 = out[0].pf.correlation;

	/* its own x-request-id, no traceparent, a header of odd length: the traceparent is
	 * added in the mbuf it came in, after the header copied there */
	std::vector<uint8_t> half_traced(512);
	{
		wire::l7_writer w(half_traced.data(), half_traced.size());
		w.request("billing", "POST", "/pay/odd", 0, 0);
		w.field("x-request-id", "mine-1");
		half_traced.resize(w.finish());
	}
	ASSERT_EQ(half_traced.size() % 2, 1u);
	const uint64_t tps = st.traceparents.get();
	from_host(client_ip, 1, half_traced, body, true, 1003);
	run_polls();
	out = frames(tx);
	ASSERT_EQ(out.size(), 1u);
	EXPECT_EQ(out[0].request_id, "mine-1");
	EXPECT_EQ(out[0].pf.l7_len, half_traced.size() + 70); /* traceparent: 4 + 11 + 55 */
	EXPECT_EQ(out[0].body, body);
	EXPECT_TRUE(out[0].checksum_ok);
	EXPECT_EQ(st.traceparents.get(), tps + 1);
	EXPECT_EQ(st.relayed_in_place.get(), in_place + 2);
	from_host(peer_ip, 0, response(200), {}, false, out[0].pf.correlation);
	run_polls();
	ASSERT_EQ(frames(tx2).size(), 1u);

	/* both answered back to the client, each once */
	from_host(peer_ip, 0, response(200), {}, false, t1);
	from_host(peer_ip, 0, response(202), {}, false, t2);
	run_polls();
	out = frames(tx2);
	ASSERT_EQ(out.size(), 2u);
	EXPECT_EQ(out[0].pf.correlation, 1001u);
	EXPECT_EQ(out[0].status, 200);
	EXPECT_EQ(out[1].pf.correlation, 1002u);
	EXPECT_EQ(out[1].status, 202);
}

/* A relayed request leaves with the deadline this node holds it to in its header's
 * deadline_ms (the smaller of its budget and its route's timeout; the peer counts it from
 * its own arrival), and with a UDP checksum that agrees, whichever way the relay makes its
 * frame: in the mbuf it came in with both trace fields made there, with its own fields (the
 * header copied into the mbuf, of even and odd lengths), with its header over two segments
 * (a fresh frame); with port RX's sum of the payload and without. Before 2026-12-07 the
 * header left as it came: without a budget, or over the route's timeout, the peer gave the
 * request its own timeout and its pod worked on after this node had answered 504. */
TEST_F(sidecar_stage, a_relayed_request_leaves_with_the_deadline_it_is_held_to_here)
{
	const uint32_t def = cfg->policy.default_timeout_ms;
	struct want {
		const char *service;
		uint32_t budget, out;
	};
	/* slow: a route timeout of 20 ms; billing: the default route's */
	const want cases[] = {{"slow", 0, 20},	   {"slow", 10000, 20},	  {"slow", 7, 7},
			      {"slow", 20, 20},	   {"billing", 0, def},	  {"billing", 300, 300},
			      {"billing", def + 1, def}};
	const std::vector<uint8_t> body = bytes(40, 3);
	uint64_t corr = 7000;
	for (const want &w : cases) {
		for (unsigned way = 0; way < 4; way++) {
			for (const bool summed : {false, true}) {
				if (way == 3 && summed)
					continue; /* port RX sums only a message of one frame */
				SCOPED_TRACE(std::string(w.service) + " budget " +
					     std::to_string(w.budget) + " way " + std::to_string(way) +
					     (summed ? " summed" : ""));
				std::vector<uint8_t> req(512);
				wire::l7_writer wr(req.data(), req.size());
				wr.request(w.service, "POST", way == 2 ? "/odd" : "/", w.budget, 0);
				if (way == 1 || way == 2)
					wr.field("x-request-id", "mine-1");
				if (way == 1)
					wr.field("traceparent",
						 "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
				req.resize(wr.finish());
				if (way == 3)
					from_client_split(req, body, ++corr);
				else
					from_host(client_ip, 1, req, body, true, ++corr, summed);
				run_polls();
				std::vector<frame_out> out = frames(tx);
				ASSERT_EQ(out.size(), 1u);
				EXPECT_EQ(out[0].service, w.service);
				EXPECT_EQ(out[0].deadline, w.out);
				EXPECT_TRUE(out[0].checksum_ok);
				EXPECT_EQ(out[0].body, body);
				if (way == 1) { /* nothing added */
					EXPECT_EQ(out[0].pf.l7_len, req.size());
				}
				/* answered (or, on a slow box, timed out first: one answer either way) */
				from_host(peer_ip, 0, response(200), {}, false, out[0].pf.correlation);
				run_polls();
				EXPECT_EQ(frames(tx2).size(), 1u);
			}
		}
	}
}

/* A relayed request without trace fields has its header made in the frame (the received
 * header copied in front of the body 64 bytes a step, both fields formatted after it): the
 * frame's header is the received one, its length and field count grown, and the two
 * fields, for headers shorter and longer than a step, of odd length, bodies of none to
 * many bytes; one whose fields do not fit goes on as it came. */
TEST_F(sidecar_stage, a_header_made_in_the_frame_is_the_received_one_and_both_fields)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t in_place = st.relayed_in_place.get(), ids = st.request_ids.get(),
		       tps = st.traceparents.get(), no_room = st.trace_no_room.get();
	/* the last header 100 bytes short of an hbuf's room: no room for the fields */
	const size_t cap = emu->hbuf_size() - DPA_HBUF_META_SIZE;
	const auto header = [](size_t path, size_t salt) {
		std::vector<uint8_t> h(4096);
		wire::l7_writer w(h.data(), h.size());
		std::string p = "/";
		for (size_t i = 1; i < path; i++)
			p += static_cast<char>('a' + (i * 7 + salt) % 26);
		/* a budget under the route's timeout: the deadline goes on as it came (one over
		 * it, or none, is written: a_relayed_request_leaves_with_the_deadline_...) */
		w.request("billing", "POST", p, 1000, 0);
		h.resize(w.finish());
		return h;
	};
	const size_t base = header(1, 0).size();
	/* and headers right at the fields' room (the relay's one bound) and a byte past it */
	const size_t paths[] = {1,   2,   20,  27,  28,  29,  30,
				60,  91,  92,  93,  150, 157, 300,
				cap - 100 - base + 1, cap - policy::trace_both_size - base + 1,
				cap - policy::trace_both_size - base + 2};
	const size_t bodies[] = {0, 1, 7, 50, 99};
	std::vector<std::vector<uint8_t>> sent;
	uint64_t corr = 3000;
	for (size_t path : paths)
		for (size_t body_len : bodies) {
			const std::vector<uint8_t> h = header(path, body_len);
			ASSERT_GT(h.size(), 0u);
			sent.push_back(h);
			from_host(client_ip, 1, h, bytes(body_len, static_cast<uint8_t>(path)), true,
				  corr++);
			run_polls();
		}
	std::vector<frame_out> out = frames(tx);
	ASSERT_EQ(out.size(), sent.size());
	unsigned fitted = 0;
	for (size_t i = 0; i < out.size(); i++) {
		const std::vector<uint8_t> &h = sent[i];
		const frame_out &f = out[i];
		SCOPED_TRACE(testing::Message() << "header " << h.size() << " bytes, frame " << i);
		EXPECT_TRUE(f.checksum_ok);
		EXPECT_EQ(f.body, bytes(bodies[i % std::size(bodies)],
					static_cast<uint8_t>(paths[i / std::size(bodies)])));
		if (h.size() + policy::trace_both_size > cap) { /* past an hbuf's room: as it came */
			EXPECT_EQ(f.l7, h);
			EXPECT_TRUE(f.request_id.empty());
			continue;
		}
		fitted++;
		ASSERT_EQ(f.l7.size(), h.size() + policy::trace_both_size);
		/* the received header but its length and field count */
		std::vector<uint8_t> head(f.l7.begin(), f.l7.begin() + static_cast<long>(h.size()));
		const uint16_t len = static_cast<uint16_t>(head[4] << 8 | head[5]);
		const uint16_t nb = static_cast<uint16_t>(head[6] << 8 | head[7]);
		EXPECT_EQ(len, f.l7.size());
		EXPECT_EQ(nb, (h[6] << 8 | h[7]) + 2);
		for (size_t k = 4; k < 8; k++)
			head[k] = h[k];
		EXPECT_EQ(head, h);
		/* both fields, one trace id: the UUID's digits are the traceparent's but its
		 * version's and variant's */
		ASSERT_EQ(f.request_id.size(), 36u);
		ASSERT_EQ(f.traceparent.size(), 55u);
		EXPECT_EQ(f.traceparent.substr(0, 3), "00-");
		EXPECT_EQ(f.traceparent.substr(52), "-01");
		std::string uuid;
		for (char c : f.request_id)
			if (c != '-')
				uuid += c;
		const std::string tid = f.traceparent.substr(3, 32);
		ASSERT_EQ(uuid.size(), 32u);
		EXPECT_EQ(uuid[12], '4');
		for (size_t k = 0; k < 32; k++) {
			if (k != 12 && k != 16) {
				EXPECT_EQ(uuid[k], tid[k]) << k;
			}
		}
	}
	EXPECT_EQ(fitted, out.size() - 2 * std::size(bodies));
	EXPECT_EQ(st.relayed_in_place.get(), in_place + out.size());
	EXPECT_EQ(st.request_ids.get(), ids + fitted);
	EXPECT_EQ(st.traceparents.get(), tps + fitted);
	EXPECT_EQ(st.trace_no_room.get(), no_room + (out.size() - fitted));
	/* each answered once, so nothing stays pending (a few at a time: the test's pools) */
	size_t answered = 0;
	for (size_t i = 0; i < out.size(); i++) {
		from_host(peer_ip, 0, response(200), {}, false, out[i].pf.correlation);
		if (i % 16 == 15 || i + 1 == out.size()) {
			run_polls();
			answered += frames(tx2).size();
		}
	}
	EXPECT_EQ(answered, out.size());
}

/* The relay's room test of the field count: a header of l7_max_fields - 2 fields takes both
 * trace fields (then l7_max_fields), one of l7_max_fields - 1 goes on as it came. */
TEST_F(sidecar_stage, a_relayed_header_takes_both_fields_up_to_the_field_limit)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t ids = st.request_ids.get(), no_room = st.trace_no_room.get();
	const size_t cap = emu->hbuf_size() - DPA_HBUF_META_SIZE;
	std::vector<std::vector<uint8_t>> sent;
	for (unsigned total : {wire::l7_max_fields - 2u, wire::l7_max_fields - 1u}) {
		std::vector<uint8_t> h(4096);
		wire::l7_writer w(h.data(), h.size());
		w.request("billing", "POST", "/", 1000, 0); /* its budget kept (under 5 s) */
		for (unsigned i = 3; i < total; i++)
			w.field("a", "");
		h.resize(w.finish());
		ASSERT_EQ(h[6] << 8 | h[7], int(total));
		ASSERT_LE(h.size() + policy::trace_both_size, cap);
		sent.push_back(h);
		from_host(client_ip, 1, h, bytes(3, 1), true, 4100 + total);
		run_polls();
	}
	std::vector<frame_out> out = frames(tx);
	ASSERT_EQ(out.size(), 2u);
	EXPECT_TRUE(out[0].checksum_ok);
	EXPECT_TRUE(out[1].checksum_ok);
	ASSERT_EQ(out[0].l7.size(), sent[0].size() + policy::trace_both_size);
	EXPECT_EQ(out[0].l7[6] << 8 | out[0].l7[7], int(wire::l7_max_fields));
	EXPECT_EQ(out[0].request_id.size(), 36u);
	EXPECT_EQ(out[1].l7, sent[1]);
	EXPECT_TRUE(out[1].request_id.empty());
	EXPECT_EQ(st.request_ids.get(), ids + 1);
	EXPECT_EQ(st.trace_no_room.get(), no_room + 1);
	for (const frame_out &f : out)
		from_host(peer_ip, 0, response(200), {}, false, f.pf.correlation);
	run_polls();
	EXPECT_EQ(frames(tx2).size(), 2u);
}

/* Network requests to a service without a policy are counted by the engine as if it had
 * been asked (requests, no_policy, allowed), at the end of their burst. (Not "ledger":
 * its limit of one is the next test's.) */
TEST_F(sidecar_stage, requests_without_a_policy_are_in_the_engine_s_counters)
{
	const std::shared_ptr<sidecar::ruleset> rules = stage->policy();
	const policy::policy_stats &ps = rules->engine().stats();
	const size_t allowed = static_cast<size_t>(policy::reason::allowed);
	const uint64_t req0 = ps.requests.get(), none0 = ps.no_policy.get(),
		       ok0 = ps.reasons[allowed].get();
	for (uint64_t i = 0; i < 5; i++)
		from_host(client_ip, 1, request("billing"), {}, true, 4200 + i);
	run_polls();
	EXPECT_EQ(ps.requests.get(), req0 + 5);
	EXPECT_EQ(ps.no_policy.get(), none0 + 5);
	EXPECT_EQ(ps.reasons[allowed].get(), ok0 + 5);
	std::vector<frame_out> out = frames(tx);
	ASSERT_EQ(out.size(), 5u);
	for (const frame_out &f : out)
		from_host(peer_ip, 0, response(200), {}, false, f.pf.correlation);
	run_polls();
	EXPECT_EQ(frames(tx2).size(), 5u);
}

TEST_F(sidecar_stage, the_policy_applies_to_relayed_requests_and_peers_get_no_relay)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t refused = st.policy_refused.get(), misrouted = st.misrouted.get();
	/* a rate limit of one: the first request is relayed, the second refused here */
	from_host(client_ip, 1, request("ledger"), {}, true, 801);
	from_host(client_ip, 1, request("ledger"), {}, true, 802);
	/* the peer asks for a service it serves itself: no relay back (no loop) */
	from_host(peer_ip, 0, request("ledger"), {}, true, 803);
	run_polls();
	std::vector<frame_out> to_peer = frames(tx);
	std::vector<frame_out> to_client = frames(tx2);
	ASSERT_EQ(to_peer.size(), 2u);
	EXPECT_EQ(to_peer[0].kind, wire::frame_kind::request);
	EXPECT_EQ(to_peer[0].service, "ledger");
	EXPECT_EQ(to_peer[1].kind, wire::frame_kind::response); /* misrouted, to the peer */
	EXPECT_EQ(to_peer[1].pf.correlation, 803u);
	EXPECT_EQ(to_peer[1].status, 503);
	EXPECT_EQ(to_peer[1].reason, "misrouted");
	ASSERT_EQ(to_client.size(), 1u);
	EXPECT_EQ(to_client[0].pf.correlation, 802u);
	EXPECT_EQ(to_client[0].status, 429);
	EXPECT_EQ(to_client[0].reason, "rate_limited");
	EXPECT_EQ(st.policy_refused.get(), refused + 1);
	EXPECT_EQ(st.misrouted.get(), misrouted + 1);
	/* the relayed one is answered, so nothing stays pending */
	from_host(peer_ip, 0, response(200), {}, false, to_peer[0].pf.correlation);
	run_polls();
	to_client = frames(tx2);
	ASSERT_EQ(to_client.size(), 1u);
	EXPECT_EQ(to_client[0].pf.correlation, 801u);
	EXPECT_EQ(to_client[0].status, 200);
}

/* A burst from port RX goes through decode, then admission and framing, phase by phase:
 * requests, refusals, malformed headers and answers mixed in one burst each keep their own
 * header (a header buffer each) and their order, and each is answered once. */
TEST_F(sidecar_stage, a_mixed_burst_keeps_each_header_and_the_order_it_came_in)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t relayed = st.relayed.get(), answers = st.relayed_answers.get(),
		       bad = st.bad_header.get(), in_place = st.relayed_in_place.get();
	const auto req = [](unsigned i) {
		std::vector<uint8_t> b(256);
		wire::l7_writer w(b.data(), b.size());
		w.request("billing", "POST", "/pay/" + std::to_string(i), 0, 0);
		b.resize(w.finish());
		return b;
	};
	/* 40 requests (more than a burst), every fifth followed by one that is refused
	 * (no route), every seventh by a malformed one, every ninth by one port RX refused */
	std::vector<uint64_t> refused_corr;
	for (unsigned i = 0; i < 40; i++) {
		from_host(client_ip, 1, req(i), bytes(i, static_cast<uint8_t>(i)), true, 5000 + i);
		if (i % 5 == 4) {
			from_host(client_ip, 1, request("nope"), {}, true, 6000 + i);
			refused_corr.push_back(6000 + i);
		}
		if (i % 7 == 6) {
			from_host(client_ip, 1, std::vector<uint8_t>(40, 0xee), {}, true, 7000 + i);
			refused_corr.push_back(7000 + i);
		}
		if (i % 9 == 8) { /* refused by port RX's gate: addresses and ids only */
			void *obj;
			ASSERT_EQ(rte_mempool_get(msgs, &obj), 0);
			auto *m = new (obj) port::rx_msg();
			m->msg.src = wire::endpoint::from_v4(client_ip, 40001);
			const uint8_t mac[6] = {2, 0, 0, 0, 0, 9};
			std::memcpy(m->msg.src_mac, mac, 6);
			m->msg.kind = wire::frame_kind::request;
			m->msg.correlation = 8800 + i;
			m->port_id = 1;
			m->refusal = port::rx_refusal::saturated;
			m->svc = 1;
			ASSERT_EQ(rte_ring_enqueue(ingress, m), 0);
			refused_corr.push_back(8800 + i);
		}
	}
	run_polls(8);
	std::vector<frame_out> out = frames(tx);
	ASSERT_EQ(out.size(), 40u);
	std::vector<uint64_t> tokens;
	for (unsigned i = 0; i < out.size(); i++) {
		EXPECT_EQ(out[i].path, "/pay/" + std::to_string(i));
		EXPECT_EQ(out[i].body, bytes(i, static_cast<uint8_t>(i)));
		EXPECT_FALSE(out[i].request_id.empty());
		EXPECT_TRUE(out[i].checksum_ok);
		tokens.push_back(out[i].pf.correlation);
	}
	EXPECT_EQ(std::set<uint64_t>(tokens.begin(), tokens.end()).size(), 40u);
	/* each of one segment: made in its own mbuf, both trace fields written there */
	EXPECT_EQ(st.relayed_in_place.get(), in_place + 40);
	std::vector<frame_out> back = frames(tx2);
	ASSERT_EQ(back.size(), refused_corr.size()); /* in the order they came */
	for (size_t i = 0; i < back.size(); i++) {
		EXPECT_EQ(back[i].pf.correlation, refused_corr[i]);
		EXPECT_EQ(back[i].status, refused_corr[i] >= 8800   ? 503
					  : refused_corr[i] >= 7000 ? 400
								    : 404);
	}
	EXPECT_EQ(st.relayed.get(), relayed + 40);
	EXPECT_EQ(st.bad_header.get(), bad + 5);

	/* the peer's answers in reverse, with new requests between them, in one burst */
	for (unsigned i = 0; i < 40; i++) {
		from_host(peer_ip, 0, response(static_cast<uint16_t>(200 + i % 3)), bytes(i, 1), false,
			  tokens[39 - i]);
		if (i % 10 == 0)
			from_host(client_ip, 1, req(100 + i), {}, true, 8000 + i);
	}
	run_polls(8);
	back = frames(tx2);
	ASSERT_EQ(back.size(), 40u);
	for (unsigned i = 0; i < 40; i++) {
		EXPECT_EQ(back[i].pf.correlation, 5000u + 39 - i);
		EXPECT_EQ(back[i].status, 200 + i % 3);
		EXPECT_EQ(back[i].body, bytes(i, 1));
	}
	out = frames(tx);
	ASSERT_EQ(out.size(), 4u);
	for (unsigned k = 0; k < 4; k++)
		EXPECT_EQ(out[k].path, "/pay/" + std::to_string(100 + 10 * k));
	EXPECT_EQ(st.relayed_answers.get(), answers + 40);
	for (unsigned k = 0; k < 4; k++)
		from_host(peer_ip, 0, response(200), {}, false, out[k].pf.correlation);
	run_polls();
	EXPECT_EQ(frames(tx2).size(), 4u);
}

/* Frames of a poll go onto a port's ring in one enqueue, within the room the ring had:
 * what does not fit is refused at once (503 egress_failed), never lost after the fact. */
TEST_F(sidecar_stage, staged_frames_never_exceed_the_room_the_tx_ring_had)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t relayed = st.relayed.get(), ring_full = st.egress_ring_full.get();
	std::vector<void *> filler;
	static int dummy;
	while (rte_ring_free_count(tx) > 3 && rte_ring_enqueue(tx, &dummy) == 0)
		filler.push_back(&dummy);
	for (unsigned i = 0; i < 5; i++)
		from_host(client_ip, 1, request("billing"), {}, true, 9100 + i);
	run_polls();
	void *obj;
	for (size_t i = 0; i < filler.size(); i++)
		ASSERT_EQ(rte_ring_dequeue(tx, &obj), 0);
	std::vector<frame_out> out = frames(tx);
	ASSERT_EQ(out.size(), 3u);
	EXPECT_EQ(st.relayed.get(), relayed + 3);
	EXPECT_EQ(st.egress_ring_full.get(), ring_full + 2);
	std::vector<frame_out> back = frames(tx2);
	ASSERT_EQ(back.size(), 2u);
	for (unsigned k = 0; k < 2; k++) {
		EXPECT_EQ(back[k].pf.correlation, 9103u + k);
		EXPECT_EQ(back[k].status, 503);
		EXPECT_EQ(back[k].reason, "egress_failed");
	}
	for (const frame_out &f : out)
		from_host(peer_ip, 0, response(200), {}, false, f.pf.correlation);
	run_polls();
	EXPECT_EQ(frames(tx2).size(), 3u);
}

/* Also counted as answered() counts an answer: per service, a 504 made here (class 5xx,
 * mesh-generated) and its latency, which a sweep tallies for the 504s it makes in a row. */
TEST_F(sidecar_stage, a_relayed_request_the_peer_never_answers_gets_504)
{
	const sidecar::counters &st = stage->stats();
	const uint64_t timeouts = st.timeouts.get();
	uint32_t slow = UINT32_MAX;
	for (uint32_t s = 0; s < stage->nb_services(); s++)
		if (stage->service_name(s) == "slow")
			slow = s;
	ASSERT_NE(slow, UINT32_MAX);
	sidecar::l7_metrics before;
	stage->add_service_metrics(slow, before);
	for (uint64_t k = 0; k < 3; k++)
		from_host(client_ip, 1, request("slow"), bytes(40, 1), true, 901 + k);
	run_polls();
	std::vector<frame_out> to_peer = frames(tx);
	ASSERT_EQ(to_peer.size(), 3u);
	EXPECT_EQ(stage->pending().size(), 3u);
	std::vector<frame_out> to_client;
	for (int i = 0; i < 200 && to_client.size() < 3; i++) { /* the deadline is 20 ms */
		usleep(5000);
		run_polls(64);
		for (const frame_out &f : frames(tx2))
			to_client.push_back(f);
	}
	ASSERT_EQ(to_client.size(), 3u);
	for (uint64_t k = 0; k < 3; k++) {
		EXPECT_EQ(to_client[k].pf.correlation, 901u + k);
		EXPECT_EQ(to_client[k].status, 504);
		EXPECT_EQ(to_client[k].reason, "timeout");
	}
	EXPECT_EQ(st.timeouts.get(), timeouts + 3);
	sidecar::l7_metrics after;
	stage->add_service_metrics(slow, after);
	EXPECT_EQ(after.timeouts.get(), before.timeouts.get() + 3);
	EXPECT_EQ(after.classes[4].get(), before.classes[4].get() + 3);
	EXPECT_EQ(after.mesh_generated.get(), before.mesh_generated.get() + 3);
	EXPECT_EQ(after.latency.count(), before.latency.count() + 3);
	EXPECT_GE(after.latency.sum_us.get(), before.latency.sum_us.get() + 3 * 20000)
		<< "each waited its 20 ms deadline";
	/* in the buckets of 20 ms and more (the tally's bucket is each run's own) */
	uint64_t late = 0;
	for (unsigned b = sidecar::latency_histogram::bucket_of(20000);
	     b < sidecar::latency_histogram::nb_buckets; b++)
		late += after.latency.buckets[b].get() - before.latency.buckets[b].get();
	EXPECT_EQ(late, 3u);
	EXPECT_EQ(stage->pending().size(), 0u);
	/* the late answer matches nothing */
	const uint64_t no_match = st.no_match.get();
	from_host(peer_ip, 0, response(200), {}, false, to_peer[0].pf.correlation);
	run_polls();
	EXPECT_TRUE(frames(tx2).empty());
	EXPECT_EQ(st.no_match.get(), no_match + 1);
}

/* The sweep tallies a run of 504s by service, route, routing version and the range of its
 * latency bucket: two requests of one service whose 504s come in one burst, ~15 ms apart in
 * age, are counted each in its own bucket (A ~40 ms: [32.8, 65.5) ms; B ~25 ms: [16.4, 32.8)).
 * Their ages are bounded by the clock read around each step; an attempt where a bound
 * straddles a bucket's edge, or A went alone, is taken again. */
TEST_F(sidecar_stage, a_sweep_counts_each_504_in_its_own_latency_bucket)
{
	using clk = std::chrono::steady_clock;
	const auto us_of = [](clk::duration d) {
		return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
	};
	const auto bucket = [](uint64_t us) { return sidecar::latency_histogram::bucket_of(us); };
	uint32_t slow = UINT32_MAX;
	for (uint32_t s = 0; s < stage->nb_services(); s++)
		if (stage->service_name(s) == "slow")
			slow = s;
	ASSERT_NE(slow, UINT32_MAX);
	bool tested = false;
	for (int attempt = 0; attempt < 20 && !tested; attempt++) {
		run_polls(); /* nothing left over */
		frames(tx2).clear();
		sidecar::l7_metrics before;
		stage->add_service_metrics(slow, before);
		const clk::time_point a0 = clk::now();
		from_host(client_ip, 1, request("slow"), bytes(10, 1), true, 7001);
		run_polls();
		const clk::time_point a1 = clk::now();
		usleep(15000);
		const clk::time_point b0 = clk::now();
		from_host(client_ip, 1, request("slow"), bytes(10, 2), true, 7002);
		run_polls();
		const clk::time_point b1 = clk::now();
		const bool a_alone = b1 - a0 >= std::chrono::milliseconds(20) || !frames(tx2).empty();
		usleep(25000); /* B ~25 ms old: both due, one sweep */
		const clk::time_point s0 = clk::now();
		run_polls();
		const clk::time_point s1 = clk::now();
		std::vector<frame_out> back = frames(tx2);
		for (int i = 0; i < 100 && stage->pending().size() != 0; i++) {
			usleep(5000);
			run_polls();
			for (const frame_out &f : frames(tx2))
				back.push_back(f);
		}
		ASSERT_EQ(stage->pending().size(), 0u);
		frames(tx).clear(); /* the relayed requests */
		sidecar::l7_metrics after;
		stage->add_service_metrics(slow, after);
		uint64_t n = 0;
		for (unsigned b = 0; b < sidecar::latency_histogram::nb_buckets; b++)
			n += after.latency.buckets[b].get() - before.latency.buckets[b].get();
		EXPECT_EQ(n, 2u);
		/* each age within [the sweep's start - its send's end, the sweep's end - its
		 * send's start], 1 ms off each edge */
		const uint64_t a_lo = us_of(s0 - a1) - 1000, a_hi = us_of(s1 - a0) + 1000;
		const uint64_t b_lo = us_of(s0 - b1) - 1000, b_hi = us_of(s1 - b0) + 1000;
		if (a_alone || back.size() != 2 || bucket(a_lo) != bucket(a_hi) ||
		    bucket(b_lo) != bucket(b_hi) || bucket(a_lo) == bucket(b_lo))
			continue; /* not two buckets in one burst for sure: again */
		tested = true;
		EXPECT_EQ(after.latency.buckets[bucket(a_lo)].get(),
			  before.latency.buckets[bucket(a_lo)].get() + 1)
			<< "A, " << a_lo << "-" << a_hi << " us";
		EXPECT_EQ(after.latency.buckets[bucket(b_lo)].get(),
			  before.latency.buckets[bucket(b_lo)].get() + 1)
			<< "B, " << b_lo << "-" << b_hi << " us";
	}
	EXPECT_TRUE(tested) << "no attempt had both 504s in one sweep, in buckets known apart";
}

/* A sweep's 504s are outcomes of the requests the policy engine admitted: two in a row open
 * "brittle"'s breaker (two consecutive failures), and its next request is refused 503. */
TEST_F(sidecar_stage, a_sweep_s_504s_open_the_service_s_breaker)
{
	for (uint64_t k = 0; k < 2; k++)
		from_host(client_ip, 1, request("brittle"), bytes(10, 3), true, 7101 + k);
	run_polls();
	ASSERT_EQ(frames(tx).size(), 2u); /* relayed */
	std::vector<frame_out> back;
	for (int i = 0; i < 200 && back.size() < 2; i++) { /* the deadline is 20 ms */
		usleep(5000);
		run_polls(64);
		for (const frame_out &f : frames(tx2))
			back.push_back(f);
	}
	ASSERT_EQ(back.size(), 2u);
	for (const frame_out &f : back)
		EXPECT_EQ(f.status, 504);
	from_host(client_ip, 1, request("brittle"), bytes(10, 3), true, 7103);
	run_polls();
	EXPECT_TRUE(frames(tx).empty()) << "not relayed: the breaker is open";
	back = frames(tx2);
	ASSERT_EQ(back.size(), 1u);
	EXPECT_EQ(back[0].pf.correlation, 7103u);
	EXPECT_EQ(back[0].status, 503);
	EXPECT_EQ(back[0].reason, "circuit_open");
}

/* Shard 0 of three, made on the fixture's emulator (three DPA threads: shard 0 owns thread
 * 0), the fixture's `stage` and `ingress` while it lives; hand-off rings of `ring` entries. */
struct three_shards {
	std::vector<rte_ring *> rings;
	rte_ring *in = nullptr;
	std::unique_ptr<sidecar::stage> own;
	sidecar::stage *fixture_stage = nullptr;
	bool ok = false;

	explicit three_shards(unsigned ring = 64)
	{
		static unsigned seq;
		const std::string tag = std::to_string(seq++);
		for (int k = 0; k < 3; k++)
			rings.push_back(sidecar::create_handoff_ring(
				("st_ho" + tag + "_" + std::to_string(k)).c_str(), ring));
		in = rte_ring_create(("st_in3_" + tag).c_str(), 64, SOCKET_ID_ANY,
				     RING_F_SP_ENQ | RING_F_SC_DEQ);
		for (rte_ring *r : rings)
			if (!r)
				return;
		if (!in)
			return;
		sidecar::network net;
		net.ingress = in;
		net.pkts = sidecar_stage::pkts;
		net.ports.push_back({0, 1500, true, true, sidecar_stage::tx});
		net.ports.push_back({1, 1500, true, false, sidecar_stage::tx2});
		net.nb_shards = 3;
		sidecar::shard_info si;
		si.count = 3;
		si.handoff = rings;
		auto s = sidecar::stage::create(*sidecar_stage::cfg, *sidecar_stage::reg,
						sidecar_stage::emu->side(), net, si);
		if (!s) {
			ADD_FAILURE() << s.error().message();
			return;
		}
		own = std::move(*s);
		fixture_stage = sidecar_stage::stage;
		sidecar_stage::stage = own.get();
		std::swap(sidecar_stage::ingress, in);
		ok = true;
	}
	~three_shards()
	{
		if (ok) {
			sidecar_stage::stage = fixture_stage;
			std::swap(sidecar_stage::ingress, in);
		}
		own.reset();
		for (rte_ring *r : rings)
			rte_ring_free(r);
		rte_ring_free(in);
	}
};

/* An answer whose token names a shard that does not exist (three shards: the token's two
 * shard bits 3) matches nothing: counted no_match, as a token of its own shard that matches
 * nothing is, and dropped. Before 2026-12-08 it was counted handoff_full, which says a
 * hand-off ring was full ("never expected"), and anyone could send one. */
TEST_F(sidecar_stage, an_answer_to_a_shard_that_does_not_exist_is_no_match)
{
	three_shards sh;
	ASSERT_TRUE(sh.ok);
	std::vector<uint8_t> resp(64);
	wire::l7_writer w(resp.data(), resp.size());
	w.response(200);
	resp.resize(w.finish());
	from_host(peer_ip, 0, resp, {}, false, 0xc000);  /* shard 3 */
	from_host(peer_ip, 0, resp, {}, false, 0x4001);  /* shard 1: handed off */
	run_polls();
	const sidecar::counters &c = stage->stats();
	EXPECT_EQ(c.no_match.get(), 1u);
	EXPECT_EQ(c.handoff_full.get(), 0u);
	EXPECT_EQ(c.handoff_out.get(), 1u);
	/* the one handed off is shard 1's, which takes it: freed here */
	sidecar::handoff_item h;
	ASSERT_EQ(rte_ring_dequeue_elem(sh.rings[1], &h, sizeof(h)), 0);
	port::rx_msg_free(static_cast<port::rx_msg *>(h.msg));
	EXPECT_TRUE(answers().empty());
}

/* The RX kernel's note about a delivery whose request is another shard's, when that shard's
 * hand-off ring is full (never expected: it stopped taking them), is counted handoff_full
 * and: a held delivery's hbuf is left to its pending entry, which releases it when the
 * request ends; another's sender is completed with the note's status (a complete_tx command
 * for the DPA). Before 2026-12-08 both hbufs went back to the pool at once: the held one was
 * freed a second time when its request ended, and the other's sender never heard. */
TEST_F(sidecar_stage, a_note_its_request_s_shard_cannot_take_frees_nothing_twice)
{
	three_shards sh;
	ASSERT_TRUE(sh.ok);
	sidecar::handoff_item filler;
	while (rte_ring_enqueue_elem(sh.rings[1], &filler, sizeof(filler)) == 0) {
	}
	rte_mempool *hbufs = emu->hbufs();
	const dpa::arm_rings t0 = emu->side().threads[0];
	/* the RX kernel's ends, as the test plays it (the fixture never runs the emulator's
	 * threads): a producer of notes at the Arm's position (the queue is empty), a consumer
	 * of commands from the Arm's */
	dpumesh_sq rx_notes = *t0.notify, rx_commands = *t0.to_dpa;
	for (const bool hold : {true, false}) {
		SCOPED_TRACE(hold ? "held" : "not held");
		void *hb = nullptr;
		ASSERT_EQ(rte_mempool_get(hbufs, &hb), 0);
		std::memset(hb, 0, DPA_HBUF_META_SIZE); /* src 0: made by the Arm */
		const unsigned avail = rte_mempool_avail_count(hbufs);
		const uint64_t full = stage->stats().handoff_full.get();
		sidecar::dpa_note n;
		n.cmd.what = sidecar::dpa_command::op::deliver_request;
		n.cmd.hold = hold;
		n.cmd.dst = 3; /* pod 3, generation 0: none (its note would go nowhere) */
		n.cmd.req_id = 0x4001; /* shard 1's */
		n.cmd.header = reinterpret_cast<uint64_t>(hb) + DPA_HBUF_META_SIZE;
		n.cmd.header_len = 16;
		n.status = DPUMESH_STATUS_DEST_GONE;
		const sw_descriptor d = n.encode();
		ASSERT_EQ(dpumesh_sq_enqueue_burst(&rx_notes, &d, 1), 1u);
		run_polls();
		EXPECT_EQ(stage->stats().handoff_full.get(), full + 1);
		EXPECT_EQ(rte_mempool_avail_count(hbufs), avail) << "the hbuf is not freed here";
		sw_descriptor out[4];
		const uint32_t got = dpumesh_sq_dequeue_burst(&rx_commands, out, 4);
		if (hold) {
			EXPECT_EQ(got, 0u) << "a held delivery's sender is its request's to complete";
		} else {
			ASSERT_EQ(got, 1u) << "the sender is completed";
			EXPECT_TRUE(out[0].flags & DPUMESH_OP_TX_DONE) << out[0].flags;
			EXPECT_EQ(out[0].header_buf_addr, n.cmd.header);
			EXPECT_EQ(dpumesh_flags_status(out[0].flags), DPUMESH_STATUS_DEST_GONE);
		}
		rte_mempool_put(hbufs, hb);
	}
}

TEST_F(sidecar_stage, malformed_headers_from_the_network_get_400_and_answers_nothing)
{
	const uint64_t bad = stage->stats().bad_header.get();
	from_network(std::vector<uint8_t>(40, 0xee), true, 201);   /* garbage request: 400 */
	from_network(std::vector<uint8_t>(40, 0xee), false, 202);  /* garbage response: dropped */
	std::vector<uint8_t> resp(256);
	wire::l7_writer w(resp.data(), resp.size());
	w.response(200);
	resp.resize(w.finish());
	const uint64_t no_match = stage->stats().no_match.get();
	from_network(resp, false, 12345); /* an answer to a request never made */
	run_polls();
	std::vector<answer> got = answers();
	ASSERT_EQ(got.size(), 1u);
	EXPECT_EQ(got[0].correlation, 201u);
	EXPECT_EQ(got[0].status, 400);
	EXPECT_EQ(got[0].reason, "bad_header");
	EXPECT_EQ(stage->stats().bad_header.get(), bad + 2);
	EXPECT_EQ(stage->stats().no_match.get(), no_match + 1);
}

TEST_F(sidecar_stage, counters_are_listed_by_name)
{
	unsigned n = 0;
	bool saw_requests = false;
	unsigned queue_counters = 0;
	sidecar::for_each_counter(stage->stats(), [&](const char *name, const char *help, uint64_t) {
		n++;
		EXPECT_NE(std::string(help), "");
		saw_requests |= std::string(name) == "net_requests";
		queue_counters += std::string(name) == "resumes" || std::string(name) == "park_refused" ||
				  std::string(name) == "park_refused_network";
	});
	/* 42 + relayed, relayed_answers + three hand-off counters + the destination queues'
	 * park_refused, park_refused_network and resumes + the quotas' quota_refused, answers_refused,
	 * answers_orphaned and answers_deferred + admission's saturated and saturated_gate + the
	 * owed answers' answers_owed and answers_unsent + network-in's expiry_cycles and
	 * decoded_without_hbuf + the network's share between sources, net_share_refused + the
	 * refusals port RX handed on, rx_refusals + relayed_in_place + the requests of pods
	 * that left, dest_left and origin_left */
	EXPECT_EQ(n, 65u);
	EXPECT_TRUE(saw_requests);
	EXPECT_EQ(queue_counters, 3u);
	EXPECT_EQ(stage->policy()->version(), 1u);
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("sidecar_stage", {}, 256));
	return RUN_ALL_TESTS();
}
