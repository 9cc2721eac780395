// SPDX-License-Identifier: BSD-3-Clause
// Engine + port + port_rx on a real EAL: frames sent into a net_ring port are received by
// the port_rx stage on a worker lcore and classified, each drop counted by reason.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dpumesh/config/config.h"
#include "dpumesh/wire/frame.h"
#include "dpumesh/wire/l7.h"
#include "dpumesh/lcore/runner.h"
#include "dpumesh/port/port.h"
#include "dpumesh/port/rx.h"
#include "eal_env.h"

using namespace dpumesh;

namespace {

const char *const node_json = R"({
  "node": { "name": "t", "mac": "02:00:00:00:00:01", "ipv4": "10.1.0.1", "mesh_port": 7000 },
  "ports": [ { "name": "loop", "dev": "net_ring0", "rx_desc": 512, "tx_desc": 512 } ],
  "mempool": { "mbufs": 2047, "cache": 32 },
  "lcores": { "idle": "adaptive", "stages": { "port_rx": 1 } }
})";

enum class kind { mesh_v4, mesh_v6, other_port, tcp, arp, bad_magic };

/* A one-frame mesh message (IPv4 or IPv6), built by the wire library itself. */
rte_mbuf *make_mesh_frame(rte_mempool *mp, bool v6, uint32_t msg_id)
{
	uint8_t l7[64];
	wire::l7_writer w(l7, sizeof(l7));
	w.request("echo", "GET", "/");
	uint16_t l7_len = static_cast<uint16_t>(w.finish());
	wire::link_addr a{};
	if (v6) {
		a.src.ip[0] = 0xfd, a.src.ip[15] = 2;
		a.dst.ip[0] = 0xfd, a.dst.ip[15] = 1;
	} else {
		a.src = wire::endpoint::from_v4(rte_cpu_to_be_32(0x0a010002), 0);
		a.dst = wire::endpoint::from_v4(rte_cpu_to_be_32(0x0a010001), 0);
	}
	a.src.port = 40000;
	a.dst.port = 7000;
	static const uint8_t body[32] = {1, 2, 3};
	rte_mbuf *m = nullptr;
	wire::fragment(a, wire::frame_kind::request, msg_id, 1, l7, l7_len,
		       wire::body_ref{body, sizeof(body)}, 1500, mp, &m, 1);
	return m;
}

rte_mbuf *make_frame(rte_mempool *mp, kind k, uint32_t seq)
{
	if (k == kind::mesh_v4 || k == kind::mesh_v6)
		return make_mesh_frame(mp, k == kind::mesh_v6, seq);
	rte_mbuf *m = rte_pktmbuf_alloc(mp);
	if (!m)
		return nullptr;
	size_t len = sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr) + sizeof(rte_udp_hdr) + 32;
	auto *p = rte_pktmbuf_mtod(m, uint8_t *);
	std::memset(p, 0, len);
	m->data_len = m->pkt_len = static_cast<uint32_t>(len);
	auto *eth = reinterpret_cast<rte_ether_hdr *>(p);
	if (k == kind::arp) {
		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
		return m;
	}
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	auto *ip = reinterpret_cast<rte_ipv4_hdr *>(eth + 1);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(static_cast<uint16_t>(len - sizeof(*eth)));
	ip->next_proto_id = k == kind::tcp ? IPPROTO_TCP : IPPROTO_UDP;
	auto *udp = reinterpret_cast<rte_udp_hdr *>(ip + 1);
	udp->dgram_len = rte_cpu_to_be_16(sizeof(rte_udp_hdr) + 32);
	udp->dst_port = rte_cpu_to_be_16(k == kind::other_port ? 53 : 7000);
	return m; /* kind::bad_magic: UDP to the mesh port, 32 zero bytes of "header" */
}

} // namespace

