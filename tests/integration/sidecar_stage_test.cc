// SPDX-License-Identifier: BSD-3-Clause
// The sidecar stage in-process: a real EAL, pod registry, DPA emulator (its queues; its
// threads are not run), ingress and TX rings. Messages from the network go in through the
// ingress ring, the poll runs here, and the answers are read off the port's TX ring: every
// refused request gets exactly one answer with its status, reason and correlation, answers
// that match nothing get none, and every hbuf, mbuf and rx_msg goes back.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dpumesh/config/config.h"
#include "dpumesh/dpa/emulator.h"
#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/port/rx.h"
#include "dpumesh/sidecar/sidecar.h"
#include "dpumesh/wire/frame.h"
#include "dpumesh/wire/l7.h"
#include "eal_env.h"

using namespace dpumesh;

namespace {

const char *node_json = R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.0.0.1", "mesh_port": 7000 },
  "peers": [ { "name": "n2", "mac": "02:00:00:00:00:02", "ipv4": "10.0.0.2", "mesh_port": 7000 } ],
  "services": [ { "name": "echo", "max_pods": 4 }, { "name": "billing", "max_pods": 4 } ],
  "routes": [ { "service": "billing", "to": "n2" } ],
  "dpa": { "backend": "emu", "threads": 1 },
  "dma": { "backend": "cpu" }
})";

/** One answer read off the TX ring. */
struct answer {
	uint16_t status = 0;
	std::string reason, hop;
	uint64_t correlation = 0;
	bool mesh = false;
};

class sidecar_stage : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		auto c = config::load_string(node_json, "sidecar_stage_test");
		ASSERT_TRUE(c) << c.error().message();
		cfg = new config::node_config(std::move(*c));
		reg = new pod_registry(cfg->pools, cfg->services);
		auto e = dpa::emulator::create(*cfg, *reg, 1);
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
		net.ports.push_back({0, 1500, true, false, tx});
		auto s = sidecar::stage::create(*cfg, *reg, *emu, net);
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
	static rte_ring *ingress, *tx;
	static sidecar::stage *stage;
	unsigned hbufs_before = 0;
};

config::node_config *sidecar_stage::cfg;
pod_registry *sidecar_stage::reg;
dpa::emulator *sidecar_stage::emu;
rte_mempool *sidecar_stage::pkts, *sidecar_stage::msgs;
rte_ring *sidecar_stage::ingress, *sidecar_stage::tx;
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
			EXPECT_GE(stage->service_metrics(s).refused.get(), 1u);
		}
	EXPECT_TRUE(found);
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
	sidecar::for_each_counter(stage->stats(), [&](const char *name, const char *help, uint64_t) {
		n++;
		EXPECT_NE(std::string(help), "");
		saw_requests |= std::string(name) == "net_requests";
	});
	EXPECT_EQ(n, 45u);
	EXPECT_TRUE(saw_requests);
	EXPECT_EQ(stage->policy()->version(), 1u);
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("sidecar_stage", {}, 256));
	return RUN_ALL_TESTS();
}
