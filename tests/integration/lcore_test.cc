// SPDX-License-Identifier: BSD-3-Clause
// Engine + port + port_rx on a real EAL: frames sent into a net_ring port are received by
// the port_rx stage on a worker lcore and classified, each drop counted by reason.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <ctime>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <rte_cycles.h>

#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_udp.h>

#include "dpumesh/common/tsan.h"
#include "dpumesh/config/config.h"
#include "dpumesh/wire/frame.h"
#include "dpumesh/wire/l7.h"
#include "dpumesh/lcore/runner.h"
#include "dpumesh/port/port.h"
#include "dpumesh/port/rx.h"
#include "dpumesh/port/service_gate.h"
#include "dpumesh/port/tx.h"
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
rte_mbuf *make_mesh_frame(rte_mempool *mp, bool v6, uint32_t msg_id,
			  wire::frame_kind fk = wire::frame_kind::request)
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
	wire::fragment(a, fk, msg_id, 1000 + msg_id, l7, l7_len,
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

/* The node of node_json with its mbuf pool and its one port open: where each port RX case
 * starts. The test closes the port and frees the pool (it checks the pool's count first). */
struct engine_port {
	std::optional<config::node_config> cfg;
	std::optional<rte_mempool *> pool;
	std::optional<std::vector<port::port_info>> ports;
	std::string error;

	bool open()
	{
		auto c = config::load_string(node_json, "engine_test.json");
		if (!c)
			return fail(c.error().message());
		cfg = std::move(*c);
		auto p = port::create_pktmbuf_pool(*cfg);
		if (!p)
			return fail(p.error().message());
		pool = *p;
		auto o = port::open_all(*cfg, *pool);
		if (!o)
			return fail(o.error().message());
		ports = std::move(*o);
		return true;
	}

private:
	bool fail(std::string why)
	{
		error = std::move(why);
		return false;
	}
};

/* Port RX's context with a reassembler (rc) and `msgs` messages (no mempool cache: the
 * pool's count is exact), named after `name`; the caller adds queues, rings, addresses. */
void basic_rx(port::rx_ctx &rx, const std::string &name, unsigned msgs,
	      const wire::reasm_config &rc = {})
{
	rx.mesh_port_be = rte_cpu_to_be_16(7000);
	auto reasm = wire::reassembler::create(rc, name.c_str(), SOCKET_ID_ANY);
	ASSERT_TRUE(reasm) << reasm.error().message();
	rx.reasm = std::move(*reasm);
	rx.msg_pool = rte_mempool_create((name + "_msgs").c_str(), msgs, sizeof(port::rx_msg), 0,
					 0, nullptr, nullptr, nullptr, nullptr, SOCKET_ID_ANY, 0);
	ASSERT_NE(rx.msg_pool, nullptr);
}

} // namespace