TEST(Engine, PortRxClassifiesAndCountsOnWorkerLcore)
{
	auto cfg = config::load_string(node_json, "engine_test.json");
	ASSERT_TRUE(cfg) << cfg.error().message();
	auto pool = port::create_pktmbuf_pool(*cfg);
	ASSERT_TRUE(pool) << pool.error().message();
	auto ports = port::open_all(*cfg, *pool);
	ASSERT_TRUE(ports) << ports.error().message();
	ASSERT_EQ(ports->size(), 1u);
	EXPECT_EQ(ports->at(0).driver, "net_ring");

	port::rx_ctx rx;
	rx.mesh_port_be = rte_cpu_to_be_16(7000);
	auto reasm = wire::reassembler::create(wire::reasm_config{}, "engine_test", SOCKET_ID_ANY);
	ASSERT_TRUE(reasm) << reasm.error().message();
	rx.reasm = std::move(*reasm);
	rx.msg_pool = rte_mempool_create("engine_msgs", 1023, sizeof(port::rx_msg), 0, 0,
					 nullptr, nullptr, nullptr, nullptr, SOCKET_ID_ANY, 0);
	ASSERT_NE(rx.msg_pool, nullptr);
	rx.queues.push_back({ports->at(0).port_id, 0});
	{
		lcore::runner r(cfg->lcores);
		ASSERT_TRUE(r.add(1, port::rx_stage(rx)).is_ok());
		EXPECT_FALSE(r.add(rte_get_main_lcore(), port::rx_stage(rx)).is_ok());
		EXPECT_FALSE(r.add(77, port::rx_stage(rx)).is_ok());
		ASSERT_TRUE(r.launch().is_ok());

		/* net_ring loops TX back to RX of the same port */
		const struct {
			kind k;
			unsigned n;
		} mix[] = {{kind::mesh_v4, 300}, {kind::mesh_v6, 100}, {kind::other_port, 40},
			   {kind::tcp, 20}, {kind::arp, 10}, {kind::bad_magic, 5}};
		unsigned total = 0;
		for (const auto &e : mix) {
			for (unsigned i = 0; i < e.n; i++) {
				rte_mbuf *m = make_frame(*pool, e.k, total);
				ASSERT_NE(m, nullptr);
				while (rte_eth_tx_burst(ports->at(0).port_id, 0, &m, 1) == 0)
					std::this_thread::sleep_for(std::chrono::microseconds(50));
				total++;
			}
		}
		auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
		while (rx.stats.frames.get() < total && std::chrono::steady_clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
		r.stop();

		auto drop = [&](port::rx_drop d) {
			return rx.stats.drops[static_cast<size_t>(d)].get();
		};
		EXPECT_EQ(rx.stats.frames.get(), total);
		EXPECT_EQ(rx.stats.accepted.get(), 400u);
		EXPECT_EQ(rx.stats.no_consumer.get(), 400u); /* whole messages, no sidecar yet */
		EXPECT_EQ(drop(port::rx_drop::bad_magic), 5u);
		EXPECT_EQ(drop(port::rx_drop::other_port), 40u);
		EXPECT_EQ(drop(port::rx_drop::not_udp), 20u);
		EXPECT_EQ(drop(port::rx_drop::not_ip), 10u);
		auto stages = r.stages();
		ASSERT_EQ(stages.size(), 1u);
		EXPECT_EQ(stages[0].name, "port_rx");
		EXPECT_EQ(stages[0].lcore, 1u);
		EXPECT_EQ(stages[0].work, total);
		EXPECT_GT(stages[0].busy_cycles, 0u);
	}
	EXPECT_EQ(rte_mempool_avail_count(rx.msg_pool), 1023u);
	rte_mempool_free(rx.msg_pool);
	rx.reasm.reset();
	port::close_all(*ports);
	/* every mbuf came back to the pool: nothing leaked on the drop paths */
	EXPECT_EQ(rte_mempool_avail_count(*pool), cfg->mempool.mbufs);
	rte_mempool_free(*pool);
}

TEST(Engine, PortErrorsNameTheConfigLocation)
{
	auto cfg = config::load_string(R"({
  "node": { "name": "t", "mac": "02:00:00:00:00:01", "ipv4": "10.1.0.1" },
  "ports": [ { "name": "nope", "dev": "no_such_device" } ]
})",
				       "bad.json");
	ASSERT_TRUE(cfg) << cfg.error().message();
	auto pool = port::create_pktmbuf_pool(*cfg);
	ASSERT_TRUE(pool);
	auto ports = port::open_all(*cfg, *pool);
	ASSERT_FALSE(ports);
	EXPECT_NE(ports.error().message().find("bad.json:3:39: port nope: device \"no_such_device\" "
					       "not found"),
		  std::string::npos)
		<< ports.error().message();
	rte_mempool_free(*pool);
}

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("engine", {}));
	return RUN_ALL_TESTS();
}