TEST(Engine, PortRxClassifiesAndCountsOnWorkerLcore)
{
	engine_port setup;
	ASSERT_TRUE(setup.open()) << setup.error;
	auto &cfg = setup.cfg;
	auto &pool = setup.pool;
	auto &ports = setup.ports;
	ASSERT_EQ(ports->size(), 1u);
	EXPECT_EQ(ports->at(0).driver, "net_ring");

	port::rx_ctx rx;
	ASSERT_NO_FATAL_FAILURE(basic_rx(rx, "engine_test", 1023));
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
				DPUMESH_TSAN_PMD_GIVES(&m, 1);
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

/* A frame of a family the node has an address of is taken only when it is sent to that
 * address (other_host otherwise), whatever the family of the other: IPv4 frames (port RX's
 * inline parse, its destination compared as it lies in the frame) and IPv6 ones
 * (parse_any()), with each address set, set to another, set to one of the other family,
 * or not set. Port RX polled here, on the test's thread. */
TEST(Engine, PortRxTakesFramesToItsOwnAddressOnly)
{
	engine_port setup;
	ASSERT_TRUE(setup.open()) << setup.error;
	auto &cfg = setup.cfg;
	auto &pool = setup.pool;
	auto &ports = setup.ports;
	/* make_mesh_frame()'s destinations: 10.1.0.1 and fd00::1 */
	const wire::endpoint v4 = wire::endpoint::from_v4(rte_cpu_to_be_32(0x0a010001), 0);
	const wire::endpoint v4_other = wire::endpoint::from_v4(rte_cpu_to_be_32(0x0a010009), 0);
	wire::endpoint v6{}, v6_other{};
	v6.ip[0] = 0xfd, v6.ip[15] = 1;
	v6_other.ip[0] = 0xfd, v6_other.ip[15] = 9;
	/* the low 4 bytes of an IPv6 address the same as the IPv4 frames' destination: not
	 * IPv4-mapped, so no IPv4 frame is to it */
	wire::endpoint v6_like_v4 = v4;
	v6_like_v4.ip[10] = 0;
	using opt = std::optional<wire::endpoint>;
	const struct {
		opt ip4, ip6;
		unsigned v4_taken, v6_taken;
	} cases[] = {
		{v4, v6, 4, 4},	       {v4_other, v6, 0, 4},	  {v4, v6_other, 4, 0},
		{std::nullopt, v6, 4, 4}, {v4, std::nullopt, 4, 4}, {std::nullopt, std::nullopt, 4, 4},
		{v6_like_v4, v6, 0, 4},   {v6, v4, 0, 4}, /* fd00::1 as "the IPv4 address": compared first */
	};
	unsigned c = 0;
	for (const auto &k : cases) {
		port::rx_ctx rx;
		ASSERT_NO_FATAL_FAILURE(basic_rx(rx, "engine_own" + std::to_string(c), 63));
		rx.ip4 = k.ip4;
		rx.ip6 = k.ip6;
		rx.queues.push_back({ports->at(0).port_id, 0});
		for (unsigned i = 0; i < 8; i++) {
			rte_mbuf *m = make_mesh_frame(*pool, i % 2, i);
			ASSERT_NE(m, nullptr);
			DPUMESH_TSAN_PMD_GIVES(&m, 1);
			ASSERT_EQ(rte_eth_tx_burst(ports->at(0).port_id, 0, &m, 1), 1u);
		}
		for (unsigned polls = 0; polls < 100 && rx.stats.frames.get() < 8; polls++)
			port::rx_poll(&rx);
		const auto other_host = rx.stats.drops[size_t(port::rx_drop::other_host)].get();
		EXPECT_EQ(rx.stats.frames.get(), 8u) << c;
		EXPECT_EQ(rx.stats.accepted.get(), k.v4_taken + k.v6_taken) << c;
		EXPECT_EQ(other_host, 8u - k.v4_taken - k.v6_taken) << c;
		EXPECT_EQ(rx.stats.no_consumer.get(), k.v4_taken + k.v6_taken) << c;
		EXPECT_EQ(rte_mempool_avail_count(rx.msg_pool), 63u) << c;
		rte_mempool_free(rx.msg_pool);
		rx.reasm.reset();
		c++;
	}
	port::close_all(*ports);
	EXPECT_EQ(rte_mempool_avail_count(*pool), cfg->mempool.mbufs);
	rte_mempool_free(*pool);
}

/* A request that finds port RX's message pool empty is not dropped: it takes an rx_msg of
 * the reserve and goes on as a refusal (the sidecar answers 503 overloaded from the addresses
 * kept); only a request that finds the reserve empty too is dropped, and an answer that
 * finds no rx_msg is dropped (its requester hears 504 at its deadline). Each is counted. */
/* rx_msg_free_bulk(): every rx_msg back to its own pool (one pool, or the reserve's among
 * them) and every chain freed (a message's, a body's, or none: a relayed one's), in bursts
 * of more than 32. */
TEST(Engine, RxMsgFreeBulkReturnsEachMessageToItsPoolAndFreesItsChains)
{
	/* no mempool cache: the pools' counts are exact */
	rte_mempool *msgs = rte_mempool_create("free_bulk_msgs", 63, sizeof(port::rx_msg), 0, 0,
					       nullptr, nullptr, nullptr, nullptr, SOCKET_ID_ANY, 0);
	rte_mempool *reserve = rte_mempool_create("free_bulk_rsv", 7, sizeof(port::rx_msg), 0, 0,
						  nullptr, nullptr, nullptr, nullptr, SOCKET_ID_ANY, 0);
	rte_mempool *pkts = rte_pktmbuf_pool_create("free_bulk_pkts", 255, 0, 0,
						    RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	ASSERT_TRUE(msgs && reserve && pkts);
	for (bool mixed : {false, true}) {
		std::vector<port::rx_msg *> v;
		for (unsigned i = 0; i < 40; i++) {
			void *obj;
			rte_mempool *from = mixed && (i % 9 == 4) ? reserve : msgs;
			ASSERT_EQ(rte_mempool_get(from, &obj), 0);
			auto *m = new (obj) port::rx_msg();
			if (i % 3 == 0) /* a whole message */
				m->msg.chain = rte_pktmbuf_alloc(pkts);
			if (i % 5 == 1) /* a body handed to the DPA and given back */
				m->body.chain = rte_pktmbuf_alloc(pkts);
			v.push_back(m);
		}
		EXPECT_LT(rte_mempool_avail_count(pkts), 255u);
		port::rx_msg_free_bulk(v.data(), static_cast<unsigned>(v.size()));
		EXPECT_EQ(rte_mempool_avail_count(msgs), 63u) << mixed;
		EXPECT_EQ(rte_mempool_avail_count(reserve), 7u) << mixed;
		EXPECT_EQ(rte_mempool_avail_count(pkts), 255u) << mixed;
	}
	rte_mempool_free(pkts);
	rte_mempool_free(reserve);
	rte_mempool_free(msgs);
}

TEST(Engine, PortRxRefusesFromItsReserveWhenThePoolIsEmpty)
{
	engine_port setup;
	ASSERT_TRUE(setup.open()) << setup.error;
	auto &cfg = setup.cfg;
	auto &pool = setup.pool;
	auto &ports = setup.ports;

	port::rx_ctx rx;
	/* no mempool cache: the pools' counts are exact */
	ASSERT_NO_FATAL_FAILURE(basic_rx(rx, "engine_rsv", 7));
	rx.reserve_pool = rte_mempool_create("engine_rsv_ref", 5, sizeof(port::rx_msg), 0, 0,
					     nullptr, nullptr, nullptr, nullptr, SOCKET_ID_ANY, 0);
	rx.next = rte_ring_create("engine_rsv_next", 64, SOCKET_ID_ANY,
				  RING_F_SP_ENQ | RING_F_SC_DEQ);
	ASSERT_NE(rx.reserve_pool, nullptr);
	ASSERT_NE(rx.next, nullptr);
	rx.queues.push_back({ports->at(0).port_id, 0});
	/* 6 whole messages wait: the 7th request is refused by that bound (with the pool's
	 * last rx_msg), the next 5 from the reserve */
	rx.backlog_limit = 6;
	constexpr unsigned nb_requests = 20, nb_answers = 3;
	{
		lcore::runner r(cfg->lcores);
		ASSERT_TRUE(r.add(1, port::rx_stage(rx)).is_ok());
		ASSERT_TRUE(r.launch().is_ok());
		/* nobody takes from the ring: 6 messages reach the backlog bound, a refusal empties
		 * the pool, 5 refusals the reserve */
		for (unsigned i = 0; i < nb_requests + nb_answers; i++) {
			rte_mbuf *m = make_mesh_frame(*pool, i % 2, i,
						      i < nb_requests ? wire::frame_kind::request
								      : wire::frame_kind::response);
			ASSERT_NE(m, nullptr);
			DPUMESH_TSAN_PMD_GIVES(&m, 1);
			while (rte_eth_tx_burst(ports->at(0).port_id, 0, &m, 1) == 0)
				std::this_thread::sleep_for(std::chrono::microseconds(50));
		}
		auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
		while (rx.stats.frames.get() < nb_requests + nb_answers &&
		       std::chrono::steady_clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
		r.stop();
	}
	EXPECT_EQ(rx.stats.frames.get(), nb_requests + nb_answers);
	EXPECT_EQ(rx.stats.messages.get(), 12u);
	EXPECT_EQ(rx.stats.refused_overloaded.get(), 6u);
	EXPECT_EQ(rx.stats.overloaded_backlog.get(), 1u);
	EXPECT_EQ(rx.stats.reserve_empty.get(), nb_requests - 12u);
	EXPECT_EQ(rx.stats.msg_pool_empty.get(), nb_answers);
	EXPECT_EQ(rx.stats.ring_full.get(), 0u);
	/* in arrival order: whole messages, then refusals that kept what an answer needs */
	void *obj;
	unsigned k = 0;
	while (rte_ring_dequeue(rx.next, &obj) == 0) {
		auto *m = static_cast<port::rx_msg *>(obj);
		if (k < 6) {
			EXPECT_EQ(m->refusal, port::rx_refusal::none) << k;
			EXPECT_NE(m->msg.chain, nullptr) << k;
			/* the message as its frame said (IPv4: parse_frame()'s inline parse, its
			 * head copied whole; IPv6: parse_any()'s): every field port RX fills */
			EXPECT_EQ(m->msg.kind, wire::frame_kind::request) << k;
			EXPECT_EQ(m->msg.msg_id, k) << k;
			EXPECT_EQ(m->msg.correlation, 1000u + k) << k;
			EXPECT_EQ(m->msg.src.port, 40000u) << k;
			wire::endpoint src;
			if (k % 2) {
				src.ip[0] = 0xfd, src.ip[15] = 2;
			} else {
				src = wire::endpoint::from_v4(rte_cpu_to_be_32(0x0a010002), 0);
			}
			EXPECT_EQ(std::memcmp(m->msg.src.ip, src.ip, 16), 0) << k;
			const uint8_t zero_mac[6] = {};
			EXPECT_EQ(std::memcmp(m->msg.src_mac, zero_mac, 6), 0) << k;
			ASSERT_NE(m->msg.chain, nullptr) << k;
			EXPECT_EQ(m->msg.msg_len, m->msg.chain->pkt_len) << k;
			EXPECT_EQ(m->msg.msg_len - m->msg.l7_len, 32u) << k; /* the body */
			EXPECT_GE(m->msg.l7_len, 16u) << k;
			/* the payload's sum where the UDP checksum was computed here (IPv4, no
			 * offload on net_ring), else 0 (IPv6: parse_any()) */
			EXPECT_EQ(m->msg.payload_sum,
				  k % 2 ? 0
					: csum_folded(rte_pktmbuf_mtod(m->msg.chain, const uint8_t *),
						      m->msg.msg_len))
				<< k;
		} else {
			EXPECT_EQ(m->refusal, port::rx_refusal::overloaded) << k;
			EXPECT_EQ(m->msg.chain, nullptr) << k;
			EXPECT_EQ(m->msg.kind, wire::frame_kind::request) << k;
			EXPECT_EQ(m->msg.correlation, 1000u + k) << k;
			EXPECT_EQ(m->msg.msg_id, k) << k;
			EXPECT_EQ(m->msg.src.port, 40000u) << k;
			EXPECT_EQ(m->port_id, ports->at(0).port_id) << k;
		}
		port::rx_msg_free(m);
		k++;
	}
	EXPECT_EQ(k, 12u);
	EXPECT_EQ(rte_mempool_avail_count(rx.msg_pool), 7u);
	EXPECT_EQ(rte_mempool_avail_count(rx.reserve_pool), 5u);
	rte_mempool_free(rx.msg_pool);
	rte_mempool_free(rx.reserve_pool);
	rte_ring_free(rx.next);
	rx.reasm.reset();
	port::close_all(*ports);
	EXPECT_EQ(rte_mempool_avail_count(*pool), cfg->mempool.mbufs);
	rte_mempool_free(*pool);
}

namespace {

/* The frames of one request to `service` of several frames (a 3000-byte body at MTU 1500). */
std::vector<rte_mbuf *> make_request_frames(rte_mempool *mp, const char *service, uint32_t msg_id)
{
	uint8_t l7[64];
	wire::l7_writer w(l7, sizeof(l7));
	w.request(service, "POST", "/");
	uint16_t l7_len = static_cast<uint16_t>(w.finish());
	wire::link_addr a{};
	a.src = wire::endpoint::from_v4(rte_cpu_to_be_32(0x0a010002), 0);
	a.dst = wire::endpoint::from_v4(rte_cpu_to_be_32(0x0a010001), 0);
	a.src.port = 40000;
	a.dst.port = 7000;
	static const uint8_t body[3000] = {7};
	std::vector<rte_mbuf *> f(8);
	f.resize(wire::fragment(a, wire::frame_kind::request, msg_id, 1000 + msg_id, l7, l7_len,
				wire::body_ref{body, sizeof(body)}, 1500, mp, f.data(), 8));
	return f;
}

/* Port RX's context for the refusal cases: a reassembler (rc), 63 messages, and the rings
 * to the sidecar and for refusals, named after `name`. */
void refusing_rx(port::rx_ctx &rx, const std::string &name, const wire::reasm_config &rc)
{
	ASSERT_NO_FATAL_FAILURE(basic_rx(rx, name, 63, rc));
	rx.next = rte_ring_create((name + "_next").c_str(), 64, SOCKET_ID_ANY,
				  RING_F_SP_ENQ | RING_F_SC_DEQ);
	rx.refusals = rte_ring_create((name + "_refs").c_str(), 64, SOCKET_ID_ANY,
				      RING_F_SP_ENQ | RING_F_SC_DEQ);
	ASSERT_NE(rx.next, nullptr);
	ASSERT_NE(rx.refusals, nullptr);
}

} // namespace

/* The gate's name index: every service found by its name, from any place in memory (port
 * RX looks names up in place in a frame), and nothing else: names that differ in one byte
 * at any place, prefixes and longer names are not services. */
TEST(ServiceGate, FindsEachNameAndNoNearMiss)
{
	std::vector<std::string> names;
	for (size_t len = 1; len <= 21; len++) {
		std::string n;
		for (size_t i = 0; i < len; i++)
			n += static_cast<char>('a' + (i * 7 + len) % 26);
		names.push_back(n);
	}
	port::service_gate gate(names);
	for (uint32_t i = 0; i < names.size(); i++) {
		const std::string &n = names[i];
		std::vector<char> frame(n.size() + 3, '#');
		std::memcpy(frame.data() + 3, n.data(), n.size()); /* at an odd offset */
		EXPECT_EQ(gate.find(std::string_view(frame.data() + 3, n.size())), i) << n;
		for (size_t at = 0; at < n.size(); at++) {
			std::string miss = n;
			miss[at] = static_cast<char>(miss[at] ^ 0x20);
			EXPECT_EQ(gate.find(miss), UINT32_MAX) << miss;
		}
		EXPECT_EQ(gate.find(n + "x"), UINT32_MAX);
		if (n.size() > 1) { /* its prefixes are not names (each length's letters differ) */
			EXPECT_EQ(gate.find(std::string_view(n).substr(0, n.size() - 1)), UINT32_MAX);
		}
	}
	EXPECT_EQ(gate.find(""), UINT32_MAX);
}

/* Names of up to 8 bytes are told apart by a key made of their bytes and their length:
 * names whose keys are alike (a name and its doubled or stretched form: "abcd" and
 * "abcdabcd", "ab" and "abb"), and hundreds of names in one index, each found at its own
 * index and nothing else found. */
TEST(ServiceGate, KeysOfShortNamesAndManyNames)
{
	std::vector<std::string> names = {"abcd", "abcdabcd", "ab", "abb", "a", "aa", "aaa",
					  "abcdefgh", "abcdefghi", "efghabcd", "x"};
	uint32_t seed = 7;
	const auto next = [&seed] { return seed = seed * 1103515245u + 12345u; };
	while (names.size() < 600) {
		std::string n(1 + (next() >> 16) % 20, 'a');
		for (char &c : n)
			c = static_cast<char>('a' + (next() >> 16) % 4); /* few letters: near names */
		if (std::find(names.begin(), names.end(), n) == names.end())
			names.push_back(n);
	}
	port::service_gate gate(names);
	for (uint32_t i = 0; i < names.size(); i++)
		EXPECT_EQ(gate.find(names[i]), i) << names[i];
	for (int k = 0; k < 20000; k++) {
		std::string n(1 + (next() >> 16) % 21, 'a');
		for (char &c : n)
			c = static_cast<char>('a' + (next() >> 16) % 4);
		const auto it = std::find(names.begin(), names.end(), n);
		const uint32_t want =
			it == names.end() ? UINT32_MAX : static_cast<uint32_t>(it - names.begin());
		EXPECT_EQ(gate.find(n), want) << n;
	}
}

/* A saturated service's request of several frames is refused at its first frame: one refusal
 * for the sidecar, its later frames dropped by the reassembler's tombstone (also those that
 * came before the first), a repeat of its first frame no second refusal; another service's
 * request of several frames is reassembled as before, and nothing stays held. */
TEST(Engine, PortRxRefusesAManyFrameRequestAtItsFirstFrame)
{
	engine_port setup;
	ASSERT_TRUE(setup.open()) << setup.error;
	auto &cfg = setup.cfg;
	auto &pool = setup.pool;
	auto &ports = setup.ports;

	port::service_gate gate({"echo", "other"});
	gate.set_saturated(gate.find("echo"), true);
	port::rx_ctx rx;
	ASSERT_NO_FATAL_FAILURE(refusing_rx(rx, "engine_tomb", wire::reasm_config{}));
	rx.gate = &gate;
	rx.queues.push_back({ports->at(0).port_id, 0});

	/* in arrival order: 5 requests in order (message 0's first frame twice), one whose
	 * last frame comes first, one to the other service, one of a single frame */
	std::vector<rte_mbuf *> frames;
	for (uint32_t id = 0; id < 5; id++) {
		auto f = make_request_frames(*pool, "echo", id);
		ASSERT_EQ(f.size(), 3u);
		frames.push_back(f[0]);
		if (id == 0) /* while its tombstone lives: no second refusal */
			frames.push_back(rte_pktmbuf_copy(f[0], *pool, 0, UINT32_MAX));
		frames.insert(frames.end(), f.begin() + 1, f.end());
	}
	auto late = make_request_frames(*pool, "echo", 5);
	ASSERT_EQ(late.size(), 3u);
	frames.insert(frames.end(), {late[2], late[0], late[1]});
	auto other = make_request_frames(*pool, "other", 6);
	ASSERT_EQ(other.size(), 3u);
	frames.insert(frames.end(), other.begin(), other.end());
	frames.push_back(make_mesh_frame(*pool, false, 7));
	for (rte_mbuf *m : frames)
		ASSERT_NE(m, nullptr);
	{
		lcore::runner r(cfg->lcores);
		ASSERT_TRUE(r.add(1, port::rx_stage(rx)).is_ok());
		ASSERT_TRUE(r.launch().is_ok());
		for (rte_mbuf *m : frames) {
			DPUMESH_TSAN_PMD_GIVES(&m, 1);
			while (rte_eth_tx_burst(ports->at(0).port_id, 0, &m, 1) == 0)
				std::this_thread::sleep_for(std::chrono::microseconds(50));
		}
		auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
		while (rx.stats.frames.get() < frames.size() &&
		       std::chrono::steady_clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
		r.stop();
	}
	EXPECT_EQ(rx.stats.frames.get(), frames.size());
	EXPECT_EQ(rx.stats.refused_saturated.get(), 7u) << "one per request, the repeat none";
	const auto dropped = [&](wire::wire_drop d) {
		return rx.stats.drops[size_t(d)].get() + rx.reasm->stats().drops[size_t(d)].get();
	};
	EXPECT_EQ(dropped(wire::wire_drop::refused_frag), 6u * 2u);
	EXPECT_EQ(rx.reasm->stats().duplicates.get(), 1u) << "message 0's first frame again";
	EXPECT_EQ(rx.reasm->stats().tombstones.get(), 6u);
	EXPECT_EQ(rx.reasm->in_flight(), 0u) << "every tombstone went with its last frame";
	EXPECT_EQ(rx.reasm->mbufs_held(), 0u);
	void *obj;
	std::vector<uint32_t> refused;
	while (rte_ring_dequeue(rx.refusals, &obj) == 0) {
		auto *m = static_cast<port::rx_msg *>(obj);
		EXPECT_EQ(m->refusal, port::rx_refusal::saturated);
		EXPECT_EQ(m->msg.chain, nullptr);
		EXPECT_EQ(m->svc, gate.find("echo"));
		EXPECT_EQ(m->msg.correlation, 1000u + m->msg.msg_id);
		EXPECT_EQ(m->msg.src.port, 40000u);
		refused.push_back(m->msg.msg_id);
		port::rx_msg_free(m);
	}
	EXPECT_EQ(refused, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 7}));
	unsigned whole = 0;
	while (rte_ring_dequeue(rx.next, &obj) == 0) {
		auto *m = static_cast<port::rx_msg *>(obj);
		EXPECT_EQ(m->refusal, port::rx_refusal::none);
		EXPECT_EQ(m->msg.msg_id, 6u);
		ASSERT_NE(m->msg.chain, nullptr);
		EXPECT_EQ(m->msg.chain->pkt_len, m->msg.msg_len);
		EXPECT_EQ(m->msg.chain->nb_segs, 3u);
		port::rx_msg_free(m);
		whole++;
	}
	EXPECT_EQ(whole, 1u);
	EXPECT_EQ(rte_mempool_avail_count(rx.msg_pool), 63u);
	rte_mempool_free(rx.msg_pool);
	rte_ring_free(rx.next);
	rte_ring_free(rx.refusals);
	rx.reasm.reset();
	port::close_all(*ports);
	EXPECT_EQ(rte_mempool_avail_count(*pool), cfg->mempool.mbufs);
	rte_mempool_free(*pool);
}

namespace {

/* A started port of one RX and one TX queue of 64 made from two rings
 * (rte_eth_from_rings), with its mbuf pool: the test puts frames on `rx` and reads what the
 * port sends from `tx`. port_id -1: something could not be made. */
struct ring_port {
	rte_mempool *mp = nullptr;
	rte_ring *rx = nullptr, *tx = nullptr;
	int port_id = -1;
};

ring_port started_ring_port(const std::string &name)
{
	ring_port p;
	p.mp = rte_pktmbuf_pool_create((name + "_pool").c_str(), 2047, 0, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	p.rx = rte_ring_create((name + "_rxr").c_str(), 64, SOCKET_ID_ANY,
			       RING_F_SP_ENQ | RING_F_SC_DEQ);
	p.tx = rte_ring_create((name + "_txr").c_str(), 64, SOCKET_ID_ANY,
			       RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!p.mp || !p.rx || !p.tx)
		return p;
	const int port_id = rte_eth_from_rings(name.c_str(), &p.rx, 1, &p.tx, 1, SOCKET_ID_ANY);
	if (port_id < 0)
		return p;
	const auto pid = static_cast<uint16_t>(port_id);
	rte_eth_conf conf{};
	if (rte_eth_dev_configure(pid, 1, 1, &conf) == 0 &&
	    rte_eth_rx_queue_setup(pid, 0, 64, SOCKET_ID_ANY, nullptr, p.mp) == 0 &&
	    rte_eth_tx_queue_setup(pid, 0, 64, SOCKET_ID_ANY, nullptr) == 0 &&
	    rte_eth_dev_start(pid) == 0)
		p.port_id = port_id;
	return p;
}

} // namespace

/* A saturated service's requests of one frame are answered by port RX itself, in the poll
 * that read them (docs/overload.md, "Port RX answers what it refuses"): each once, 503
 * saturated, the bytes the sidecar's egress::reply() makes for that requester (fragment() of
 * the same header: docs/wire.md), each with a message id of this port RX's own, out of the
 * queue port TX uses on this lcore, none on the refusal ring. A requester of a family the
 * node has no address of, and what the port's queue does not take, go on the refusal ring
 * for the sidecar to answer: counted, none lost. The port is made from rings: the test puts
 * the requests on its RX ring and reads its TX ring as the requester. */
TEST(Engine, PortRxAnswersASaturatedServicesOneFrameRequestsItself)
{
	/* named copies, not a structured binding: clang before 16 cannot capture one in a
	 * lambda (C++20 allows it) */
	const ring_port rp = started_ring_port("engine_ans");
	rte_mempool *const mp = rp.mp;
	rte_ring *const in = rp.rx, *const peer = rp.tx;
	const int port_id = rp.port_id;
	ASSERT_GE(port_id, 0);
	const auto pid = static_cast<uint16_t>(port_id);
	port::service_gate gate({"echo", "other"});
	const uint32_t echo = gate.find("echo");
	gate.set_saturated(echo, true);
	port::rx_ctx rx;
	ASSERT_NO_FATAL_FAILURE(refusing_rx(rx, "engine_ans", wire::reasm_config{}));
	rx.gate = &gate;
	rx.queues.push_back({pid, 0});
	port::tx_ctx tx; /* port TX of the port on the same lcore: holds nothing here */
	tx.port = pid;
	tx.in = rte_ring_create("engine_ans_tx", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	ASSERT_NE(tx.in, nullptr);
	const uint8_t mac[6] = {0x02, 0, 0, 0, 0, 0x01};
	const wire::endpoint self4 = wire::endpoint::from_v4(rte_cpu_to_be_32(0x0a010001), 7000);
	/* worker 1 of 2: ids 2 + 1 + 4j (the shards send k + 4j) */
	rx.answers = std::make_unique<port::rx_answers>(mac, self4, std::nullopt, "t/sidecar", 3, 4);
	rx.answers->attach(pid, &tx, 1500);

	/* requests into the port in one burst, port RX and port TX on one lcore until all are in */
	const auto run = [&](std::vector<rte_mbuf *> reqs) {
		for (rte_mbuf *m : reqs)
			ASSERT_NE(m, nullptr);
		ASSERT_EQ(rte_ring_enqueue_bulk(in, reinterpret_cast<void **>(reqs.data()),
						static_cast<unsigned>(reqs.size()), nullptr),
			  reqs.size());
		const uint64_t until = rx.stats.frames.get() + reqs.size();
		config::lcores_config lc;
		lcore::runner r(lc);
		ASSERT_TRUE(r.add(1, port::rx_stage(rx)).is_ok());
		ASSERT_TRUE(r.add(1, port::tx_stage(tx)).is_ok());
		ASSERT_TRUE(r.launch().is_ok());
		const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
		while (rx.stats.frames.get() < until && std::chrono::steady_clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
		r.stop();
		ASSERT_EQ(rx.stats.frames.get(), until);
	};
	/* what the sidecar would send: fragment() of egress::reply()'s header for 503
	 * saturated, from the node to the requester (make_mesh_frame's), with these ids */
	uint8_t l7[256];
	wire::l7_writer w(l7, sizeof(l7));
	w.response(503, wire::l7_flag_mesh_generated, "saturated", std::string("t/sidecar"));
	const auto l7_len = static_cast<uint16_t>(w.finish());
	ASSERT_GT(l7_len, 0);
	const auto expect_answer = [&](rte_mbuf *m, uint32_t id) {
		wire::parsed_frame pf;
		ASSERT_EQ(wire::parse_frame(m, 0, 1u << 20, &pf), wire::wire_drop::none);
		EXPECT_EQ(pf.kind, wire::frame_kind::response);
		EXPECT_EQ(pf.correlation, 1000u + id);
		EXPECT_EQ(pf.msg_id % 4, 3u) << "port RX 1 of 2's ids";
		wire::link_addr a{};
		std::memcpy(a.src_mac, mac, 6);
		a.src = self4;
		a.dst = wire::endpoint::from_v4(rte_cpu_to_be_32(0x0a010002), 40000);
		rte_mbuf *e = nullptr;
		ASSERT_EQ(wire::fragment(a, wire::frame_kind::response, pf.msg_id, pf.correlation, l7,
					 l7_len, wire::body_ref{}, 1500, mp, &e, 1),
			  1);
		ASSERT_EQ(m->nb_segs, 1u);
		ASSERT_EQ(m->pkt_len, e->pkt_len);
		EXPECT_EQ(std::memcmp(rte_pktmbuf_mtod(m, void *), rte_pktmbuf_mtod(e, void *),
				      e->data_len),
			  0)
			<< "answer " << id << ": not the sidecar's bytes";
		rte_pktmbuf_free(e);
	};
	const auto refusals = [&] {
		std::vector<uint64_t> corr;
		void *obj;
		while (rte_ring_dequeue(rx.refusals, &obj) == 0) {
			auto *m = static_cast<port::rx_msg *>(obj);
			EXPECT_EQ(m->refusal, port::rx_refusal::saturated);
			EXPECT_EQ(m->msg.chain, nullptr);
			EXPECT_EQ(m->svc, echo);
			EXPECT_EQ(m->port_id, pid);
			corr.push_back(m->msg.correlation);
			port::rx_msg_free(m);
		}
		return corr;
	};

	/* 1. twenty requests answered here; one from an IPv6 requester (the node has no IPv6
	 *    address: port RX cannot answer it) goes to the sidecar */
	std::vector<rte_mbuf *> reqs;
	for (uint32_t id = 0; id < 20; id++)
		reqs.push_back(make_mesh_frame(mp, false, id));
	reqs.push_back(make_mesh_frame(mp, true, 20));
	ASSERT_NO_FATAL_FAILURE(run(reqs));
	EXPECT_EQ(rx.stats.refused_saturated.get(), 21u);
	EXPECT_EQ(rx.stats.answered_saturated.get(), 20u);
	EXPECT_EQ(rx.stats.answers_handed_on.get(), 1u);
	EXPECT_EQ(gate.answered(echo), 20u);
	EXPECT_EQ(tx.stats.frames.get(), 0u) << "not through port TX's ring";
	EXPECT_EQ(refusals(), (std::vector<uint64_t>{1020}));
	std::vector<uint32_t> ids;
	void *b[64];
	unsigned n = rte_ring_dequeue_burst(peer, b, 64, nullptr);
	ASSERT_EQ(n, 20u);
	for (unsigned i = 0; i < n; i++) {
		auto *m = static_cast<rte_mbuf *>(b[i]);
		ASSERT_NO_FATAL_FAILURE(expect_answer(m, i));
		wire::parsed_frame pf;
		ASSERT_EQ(wire::parse_frame(m, 0, 1u << 20, &pf), wire::wire_drop::none);
		ids.push_back(pf.msg_id);
		rte_pktmbuf_free(m);
	}
	std::sort(ids.begin(), ids.end());
	EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end()) << "a message id twice";

	/* 2. the port's queue takes 5 of a burst of 10 (the requester's ring has room for 5):
	 *    the other 5 go to the sidecar, in order, none lost */
	const unsigned room = 5, fill = rte_ring_get_capacity(peer) - room;
	std::vector<rte_mbuf *> fillers(fill);
	ASSERT_EQ(rte_pktmbuf_alloc_bulk(mp, fillers.data(), fill), 0);
	ASSERT_EQ(rte_ring_enqueue_bulk(peer, reinterpret_cast<void **>(fillers.data()), fill,
					nullptr),
		  fill);
	reqs.clear();
	for (uint32_t id = 100; id < 110; id++)
		reqs.push_back(make_mesh_frame(mp, false, id));
	ASSERT_NO_FATAL_FAILURE(run(reqs));
	EXPECT_EQ(rx.stats.refused_saturated.get(), 31u);
	EXPECT_EQ(rx.stats.answered_saturated.get(), 25u);
	EXPECT_EQ(rx.stats.answers_handed_on.get(), 6u);
	EXPECT_EQ(gate.answered(echo), 25u);
	EXPECT_EQ(refusals(), (std::vector<uint64_t>{1105, 1106, 1107, 1108, 1109}));
	n = rte_ring_dequeue_burst(peer, b, 64, nullptr);
	ASSERT_EQ(n, fill + room);
	for (unsigned i = 0; i < n; i++) {
		auto *m = static_cast<rte_mbuf *>(b[i]);
		if (i >= fill) {
			ASSERT_NO_FATAL_FAILURE(expect_answer(m, 100 + i - fill));
		}
		rte_pktmbuf_free(m);
	}
	EXPECT_EQ(rx.stats.messages.get(), 6u) << "the refusals handed on, no more";
	EXPECT_EQ(rte_mempool_avail_count(rx.msg_pool), 63u);

	rx.answers.reset();
	rte_mempool_free(rx.msg_pool);
	rte_ring_free(rx.next);
	rte_ring_free(rx.refusals);
	rx.reasm.reset();
	rte_eth_dev_stop(pid);
	rte_eth_dev_close(pid);
	rte_ring_free(tx.in);
	tx.in = nullptr;
	EXPECT_EQ(rte_mempool_in_use_count(mp), 0u) << "every request's mbuf answered or freed";
	rte_mempool_free(mp);
	rte_ring_free(in);
	rte_ring_free(peer);
}

namespace {

/* A fixed amount of computation the compiler cannot fold away. */
uint64_t spin(uint64_t seed, unsigned rounds)
{
	volatile uint64_t x = seed;
	for (unsigned i = 0; i < rounds; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

constexpr unsigned spin_rounds = 10000; /* per unit of work */
constexpr uint16_t spin_units = 4;     /* units per poll */

struct synthetic {
	std::atomic<uint64_t> sink{0};
};

uint16_t spin_poll(void *arg) noexcept
{
	auto *s = static_cast<synthetic *>(arg);
	uint64_t v = 0;
	for (unsigned u = 0; u < spin_units; u++)
		v += spin(u, spin_rounds);
	s->sink.store(v, std::memory_order_relaxed);
	return spin_units;
}

/* Sleeps inside its poll and reports one unit: wall time without CPU. */
uint16_t sleep_poll(void *) noexcept
{
	timespec ts{0, 200 * 1000};
	nanosleep(&ts, nullptr);
	return 1;
}

uint16_t idle_poll(void *) noexcept { return 0; }


} // namespace

/* A request whose reassembly times out with its first frame held is handed on to be
 * answered (408 incomplete), once; one whose first frame never came is not (a later first
 * frame would open its own reassembly), nor are frames that come after the timeout. */
TEST(Engine, PortRxHandsOnARequestWhoseReassemblyTimedOut)
{
	engine_port setup;
	ASSERT_TRUE(setup.open()) << setup.error;
	auto &cfg = setup.cfg;
	auto &pool = setup.pool;
	auto &ports = setup.ports;

	port::rx_ctx rx;
	wire::reasm_config rc;
	rc.timeout_ms = 100;
	ASSERT_NO_FATAL_FAILURE(refusing_rx(rx, "engine_late", rc));
	rx.queues.push_back({ports->at(0).port_id, 0});
	auto head = make_request_frames(*pool, "echo", 10); /* its last frame comes late */
	auto tail = make_request_frames(*pool, "echo", 11); /* its first frame never comes */
	ASSERT_EQ(head.size(), 3u);
	ASSERT_EQ(tail.size(), 3u);
	rte_pktmbuf_free(tail[0]);
	const auto &drops = rx.reasm->stats().drops;
	const auto timeouts = [&] {
		return drops[static_cast<size_t>(wire::wire_drop::timeout)].get();
	};
	{
		lcore::runner r(cfg->lcores);
		ASSERT_TRUE(r.add(1, port::rx_stage(rx)).is_ok());
		ASSERT_TRUE(r.launch().is_ok());
		auto send = [&](rte_mbuf *m) {
			DPUMESH_TSAN_PMD_GIVES(&m, 1);
			while (rte_eth_tx_burst(ports->at(0).port_id, 0, &m, 1) == 0)
				std::this_thread::sleep_for(std::chrono::microseconds(50));
		};
		auto wait_timeouts = [&](uint64_t n) {
			auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
			while (timeouts() < n && std::chrono::steady_clock::now() < deadline)
				std::this_thread::sleep_for(std::chrono::milliseconds(5));
		};
		for (rte_mbuf *m : {head[0], head[1], tail[1], tail[2]})
			send(m);
		wait_timeouts(2);
		send(head[2]); /* after its reassembly timed out: alone, it times out silently */
		wait_timeouts(3);
		r.stop();
	}
	EXPECT_EQ(timeouts(), 3u);
	EXPECT_EQ(rx.stats.refused_incomplete.get(), 1u);
	EXPECT_EQ(rte_ring_count(rx.next), 0u);
	ASSERT_EQ(rte_ring_count(rx.refusals), 1u);
	void *obj = nullptr;
	ASSERT_EQ(rte_ring_dequeue(rx.refusals, &obj), 0);
	auto *m = static_cast<port::rx_msg *>(obj);
	EXPECT_EQ(m->refusal, port::rx_refusal::incomplete);
	EXPECT_EQ(m->msg.chain, nullptr);
	EXPECT_EQ(m->msg.kind, wire::frame_kind::request);
	EXPECT_EQ(m->msg.correlation, 1010u);
	EXPECT_EQ(m->msg.msg_id, 10u);
	EXPECT_EQ(m->msg.src.port, 40000u);
	EXPECT_EQ(m->port_id, ports->at(0).port_id);
	port::rx_msg_free(m);
	EXPECT_EQ(rx.reasm->in_flight(), 0u);
	EXPECT_EQ(rte_mempool_avail_count(rx.msg_pool), 63u);
	rte_mempool_free(rx.msg_pool);
	rte_ring_free(rx.next);
	rte_ring_free(rx.refusals);
	rx.reasm.reset();
	port::close_all(*ports);
	EXPECT_EQ(rte_mempool_avail_count(*pool), cfg->mempool.mbufs);
	rte_mempool_free(*pool);
}

/* The sampled thread CPU clock: a stage that computes gets the CPU cycles per unit this
 * thread measures for the same computation; a stage that sleeps in its poll shows CPU far
 * below its TSC (the point of measuring both); a stage that never works gets only idle
 * samples; the lcore's /proc counters are consistent with its wall time. */
TEST(Engine, StageCpuSamplingSeesComputeAndSleep)
{
	/* the reference: CPU time of one unit of the spin, on this thread */
	uint64_t ref_ns = UINT64_MAX;
	for (int r = 0; r < 5; r++) {
		uint64_t c0 = lcore::thread_cpu_ns();
		for (int i = 0; i < 50; i++)
			(void)spin(static_cast<uint64_t>(i), spin_rounds);
		ref_ns = std::min(ref_ns, (lcore::thread_cpu_ns() - c0) / 50);
	}
	const uint64_t hz = rte_get_tsc_hz();
	const double ref_cycles = static_cast<double>(ref_ns) * static_cast<double>(hz) / 1e9;

	config::lcores_config lc;
	lc.idle = config::idle_policy::busy;
	synthetic syn;
	lcore::runner r(lc);
	ASSERT_TRUE(r.add(1, {"spin", &spin_poll, &syn}).is_ok());
	ASSERT_TRUE(r.add(1, {"sleep", &sleep_poll, nullptr}).is_ok());
	ASSERT_TRUE(r.add(1, {"idle", &idle_poll, nullptr}).is_ok());
	ASSERT_TRUE(r.launch().is_ok());
	/* at least ~40 samples per stage: one sampled poll per cpu_sample_period busy passes */
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	auto enough = [&] {
		for (const lcore::stage_view &v : r.stages())
			if (v.cpu_polls + v.cpu_idle_polls < 40)
				return false;
		return true;
	};
	while (!enough() && std::chrono::steady_clock::now() < deadline)
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	auto during = r.lcore_cpu();
	r.stop();
	auto st = r.stages();
	auto after = r.lcore_cpu();
	ASSERT_EQ(st.size(), 3u);
	const lcore::stage_view &spin_v = st[0], &sleep_v = st[1], &idle_v = st[2];
	ASSERT_EQ(spin_v.name, "spin");
	ASSERT_GE(spin_v.cpu_polls, 40u);
	ASSERT_GE(sleep_v.cpu_polls, 40u);
	EXPECT_EQ(spin_v.cpu_work, spin_v.cpu_polls * spin_units);
	EXPECT_EQ(sleep_v.cpu_work, sleep_v.cpu_polls);

	/* compute: thread CPU per unit close to the reference (descheduling does not count) */
	const double spin_cpu = spin_v.cpu_cycles_per_unit(hz);
	std::printf("spin: CPU %.0f cycles/unit (this thread measured %.0f), TSC %.0f, CPU/TSC %.2f, "
		    "%" PRIu64 " samples; sleep: CPU %.0f, TSC %.0f cycles/unit, CPU/TSC %.3f; idle: %" PRIu64
		    " idle samples, %.0f ns CPU each; clock read %" PRIu64 " ns\n",
		    spin_cpu, ref_cycles, spin_v.tsc_cycles_per_unit(), spin_v.cpu_tsc_ratio(hz),
		    spin_v.cpu_polls, sleep_v.cpu_cycles_per_unit(hz), sleep_v.tsc_cycles_per_unit(),
		    sleep_v.cpu_tsc_ratio(hz), idle_v.cpu_idle_polls,
		    idle_v.cpu_idle_polls ? static_cast<double>(idle_v.cpu_idle_ns) /
						    static_cast<double>(idle_v.cpu_idle_polls)
					  : 0.0,
		    after[0].clock_read_ns);
	EXPECT_GT(spin_cpu, 0.5 * ref_cycles) << "reference " << ref_cycles;
	EXPECT_LT(spin_cpu, 2.0 * ref_cycles) << "reference " << ref_cycles;
	EXPECT_LE(spin_v.cpu_tsc_ratio(hz), 1.1); /* CPU time never exceeds wall time */
	/* the TSC sees at least what the CPU did */
	EXPECT_GT(spin_v.tsc_cycles_per_unit(), 0.5 * ref_cycles);

	/* sleep: 200 us of wall per unit, almost no CPU */
	const double sleep_tsc = sleep_v.tsc_cycles_per_unit();
	EXPECT_GT(sleep_tsc, 180e-6 * static_cast<double>(hz));
	EXPECT_LT(sleep_v.cpu_cycles_per_unit(hz), 0.25 * sleep_tsc);
	EXPECT_LT(sleep_v.cpu_tsc_ratio(hz), 0.25);

	/* a stage that never works: only idle samples */
	EXPECT_EQ(idle_v.work, 0u);
	EXPECT_EQ(idle_v.cpu_polls, 0u);
	EXPECT_GT(idle_v.cpu_idle_polls, 0u);

	/* the lcore thread's /proc view */
	ASSERT_EQ(during.size(), 1u);
	EXPECT_TRUE(during[0].running);
	ASSERT_EQ(after.size(), 1u);
	const lcore::lcore_cpu_view &l = after[0];
	EXPECT_EQ(l.lcore, 1u);
	EXPECT_FALSE(l.running);
	EXPECT_GT(l.tid, 0);
	EXPECT_GT(l.clock_read_ns, 0u);
	EXPECT_GT(l.wall_ns, 100'000'000u);
	EXPECT_GT(l.oncpu_ns, 0u);
	EXPECT_LE(l.oncpu_ns, l.wall_ns + l.wall_ns / 20);
	EXPECT_LE(l.oncpu_ns + l.runq_ns, l.wall_ns + l.wall_ns / 10);
	/* it sleeps most of each pass: well under the wall time on the CPU */
	EXPECT_LT(l.oncpu_ns, l.wall_ns * 3 / 4);
	EXPECT_GT(l.voluntary_switches, 0u); /* every nanosleep */
	EXPECT_GE(during[0].wall_ns, 1u);
}

namespace {

/* Work that comes every gap_us (TSC), counting what the lcore's back-off calls. */
struct sparse {
	uint64_t gap = 0, next = 0, until = 0;
	std::atomic<uint64_t> units{0}, naps{0}, sleeps{0};
};

uint16_t sparse_poll(void *arg) noexcept
{
	auto *s = static_cast<sparse *>(arg);
	const uint64_t now = rte_rdtsc();
	if (now < s->next || now > s->until)
		return 0;
	s->next = now + s->gap;
	s->units.fetch_add(1, std::memory_order_relaxed);
	return 1;
}

void sparse_after_nap(void *arg) noexcept
{
	static_cast<sparse *>(arg)->naps.fetch_add(1, std::memory_order_relaxed);
}

bool sparse_prepare_sleep(void *arg) noexcept
{
	static_cast<sparse *>(arg)->sleeps.fetch_add(1, std::memory_order_relaxed);
	return true;
}

/* Runs sparse work (one unit every 300 us for 150 ms, then none) on an adaptive lcore with
 * the given spin_us; returns the counts once 100 ms of idleness have passed. */
struct sparse_counts {
	uint64_t units, naps, sleeps;
};
sparse_counts run_sparse(uint32_t spin_us)
{
	config::lcores_config lc;
	lc.idle = config::idle_policy::adaptive;
	lc.idle_polls = 16;
	lc.spin_us = spin_us;
	const uint64_t hz = rte_get_tsc_hz();
	sparse sp;
	sp.gap = hz / 1000000 * 300;
	sp.next = rte_rdtsc();
	sp.until = sp.next + hz / 1000 * 150;
	lcore::runner r(lc);
	lcore::stage_def d{"sparse", &sparse_poll, &sp, false};
	d.after_nap = &sparse_after_nap;
	d.prepare_sleep = &sparse_prepare_sleep;
	EXPECT_TRUE(r.add(1, d).is_ok());
	EXPECT_TRUE(r.launch().is_ok());
	std::this_thread::sleep_for(std::chrono::milliseconds(250));
	r.stop();
	return {sp.units.load(), sp.naps.load(), sp.sleeps.load()};
}

} // namespace

/* Adaptive idle: past spin_us without work the lcore naps (sleeps that arm nothing, each
 * followed by the stages' after_nap), and past 1 ms it prepares its stages to sleep; with
 * spin_us of 1 ms or more it never naps. Work 300 us apart leaves gaps past a 20 us spin
 * and short of 1 ms: naps between the units, and every unit taken. */
TEST(Engine, AdaptiveLcoreNapsInGapsPastItsSpin)
{
	const sparse_counts napping = run_sparse(20);
	const sparse_counts spinning = run_sparse(1000);
	std::printf("spin 20 us: %" PRIu64 " units, %" PRIu64 " naps, %" PRIu64
		    " sleeps prepared; spin 1000 us: %" PRIu64 " units, %" PRIu64 " naps, %" PRIu64
		    " sleeps prepared\n",
		    napping.units, napping.naps, napping.sleeps, spinning.units, spinning.naps,
		    spinning.sleeps);
	/* up to 500 units each; far fewer on a loaded box (63 at load 14: a unit taken late
	 * moves the next one) */
	EXPECT_GT(napping.units, 10u);
	EXPECT_GT(spinning.units, 10u);
	EXPECT_GE(napping.naps, napping.units / 2); /* a nap or more in most gaps */
	EXPECT_EQ(spinning.naps, 0u);
	/* the 100 ms after the work: both prepared to sleep */
	EXPECT_GT(napping.sleeps, 0u);
	EXPECT_GT(spinning.sleeps, 0u);
}

namespace {

uint16_t count_poll(void *arg) noexcept
{
	static_cast<std::atomic<uint64_t> *>(arg)->fetch_add(1, std::memory_order_relaxed);
	return 0;
}

} // namespace

/* The control thread may run real-time (lcores.control_priority). When it stops the lcores
 * it must wait for them by sleeping: a worker lcore on its CPU (time-sharing, so it runs
 * only when the real-time thread does not) must still run to see the stop. DPDK's
 * rte_eal_wait_lcore spins, which left such a worker runnable and not running until the
 * kernel's real-time throttling gave it a turn (up to ~1 s here; never where that
 * throttling is off). */
TEST(Engine, ARealTimeControlThreadStopsAWorkerThatSharesItsCpu)
{
	config::lcores_config lc;
	lc.idle = config::idle_policy::busy;
	std::atomic<uint64_t> polls{0};
	lcore::runner r(lc);
	ASSERT_TRUE(r.add(1, {"count", &count_poll, &polls}).is_ok());
	ASSERT_TRUE(r.launch().is_ok());
	const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (r.lcore_cpu().empty() || r.lcore_cpu()[0].tid == 0 || polls.load() == 0) {
		ASSERT_LT(std::chrono::steady_clock::now(), until) << "the worker lcore never polled";
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	/* the worker onto this thread's CPU, this thread pinned there */
	cpu_set_t mine, one;
	ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
	const int cpu = sched_getcpu();
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
	ASSERT_EQ(sched_setaffinity(r.lcore_cpu()[0].tid, sizeof(one), &one), 0);
	const uint64_t before = polls.load();
	while (polls.load() == before) {
		ASSERT_LT(std::chrono::steady_clock::now(), until) << "the worker did not move";
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	const status st = lcore::set_control_priority(10);
	if (!st.is_ok()) {
		r.stop();
		(void)sched_setaffinity(0, sizeof(mine), &mine);
		GTEST_SKIP() << "cannot run real-time here: " << st.message();
	}
	const auto t0 = std::chrono::steady_clock::now();
	r.stop();
	const auto took = std::chrono::steady_clock::now() - t0;
	(void)lcore::set_control_priority(0);
	(void)sched_setaffinity(0, sizeof(mine), &mine);
	const double ms = std::chrono::duration<double, std::milli>(took).count();
	std::printf("stop from SCHED_FIFO 10 with the worker on CPU %d: %.1f ms\n", cpu, ms);
	EXPECT_LT(ms, 300.0) << "the stop waited for a worker that could not run";
}

/* A peer that takes nothing for longer than port TX's give-up time, then drains: it gets
 * every frame exactly once, in order, including those queued while it took nothing. Only a
 * backlog full for the give-up time is dropped, counted (docs/overload.md, "Port TX owes,
 * it does not drop"). The port is a ring port whose TX ring the test reads as the peer. */
TEST(Engine, PortTxOwesASlowPeerEveryFrameInOrder)
{
	const ring_port rp = started_ring_port("engine_txo"); /* named copies: as above */
	rte_mempool *const mp = rp.mp;
	rte_ring *const peer = rp.tx;
	const int port_id = rp.port_id;
	ASSERT_GE(port_id, 0);
	const unsigned peer_room = rte_ring_get_capacity(peer);
	constexpr unsigned backlog = 256;
	std::vector<uint32_t> got;
	rte_ring *in_ring = nullptr;
	{
		port::tx_ctx tx;
		tx.port = static_cast<uint16_t>(port_id);
		tx.in = rte_ring_create("engine_txo_in", 1024, SOCKET_ID_ANY,
					RING_F_SP_ENQ | RING_F_SC_DEQ);
		ASSERT_NE(tx.in, nullptr);
		tx.owe_after_ms = 50;
		tx.give_up_ms = 300;
		ASSERT_TRUE(tx.set_backlog(backlog).is_ok());
		EXPECT_FALSE(tx.set_backlog(100).is_ok()); /* not a power of two */
		ASSERT_TRUE(tx.set_backlog(backlog).is_ok());
		auto send = [&](uint32_t from, uint32_t n) {
			for (uint32_t i = from; i < from + n; i++) {
				rte_mbuf *m = rte_pktmbuf_alloc(mp);
				ASSERT_NE(m, nullptr);
				*rte_pktmbuf_mtod(m, uint32_t *) = i;
				m->data_len = m->pkt_len = 60 + i % 7; /* bytes: each frame's own */
				ASSERT_EQ(rte_ring_enqueue(tx.in, m), 0);
			}
		};
		/* the peer: reads until nothing came for 300 ms */
		auto drain = [&] {
			auto last = std::chrono::steady_clock::now();
			while (std::chrono::steady_clock::now() - last < std::chrono::milliseconds(300)) {
				void *b[32];
				unsigned n = rte_ring_dequeue_burst(peer, b, 32, nullptr);
				for (unsigned i = 0; i < n; i++) {
					auto *m = static_cast<rte_mbuf *>(b[i]);
					got.push_back(*rte_pktmbuf_mtod(m, uint32_t *));
					rte_pktmbuf_free(m);
				}
				if (n)
					last = std::chrono::steady_clock::now();
				else
					std::this_thread::sleep_for(std::chrono::milliseconds(1));
			}
		};
		config::lcores_config lc;
		lcore::runner r(lc);
		ASSERT_TRUE(r.add(1, port::tx_stage(tx)).is_ok());
		ASSERT_TRUE(r.launch().is_ok());

		/* 1. a slow peer: it takes nothing for 4 give-up times; frames queued during
		 *    the stall go behind those owed; everything arrives once, in order */
		send(0, 200);
		std::this_thread::sleep_for(std::chrono::milliseconds(200));
		send(200, 100);
		std::this_thread::sleep_for(std::chrono::milliseconds(1000));
		EXPECT_EQ(tx.stats.dropped.get(), 0u);
		EXPECT_GT(tx.stats.owed.get(), 0u);
		EXPECT_EQ(tx.stats.frames.get(), peer_room); /* the peer's ring, no more */
		drain();
		ASSERT_EQ(got.size(), 300u);
		for (uint32_t i = 0; i < got.size(); i++)
			ASSERT_EQ(got[i], i) << "frame " << i << " out of order";
		EXPECT_EQ(tx.stats.frames.get(), 300u);
		/* the bytes of the frames the port took, in bursts the peer took whole or in
		 * part (burst_out() sums four frames a step, then the rest) */
		uint64_t sent_bytes = 0;
		for (uint32_t i = 0; i < 300; i++)
			sent_bytes += 60 + i % 7;
		EXPECT_EQ(tx.stats.bytes.get(), sent_bytes);
		EXPECT_EQ(tx.stats.backlog_full.get(), 0u);

		/* 2. a dead peer: its ring fills, the backlog fills, the rest waits on the ring
		 *    in; after the give-up time the full backlog is dropped (counted), and what
		 *    waited goes on, in order, once the peer reads again */
		got.clear();
		constexpr uint32_t waiting = 100;
		send(300, peer_room + backlog + waiting);
		auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
		while (tx.stats.dropped.get() == 0 && std::chrono::steady_clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		EXPECT_EQ(tx.stats.backlog_full.get(), 1u);
		EXPECT_EQ(tx.stats.dropped.get(), backlog);
		drain();
		r.stop();
		ASSERT_EQ(got.size(), peer_room + waiting);
		for (uint32_t i = 0; i < peer_room; i++)
			EXPECT_EQ(got[i], 300 + i);
		for (uint32_t i = 0; i < waiting; i++)
			EXPECT_EQ(got[peer_room + i], 300 + peer_room + backlog + i);
		EXPECT_EQ(tx.stats.dropped.get() + got.size(), peer_room + backlog + waiting);
		EXPECT_EQ(tx.backlog_size(), 0u);

		/* 3. frames still owed when the node stops go back to the pool (~tx_ctx) */
		const uint64_t owed_before = tx.stats.owed.get();
		send(1000, peer_room + 50);
		lcore::runner r2(lc);
		ASSERT_TRUE(r2.add(1, port::tx_stage(tx)).is_ok());
		ASSERT_TRUE(r2.launch().is_ok());
		deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
		while (tx.stats.owed.get() < owed_before + 50 &&
		       std::chrono::steady_clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		r2.stop();
		EXPECT_EQ(tx.backlog_size(), 50u);
		void *b[64];
		const unsigned n = rte_ring_dequeue_burst(peer, b, 64, nullptr);
		EXPECT_EQ(n, peer_room);
		for (unsigned i = 0; i < n; i++)
			rte_pktmbuf_free(static_cast<rte_mbuf *>(b[i]));
		in_ring = tx.in;
	}
	rte_ring_free(in_ring);
	EXPECT_EQ(rte_mempool_in_use_count(mp), 0u);
	rte_eth_dev_stop(static_cast<uint16_t>(port_id));
	rte_eth_dev_close(static_cast<uint16_t>(port_id));
	rte_ring_free(peer);
	rte_ring_free(rp.rx);
	rte_mempool_free(mp);
}

/* Port RX's reassembly clock leaves out the lcore's own stalls: a message whose next frame
 * waited in the NIC while the lcore was descheduled does not time out for it. */
TEST(Engine, ReassemblyClockLeavesOutTheLcoresOwnStalls)
{
	port::rx_ctx c;
	c.stall_tsc = 20;
	EXPECT_EQ(port::reasm_clock(c, 1000), 1000u); /* first poll */
	EXPECT_EQ(port::reasm_clock(c, 1010), 1010u); /* polls 10 apart: as the TSC */
	EXPECT_EQ(port::reasm_clock(c, 1030), 1030u); /* 20: still a poll's gap */
	EXPECT_EQ(port::reasm_clock(c, 5030), 1030u); /* a stall of 4000: not counted */
	EXPECT_EQ(port::reasm_clock(c, 5040), 1040u); /* then on, as the TSC again */
	EXPECT_EQ(port::reasm_clock(c, 5040), 1040u);
	EXPECT_EQ(c.stalled_tsc, 4000u);
	/* the threshold: 20 ms, or twice a longer back-off sleep than 10 ms (config) */
	const uint64_t hz = rte_get_tsc_hz();
	EXPECT_EQ(port::rx_ctx::stall_tsc_for(100), hz * 20 / 1000);
	EXPECT_EQ(port::rx_ctx::stall_tsc_for(10000), hz * 20 / 1000);
	EXPECT_EQ(port::rx_ctx::stall_tsc_for(100000), hz * 200 / 1000);
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

/* With 4 KiB pages DPDK places no object across a page: a packet mbuf of more than half
 * a page took a page of its own, and every mbuf header sat at one page offset (one L1 set).
 * The pad makes it a cache line longer than a page; objects that fit twice, or not at all,
 * are left as they are. */
TEST(PacketPool, PadsAnObjectOfMoreThanHalfAPageToALinePastIt)
{
	/* a line is RTE_CACHE_LINE_SIZE: 64 on x86-64, 128 in DPDK's generic arm64 build */
	constexpr size_t line = RTE_CACHE_LINE_SIZE;
	EXPECT_EQ(port::pktmbuf_obj_pad(2368, 4096), 4096 + line - 2368); /* 64 + 128 + 2176 */
	EXPECT_EQ(port::pktmbuf_obj_pad(2112, 4096), 1984 + line);
	EXPECT_EQ(port::pktmbuf_obj_pad(4096, 4096), line);
	EXPECT_EQ(port::pktmbuf_obj_pad(2048, 4096), 0u); /* two a page */
	EXPECT_EQ(port::pktmbuf_obj_pad(448, 4096), 0u);
	EXPECT_EQ(port::pktmbuf_obj_pad(4160, 4096), 0u); /* packed already */
	EXPECT_EQ(port::pktmbuf_obj_pad(10368, 4096), 0u);
	EXPECT_EQ(port::pktmbuf_obj_pad(2368, 65536), 0u); /* 64 KiB pages: 27 a page */
	EXPECT_EQ(port::pktmbuf_obj_pad(2368, 0), 0u);
	for (size_t obj = 2112; obj <= 4096; obj += 64)
		EXPECT_EQ(obj + port::pktmbuf_obj_pad(obj, 4096), 4096 + line) << obj;
}

/* The node's packet pool under the tests' --no-huge EAL: consecutive mbufs a line apart
 * within their pages, so as many of them as a page has lines (64 on x86-64) reach every
 * line offset of a page; the pad lies past the data room, so buf_len, headroom and private
 * area are what they are without it. */
TEST(PacketPool, SpreadsMbufHeadersOverCacheSetsWithoutHugepages)
{
	if (rte_eal_has_hugepages())
		GTEST_SKIP() << "hugepages: objects packed, no pad";
	const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	if (page != 4096) /* 64 KiB pages (some arm64 kernels): many mbufs a page, no pad */
		GTEST_SKIP() << "pages of " << page << " bytes: objects packed, no pad";
	constexpr size_t lines = 4096 / RTE_CACHE_LINE_SIZE; /* 64 on x86-64, 32 on arm64 */
	auto cfg = config::load_string(node_json, "engine_pool.json");
	ASSERT_TRUE(cfg) << cfg.error().message();
	auto pool = port::create_pktmbuf_pool(*cfg);
	ASSERT_TRUE(pool) << pool.error().message();
	std::vector<uintptr_t> at;
	rte_mempool_obj_iter(
		*pool,
		[](rte_mempool *, void *arg, void *obj, unsigned) {
			static_cast<std::vector<uintptr_t> *>(arg)->push_back(
				reinterpret_cast<uintptr_t>(obj));
		},
		&at);
	ASSERT_GE(at.size(), lines);
	std::sort(at.begin(), at.end());
	bool line[lines] = {};
	for (size_t i = 0; i < lines; i++)
		line[(at[i] % 4096) / RTE_CACHE_LINE_SIZE] = true;
	EXPECT_EQ(std::count(std::begin(line), std::end(line), true), lines);
	rte_mbuf *m = rte_pktmbuf_alloc(*pool);
	ASSERT_NE(m, nullptr);
	EXPECT_EQ(m->buf_len, cfg->mempool.data_room);
	EXPECT_EQ(m->data_off, RTE_PKTMBUF_HEADROOM);
	EXPECT_EQ(rte_pktmbuf_data_room_size(*pool), cfg->mempool.data_room);
	EXPECT_EQ(rte_pktmbuf_priv_size(*pool), 0u);
	EXPECT_EQ(m->buf_addr, static_cast<void *>(m + 1));
	EXPECT_EQ(rte_pktmbuf_tailroom(m), cfg->mempool.data_room - RTE_PKTMBUF_HEADROOM);
	EXPECT_EQ(rte_mempool_avail_count(*pool), cfg->mempool.mbufs - 1);
	rte_pktmbuf_free(m);
	rte_mempool_free(*pool);
}

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("engine", {}));
	return RUN_ALL_TESTS();
}
