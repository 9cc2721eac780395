// SPDX-License-Identifier: BSD-3-Clause
// The sidecar's components in-process, each on its error paths (real EAL, mempools, rings
// and SQs; no dpumesh process, no console): admission refusals by reason, request-table
// expiry and token reuse, quotas per pod and per address, outbox order, parking order and
// expiry, a stalled pod's answers, egress framing with and without zero-copy, network-in
// with malformed L7 headers.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_udp.h>

#include "dpumesh/common/fnv.h"
#include "dpumesh/config/config.h"
#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/port/rx.h"
#include "dpumesh/sidecar/ruleset.h"
#include "dpumesh/sidecar/sidecar.h"
#include "dpumesh/wire/l7.h"
#include "eal_env.h"
#include "internal/admission.h"
#include "internal/admit.h"
#include "internal/command.h"
#include "internal/egress.h"
#include "internal/net_sched.h"
#include "internal/network_in.h"
#include "internal/outbox.h"
#include "internal/quota.h"
#include "internal/request_table.h"

using namespace dpumesh;
using namespace dpumesh::sidecar;

namespace {

const char *node_json = R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.0.0.1", "mesh_port": 7000 },
  "peers": [ { "name": "n2", "mac": "02:00:00:00:00:02", "ipv4": "10.0.0.2", "mesh_port": 7000 } ],
  "services": [ { "name": "echo", "max_pods": 4 }, { "name": "api", "max_pods": 4 },
                { "name": "limited", "max_pods": 4 }, { "name": "billing", "max_pods": 4 } ],
  "routes": [ { "service": "billing", "to": "n2" } ],
  "policy": {
    "rbac": [ { "service": "api", "default": "deny", "require_jwt": false, "rules": [] } ],
    "rate_limits": [ { "service": "limited", "key": "route", "rate": 1, "burst": 1 } ]
  }
})";

config::node_config load_cfg()
{
	auto cfg = config::load_string(node_json, "sidecar_components_test");
	EXPECT_TRUE(cfg) << (cfg ? "" : cfg.error().message());
	return std::move(*cfg);
}

/* A request header (and its decoded view over `buf`). */
wire::l7_view request_view(std::vector<uint8_t> &buf, std::string_view service,
			   std::string_view method = "GET", std::string_view path = "/")
{
	buf.assign(512, 0);
	wire::l7_writer w(buf.data(), buf.size());
	w.request(service, method, path, 0, 0);
	buf.resize(w.finish());
	wire::l7_view v;
	EXPECT_EQ(wire::l7_decode(buf.data(), buf.size(), &v), wire::l7_error::ok);
	return v;
}

/* ---- admission ---- */

class admission_test : public ::testing::Test {
protected:
	void SetUp() override
	{
		cfg = load_cfg();
		reg = std::make_unique<pod_registry>(cfg.pools, cfg.services);
		auto r = ruleset::build(cfg, *reg, 1);
		ASSERT_TRUE(r) << r.error().message();
		rules = std::move(*r);
		std::vector<std::string> names(cfg.services.size());
		for (const auto &s : cfg.services)
			names[reg->service_index(s.name)] = s.name;
		adm = std::make_unique<admission>(*reg, names, tsc_clock::make(1000000000, 0, 0), stats);
	}
	verdict admit(std::string_view svc, source from = source::pod, uint64_t now = 1000)
	{
		std::vector<uint8_t> buf;
		wire::l7_view v = request_view(buf, svc);
		return adm->admit(*rules, v, 42, from, now);
	}

	config::node_config cfg;
	std::unique_ptr<pod_registry> reg;
	std::unique_ptr<ruleset> rules;
	counters stats;
	std::unique_ptr<admission> adm;
};

TEST_F(admission_test, unknown_service_is_404_no_route)
{
	verdict v = admit("nope");
	EXPECT_TRUE(v.refused());
	EXPECT_EQ(v.why, refusal::no_route);
	EXPECT_EQ(v.status, 404);
	EXPECT_STREQ(v.reason(), "no_route");
	EXPECT_EQ(v.svc, UINT32_MAX);
	EXPECT_EQ(stats.no_route.get(), 1u);
	adm->count_refusal(*rules, v); /* no service: nothing to count against */
}

TEST_F(admission_test, local_service_without_pods_is_503_no_live_pod)
{
	verdict v = admit("echo");
	EXPECT_EQ(v.why, refusal::no_live_pod);
	EXPECT_EQ(v.status, 503);
	EXPECT_STREQ(v.reason(), "no_live_pod");
	EXPECT_EQ(stats.no_live_pod.get(), 1u);
	const uint32_t svc = reg->service_index("echo");
	EXPECT_EQ(v.svc, svc);
	EXPECT_EQ(adm->metrics(svc).requests.get(), 1u);
	adm->count_refusal(*rules, v);
	EXPECT_EQ(adm->metrics(svc).refused.get(), 1u);
	EXPECT_EQ(adm->metrics(svc).classes[4].get(), 1u);
	EXPECT_EQ(adm->metrics(svc).mesh_generated.get(), 1u);
	EXPECT_EQ(rules->route_metrics(v.route->metrics).refused.get(), 1u);
}

TEST_F(admission_test, policy_refusals_carry_the_engines_status_and_reason)
{
	verdict v = admit("api");
	EXPECT_EQ(v.why, refusal::policy);
	EXPECT_EQ(v.status, 403);
	EXPECT_STREQ(v.reason(), "rbac_denied");
	EXPECT_EQ(stats.policy_refused.get(), 1u);
	/* a bucket of one: the first passes the policy (then finds no pod), the second is 429 */
	verdict first = admit("limited");
	EXPECT_EQ(first.why, refusal::no_live_pod);
	verdict second = admit("limited");
	EXPECT_EQ(second.why, refusal::policy);
	EXPECT_EQ(second.status, 429);
	EXPECT_STREQ(second.reason(), "rate_limited");
	EXPECT_EQ(stats.policy_refused.get(), 2u);
}

TEST_F(admission_test, peer_services_go_to_the_peer_but_not_from_a_peer)
{
	const uint64_t asked = rules->engine().stats().requests.get();
	verdict v = admit("billing");
	EXPECT_FALSE(v.refused());
	EXPECT_EQ(v.dst, 0u); /* no local pod: the caller sends it to the peer */
	/* the serving node applies the policy; its outcome is the breaker's here */
	EXPECT_EQ(rules->engine().stats().requests.get(), asked);
	EXPECT_TRUE(v.policy);
	EXPECT_FALSE(rules->services()[v.svc].local);
	verdict net = admit("billing", source::peer);
	EXPECT_EQ(net.why, refusal::misrouted);
	EXPECT_EQ(net.status, 503);
	EXPECT_STREQ(net.reason(), "misrouted");
	EXPECT_EQ(stats.misrouted.get(), 1u);
	/* a network client's request is relayed, after the policy here */
	const uint64_t checked = rules->engine().stats().requests.get();
	verdict relay = admit("billing", source::client);
	EXPECT_FALSE(relay.refused());
	EXPECT_EQ(relay.dst, 0u);
	EXPECT_TRUE(relay.policy);
	EXPECT_EQ(rules->engine().stats().requests.get(), checked + 1);
	EXPECT_EQ(stats.misrouted.get(), 1u);
}

TEST_F(admission_test, overloaded_turns_an_admitted_request_into_a_503)
{
	verdict v = admit("billing");
	ASSERT_FALSE(v.refused());
	adm->overloaded(v);
	EXPECT_EQ(v.why, refusal::overloaded);
	EXPECT_EQ(v.status, 503);
	EXPECT_STREQ(v.reason(), "overloaded");
	EXPECT_EQ(stats.overloaded.get(), 1u);
}

TEST(admission_source, network_sources_never_look_like_pod_handles)
{
	wire::endpoint a = wire::endpoint::from_v4(0x0100000a, 1000);
	wire::endpoint b = wire::endpoint::from_v4(0x0100000a, 1001);
	EXPECT_NE(network_source(a), network_source(b));
	EXPECT_TRUE(network_source(a) >> 63);
	EXPECT_EQ(network_source(a), network_source(a));
}

/* ---- request table ---- */

constexpr uint64_t hz = 1000000; /* 1 ms = 1000 ticks */

pending::entry entry_for(uint32_t origin, uint32_t dest, uint64_t deadline)
{
	pending::entry e{};
	e.origin = {pending::party::kind::pod, origin, 0};
	e.dest = {pending::party::kind::pod, dest, 0};
	e.origin_req_id = 7;
	e.step_id = 3;
	e.deadline_tsc = deadline;
	return e;
}

TEST(request_table, tokens_match_only_their_responder_and_are_not_reused)
{
	request_table t(4, hz);
	request_table::opening c;
	c.policy = true;
	const uint32_t tok = t.open(entry_for(0x10001, 0x20002, 50000), c);
	ASSERT_NE(tok, 0u);
	EXPECT_FALSE(t.match(tok, {pending::party::kind::pod, 0x20003, 0}, 3)); /* other pod */
	EXPECT_FALSE(t.match(tok, {pending::party::kind::pod, 0x20002, 0}, 4)); /* other step */
	EXPECT_FALSE(t.match(tok ^ 0x10000, {pending::party::kind::pod, 0x20002, 0}, 3));
	request_table::ref r = t.match(tok, {pending::party::kind::pod, 0x20002, 0}, 3);
	ASSERT_TRUE(r);
	EXPECT_EQ(r->origin_req_id, 7u);
	EXPECT_TRUE(r.ctx().policy);
	t.close(tok);
	EXPECT_FALSE(t.find(tok));
	EXPECT_EQ(t.size(), 0u);
	/* the slot comes back with a new generation: the old token stays dead */
	const uint32_t again = t.open(entry_for(0x10001, 0x20002, 50000), request_table::opening{});
	ASSERT_NE(again, 0u);
	EXPECT_NE(again, tok);
	EXPECT_FALSE(t.find(tok));
	EXPECT_FALSE(t.find(again).ctx().policy); /* a fresh context */
	t.close(tok); /* closing a dead token leaves the live one alone */
	EXPECT_TRUE(t.find(again));
}

TEST(quota, pods_and_addresses_over_their_share_are_refused_and_every_entry_is_released)
{
	quota_limits l;
	l.requests_per_pod = 3;
	l.requests_per_source = 2;
	l.rx_stall_ms = 10;
	quota q(l, hz);
	request_table t(16, hz);
	t.set_quota(&q);
	const uint32_t A = 0x10001, B = 0x20002;
	std::vector<uint32_t> toks;
	for (int i = 0; i < 3; i++) {
		ASSERT_TRUE(q.pod_may_ask(A, 0, 0));
		toks.push_back(t.open(entry_for(A, B, 1000), request_table::opening{}));
	}
	EXPECT_FALSE(q.pod_may_ask(A, 0, 0));
	EXPECT_TRUE(q.pod_may_ask(B, 0, 0)); /* another pod has a share of its own */
	t.close(toks[0]);
	EXPECT_TRUE(q.pod_may_ask(A, 0, 0));
	EXPECT_FALSE(q.pod_may_ask(A, 1, 0)); /* an answer waiting for its RX room counts */
	EXPECT_TRUE(q.pod_may_ask(B, 0, 10 * 1000 - 1));
	EXPECT_FALSE(q.pod_may_ask(B, 0, 10 * 1000)); /* its RX took nothing for rx_stall_ms */
	quota_usage u = q.pod(A);
	EXPECT_EQ(u.in_flight, 2u);
	EXPECT_EQ(u.peak, 3u);
	EXPECT_EQ(u.refused, 2u);
	/* the deadline releases what is left */
	expiry x[4];
	EXPECT_EQ(t.expire(2000, x, 4), 2u);
	EXPECT_EQ(q.pod(A).in_flight, 0u);
	/* a new generation of the pod id starts its counters again; the old one's late
	 * refusals are not counted against it */
	q.answer_refused(A);
	EXPECT_EQ(q.pod(A).answers_refused, 1u);
	const uint32_t A2 = A + (1u << DPUMESH_POD_ID_BITS);
	EXPECT_TRUE(q.pod_may_ask(A2, 0, 0));
	q.answer_refused(A);
	EXPECT_EQ(q.pod(A2).refused, 0u);
	EXPECT_EQ(q.pod(A2).answers_refused, 0u);
	EXPECT_EQ(q.pod(A).refused, 0u); /* A's view: a former generation */
	/* a network address is one tenant whatever its ports */
	request_ctx c;
	c.reply_to.addr.dst = wire::endpoint::from_v4(htonl(0x0a000005), 1000);
	pending::entry e = entry_for(0, B, 1000000);
	e.origin = {pending::party::kind::peer, 0, UINT16_MAX};
	ASSERT_TRUE(q.source_may_ask(c.reply_to.addr.dst));
	const uint32_t n1 = t.open(e, {&c.reply_to});
	c.reply_to.addr.dst.port = 2000;
	ASSERT_TRUE(q.source_may_ask(c.reply_to.addr.dst));
	const uint32_t n2 = t.open(e, {&c.reply_to});
	EXPECT_FALSE(q.source_may_ask(c.reply_to.addr.dst));
	EXPECT_TRUE(q.source_may_ask(wire::endpoint::from_v4(htonl(0x0a000006), 1000)));
	t.close(n1);
	t.close(n2);
	wire::endpoint seen;
	const quota_usage s = q.source(quota::bucket_of(c.reply_to.addr.dst), &seen);
	EXPECT_EQ(s.in_flight, 0u);
	EXPECT_EQ(s.peak, 2u);
	EXPECT_EQ(s.refused, 1u);
	EXPECT_EQ(std::memcmp(seen.ip, c.reply_to.addr.dst.ip, 16), 0);
	/* the bucket source_may_ask() found is the one the request is charged, released and
	 * budgeted in, without hashing the address again (request_ctx::source) */
	request_ctx k;
	k.reply_to.addr.dst = wire::endpoint::from_v4(htonl(0x0a000007), 1000);
	const uint32_t kb = quota::bucket_of(k.reply_to.addr.dst);
	ASSERT_TRUE(q.source_may_ask(k.reply_to.addr.dst, &k.source));
	EXPECT_EQ(k.source, kb);
	const uint32_t n3 = t.open(e, {&k.reply_to, k.source});
	ASSERT_NE(n3, 0u);
	EXPECT_EQ(q.source(kb, nullptr).in_flight, 1u);
	request_ctx hashed; /* no bucket named: the address is hashed, to the same bucket */
	hashed.reply_to = k.reply_to;
	EXPECT_EQ(q.origin_budget(e, k), q.origin_budget(e, hashed));
	t.close(n3);
	EXPECT_EQ(q.source(kb, nullptr).in_flight, 0u);
	/* a context that names a bucket is counted there (the bucket is not hashed again) */
	request_ctx other = k;
	other.source = static_cast<uint16_t>((kb + 1) % quota::nb_sources);
	const uint32_t n4 = t.open(e, {&other.reply_to, other.source});
	ASSERT_NE(n4, 0u);
	EXPECT_EQ(q.source(other.source, nullptr).in_flight, 1u);
	EXPECT_EQ(q.source(kb, nullptr).in_flight, 0u);
	t.close(n4);
	EXPECT_EQ(q.source(other.source, nullptr).in_flight, 0u);
	/* the deadline gives a network origin's charge back too (the sweep's walk does); one
	 * whose delivery is in flight stays charged until it is lost (or reported) */
	const uint32_t n5 = t.open(e, {&k.reply_to, k.source});
	request_table::opening held{&k.reply_to, k.source};
	held.hold = true;
	const uint32_t n6 = t.open(e, held);
	ASSERT_TRUE(n5 && n6);
	EXPECT_EQ(q.source(kb, nullptr).in_flight, 2u);
	ASSERT_EQ(t.expire(2000000, x, 4), 2u);
	EXPECT_EQ(q.source(kb, nullptr).in_flight, 1u) << "the one in flight stays charged";
	ASSERT_EQ(t.expire(2000000 + request_table::in_flight_grace_s * hz + 1000, x, 4), 1u);
	EXPECT_EQ(x[0].what, expiry::kind::lost);
	EXPECT_EQ(q.source(kb, nullptr).in_flight, 0u);
	EXPECT_EQ(t.size(), 0u);
}

TEST(quota, each_origin_retries_out_of_its_own_requests)
{
	quota_limits l;
	quota q(l, hz);
	request_table t(64, hz);
	t.set_quota(&q);
	const uint32_t A = 0x10001, B = 0x20002, C = 0x30003;
	request_ctx none;
	for (int i = 0; i < 20; i++)
		ASSERT_NE(t.open(entry_for(A, C, 1000), {}), 0u);
	ASSERT_NE(t.open(entry_for(B, C, 1000), {}), 0u);
	policy::retry_budget *a = q.origin_budget(entry_for(A, C, 1000), none);
	policy::retry_budget *b = q.origin_budget(entry_for(B, C, 1000), none);
	ASSERT_NE(a, nullptr);
	ASSERT_NE(b, nullptr);
	ASSERT_NE(a, b);
	EXPECT_EQ(a->requests(), 20u);
	/* 20% of A's 20 requests plus the floor of 3: A's failures spend A's retries only */
	int taken = 0;
	while (a->allows(1, hz, 20) && taken < 100) {
		a->spend();
		taken++;
	}
	EXPECT_EQ(taken, 7);
	EXPECT_TRUE(b->allows(1, hz, 20)); /* B (one request) keeps its floor of 3 */
	/* a network address is one origin whatever its ports; the node itself has none */
	request_ctx c;
	c.reply_to.addr.dst = wire::endpoint::from_v4(htonl(0x0a000005), 1000);
	pending::entry e = entry_for(0, C, 1000);
	e.origin = {pending::party::kind::peer, 0, UINT16_MAX};
	ASSERT_NE(t.open(e, {&c.reply_to}), 0u);
	policy::retry_budget *n1 = q.origin_budget(e, c);
	c.reply_to.addr.dst.port = 2000;
	EXPECT_EQ(q.origin_budget(e, c), n1);
	EXPECT_EQ(n1->requests(), 1u);
	e.origin = {};
	EXPECT_EQ(q.origin_budget(e, c), nullptr);
}

/* A network request's rx_msg from host 10.0.0.`host` (port 40000), message id `id`: what
 * net_sched reads of it (the net_sched tests below). */
port::rx_msg msg_from(uint8_t host, uint32_t id)
{
	port::rx_msg m{};
	m.msg.src = wire::endpoint::from_v4(htonl(0x0a000000u | host), 40000);
	m.msg.msg_id = id;
	return m;
}

/* The network's requests by source (internal/net_sched.h): one per source per turn, each
 * source's in its order, and a full backlog refuses only sources at their share. */
TEST(net_sched, sources_take_turns_in_order_and_a_full_backlog_refuses_only_the_floods)
{
	/* three sources in three FIFOs (distinct hosts that hash apart) */
	std::vector<uint8_t> hosts;
	for (uint8_t h = 1; hosts.size() < 3; h++) {
		bool apart = true;
		for (uint8_t o : hosts)
			apart &= sidecar::net_sched::queue_of(msg_from(h, 0).msg.src) !=
				 sidecar::net_sched::queue_of(msg_from(o, 0).msg.src);
		if (apart)
			hosts.push_back(h);
	}
	std::vector<port::rx_msg> a, b, c;
	for (uint32_t i = 0; i < 7; i++)
		a.push_back(msg_from(hosts[0], i));
	b.push_back(msg_from(hosts[1], 100));
	c.push_back(msg_from(hosts[2], 200));

	sidecar::net_sched s(8);
	/* a floods first, then b and c ask */
	for (auto &m : a)
		ASSERT_TRUE(s.push(&m));
	for (auto &m : b)
		ASSERT_TRUE(s.push(&m));
	EXPECT_EQ(s.waiting(), 8u);
	EXPECT_EQ(s.sources(), 2u);
	/* full: c has nothing waiting, under its share (8 / 3): taken; then a (7) is refused, b
	 * (1) is taken; an answer always */
	EXPECT_TRUE(s.push(&c[0]));
	port::rx_msg a_more = msg_from(hosts[0], 8), b_more = msg_from(hosts[1], 101),
		     a_answer = msg_from(hosts[0], 7);
	EXPECT_FALSE(s.push(&a_more));
	EXPECT_TRUE(s.push(&b_more));
	EXPECT_TRUE(s.push(&a_answer, true));
	EXPECT_EQ(s.waiting(), 11u);

	/* turns: a b c, a b, then a's: one per source with work, each source's in order */
	port::rx_msg *out[16];
	ASSERT_EQ(s.pop(out, 4), 4u);
	std::vector<uint32_t> ids;
	for (unsigned i = 0; i < 4; i++)
		ids.push_back(out[i]->msg.msg_id);
	const unsigned n = s.pop(out, 16);
	ASSERT_EQ(n, 7u);
	for (unsigned i = 0; i < n; i++)
		ids.push_back(out[i]->msg.msg_id);
	EXPECT_EQ(ids, (std::vector<uint32_t>{0, 100, 200, 1, 101, 2, 3, 4, 5, 6, 7}));
	EXPECT_EQ(s.waiting(), 0u);
	EXPECT_EQ(s.sources(), 0u);
	EXPECT_EQ(s.pop(out, 16), 0u);
	/* empty again: a source alone may fill the whole backlog */
	for (auto &m : a)
		EXPECT_TRUE(s.push(&m));
	EXPECT_TRUE(s.push(&b[0]));
	unsigned drained = 0;
	s.drain([&](port::rx_msg *) { drained++; });
	EXPECT_EQ(drained, 8u);
	EXPECT_EQ(s.waiting(), 0u);
}

/* A source alone is taken as a run (net_sched::pop()), also in part: a source that comes
 * in after it still gets its turn after the lone one's next message. */
TEST(net_sched, a_lone_sources_run_keeps_the_turns_of_one_at_a_time)
{
	uint8_t other = 2;
	while (sidecar::net_sched::queue_of(msg_from(other, 0).msg.src) ==
	       sidecar::net_sched::queue_of(msg_from(1, 0).msg.src))
		other++;
	std::vector<port::rx_msg> a;
	for (uint32_t i = 0; i < 5; i++)
		a.push_back(msg_from(1, i));
	port::rx_msg b = msg_from(other, 100);

	sidecar::net_sched s(64);
	for (auto &m : a)
		ASSERT_TRUE(s.push(&m));
	/* the intake keeps each message's quota bucket, its FIFO's */
	EXPECT_EQ(a[0].source_bucket, quota::bucket_of(a[0].msg.src));
	EXPECT_EQ(a[0].source_bucket % sidecar::net_sched::nb_queues,
		  sidecar::net_sched::queue_of(a[0].msg.src));
	port::rx_msg *out[16];
	ASSERT_EQ(s.pop(out, 2), 2u); /* part of a's run */
	EXPECT_EQ(out[0]->msg.msg_id, 0u);
	EXPECT_EQ(out[1]->msg.msg_id, 1u);
	EXPECT_EQ(out[0]->sched_next, nullptr);
	EXPECT_EQ(s.waiting(), 3u);
	EXPECT_EQ(s.sources(), 1u);
	ASSERT_TRUE(s.push(&b));
	const unsigned n = s.pop(out, 16);
	ASSERT_EQ(n, 4u);
	std::vector<uint32_t> ids;
	for (unsigned i = 0; i < n; i++)
		ids.push_back(out[i]->msg.msg_id);
	EXPECT_EQ(ids, (std::vector<uint32_t>{2, 100, 3, 4}));
	EXPECT_EQ(s.waiting(), 0u);
	EXPECT_EQ(s.sources(), 0u);
	/* a run to the end empties the FIFO: a source pushed afterwards starts afresh */
	ASSERT_TRUE(s.push(&a[0]));
	ASSERT_TRUE(s.push(&a[1]));
	ASSERT_EQ(s.pop(out, 16), 2u);
	ASSERT_TRUE(s.push(&b));
	ASSERT_EQ(s.pop(out, 16), 1u);
	EXPECT_EQ(out[0]->msg.msg_id, 100u);
	EXPECT_EQ(s.pop(out, 16), 0u);
}

TEST(request_table, full_table_refuses)
{
	request_table t(4, hz);
	std::vector<uint32_t> toks;
	for (int i = 0; i < 4; i++)
		toks.push_back(t.open(entry_for(1, 2, 1000000), request_table::opening{}));
	for (uint32_t tok : toks)
		EXPECT_NE(tok, 0u);
	EXPECT_EQ(t.open(entry_for(1, 2, 1000000), request_table::opening{}), 0u);
	t.close(toks[2]);
	EXPECT_NE(t.open(entry_for(1, 2, 1000000), request_table::opening{}), 0u);
}

TEST(request_table, expiry_hands_over_timeouts_and_keeps_in_flight_ones_for_the_dpa)
{
	request_table t(8, hz);
	remote plain;
	plain.port = 2;
	request_table::opening held;
	held.hold = true;
	const uint32_t a = t.open(entry_for(1, 2, 5000), {&plain});
	const uint32_t b = t.open(entry_for(1, 2, 6000), held);
	ASSERT_TRUE(t.find(b).ctx().holding && t.find(b).ctx().in_flight);
	t.find(b).ctx().held.req_id = 99; /* the caller's, as the sidecar's holding requests */
	const uint32_t later = t.open(entry_for(1, 2, 50000000), request_table::opening{});
	/* an expiry names its request by where its entry lies (it carries no token) */
	const pending::entry *const ea = &t.find(a).entry(), *const eb = &t.find(b).entry();
	expiry out[8];
	EXPECT_EQ(t.expire(4000, out, 8), 0u); /* nothing due yet */
	uint32_t n = t.expire(10000, out, 8);
	ASSERT_EQ(n, 2u);
	for (uint32_t i = 0; i < n; i++) {
		if (out[i].entry == ea) {
			EXPECT_EQ(out[i].what, expiry::kind::timeout);
			EXPECT_EQ(out[i].ctx->reply_to.port, 2);
		} else {
			EXPECT_EQ(out[i].entry, eb);
			EXPECT_EQ(out[i].what, expiry::kind::timeout_in_flight);
			EXPECT_EQ(out[i].ctx->held.req_id, 99u);
		}
	}
	EXPECT_FALSE(t.find(a));        /* closed by the table */
	ASSERT_TRUE(t.find(b));          /* waits for the DPA's report */
	EXPECT_TRUE(t.find(b).ctx().ended);
	EXPECT_TRUE(t.find(later));
	/* the report never comes: after the grace period it is lost */
	n = t.expire(10000 + request_table::in_flight_grace_s * hz + 1000, out, 8);
	ASSERT_EQ(n, 1u);
	EXPECT_EQ(out[0].entry, eb);
	EXPECT_EQ(out[0].what, expiry::kind::lost);
	EXPECT_FALSE(t.find(b));
	EXPECT_EQ(t.size(), 1u); /* `later` is not due */
}

/* plain(): one word's test of holding, in_flight, ended and answer_failed; policy, the
 * load's pod and the quota's source beside them in the word are not its business */
TEST(request_table, a_context_is_plain_with_none_of_its_end_flags_whatever_else_it_holds)
{
	request_ctx c;
	EXPECT_TRUE(c.plain());
	c.policy = true;
	c.load_pod = 0x0101;
	c.source = 0xfefe;
	c.reply_to.port = -1;
	EXPECT_TRUE(c.plain());
	bool request_ctx::*const flags[] = {&request_ctx::holding, &request_ctx::in_flight,
					   &request_ctx::ended, &request_ctx::answer_failed};
	for (bool request_ctx::*f : flags) {
		request_ctx d = c;
		d.*f = true;
		EXPECT_FALSE(d.plain());
	}
}

/* A sweep's kinds: a plain request's timeout, one held (its delivery reported) or whose
 * answer failed the caller looks at (timeout_held), one in flight kept for the DPA. */
TEST(request_table, expiry_kinds_tell_a_plain_timeout_from_one_held_or_whose_answer_failed)
{
	request_table t(16, hz);
	request_table::opening policy;
	policy.policy = true;
	request_table::opening held;
	held.hold = true;
	const uint32_t plain = t.open(entry_for(1, dpumesh_pod_handle(3, 7), 5000), policy);
	const uint32_t reported = t.open(entry_for(1, 2, 5000), held);
	t.find(reported).ctx().in_flight = false; /* the DPA reported the held delivery */
	const uint32_t failed = t.open(entry_for(1, 2, 5000), request_table::opening{});
	t.find(failed).ctx().answer_failed = true;
	const uint32_t flying = t.open(entry_for(1, 2, 5000), held);
	const pending::entry *const ep = &t.find(plain).entry(), *const er = &t.find(reported).entry(),
			     *const ef = &t.find(failed).entry(), *const ey = &t.find(flying).entry();
	ASSERT_EQ(t.in_flight(3), 1u);
	expiry out[8];
	ASSERT_EQ(t.expire(10000, out, 8), 4u);
	int seen = 0;
	for (const expiry &x : std::span(out, 4)) {
		if (x.entry == ep) {
			EXPECT_EQ(x.what, expiry::kind::timeout);
			EXPECT_TRUE(x.ctx->policy);
			seen |= 1;
		} else if (x.entry == er) {
			EXPECT_EQ(x.what, expiry::kind::timeout_held);
			EXPECT_TRUE(x.ctx->holding);
			seen |= 2;
		} else if (x.entry == ef) {
			EXPECT_EQ(x.what, expiry::kind::timeout_held);
			EXPECT_TRUE(x.ctx->answer_failed);
			seen |= 4;
		} else {
			EXPECT_EQ(x.entry, ey);
			EXPECT_EQ(x.what, expiry::kind::timeout_in_flight);
			seen |= 8;
		}
	}
	EXPECT_EQ(seen, 15);
	EXPECT_EQ(t.size(), 1u); /* the one in flight waits for the DPA */
	EXPECT_EQ(t.in_flight(3), 0u); /* the plain one's pod load given back */
}

TEST(request_table, counts_requests_in_flight_per_destination_pod_until_they_end)
{
	request_table t(16, hz);
	const uint32_t pod_a = dpumesh_pod_handle(3, 7), pod_b = dpumesh_pod_handle(4, 9);
	request_table::opening held;
	held.hold = true;
	const uint32_t a1 = t.open(entry_for(1, pod_a, 5000), request_table::opening{});
	const uint32_t a2 = t.open(entry_for(1, pod_a, 5000), held);
	const uint32_t b1 = t.open(entry_for(1, pod_b, 50000000), request_table::opening{});
	pending::entry to_peer = entry_for(1, 0, 50000000);
	to_peer.dest = {pending::party::kind::peer, 0, 0};
	const uint32_t p1 = t.open(to_peer, request_table::opening{});
	ASSERT_TRUE(a1 && a2 && b1 && p1);
	EXPECT_EQ(t.in_flight(3), 2u);
	EXPECT_EQ(t.in_flight(4), 1u);
	EXPECT_EQ(t.loads()[3], 2u);
	uint32_t others = 0; /* a peer is no pod: counted nowhere */
	for (uint32_t i = 0; i < DPUMESH_MAX_PODS; i++)
		others += i == 3 || i == 4 ? 0 : t.in_flight(i);
	EXPECT_EQ(others, 0u);
	/* a re-routed request stays counted against the pod it was opened for */
	t.find(b1)->dest = pending::party{pending::party::kind::pod, pod_a, 0};
	t.close(b1);
	EXPECT_EQ(t.in_flight(4), 0u);
	EXPECT_EQ(t.in_flight(3), 2u);
	t.close(b1); /* twice: nothing more */
	EXPECT_EQ(t.in_flight(4), 0u);
	/* a timeout ends it; one in flight counts until the DPA's report or its grace ends */
	expiry out[4];
	ASSERT_EQ(t.expire(10000, out, 4), 2u);
	EXPECT_EQ(t.in_flight(3), 1u);
	ASSERT_EQ(t.expire(10000 + request_table::in_flight_grace_s * hz + 1000, out, 4), 1u);
	EXPECT_EQ(out[0].what, expiry::kind::lost);
	EXPECT_EQ(t.in_flight(3), 0u);
	/* a slot used again counts its new destination only */
	const uint32_t a3 = t.open(entry_for(1, pod_b, 50000000), request_table::opening{});
	EXPECT_EQ(t.in_flight(4), 1u);
	EXPECT_EQ(t.in_flight(3), 0u);
	t.close(a3);
	t.close(p1);
	EXPECT_EQ(t.in_flight(4), 0u);
	EXPECT_EQ(t.size(), 0u);
}

TEST(request_table, a_slot_used_again_starts_a_fresh_context)
{
	/* open() writes the context in place, field by field: nothing of the slot's last
	 * request may show through (one slot, so every open() takes the same one) */
	request_table t(1, hz);
	remote first;
	first.port = 3;
	first.addr.dst = wire::endpoint::from_v4(htonl(0x0a000009), 4000);
	const uint32_t a = t.open(entry_for(1, dpumesh_pod_handle(5, 1), 5000),
				  {&first, 17, true, true});
	ASSERT_NE(a, 0u);
	request_ctx &c = t.find(a).ctx();
	EXPECT_TRUE(c.holding && c.in_flight && c.policy);
	EXPECT_EQ(c.source, 17u);
	EXPECT_EQ(c.reply_to.port, 3);
	EXPECT_EQ(c.load_pod, 5u);
	c.ended = c.answer_failed = true;
	t.close(a);
	pending::entry to_peer = entry_for(1, 0, 5000);
	to_peer.dest = {pending::party::kind::peer, 0, 0};
	const uint32_t b = t.open(to_peer, {});
	ASSERT_NE(b, 0u);
	ASSERT_EQ(b & 0xffff, a & 0xffff);
	const request_ctx &d = t.find(b).ctx();
	EXPECT_FALSE(d.holding || d.in_flight || d.ended || d.policy || d.answer_failed);
	EXPECT_EQ(d.source, request_ctx::no_source);
	EXPECT_EQ(d.load_pod, request_ctx::no_load);
	EXPECT_EQ(d.reply_to.port, -1);
	const remote none{};
	EXPECT_EQ(std::memcmp(&d.reply_to.addr, &none.addr, sizeof(none.addr)), 0);
	EXPECT_EQ(t.in_flight(5), 0u);
	t.close(b);
}

TEST(request_table, expiry_hands_over_at_most_max)
{
	request_table t(16, hz);
	for (int i = 0; i < 10; i++)
		ASSERT_NE(t.open(entry_for(1, 2, 2000), request_table::opening{}), 0u);
	expiry out[4];
	EXPECT_EQ(t.expire(3000, out, 4), 4u);
	EXPECT_EQ(t.size(), 6u);
	EXPECT_EQ(t.expire(3000, out, 4), 4u);
	EXPECT_EQ(t.expire(3000, out, 4), 2u);
	EXPECT_EQ(t.size(), 0u);
}

/* ---- outbox ---- */

/* hbufs: real mempool objects (commands point at the header after the metadata) */
class pools : public ::testing::Test {
protected:
	static constexpr uint32_t hbuf_size = 1024;
	void SetUp() override
	{
		static unsigned seq;
		const std::string tag = std::to_string(seq++);
		hbufs = rte_mempool_create(("t_hbufs" + tag).c_str(), 511, hbuf_size, 0, 0, nullptr,
					   nullptr, nullptr, nullptr, SOCKET_ID_ANY, 0);
		ASSERT_NE(hbufs, nullptr);
		side.hbuf_pool = hbufs; /* the emulator's seam: hbufs back to the pool */
		side.hbuf_size = hbuf_size;
		pkts = rte_pktmbuf_pool_create(("t_pkts" + tag).c_str(), 1023, 0, 0,
					       RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
		ASSERT_NE(pkts, nullptr);
		msgs = rte_mempool_create(("t_msgs" + tag).c_str(), 63, sizeof(port::rx_msg), 0, 0,
					  nullptr, nullptr, nullptr, nullptr, SOCKET_ID_ANY, 0);
		ASSERT_NE(msgs, nullptr);
	}
	void TearDown() override
	{
		rte_mempool_free(msgs);
		rte_mempool_free(pkts);
		rte_mempool_free(hbufs);
	}
	/* a command whose header sits in an hbuf */
	dpa_command cmd(dpa_command::op what, uint32_t req_id, uint32_t dst = 0x10001)
	{
		void *obj = nullptr;
		EXPECT_EQ(rte_mempool_get(hbufs, &obj), 0);
		std::memset(obj, 0, DPA_HBUF_META_SIZE);
		dpa_command c;
		c.what = what;
		c.header = reinterpret_cast<uint64_t>(obj) + DPA_HBUF_META_SIZE;
		c.header_len = 16;
		c.req_id = req_id;
		c.dst = dst;
		taken.push_back(c);
		return c;
	}
	void put_all()
	{
		for (const dpa_command &c : taken)
			rte_mempool_put(hbufs, hbuf_meta(c.header));
		taken.clear();
	}

	rte_mempool *hbufs = nullptr, *pkts = nullptr, *msgs = nullptr;
	dpa::arm_side side;
	std::vector<dpa_command> taken;
	counters stats;
};

/* One DPA thread's sidecar RX SQ, both ends. */
struct sq_pair {
	explicit sq_pair(uint32_t slots) : mem(slots)
	{
		dpumesh_sq_init(&prod, mem.data(), slots);
		dpumesh_sq_init(&cons, mem.data(), slots);
	}
	std::vector<sw_descriptor> mem;
	dpumesh_sq prod, cons;
};

using outbox_test = pools;

TEST_F(outbox_test, a_full_sq_backlogs_in_order_and_flush_keeps_it)
{
	sq_pair q(4);
	outbox ob({&q.prod}, &side, hz, stats);
	for (uint32_t i = 1; i <= 10; i++)
		ob.send(0, cmd(dpa_command::op::deliver_request, i));
	EXPECT_EQ(ob.free(), outbox::backlog_size - 6);
	sw_descriptor got[16];
	uint32_t seen = 0;
	for (int round = 0; round < 4 && seen < 10; round++) {
		uint32_t n = dpumesh_sq_dequeue_burst(&q.cons, got, 16);
		for (uint32_t i = 0; i < n; i++) {
			EXPECT_EQ(got[i].req_id, ++seen); /* per-SQ order */
			EXPECT_EQ(got[i].flags, DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL);
			EXPECT_EQ(got[i].dst.pod_id, 0x10001u);
		}
		ob.flush();
	}
	EXPECT_EQ(seen, 10u);
	EXPECT_EQ(ob.free(), outbox::backlog_size);
	/* a new command behind an empty backlog goes straight to the SQ */
	ob.send(0, dpa_command::complete(taken[0].header, DPUMESH_STATUS_DEST_GONE));
	ASSERT_EQ(dpumesh_sq_dequeue_burst(&q.cons, got, 16), 1u);
	EXPECT_EQ(got[0].flags, DPUMESH_OP_TX_DONE | DPUMESH_OP_ERROR |
				       (DPUMESH_STATUS_DEST_GONE << DPUMESH_STATUS_SHIFT));
	EXPECT_EQ(got[0].header_buf_addr, taken[0].header);
	put_all();
}

TEST_F(outbox_test, parking_returns_due_deliveries_in_order_and_rotates_the_rest)
{
	sq_pair q(16);
	outbox ob({&q.prod}, &side, hz, stats);
	const uint64_t now = 1000000;
	ASSERT_TRUE(ob.park(cmd(dpa_command::op::deliver_request, 1), now, now + 100000, now + 10));
	ASSERT_TRUE(ob.park(cmd(dpa_command::op::deliver_request, 2), now, now + 100000, now + 500));
	ASSERT_TRUE(ob.park(cmd(dpa_command::op::deliver_response, 3), now, now + 100000, now + 20));
	EXPECT_EQ(ob.parked(), 3u);
	EXPECT_EQ(stats.parked.get(), 3u);
	outbox::due due[8];
	ob.begin_unpark();
	EXPECT_EQ(ob.unpark(now, due, 8), 0u); /* none due: each visited once, order kept */
	ob.begin_unpark();
	uint32_t n = ob.unpark(now + 100, due, 8);
	ASSERT_EQ(n, 2u);
	EXPECT_EQ(due[0].cmd.req_id, 1u);
	EXPECT_EQ(due[1].cmd.req_id, 3u);
	EXPECT_FALSE(due[0].expired);
	EXPECT_EQ(due[1].cmd.what, dpa_command::op::deliver_response);
	EXPECT_EQ(ob.parked(), 1u);
	ob.begin_unpark();
	n = ob.unpark(now + 600, due, 8);
	ASSERT_EQ(n, 1u);
	EXPECT_EQ(due[0].cmd.req_id, 2u);
	EXPECT_EQ(ob.parked(), 0u);
	put_all();
}

TEST_F(outbox_test, parked_deliveries_expire_by_their_first_give_up_time)
{
	sq_pair q(16);
	outbox ob({&q.prod}, &side, hz, stats);
	const uint64_t now = 1000000;
	dpa_command c = cmd(dpa_command::op::deliver_request, 5);
	ASSERT_TRUE(ob.park(c, now, now + 1000));
	outbox::due due[4];
	/* back-off: 20 us after the first bounce */
	ob.begin_unpark();
	EXPECT_EQ(ob.unpark(now + 19, due, 4), 0u);
	ob.begin_unpark();
	ASSERT_EQ(ob.unpark(now + 20, due, 4), 1u);
	EXPECT_FALSE(due[0].expired);
	/* it bounces again, parked with a later give-up: the first one still holds, and the
	 * back-off has doubled */
	ASSERT_TRUE(ob.park(due[0].cmd, now + 30, now + 50000));
	ob.begin_unpark();
	EXPECT_EQ(ob.unpark(now + 30 + 39, due, 4), 0u);
	ob.begin_unpark();
	ASSERT_EQ(ob.unpark(now + 30 + 40, due, 4), 1u);
	EXPECT_FALSE(due[0].expired);
	ASSERT_TRUE(ob.park(due[0].cmd, now + 100, now + 50000, now + 2000));
	ob.begin_unpark();
	ASSERT_EQ(ob.unpark(now + 2000, due, 4), 1u);
	EXPECT_TRUE(due[0].expired); /* past now + 1000 */
	/* a fresh delivery (a retry) starts over */
	reset_park_state(c.header);
	ASSERT_TRUE(ob.park(c, now + 3000, now + 9000));
	ob.begin_unpark();
	ASSERT_EQ(ob.unpark(now + 3020, due, 4), 1u);
	EXPECT_FALSE(due[0].expired);
	put_all();
}

TEST_F(outbox_test, requests_leave_the_last_parking_slots_to_responses)
{
	sq_pair q(16);
	outbox ob({&q.prod}, &side, hz, stats);
	const dpa_command req = cmd(dpa_command::op::deliver_request, 1);
	const dpa_command resp = cmd(dpa_command::op::deliver_response, 2);
	uint32_t parked = 0;
	while (ob.park(req, 0, UINT64_MAX, 1))
		parked++;
	EXPECT_EQ(parked, outbox::parking_size - outbox::response_reserve);
	while (ob.park(resp, 0, UINT64_MAX, 1))
		parked++;
	EXPECT_EQ(parked, outbox::parking_size);
	EXPECT_FALSE(ob.park(resp, 0, UINT64_MAX, 1));
	put_all();
}

/* ---- dest_queues: order per destination while it is full (docs/ordering.md) ---- */

namespace {
dpa_command delivery(uint32_t req_id, uint32_t dst,
		     dpa_command::op what = dpa_command::op::deliver_request)
{
	dpa_command c;
	c.what = what;
	c.dst = dst;
	c.req_id = req_id;
	c.header = 0x1000 + req_id;
	return c;
}
/* req_ids of what next() hands out, "r" after a resume-marked one, "n" after a notify-marked
 * one, "x" after an expired one */
std::string drain(dest_queues &q, uint64_t now)
{
	dest_queues::out o[64];
	std::string s;
	const uint32_t n = q.next(now, o, 64);
	for (uint32_t i = 0; i < n; i++)
		s += (s.empty() ? "" : ",") + std::to_string(o[i].cmd.req_id) +
		     (o[i].cmd.resume ? "r" : "") + (o[i].cmd.notify ? "n" : "") +
		     (o[i].expired ? "x" : "");
	return s;
}
/* as drain(), with a stall limit for answers (dest_queues::next's answer_stall) */
std::string drain_stalled(dest_queues &q, uint64_t now, uint64_t stall)
{
	dest_queues::out o[64];
	std::string s;
	const uint32_t n = q.next(now, o, 64, stall);
	for (uint32_t i = 0; i < n; i++)
		s += (s.empty() ? "" : ",") + std::to_string(o[i].cmd.req_id) +
		     (o[i].cmd.resume ? "r" : "") + (o[i].expired ? "x" : "");
	return s;
}
constexpr uint64_t us = 1000; /* tsc_hz 1e9 below: 1000 ticks per us */
constexpr uint32_t P = 0x105, Q = 0x106;
/* a window to P (first..last, the last marked notify) comes back full at `at` */
void window_back(dest_queues &q, uint32_t first, uint32_t last, uint64_t at)
{
	for (uint32_t i = first; i <= last; i++) {
		dpa_command c = delivery(i, P);
		c.notify = i == last;
		ASSERT_TRUE(q.bounced(c, UINT64_MAX, at));
	}
}
} // namespace

TEST(dest_queues, what_came_back_goes_ahead_of_what_waited_and_the_first_resumes)
{
	dest_queues q(64, 16, 4, 1000000000);
	const uint64_t t0 = 1000000, far = UINT64_MAX;
	/* nothing waits: 1 and 2 go out at once */
	EXPECT_EQ(q.admit(delivery(1, P), far), dest_queues::verdict::send);
	EXPECT_EQ(q.admit(delivery(2, P), far), dest_queues::verdict::send);
	/* 1 comes back full: P is held back; 3 (sent after) waits; 2 comes back and goes
	 * ahead of 3, behind 1 */
	ASSERT_TRUE(q.bounced(delivery(1, P), far, t0));
	EXPECT_EQ(q.admit(delivery(3, P), far), dest_queues::verdict::queued);
	ASSERT_TRUE(q.bounced(delivery(2, P), far, t0));
	/* another pod is not held back */
	EXPECT_EQ(q.admit(delivery(100, Q), far), dest_queues::verdict::send);
	EXPECT_EQ(q.queued(P & 0xff), 3u);
	/* the back-off (20 us) first, then the first of the queue alone, marked resume */
	EXPECT_EQ(drain(q, t0 + 19 * us), "");
	EXPECT_EQ(drain(q, t0 + 20 * us), "1r");
	EXPECT_EQ(drain(q, t0 + 100 * us), ""); /* waits for its outcome */
	/* while it is out, new ones wait too */
	EXPECT_EQ(q.admit(delivery(4, P), far), dest_queues::verdict::queued);
	/* still full: back at the head, back-off doubled (40 us) */
	dpa_command again = delivery(1, P);
	again.resume = true;
	ASSERT_TRUE(q.bounced(again, far, t0 + 100 * us));
	EXPECT_EQ(drain(q, t0 + 139 * us), "");
	EXPECT_EQ(drain(q, t0 + 140 * us), "1r");
	/* delivered: the rest in order, in windows (2, then 4) whose last reports back */
	q.outcome(P);
	EXPECT_EQ(drain(q, t0 + 141 * us), "2,3n");
	EXPECT_EQ(drain(q, t0 + 142 * us), ""); /* waits for the window */
	EXPECT_EQ(q.admit(delivery(5, P), far), dest_queues::verdict::queued);
	q.outcome(P);
	EXPECT_EQ(drain(q, t0 + 143 * us), "4,5"); /* the queue is empty: nothing to report */
	EXPECT_EQ(q.active(), 0u);
	EXPECT_EQ(q.used(), 0u);
	EXPECT_EQ(q.admit(delivery(6, P), far), dest_queues::verdict::send);
}

TEST(dest_queues, one_that_was_out_when_the_resume_went_goes_behind_it)
{
	dest_queues q(64, 16, 4, 1000000000);
	const uint64_t t0 = 1000000, far = UINT64_MAX;
	/* 1 and 2 were sent; 1 comes back; its resume goes before 2's note is in */
	ASSERT_TRUE(q.bounced(delivery(1, P), far, t0));
	EXPECT_EQ(drain(q, t0 + 20 * us), "1r");
	ASSERT_TRUE(q.bounced(delivery(2, P), far, t0 + 21 * us)); /* older than the resume */
	EXPECT_EQ(q.admit(delivery(3, P), far), dest_queues::verdict::queued);
	dpa_command again = delivery(1, P);
	again.resume = true;
	ASSERT_TRUE(q.bounced(again, far, t0 + 22 * us));
	EXPECT_EQ(drain(q, t0 + 200 * us), "1r");
	q.outcome(P);
	EXPECT_EQ(drain(q, t0 + 201 * us), "2,3");
	/* a queue draining (open) that gets one back holds again: the one back goes first */
	EXPECT_EQ(q.admit(delivery(4, P), far), dest_queues::verdict::send);
	ASSERT_TRUE(q.bounced(delivery(3, P), far, t0 + 300 * us));
	ASSERT_TRUE(q.bounced(delivery(4, P), far, t0 + 300 * us));
	EXPECT_EQ(drain(q, t0 + 320 * us), "3r");
	/* a window that finds it full again: what was sent of it comes back ahead of the rest */
	for (uint32_t i = 5; i <= 9; i++)
		EXPECT_EQ(q.admit(delivery(i, P), far), dest_queues::verdict::queued);
	q.outcome(P);
	EXPECT_EQ(drain(q, t0 + 321 * us), "4,5n");
	window_back(q, 4, 5, t0 + 322 * us);
	EXPECT_EQ(drain(q, t0 + 342 * us), "4r");
	q.outcome(P);
	EXPECT_EQ(drain(q, t0 + 343 * us), "5,6n");
	q.outcome(P);
	EXPECT_EQ(drain(q, t0 + 344 * us), "7,8,9");
	EXPECT_EQ(q.active(), 0u);
}

TEST(dest_queues, a_window_that_comes_back_goes_ahead_of_what_came_back_before_the_resume)
{
	dest_queues q(64, 16, 4, 1000000000);
	const uint64_t t0 = 1000000, far = UINT64_MAX;
	/* 1..4 came back (held), then resumed: the window (2, 3) comes back, and goes ahead
	 * of 4, which came back long before but is younger */
	for (uint32_t i = 1; i <= 4; i++)
		ASSERT_TRUE(q.bounced(delivery(i, P), far, t0));
	EXPECT_EQ(drain(q, t0 + 20 * us), "1r");
	q.outcome(P);
	EXPECT_EQ(drain(q, t0 + 21 * us), "2,3n");
	window_back(q, 2, 3, t0 + 22 * us);
	EXPECT_EQ(drain(q, t0 + 42 * us), "2r");
	q.outcome(P);
	EXPECT_EQ(drain(q, t0 + 43 * us), "3,4");
	/* one refused where it comes back (not kept) still ends its window: held back, and
	 * the next one resumes */
	EXPECT_EQ(q.admit(delivery(5, P), far), dest_queues::verdict::send);
	ASSERT_TRUE(q.bounced(delivery(5, P), far, t0 + 50 * us));
	for (uint32_t i = 6; i <= 8; i++)
		EXPECT_EQ(q.admit(delivery(i, P), far), dest_queues::verdict::queued);
	EXPECT_EQ(drain(q, t0 + 70 * us), "5r");
	q.outcome(P);
	EXPECT_EQ(drain(q, t0 + 71 * us), "6,7n");
	dpa_command seven = delivery(7, P);
	seven.notify = true;
	EXPECT_FALSE(q.bounced(seven, far, t0 + 72 * us, false));
	EXPECT_EQ(drain(q, t0 + 92 * us), "8r");
}

TEST(dest_queues, a_pod_that_takes_nothing_has_its_answers_given_up_and_probes)
{
	dest_queues q(64, 16, 4, 1000000000);
	const uint64_t t0 = 1000000, far = UINT64_MAX, ms = 1000 * us;
	const auto answer = [](uint32_t id) {
		return delivery(id, P, dpa_command::op::deliver_response);
	};
	EXPECT_EQ(q.admit(answer(1), far), dest_queues::verdict::send);
	ASSERT_TRUE(q.bounced(answer(1), far, t0)); /* P's RX is full from t0 */
	EXPECT_EQ(q.admit(answer(2), far), dest_queues::verdict::queued);
	EXPECT_EQ(q.answers(P & 0xff), 2u);
	EXPECT_EQ(q.stalled_for(P, t0 + 500 * us), 500 * us);
	EXPECT_EQ(drain_stalled(q, t0 + 20 * us, ms), "1r");
	dpa_command again = answer(1);
	again.resume = true;
	ASSERT_TRUE(q.bounced(again, far, t0 + 30 * us)); /* still full: the clock runs on */
	EXPECT_EQ(q.stalled_for(P, t0 + 900 * us), 900 * us);
	/* taken nothing for 1 ms: its answers are given up at once (not at their give-up) */
	EXPECT_EQ(drain_stalled(q, t0 + ms, ms), "1x,2x");
	EXPECT_EQ(q.answers(P & 0xff), 0u);
	/* nothing waits; the next delivery probes, what follows waits for its outcome */
	EXPECT_EQ(q.admit(answer(3), far), dest_queues::verdict::send);
	EXPECT_TRUE(q.probe(P));
	EXPECT_EQ(q.admit(answer(4), far), dest_queues::verdict::queued);
	dpa_command probe = answer(3);
	probe.notify = true;
	ASSERT_TRUE(q.bounced(probe, far, t0 + 2 * ms)); /* still full: stalled since t0 */
	EXPECT_EQ(q.stalled_for(P, t0 + 2 * ms), 2 * ms);
	EXPECT_EQ(drain_stalled(q, t0 + 2 * ms, ms), "3x,4x");
	/* a probe that gets in ends it */
	EXPECT_EQ(q.admit(answer(5), far), dest_queues::verdict::send);
	EXPECT_TRUE(q.probe(P));
	q.outcome(P);
	EXPECT_EQ(drain_stalled(q, t0 + 3 * ms, ms), "");
	EXPECT_EQ(q.admit(answer(6), far), dest_queues::verdict::send);
	EXPECT_FALSE(q.probe(P));
	EXPECT_EQ(q.stalled_for(P, t0 + 4 * ms), 0u);
	ASSERT_TRUE(q.bounced(answer(6), far, t0 + 4 * ms)); /* a new stall starts now */
	EXPECT_EQ(q.stalled_for(P, t0 + 4 * ms + 10 * us), 10 * us);
	EXPECT_EQ(q.active(), 1u);
}

TEST(dest_queues, a_full_share_refuses_requests_and_the_expired_are_answered)
{
	dest_queues q(12, 4, 4, 1000000000);
	const uint64_t t0 = 1000000, far = UINT64_MAX;
	ASSERT_TRUE(q.bounced(delivery(1, P), t0 + 5 * us, t0));
	for (uint32_t i = 2; i <= 4; i++)
		EXPECT_EQ(q.admit(delivery(i, P), i == 3 ? t0 + 10 * us : far),
			  dest_queues::verdict::queued);
	/* its share (4) is taken: requests are refused, a response still waits */
	EXPECT_EQ(q.admit(delivery(5, P), far), dest_queues::verdict::refused);
	EXPECT_EQ(q.admit(delivery(6, P, dpa_command::op::deliver_response), far),
		  dest_queues::verdict::queued);
	/* the others' requests stop where the pool keeps its reserve for responses */
	ASSERT_TRUE(q.bounced(delivery(50, Q), far, t0));
	uint32_t queued = 0;
	while (q.admit(delivery(51 + queued, Q), far) == dest_queues::verdict::queued)
		queued++;
	EXPECT_EQ(queued, 2u);
	EXPECT_EQ(q.used(), 12u - 4u);
	/* at give-up time the head is answered (expired), not sent; one in the middle waits
	 * its turn (its request's deadline answers it) */
	EXPECT_EQ(drain(q, t0 + 30 * us), "1x,2r,50r");
	std::string left;
	q.for_each([&](const dpa_command &c) { left += std::to_string(c.req_id) + " "; });
	EXPECT_EQ(left, "3 4 6 51 52 ");
}

/* Network requests (bodies in port RX's mbufs) wait up to their own bound in all queues
 * together: beyond it they are refused as such (refused_network, counted apart from the
 * share), while pod requests and answers still wait. */
TEST(dest_queues, network_requests_stop_at_their_own_bound)
{
	dest_queues q(64, 16, 4, 1000000000);
	q.limit_network_requests(2);
	const uint64_t t0 = 1000000, far = UINT64_MAX;
	auto net = [](uint32_t id) {
		dpa_command c = delivery(id, P);
		c.flow = DPUMESH_CASE_INGRESS;
		c.body_len = 64;
		return c;
	};
	ASSERT_TRUE(q.bounced(delivery(1, P), far, t0)); /* P held back: new ones wait */
	EXPECT_FALSE(q.network_full(net(2)));
	EXPECT_EQ(q.admit(net(2), far), dest_queues::verdict::queued);
	EXPECT_EQ(q.admit(net(3), far), dest_queues::verdict::queued);
	EXPECT_EQ(q.network_requests(), 2u);
	EXPECT_TRUE(q.network_full(net(4)));
	EXPECT_FALSE(q.network_full(delivery(4, P))); /* a pod's request is not one */
	EXPECT_EQ(q.admit(net(4), far), dest_queues::verdict::refused_network);
	EXPECT_FALSE(q.bounced(net(5), far, t0)); /* came back: not kept either */
	EXPECT_EQ(q.admit(delivery(6, P), far), dest_queues::verdict::queued);
	EXPECT_EQ(q.admit(delivery(7, P, dpa_command::op::deliver_response), far),
		  dest_queues::verdict::queued);
	std::string left;
	q.for_each([&](const dpa_command &c) { left += std::to_string(c.req_id) + " "; });
	EXPECT_EQ(left, "1 2 3 6 7 ");
}

/* A pod that left: purge() takes what waits for it out, in the queue's order and a burst at
 * a time, its network requests and answers uncounted; what waits for another pod, or for a
 * later generation of its pod id, keeps its place (what came back first stays first), and
 * a destination left empty is open again (stage::purge_gone()). */
TEST(dest_queues, a_pod_that_left_has_its_queue_taken_out_in_order_and_the_others_keep_theirs)
{
	dest_queues q(64, 16, 4, 1000000000);
	q.limit_network_requests(8);
	const uint64_t t0 = 1000000, far = UINT64_MAX;
	constexpr uint32_t P_next = P + (1u << DPUMESH_POD_ID_BITS); /* P's pod id, later */
	static_assert(DPUMESH_HANDLE_POD_ID(P_next) == DPUMESH_HANDLE_POD_ID(P));
	dpa_command net = delivery(5, P);
	net.flow = DPUMESH_CASE_INGRESS;
	net.body_len = 64;
	/* came back: 1, 6 (the later generation's), 2; waiting behind them: 3, 9, 50 (an
	 * answer), 5 (a network request); Q: 100 came back, 101 waits */
	ASSERT_TRUE(q.bounced(delivery(1, P), far, t0));
	ASSERT_TRUE(q.bounced(delivery(6, P_next), far, t0));
	ASSERT_TRUE(q.bounced(delivery(2, P), far, t0));
	EXPECT_EQ(q.admit(delivery(3, P), far), dest_queues::verdict::queued);
	EXPECT_EQ(q.admit(delivery(9, P_next), far), dest_queues::verdict::queued);
	EXPECT_EQ(q.admit(delivery(50, P, dpa_command::op::deliver_response), far),
		  dest_queues::verdict::queued);
	EXPECT_EQ(q.admit(net, far), dest_queues::verdict::queued);
	ASSERT_TRUE(q.bounced(delivery(100, Q), far, t0));
	EXPECT_EQ(q.admit(delivery(101, Q), far), dest_queues::verdict::queued);
	constexpr uint32_t R = 0x107; /* held back with one that came back, nothing behind it */
	ASSERT_TRUE(q.bounced(delivery(200, R), far, t0));
	EXPECT_EQ(q.used(), 10u);
	EXPECT_EQ(q.answers(DPUMESH_HANDLE_POD_ID(P)), 1u);
	EXPECT_EQ(q.network_requests(), 1u);

	const auto gone_p = [](uint32_t dst) { return dst == P; };
	const auto ids = [](const dest_queues::out *o, uint32_t n) {
		std::string s;
		for (uint32_t i = 0; i < n; i++)
			s += (s.empty() ? "" : ",") + std::to_string(o[i].cmd.req_id) +
			     (o[i].expired || o[i].cmd.resume || o[i].cmd.notify ? "?" : "");
		return s;
	};
	dest_queues::out o[8];
	uint32_t n = q.purge(gone_p, o, 2);
	EXPECT_EQ(ids(o, n), "1,2");
	n = q.purge(gone_p, o, 8);
	EXPECT_EQ(ids(o, n), "3,50,5");
	EXPECT_EQ(o[1].cmd.what, dpa_command::op::deliver_response);
	EXPECT_EQ(q.purge(gone_p, o, 8), 0u);
	EXPECT_EQ(q.used(), 5u);
	EXPECT_EQ(q.queued(DPUMESH_HANDLE_POD_ID(P)), 2u);
	EXPECT_EQ(q.answers(DPUMESH_HANDLE_POD_ID(P)), 0u);
	EXPECT_EQ(q.network_requests(), 0u);

	/* the pod id is still held back for its later generation: one more comes back behind
	 * the 6 (what came back before it), ahead of the 9 */
	ASSERT_TRUE(q.bounced(delivery(10, P_next), far, t0 + us));
	EXPECT_EQ(drain(q, t0 + 20 * us), "6r,100r,200r");
	q.outcome(P_next);
	EXPECT_EQ(drain(q, t0 + 21 * us), "10,9");

	/* Q leaves with its resume out and 101 waiting: open again at once, and the resume's
	 * outcome, when it comes, changes nothing. R, its resume out and nothing queued, is
	 * not Q: it still waits for that outcome */
	n = q.purge([](uint32_t dst) { return dst == Q; }, o, 8);
	EXPECT_EQ(ids(o, n), "101");
	EXPECT_EQ(q.admit(delivery(102, Q), far), dest_queues::verdict::send);
	q.outcome(Q);
	EXPECT_EQ(q.admit(delivery(201, R), far), dest_queues::verdict::queued);
	EXPECT_EQ(drain(q, t0 + 22 * us), "");
	q.outcome(R);
	EXPECT_EQ(drain(q, t0 + 23 * us), "201");
	EXPECT_EQ(q.active(), 0u);
	EXPECT_EQ(q.used(), 0u);
}

TEST_F(outbox_test, a_full_backlog_drops_and_counts_and_frees_the_hbuf)
{
	sq_pair q(1);
	outbox ob({&q.prod}, &side, hz, stats);
	const unsigned before = rte_mempool_avail_count(hbufs);
	std::vector<dpa_command> sent;
	for (uint32_t i = 0; i < outbox::backlog_size + 2; i++) {
		void *obj;
		ASSERT_EQ(rte_mempool_get(hbufs, &obj), 0) << i;
		rte_mempool_put(hbufs, obj); /* commands share hbufs below: only the count matters */
	}
	dpa_command c = cmd(dpa_command::op::deliver_request, 1);
	ob.send(0, c); /* into the SQ */
	for (uint32_t i = 0; i < outbox::backlog_size; i++)
		ob.send(0, c);
	EXPECT_EQ(ob.free(), 0u);
	EXPECT_FALSE(ob.room());
	EXPECT_FALSE(ob.note_room());
	EXPECT_EQ(stats.backlog_overflow.get(), 0u);
	ob.send(0, c); /* overflow: dropped, its hbuf back in the pool */
	EXPECT_EQ(stats.backlog_overflow.get(), 1u);
	EXPECT_EQ(rte_mempool_avail_count(hbufs), before);
	taken.clear(); /* its one hbuf went back with the drop */
}

/* ---- egress ---- */

class egress_test : public pools {
protected:
	std::unique_ptr<egress> make(bool zero_copy, unsigned ring_size = 1024, unsigned shard = 0,
				     unsigned nb_shards = 1)
	{
		static unsigned seq;
		tx = rte_ring_create(("t_tx" + std::to_string(seq++)).c_str(), ring_size, SOCKET_ID_ANY,
				     RING_F_SP_ENQ | RING_F_SC_DEQ);
		EXPECT_NE(tx, nullptr);
		network net;
		net.pkts = pkts;
		net.ports.push_back({0, 1500, true, zero_copy, tx});
		net.shard = shard;
		net.nb_shards = nb_shards;
		cfg = load_cfg();
		auto e = egress::create(cfg, net, 65536, nullptr, stats);
		EXPECT_TRUE(e) << (e ? "" : e.error().message());
		return e ? std::move(*e) : nullptr;
	}
	void TearDown() override
	{
		drain();
		rte_ring_free(tx);
		pools::TearDown();
	}
	/* takes the frames off the TX ring: how many, and how many segments are external */
	unsigned drain(unsigned *ext = nullptr, unsigned *segs = nullptr)
	{
		void *m;
		unsigned n = 0;
		while (tx && rte_ring_dequeue(tx, &m) == 0) {
			for (rte_mbuf *s = static_cast<rte_mbuf *>(m); s; s = s->next) {
				if (ext && RTE_MBUF_HAS_EXTBUF(s))
					(*ext)++;
				if (segs)
					(*segs)++;
			}
			rte_pktmbuf_free(static_cast<rte_mbuf *>(m));
			n++;
		}
		return n;
	}

	config::node_config cfg;
	rte_ring *tx = nullptr;
	std::vector<uint8_t> body = std::vector<uint8_t>(5000, 0xab);
	std::vector<uint8_t> l7 = std::vector<uint8_t>(100, 0x11);
};

TEST_F(egress_test, copies_the_body_into_frames_when_the_port_takes_no_chains)
{
	auto eg = make(false);
	ASSERT_TRUE(eg);
	const remote to = eg->peer(0).to;
	ASSERT_EQ(to.port, 0);
	ASSERT_TRUE(eg->send(to, wire::frame_kind::request, 9, l7.data(), 100, body.data(),
			     5000, nullptr));
	unsigned ext = 0;
	const unsigned frames = drain(&ext);
	EXPECT_EQ(frames, wire::frames_needed(5100, 1500, false));
	EXPECT_GT(frames, 1u);
	EXPECT_EQ(ext, 0u);
	void *done[4];
	EXPECT_EQ(eg->reap(done, 4), 0u); /* nothing to complete later */
	EXPECT_EQ(rte_mempool_avail_count(pkts), 1023u);
}

TEST_F(egress_test, attaches_the_body_zero_copy_and_reports_when_the_nic_lets_go)
{
	auto eg = make(true);
	ASSERT_TRUE(eg);
	dpa_command c = cmd(dpa_command::op::deliver_request, 1);
	dpa_hbuf_meta *meta = hbuf_meta(c.header);
	ASSERT_TRUE(eg->send(eg->peer(0).to, wire::frame_kind::request, 9, l7.data(), 100,
			     body.data(), 5000, meta));
	void *done[4];
	EXPECT_EQ(eg->reap(done, 4), 0u); /* frames still on the ring: the body is in use */
	unsigned ext = 0;
	const unsigned frames = drain(&ext);
	EXPECT_GT(frames, 1u);
	EXPECT_GT(ext, 0u);
	ASSERT_EQ(eg->reap(done, 4), 1u); /* the last frame freed: the hbuf comes back */
	EXPECT_EQ(done[0], static_cast<void *>(meta));
	EXPECT_EQ(rte_mempool_avail_count(pkts), 1023u);
	put_all();
}

TEST_F(egress_test, failures_are_counted_and_leave_nothing_behind)
{
	auto eg = make(true, 2); /* a TX ring too small for any multi-frame message */
	ASSERT_TRUE(eg);
	/* no port: nothing sent */
	remote nowhere;
	pod_message m;
	m.header = cmd(dpa_command::op::deliver_request, 1).header;
	m.header_len = 16;
	egress::outcome o = eg->send_pod_message(nowhere, wire::frame_kind::request, 1, m);
	EXPECT_FALSE(o.sent);
	EXPECT_TRUE(o.complete);
	EXPECT_EQ(o.status, uint32_t(DPUMESH_STATUS_OK));
	EXPECT_EQ(stats.no_egress.get(), 1u);
	/* a body whose sender is gone (no registry here knows it) */
	m.body = 0x1000;
	m.body_len = 100;
	o = eg->send_pod_message(eg->peer(0).to, wire::frame_kind::request, 1, m);
	EXPECT_FALSE(o.sent);
	EXPECT_EQ(o.status, uint32_t(DPUMESH_STATUS_SRC_GONE));
	EXPECT_EQ(stats.src_gone.get(), 1u);
	/* the ring cannot take the frames: all freed, the zero-copy body released at once */
	dpa_hbuf_meta *meta = hbuf_meta(taken[0].header);
	EXPECT_FALSE(eg->send(eg->peer(0).to, wire::frame_kind::request, 9, l7.data(), 100,
			      body.data(), 5000, meta));
	EXPECT_EQ(stats.egress_ring_full.get(), 1u);
	EXPECT_EQ(rte_mempool_avail_count(pkts), 1023u);
	void *done[4];
	ASSERT_EQ(eg->reap(done, 4), 1u);
	EXPECT_EQ(done[0], static_cast<void *>(meta));
	/* an error reply to a remote fits one frame */
	EXPECT_TRUE(eg->reply(eg->peer(0).to, 77, 503, "overloaded", "n1/sidecar"));
	EXPECT_EQ(drain(), 1u);
	put_all();
}

/* Message ids of the node's shards never meet: shard k of n frames k + n, k + 2n, ...
 * whatever it sends (a pod's message, a relay, an error answer), so that a peer never
 * reassembles two shards' frames into one message. */
TEST_F(egress_test, each_shard_frames_its_own_message_ids)
{
	auto eg = make(false, 1024, 1, 3);
	ASSERT_TRUE(eg);
	const remote to = eg->peer(0).to;
	const std::string hop = "n1/sidecar";
	std::vector<uint8_t> hdr;
	request_view(hdr, "billing");
	const dpa::local_body none{};
	for (int i = 0; i < 4; i++) {
		ASSERT_TRUE(eg->send(to, wire::frame_kind::request, 9, l7.data(), 100, body.data(),
				     5000, nullptr));
		ASSERT_TRUE(eg->forward(to, wire::frame_kind::request, 10, hdr.data(),
					static_cast<uint16_t>(hdr.size()), &none, 0));
		ASSERT_TRUE(eg->reply(to, 11, 504, "timeout", hop));
	}
	std::vector<uint32_t> ids;
	void *m;
	while (rte_ring_dequeue(tx, &m) == 0) {
		wire::parsed_frame pf;
		EXPECT_EQ(wire::parse_frame(static_cast<rte_mbuf *>(m), 0, 1u << 20, &pf),
			  wire::wire_drop::none);
		if (ids.empty() || ids.back() != pf.msg_id)
			ids.push_back(pf.msg_id);
		rte_pktmbuf_free(static_cast<rte_mbuf *>(m));
	}
	ASSERT_EQ(ids.size(), 12u);
	for (size_t i = 0; i < ids.size(); i++)
		EXPECT_EQ(ids[i], 1 + 3 * (i + 1)) << "message " << i;
	EXPECT_EQ(rte_mempool_avail_count(pkts), 1023u);
}

/* The error answers made here (504 timeout above all: every request a peer never answers
 * gets one) are the same bytes as before reply() was made from a cached template: an FNV-1a
 * of every frame, for several requesters (IPv4, IPv6, odd ports), correlations, reasons and
 * the header cache's own eviction, in a burst and one at a time. The table was taken from
 * main 9eed87c's egress (before the template); a deliberate wire change updates it. */
TEST_F(egress_test, error_answers_are_the_same_bytes_as_before)
{
	static constexpr uint32_t expected[] = {
		0xf50abc20, 0x843165c4, 0x911f1be6, 0xff5cf1d0, 0xaf0bac6e, 0x770ecc6e,
		0x3de270bf, 0x24286415, 0x84a25c59, 0xbd2968d7, 0x50f704ec, 0xdbeb3952,
		0x5d08eccf, 0x8fc38cf5, 0xb069b0f4, 0x35feb986, 0xec75a02f, 0x8608c57d,
		0xe7565c68, 0x1b8c27c6, 0xe39929d7, 0x9178b765, 0x2be1403a, 0x9db7c99e,
		0xa43ac297, 0x45baad01, 0xc5f1bed3, 0xc40520e4, 0x0b97dabf, 0xe5af4cf9,
		0x18d2b026, 0x7118fff0, 0x3be16865, 0xdc38de50, 0xda7f89d3, 0xeb18e8bf,
		0x3c368d80, 0x6ddf3e73, 0xe3d8bf18, 0x3d459069, 0xc5d56428, 0x0a68dad7,
		0x2bd926f4, 0x1458c3c3, 0xa3040622, 0x18284f7b, 0x8bb57c14, 0x0cfc6012,
		0x4c961839, 0x6f98ff3b, 0x8f2ea22c, 0x64eb867a, 0x7ec9a288, 0x774a17a9,
		0x5a2ccec9, 0x157d5f8f, 0xfb313b91, 0xc42a1267, 0x63b6c631, 0xc5412efb,
		0x3dfffc2d, 0x25ddfe95, 0x149fc375, 0x0c0e0a46, 0xda7eb37e, 0x31b15fe4,
		0x001e8a76, 0xb4ae3034, 0x1ebbe311, 0x5f166f8f, 0x060153d2, 0xdd191308,
		0x4f8f82a4, 0xe0bcc2fc, 0xb52db38c, 0x4cb52d9c, 0xe2150505, 0xb389b18e,
		0xec5c1ef3, 0x7d8b7344, 0xe2f3bab8, 0xca05825a, 0x8924642f, 0x395ed460,
		0x2aca0bd0, 0x9b82e62b, 0x6c305086, 0x00d48877, 0x1650f8a1, 0x0847d835,
		0xd1ce263b, 0x8b4df598, 0x7bf66775, 0x52742c5d, 0x6e1330bf, 0x8e5efa10,
		0xd2310db1, 0xf3384a30, 0x9cceae0f, 0x53bf2886, 0x1f9b6285, 0x860510b8,
		0x9fc2c33a, 0xccf51e56, 0x3158288a, 0xf81e940a, 0xcf061110, 0x4459ad1a,
	};
	auto eg = make(false);
	ASSERT_TRUE(eg);
	const std::string hop = "n1/sidecar";
	std::vector<remote> to;
	to.push_back(eg->peer(0).to);
	remote client = eg->peer(0).to;
	client.addr.dst = wire::endpoint::from_v4(htonl(0xc0a80709), 40001);
	const uint8_t mac[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
	std::memcpy(client.addr.dst_mac, mac, 6);
	to.push_back(client);
	client.addr.dst = wire::endpoint::from_v4(htonl(0x0a0000fe), 1);
	to.push_back(client);
	remote v6 = client;
	for (int i = 0; i < 16; i++) {
		v6.addr.src.ip[i] = static_cast<uint8_t>(i == 0 ? 0xfd : i * 7);
		v6.addr.dst.ip[i] = static_cast<uint8_t>(i == 0 ? 0xfd : 0xff - i * 3);
	}
	v6.addr.src.port = 7000;
	v6.addr.dst.port = 65535;
	to.push_back(v6);
	struct answer {
		uint16_t status;
		const char *reason;
	};
	/* nine kinds: one more than the header cache holds, so one is made again */
	static const char *const names[] = {"timeout",	 "overloaded", "incomplete",
					    "egress_failed", "saturated", "no_route",
					    "rate_limited",  "answer_refused", "x"};
	const answer answers[] = {{504, names[0]}, {503, names[1]}, {408, names[2]},
				  {502, names[3]}, {503, names[4]}, {404, names[5]},
				  {429, names[6]}, {504, names[7]}, {500, names[8]}};
	std::vector<uint32_t> got;
	uint64_t corr = 1;
	for (int round = 0; round < 2; round++) {
		if (round == 1)
			eg->begin_burst();
		for (const answer &a : answers)
			for (const remote &r : to) {
				corr = corr * 0x9e3779b97f4a7c15ull + 3;
				ASSERT_TRUE(eg->reply(r, corr, a.status, a.reason, hop));
				if (round == 0) { /* 504 timeout between every other: the cached one */
					ASSERT_TRUE(eg->reply(r, corr + 1, 504, names[0], hop));
				}
			}
		if (round == 1)
			eg->end_burst();
		void *m;
		while (rte_ring_dequeue(tx, &m) == 0) {
			auto *f = static_cast<rte_mbuf *>(m);
			EXPECT_EQ(f->nb_segs, 1u);
			got.push_back(fnv1a(rte_pktmbuf_mtod(f, const void *), f->data_len));
			rte_pktmbuf_free(f);
		}
	}
	EXPECT_EQ(rte_mempool_avail_count(pkts), 1023u);
	std::string table;
	for (size_t i = 0; i < got.size(); i++) {
		char w[16];
		std::snprintf(w, sizeof(w), "0x%08x,%s", got[i], i % 6 == 5 ? "\n" : " ");
		table += w;
	}
	ASSERT_EQ(got.size(), std::size(expected)) << table;
	for (size_t i = 0; i < got.size(); i++)
		EXPECT_EQ(got[i], expected[i]) << "frame " << i << "; the whole table:\n" << table;
}

/* An answer's frame `f` is byte for byte what wire::fragment() makes for its message; frees
 * it. */
void expect_fragment_of(rte_mbuf *f, const wire::link_addr &addr, uint32_t msg_id,
			uint64_t correlation, const uint8_t *hdr, uint16_t len, rte_mempool *pkts,
			unsigned checked)
{
	rte_mbuf *want[4];
	ASSERT_EQ(wire::fragment(addr, wire::frame_kind::response, msg_id, correlation, hdr, len,
				 wire::body_ref{}, 1500, pkts, want, 4),
		  1u);
	EXPECT_EQ(f->data_len, want[0]->data_len) << "frame " << checked;
	if (f->data_len == want[0]->data_len) {
		EXPECT_EQ(std::memcmp(rte_pktmbuf_mtod(f, const void *),
				      rte_pktmbuf_mtod(want[0], const void *), f->data_len),
			  0)
			<< "frame " << checked;
	}
	rte_pktmbuf_free(want[0]);
	rte_pktmbuf_free(f);
}

/* Answers in a row to one requester come from a frame made once (wire::frame_template):
 * each is byte for byte what wire::fragment() makes for its message id and correlation,
 * IPv4 and IPv6, and a requester that changes in between makes the frame again. */
TEST_F(egress_test, answers_in_a_row_are_fragment_s_bytes)
{
	auto eg = make(false);
	ASSERT_TRUE(eg);
	const std::string hop = "n1/sidecar";
	remote v4 = eg->peer(0).to;
	v4.addr.dst = wire::endpoint::from_v4(htonl(0xc0a80709), 40001);
	remote v6 = v4;
	for (int i = 0; i < 16; i++) {
		v6.addr.src.ip[i] = static_cast<uint8_t>(i == 0 ? 0xfd : i * 5);
		v6.addr.dst.ip[i] = static_cast<uint8_t>(i == 0 ? 0xfd : 0xf0 - i * 3);
	}
	v6.addr.dst.port = 65535;
	uint8_t hdr[256];
	wire::l7_writer w(hdr, sizeof(hdr));
	w.response(504, wire::l7_flag_mesh_generated, "timeout", hop);
	const auto len = static_cast<uint16_t>(w.finish());
	uint64_t corr = 7;
	unsigned checked = 0;
	for (const remote *r : {&v4, &v4, &v6, &v4, &v6, &v6}) {
		eg->begin_burst();
		for (int i = 0; i < 40; i++) {
			corr = corr * 0x9e3779b97f4a7c15ull + 1;
			ASSERT_TRUE(eg->reply(*r, corr, 504, "timeout", hop));
		}
		eg->end_burst();
		void *m;
		while (rte_ring_dequeue(tx, &m) == 0) {
			auto *f = static_cast<rte_mbuf *>(m);
			/* its message id and correlation, read back from its fragment header */
			const size_t at = sizeof(rte_ether_hdr) +
					  (r == &v4 ? sizeof(rte_ipv4_hdr) : sizeof(rte_ipv6_hdr)) +
					  sizeof(rte_udp_hdr);
			wire::frame_hdr fh;
			ASSERT_GE(f->data_len, at + sizeof(fh));
			std::memcpy(&fh, rte_pktmbuf_mtod_offset(f, const uint8_t *, at), sizeof(fh));
			EXPECT_EQ(f->nb_segs, 1u);
			expect_fragment_of(f, r->addr, rte_be_to_cpu_32(fh.msg_id),
					   rte_be_to_cpu_64(fh.correlation), hdr, len, pkts, checked);
			checked++;
		}
	}
	EXPECT_EQ(checked, 240u);
	EXPECT_EQ(rte_mempool_avail_count(pkts), 1023u);
}

/* A kept answer looked up once (reply_of(), as the deadline sweep does) and sent by handle
 * makes reply()'s frames: fragment()'s bytes for each message id and correlation, the same
 * answer found again while it is kept, and made again (its own status) once other answers
 * took its place. */
TEST_F(egress_test, a_kept_answer_sent_by_handle_is_reply_s_bytes)
{
	auto eg = make(false);
	ASSERT_TRUE(eg);
	const std::string hop = "n1/sidecar";
	remote to = eg->peer(0).to;
	to.addr.dst = wire::endpoint::from_v4(htonl(0xc0a80709), 40001);
	uint8_t hdr[256];
	wire::l7_writer w(hdr, sizeof(hdr));
	w.response(504, wire::l7_flag_mesh_generated, "timeout", hop);
	const auto len = static_cast<uint16_t>(w.finish());
	static const char *const others[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
	uint64_t corr = 5;
	unsigned checked = 0;
	for (int round = 0; round < 2; round++) {
		eg->begin_burst();
		kept_reply &r = eg->reply_of(504, "timeout", hop);
		EXPECT_EQ(&eg->reply_of(504, "timeout", hop), &r);
		EXPECT_EQ(r.status, 504);
		for (int i = 0; i < 30; i++) {
			corr = corr * 0x9e3779b97f4a7c15ull + 1;
			to.addr.dst.port = static_cast<uint16_t>(40000 + i);
			ASSERT_TRUE(i % 3 ? eg->reply(to, corr, r)
					  : eg->reply(to, corr, 504, "timeout", hop));
		}
		eg->end_burst();
		void *m;
		while (rte_ring_dequeue(tx, &m) == 0) {
			auto *f = static_cast<rte_mbuf *>(m);
			const size_t at = sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr) +
					  sizeof(rte_udp_hdr);
			wire::frame_hdr fh;
			ASSERT_GE(f->data_len, at + sizeof(fh));
			std::memcpy(&fh, rte_pktmbuf_mtod_offset(f, const uint8_t *, at), sizeof(fh));
			remote port_of = to;
			port_of.addr.dst.port = rte_be_to_cpu_16(
				rte_pktmbuf_mtod_offset(f, const rte_udp_hdr *,
							sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr))
					->dst_port);
			expect_fragment_of(f, port_of.addr, rte_be_to_cpu_32(fh.msg_id),
					   rte_be_to_cpu_64(fh.correlation), hdr, len, pkts, checked);
			checked++;
		}
		/* eight other answers: the 504 is no longer kept, and is made again */
		eg->begin_burst();
		for (const char *reason : others)
			ASSERT_TRUE(eg->reply(to, 1, 503, reason, hop));
		eg->end_burst();
		while (rte_ring_dequeue(tx, &m) == 0)
			rte_pktmbuf_free(static_cast<rte_mbuf *>(m));
	}
	EXPECT_EQ(checked, 60u);
	EXPECT_EQ(rte_mempool_avail_count(pkts), 1023u);
}

/* A requester whose answers no port can send (its remote's port -1, as a replay port's
 * requesters have) has no kept frame, even at an address whose frame was kept for a port
 * before its answer was made again. Before 2026-12-08 a kept frame not made had port -1
 * too, and the address it was last made for: kept_for() matched it, and the sweep's 504
 * stamped a cleared frame and sent it through _ports[-1]. */
TEST_F(egress_test, a_requester_no_port_can_send_to_has_no_kept_frame)
{
	auto eg = make(false);
	ASSERT_TRUE(eg);
	const std::string hop = "n1/sidecar";
	remote to = eg->peer(0).to;
	to.addr.dst = wire::endpoint::from_v4(htonl(0xc0a80709), 40001);
	static const char *const others[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
	eg->begin_burst();
	for (const char *reason : others) /* each answer's frame kept for the address */
		ASSERT_TRUE(eg->reply(to, 1, 503, reason, hop));
	ASSERT_TRUE(eg->reply(to, 1, 504, "timeout", hop)); /* made again: "a"'s kept cleared */
	eg->end_burst();
	EXPECT_EQ(drain(), 9u);
	remote nowhere = to;
	nowhere.port = -1;
	eg->begin_burst();
	for (const char *reason : others) {
		kept_reply &r = eg->reply_of(503, reason, hop);
		EXPECT_EQ(eg->kept_for(nowhere, r), nullptr) << reason;
	}
	eg->end_burst();
	EXPECT_EQ(drain(), 0u);
}

/* A sweep's 504s to many requesters, interleaved: several addresses (more than the frames
 * kept, IPv4 and IPv6, some with another MAC) each from many ports. Every answer is
 * fragment()'s bytes for its own requester (address, port, MAC) and correlation. */
TEST_F(egress_test, answers_to_many_requesters_interleaved_are_each_their_own)
{
	auto eg = make(false);
	ASSERT_TRUE(eg);
	const std::string hop = "n1/sidecar";
	std::vector<remote> addrs;
	for (uint32_t a = 0; a < 6; a++) {
		remote r = eg->peer(0).to;
		r.addr.dst = wire::endpoint::from_v4(htonl(0xc0a83202 + a * 0x01010000u), 0);
		r.addr.dst_mac[5] = static_cast<uint8_t>(a & 1 ? 0x77 : r.addr.dst_mac[5]);
		addrs.push_back(r);
	}
	remote v6 = addrs[0];
	for (int i = 0; i < 16; i++) {
		v6.addr.src.ip[i] = static_cast<uint8_t>(i == 0 ? 0xfd : i * 5);
		v6.addr.dst.ip[i] = static_cast<uint8_t>(i == 0 ? 0xfd : 0xf0 - i * 3);
	}
	addrs.push_back(v6);
	uint8_t hdr[256];
	wire::l7_writer w(hdr, sizeof(hdr));
	w.response(504, wire::l7_flag_mesh_generated, "timeout", hop);
	const auto len = static_cast<uint16_t>(w.finish());
	struct sent_to {
		remote r;
		uint64_t corr;
	};
	std::vector<sent_to> sent;
	uint64_t corr = 11;
	for (int round = 0; round < 3; round++) {
		eg->begin_burst();
		for (unsigned i = 0; i < 100; i++) {
			remote r = addrs[(i * 5 + round) % addrs.size()];
			r.addr.dst.port = static_cast<uint16_t>(40000 + (i * 7 + round) % 1000);
			corr = corr * 0x9e3779b97f4a7c15ull + 1;
			ASSERT_TRUE(eg->reply(r, corr, 504, "timeout", hop));
			sent.push_back({r, corr});
		}
		eg->end_burst();
	}
	size_t checked = 0;
	void *m;
	while (rte_ring_dequeue(tx, &m) == 0) {
		auto *f = static_cast<rte_mbuf *>(m);
		ASSERT_LT(checked, sent.size());
		const sent_to &s = sent[checked];
		const bool v4 = s.r.addr.dst.is_v4();
		const size_t at = sizeof(rte_ether_hdr) +
				  (v4 ? sizeof(rte_ipv4_hdr) : sizeof(rte_ipv6_hdr)) + sizeof(rte_udp_hdr);
		wire::frame_hdr fh;
		ASSERT_GE(f->data_len, at + sizeof(fh));
		std::memcpy(&fh, rte_pktmbuf_mtod_offset(f, const uint8_t *, at), sizeof(fh));
		EXPECT_EQ(rte_be_to_cpu_64(fh.correlation), s.corr) << "frame " << checked;
		rte_udp_hdr udp;
		std::memcpy(&udp, rte_pktmbuf_mtod_offset(f, const uint8_t *, at - sizeof(udp)),
			    sizeof(udp));
		EXPECT_EQ(rte_be_to_cpu_16(udp.dst_port), s.r.addr.dst.port) << "frame " << checked;
		expect_fragment_of(f, s.r.addr, rte_be_to_cpu_32(fh.msg_id), s.corr, hdr, len, pkts,
				   checked);
		checked++;
	}
	EXPECT_EQ(checked, sent.size());
	EXPECT_EQ(rte_mempool_avail_count(pkts), 1023u);
}

/* A burst of more kept answers than the port's stage holds (put_one() stages while the
 * port's room lasts, and that room is capped at what the stage takes): each goes onto the
 * ring once, in order; on a ring with less room than the burst, what was said sent is
 * sent, the rest refused and counted, nothing lost. */
TEST_F(egress_test, a_burst_larger_than_the_stage_sends_each_answer_once_in_order)
{
	const std::string hop = "n1/sidecar";
	for (const unsigned ring_size : {1024u, 64u}) {
		auto eg = make(false, ring_size);
		ASSERT_TRUE(eg);
		remote r = eg->peer(0).to;
		r.addr.dst = wire::endpoint::from_v4(htonl(0xc0a80a0b), 40000);
		const uint64_t ring_full = stats.egress_ring_full.get();
		std::vector<uint64_t> sent;
		unsigned refused = 0;
		eg->begin_burst();
		for (uint64_t corr = 1; corr <= 300; corr++) {
			if (eg->reply(r, corr, 504, "timeout", hop))
				sent.push_back(corr);
			else
				refused++;
		}
		eg->end_burst();
		const unsigned room = rte_ring_get_capacity(tx);
		EXPECT_EQ(sent.size(), std::min(300u, room)) << "ring of " << ring_size;
		EXPECT_EQ(stats.egress_ring_full.get() - ring_full, refused);
		size_t checked = 0;
		void *m;
		while (rte_ring_dequeue(tx, &m) == 0) {
			auto *f = static_cast<rte_mbuf *>(m);
			const size_t at =
				sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr) + sizeof(rte_udp_hdr);
			wire::frame_hdr fh;
			ASSERT_GE(f->data_len, at + sizeof(fh));
			std::memcpy(&fh, rte_pktmbuf_mtod_offset(f, const uint8_t *, at), sizeof(fh));
			ASSERT_LT(checked, sent.size());
			EXPECT_EQ(rte_be_to_cpu_64(fh.correlation), sent[checked]) << "frame " << checked;
			rte_pktmbuf_free(f);
			checked++;
		}
		EXPECT_EQ(checked, sent.size());
		EXPECT_EQ(rte_mempool_avail_count(pkts), 1023u);
		rte_ring_free(tx);
		tx = nullptr;
	}
}

/* The port's room is a burst's (put_one() stages within it): outside a burst an answer goes
 * onto the ring at once, and each burst reads the ring's room again, so frames left on the
 * ring by the last one (not taken yet) leave the next less: what is said sent is on the
 * ring, the rest refused and counted. */
TEST_F(egress_test, each_burst_reads_the_ring_s_room_again)
{
	const std::string hop = "n1/sidecar";
	auto eg = make(false, 64);
	ASSERT_TRUE(eg);
	remote r = eg->peer(0).to;
	r.addr.dst = wire::endpoint::from_v4(htonl(0xc0a80a0c), 40001);
	const unsigned cap = rte_ring_get_capacity(tx);
	const uint64_t ring_full = stats.egress_ring_full.get();
	EXPECT_TRUE(eg->reply(r, 1, 504, "timeout", hop)); /* no burst: on the ring now */
	EXPECT_EQ(rte_ring_count(tx), 1u);
	eg->begin_burst();
	unsigned sent = 0;
	for (uint64_t corr = 2; corr < 12; corr++)
		sent += eg->reply(r, corr, 504, "timeout", hop);
	EXPECT_EQ(rte_ring_count(tx), 1u); /* staged until the burst ends */
	eg->end_burst();
	EXPECT_EQ(sent, 10u);
	EXPECT_EQ(rte_ring_count(tx), 11u);
	EXPECT_TRUE(eg->reply(r, 12, 504, "timeout", hop)); /* after it: at once again */
	EXPECT_EQ(rte_ring_count(tx), 12u);
	eg->begin_burst();
	sent = 0;
	for (uint64_t corr = 13; corr < 13 + 100; corr++)
		sent += eg->reply(r, corr, 504, "timeout", hop);
	eg->end_burst();
	EXPECT_EQ(sent, cap - 12);
	EXPECT_EQ(rte_ring_count(tx), cap);
	EXPECT_EQ(stats.egress_ring_full.get() - ring_full, 100 - (cap - 12));
	uint64_t want = 1;
	void *m;
	while (rte_ring_dequeue(tx, &m) == 0) {
		auto *f = static_cast<rte_mbuf *>(m);
		const size_t at = sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr) + sizeof(rte_udp_hdr);
		wire::frame_hdr fh;
		ASSERT_GE(f->data_len, at + sizeof(fh));
		std::memcpy(&fh, rte_pktmbuf_mtod_offset(f, const uint8_t *, at), sizeof(fh));
		EXPECT_EQ(rte_be_to_cpu_64(fh.correlation), want++);
		rte_pktmbuf_free(f);
	}
	EXPECT_EQ(want, uint64_t(cap) + 1);
	EXPECT_EQ(rte_mempool_avail_count(pkts), 1023u);
}

/* ---- network-in ---- */

class network_in_test : public egress_test {
protected:
	/* an rx_msg as port RX hands it over: `bytes` split over segments of `seg` bytes */
	port::rx_msg *message(const std::vector<uint8_t> &bytes, uint16_t l7_len, bool request,
			      size_t seg = 4096)
	{
		void *obj;
		EXPECT_EQ(rte_mempool_get(msgs, &obj), 0);
		auto *m = new (obj) port::rx_msg();
		rte_mbuf *head = nullptr, *tail = nullptr;
		for (size_t off = 0; off < bytes.size() || !head; off += seg) {
			rte_mbuf *s = rte_pktmbuf_alloc(pkts);
			const size_t n = std::min(seg, bytes.size() - off);
			std::memcpy(rte_pktmbuf_append(s, static_cast<uint16_t>(n)), bytes.data() + off, n);
			if (!head) {
				head = tail = s;
			} else {
				tail->next = s;
				tail = s;
				head->nb_segs++;
			}
			head->pkt_len = static_cast<uint32_t>(off + n);
		}
		m->msg.chain = head;
		m->msg.src = wire::endpoint::from_v4(0x0200000a, 7000); /* 10.0.0.2: the peer */
		m->msg.kind = request ? wire::frame_kind::request : wire::frame_kind::response;
		m->msg.msg_len = static_cast<uint32_t>(bytes.size());
		m->msg.l7_len = l7_len;
		m->msg.correlation = 1234;
		m->port_id = 0;
		return m;
	}
	void expect_all_back()
	{
		EXPECT_EQ(rte_mempool_avail_count(pkts), 1023u);
		EXPECT_EQ(rte_mempool_avail_count(msgs), 63u);
		EXPECT_EQ(rte_mempool_avail_count(hbufs), 511u);
	}
};

TEST_F(network_in_test, malformed_headers_are_refused_with_their_reason)
{
	auto eg = make(false);
	ASSERT_TRUE(eg);
	network_in in(hbufs, hbuf_size, *eg, stats);
	/* garbage */
	std::vector<uint8_t> junk(64, 0xee);
	net_message r = in.take(message(junk, 64, true));
	EXPECT_EQ(r.what, net_message::kind::bad_header);
	EXPECT_NE(r.error, wire::l7_error::ok);
	EXPECT_TRUE(r.request);
	EXPECT_EQ(r.reply_to.port, 0); /* the answer (400) can go back where it came from */
	EXPECT_EQ(r.correlation, 1234u);
	/* a truncated header: its stated length beyond what arrived */
	std::vector<uint8_t> hdr;
	request_view(hdr, "echo");
	std::vector<uint8_t> cut(hdr.begin(), hdr.begin() + hdr.size() / 2);
	r = in.take(message(cut, static_cast<uint16_t>(cut.size()), true));
	EXPECT_EQ(r.what, net_message::kind::bad_header);
	/* a request header in a frame that says response */
	r = in.take(message(hdr, static_cast<uint16_t>(hdr.size()), false));
	EXPECT_EQ(r.what, net_message::kind::bad_header);
	EXPECT_EQ(r.error, wire::l7_error::bad_kind);
	EXPECT_FALSE(r.request);
	EXPECT_EQ(stats.bad_header.get(), 3u);
	EXPECT_EQ(stats.l7_errors[static_cast<size_t>(wire::l7_error::bad_kind)].get(), 1u);
	/* a header larger than an hbuf */
	std::vector<uint8_t> big(2000, 0);
	r = in.take(message(big, 2000, true, 1000));
	EXPECT_EQ(r.what, net_message::kind::too_large);
	EXPECT_EQ(stats.net_header_too_large.get(), 1u);
	EXPECT_EQ(stats.net_requests.get(), 3u);
	EXPECT_EQ(stats.net_responses.get(), 1u);
	expect_all_back(); /* every failure freed the message, its mbufs and the hbuf */
}

TEST_F(network_in_test, a_good_request_keeps_its_body_in_the_received_mbufs)
{
	auto eg = make(false);
	ASSERT_TRUE(eg);
	network_in in(hbufs, hbuf_size, *eg, stats);
	std::vector<uint8_t> bytes;
	request_view(bytes, "echo", "POST", "/x");
	const uint16_t l7_len = static_cast<uint16_t>(bytes.size());
	for (int i = 0; i < 3000; i++)
		bytes.push_back(static_cast<uint8_t>(i));
	net_message r = in.take(message(bytes, l7_len, true, 1000)); /* header within segment 0 */
	ASSERT_EQ(r.what, net_message::kind::request);
	/* decoded in network-in's header buffer: no hbuf taken, the message held, the header
	 * copied to an 8-byte aligned place (hash functions load words of its strings) */
	ASSERT_NE(r.held, nullptr);
	EXPECT_EQ(r.cmd.header, 0u);
	EXPECT_EQ(reinterpret_cast<uintptr_t>(r.l7) % 8, 0u);
	EXPECT_EQ(std::memcmp(r.l7, bytes.data(), l7_len), 0);
	EXPECT_EQ(rte_mempool_avail_count(hbufs), 511u);
	EXPECT_EQ(stats.decoded_without_hbuf.get(), 1u);
	EXPECT_EQ(r.view.service, "echo");
	EXPECT_EQ(reinterpret_cast<const uint8_t *>(r.view.service.data()) - r.l7, 28);
	const dpa::local_body relay = r.relay_body();
	EXPECT_EQ(relay.first, r.held->msg.chain);
	EXPECT_EQ(relay.first_off, l7_len);
	/* to a pod: the header into an hbuf, the view moved with it */
	ASSERT_TRUE(in.to_hbuf(r));
	EXPECT_EQ(r.held, nullptr);
	EXPECT_EQ(rte_mempool_avail_count(hbufs), 510u);
	EXPECT_EQ(r.view.service, "echo");
	EXPECT_EQ(r.view.method, "POST");
	EXPECT_EQ(r.view.path, "/x");
	EXPECT_EQ(r.l7, reinterpret_cast<const uint8_t *>(r.cmd.header));
	EXPECT_GE(reinterpret_cast<uint64_t>(r.view.path.data()), r.cmd.header);
	EXPECT_LT(reinterpret_cast<uint64_t>(r.view.path.data()), r.cmd.header + l7_len);
	EXPECT_EQ(r.cmd.flow, uint32_t(DPUMESH_CASE_INGRESS));
	EXPECT_EQ(r.cmd.header_len, l7_len);
	EXPECT_EQ(r.cmd.body_len, 3000u);
	EXPECT_TRUE(r.cmd.network_body());
	EXPECT_EQ(std::memcmp(reinterpret_cast<const void *>(r.cmd.header), bytes.data(), l7_len), 0);
	auto *lb = reinterpret_cast<dpa::local_body *>(r.cmd.body);
	ASSERT_NE(lb->first, nullptr);
	EXPECT_EQ(lb->first_off, l7_len);
	EXPECT_EQ(*(rte_pktmbuf_mtod(lb->first, const uint8_t *) + lb->first_off), 0);
	EXPECT_EQ(r.reply_to.addr.dst.port, 7000);
	EXPECT_EQ(eg->peer_of(r.from), 0);
	/* dropping it (what the sidecar does with a refused one) gives everything back */
	drop_command(r.cmd, side);
	expect_all_back();
}

/* take_burst() makes its messages unwritten (net_message::unwritten): every field the
 * default constructor writes, take() writes on every path, and a request's command has its
 * lengths alone until to_hbuf() writes the rest. Made in memory full of junk, each kind of
 * message is read back field by field. */
TEST_F(network_in_test, take_burst_writes_every_field_of_the_messages_it_makes)
{
	auto eg = make(false);
	ASSERT_TRUE(eg);
	network_in in(hbufs, hbuf_size, *eg, stats);
	std::vector<uint8_t> req;
	request_view(req, "echo", "GET", "/x");
	const uint16_t l7_len = static_cast<uint16_t>(req.size());
	req.push_back(7); /* a body of one byte */
	std::vector<uint8_t> resp(256);
	wire::l7_writer w(resp.data(), resp.size());
	w.response(200);
	resp.resize(w.finish());
	std::vector<uint8_t> junk(64, 0xee);
	port::rx_msg *in_msgs[3] = {message(req, l7_len, true),
				    message(resp, static_cast<uint16_t>(resp.size()), false),
				    message(junk, 64, true)};
	in_msgs[0]->source_bucket = 5;
	alignas(net_message) unsigned char room[sizeof(net_message) * 3];
	std::memset(room, 0xa5, sizeof(room));
	auto *out = reinterpret_cast<net_message *>(room);
	const uint64_t req0 = stats.net_requests.get(), resp0 = stats.net_responses.get(),
		       dec0 = stats.decoded_without_hbuf.get();
	in.take_burst(in_msgs, 3, out);
	/* counted once a burst: two requests (one a bad header), a response, one decoded in
	 * the header buffer */
	EXPECT_EQ(stats.net_requests.get() - req0, 2u);
	EXPECT_EQ(stats.net_responses.get() - resp0, 1u);
	EXPECT_EQ(stats.decoded_without_hbuf.get() - dec0, 1u);

	net_message &r = out[0];
	ASSERT_EQ(r.what, net_message::kind::request);
	EXPECT_TRUE(r.request);
	EXPECT_EQ(r.error, wire::l7_error::ok);
	EXPECT_EQ(r.source, 5);
	EXPECT_EQ(r.correlation, 1234u);
	EXPECT_EQ(r.held, in_msgs[0]);
	ASSERT_NE(r.l7, nullptr);
	EXPECT_EQ(std::memcmp(r.l7, req.data(), l7_len), 0);
	EXPECT_EQ(r.view.service, "echo");
	EXPECT_EQ(r.cmd.header, 0u);
	EXPECT_EQ(r.cmd.body, 0u);
	EXPECT_EQ(r.cmd.header_len, l7_len);
	EXPECT_EQ(r.cmd.body_len, 1u);
	EXPECT_EQ(r.from, in_msgs[0]->msg.src);
	EXPECT_EQ(r.reply_to.addr.dst.port, 7000);

	net_message &a = out[1];
	ASSERT_EQ(a.what, net_message::kind::response);
	EXPECT_FALSE(a.request);
	EXPECT_EQ(a.error, wire::l7_error::ok);
	EXPECT_EQ(a.source, in_msgs[1]->source_bucket);
	EXPECT_EQ(a.correlation, 1234u);
	EXPECT_EQ(a.held, nullptr);
	EXPECT_NE(a.cmd.header, 0u);
	EXPECT_EQ(a.l7, reinterpret_cast<const uint8_t *>(a.cmd.header));
	EXPECT_EQ(a.view.status, 200);
	const auto whole_command = [](const dpa_command &c, dpa_command::op what) {
		EXPECT_EQ(c.what, what);
		EXPECT_EQ(c.flow, uint32_t(DPUMESH_CASE_INGRESS));
		EXPECT_FALSE(c.hold);
		EXPECT_FALSE(c.resume);
		EXPECT_FALSE(c.notify);
		EXPECT_EQ(c.status, uint32_t(DPUMESH_STATUS_OK));
		EXPECT_EQ(c.dst, 0u);
		EXPECT_EQ(c.req_id, 0u);
		EXPECT_EQ(c.step_id, 0u);
	};
	whole_command(a.cmd, dpa_command::op::deliver_response);
	EXPECT_EQ(a.cmd.header_len, resp.size());
	EXPECT_EQ(a.cmd.body_len, 0u);

	net_message &b = out[2];
	EXPECT_EQ(b.what, net_message::kind::bad_header);
	EXPECT_TRUE(b.request);
	EXPECT_NE(b.error, wire::l7_error::ok);
	EXPECT_EQ(b.held, nullptr);
	EXPECT_EQ(b.l7, nullptr);
	EXPECT_EQ(b.cmd.header, 0u);
	EXPECT_EQ(b.correlation, 1234u);

	/* to a pod: the request's command written whole */
	ASSERT_TRUE(in.to_hbuf(r));
	whole_command(r.cmd, dpa_command::op::deliver_request);
	EXPECT_NE(r.cmd.header, 0u);
	EXPECT_EQ(r.cmd.header_len, l7_len);
	EXPECT_EQ(r.cmd.body_len, 1u);
	EXPECT_TRUE(r.cmd.network_body());
	drop_command(r.cmd, side);
	in.release(a);
	in.end_burst();
	expect_all_back();
}

/* take_burst() of more messages than it has header buffers: message i in buffer i % 32,
 * every one made and decoded. */
TEST_F(network_in_test, a_burst_longer_than_the_header_buffers_takes_them_in_turn)
{
	auto eg = make(false);
	ASSERT_TRUE(eg);
	network_in in(hbufs, hbuf_size, *eg, stats);
	std::vector<uint8_t> req;
	request_view(req, "echo", "GET", "/x");
	const uint16_t l7_len = static_cast<uint16_t>(req.size());
	constexpr unsigned n = network_in::nb_buffers + 3;
	port::rx_msg *in_msgs[n];
	for (unsigned i = 0; i < n; i++)
		in_msgs[i] = message(req, l7_len, true);
	alignas(net_message) static unsigned char room[sizeof(net_message) * n];
	auto *out = reinterpret_cast<net_message *>(room);
	const uint64_t req0 = stats.net_requests.get(), resp0 = stats.net_responses.get(),
		       dec0 = stats.decoded_without_hbuf.get();
	in.take_burst(in_msgs, n, out);
	EXPECT_EQ(stats.net_requests.get() - req0, n); /* both parts' tallies counted */
	EXPECT_EQ(stats.net_responses.get() - resp0, 0u);
	EXPECT_EQ(stats.decoded_without_hbuf.get() - dec0, n);
	for (unsigned i = 0; i < n; i++) {
		ASSERT_EQ(out[i].what, net_message::kind::request) << i;
		EXPECT_EQ(out[i].held, in_msgs[i]) << i;
		EXPECT_EQ(out[i].view.path, "/x") << i;
		if (i >= network_in::nb_buffers) {
			EXPECT_EQ(out[i].l7, out[i - network_in::nb_buffers].l7) << i;
		} else if (i > 0) {
			EXPECT_GT(out[i].l7, out[i - 1].l7) << i;
		}
	}
	for (unsigned i = 0; i < n; i++)
		in.release(out[i]);
	in.end_burst();
	expect_all_back();
}

TEST_F(network_in_test, requests_take_no_hbuf_until_a_pod_needs_one_and_responses_take_one)
{
	auto eg = make(false);
	ASSERT_TRUE(eg);
	network_in in(hbufs, hbuf_size, *eg, stats);
	std::vector<uint8_t> bytes;
	request_view(bytes, "echo", "GET", "/split");
	const uint16_t l7_len = static_cast<uint16_t>(bytes.size());
	bytes.push_back(42);
	/* the header split over two segments: gathered into the header buffer all the same */
	net_message r = in.take(message(bytes, l7_len, true, l7_len / 2));
	ASSERT_EQ(r.what, net_message::kind::request);
	ASSERT_NE(r.held, nullptr);
	EXPECT_EQ(r.cmd.header, 0u);
	EXPECT_EQ(r.view.path, "/split");
	EXPECT_EQ(std::memcmp(r.l7, bytes.data(), l7_len), 0);
	EXPECT_EQ(rte_mempool_avail_count(hbufs), 511u);
	/* its body starts in the second segment: the relay's cursor walks there */
	const dpa::local_body relay = r.relay_body();
	EXPECT_EQ(relay.first_off, l7_len);
	ASSERT_TRUE(in.to_hbuf(r));
	EXPECT_EQ(rte_mempool_avail_count(hbufs), 510u);
	EXPECT_TRUE(in.to_hbuf(r)); /* already there: nothing to do */
	EXPECT_EQ(rte_mempool_avail_count(hbufs), 510u);
	EXPECT_EQ(r.view.path, "/split");
	in.release(r);
	/* a response: always into an hbuf (the way back is not a relay's) */
	std::vector<uint8_t> resp(256);
	wire::l7_writer w(resp.data(), resp.size());
	w.response(200);
	resp.resize(w.finish());
	r = in.take(message(resp, static_cast<uint16_t>(resp.size()), false));
	ASSERT_EQ(r.what, net_message::kind::response);
	EXPECT_EQ(r.held, nullptr);
	EXPECT_NE(r.cmd.header, 0u);
	EXPECT_EQ(r.l7, reinterpret_cast<const uint8_t *>(r.cmd.header));
	in.release(r);
	EXPECT_EQ(stats.decoded_without_hbuf.get(), 1u);
	/* held, then released without an hbuf (a relay, a refusal) */
	r = in.take(message(bytes, l7_len, true));
	ASSERT_NE(r.held, nullptr);
	EXPECT_EQ(stats.decoded_without_hbuf.get(), 2u);
	in.release(r);
	EXPECT_EQ(r.held, nullptr);
	EXPECT_EQ(rte_mempool_avail_count(msgs), 62u) << "freed with its burst's others";
	in.end_burst();
	expect_all_back();
	/* a burst's released requests, more than a burst's buffers, freed in bulk */
	for (unsigned i = 0; i < 45; i++) {
		r = in.take(message(bytes, l7_len, true, i % 2 ? 1000 : l7_len / 2), i);
		ASSERT_NE(r.held, nullptr);
		in.release(r);
	}
	EXPECT_LT(rte_mempool_avail_count(msgs), 63u);
	in.end_burst();
	expect_all_back();
	/* no hbuf left: a held request stays held, counted, and is released whole */
	std::vector<void *> all(511);
	ASSERT_EQ(rte_mempool_get_bulk(hbufs, all.data(), 511), 0);
	r = in.take(message(bytes, l7_len, true));
	ASSERT_NE(r.held, nullptr);
	const uint64_t empty = stats.hbuf_empty.get();
	EXPECT_FALSE(in.to_hbuf(r));
	EXPECT_EQ(stats.hbuf_empty.get(), empty + 1);
	EXPECT_NE(r.held, nullptr);
	in.release(r);
	in.end_burst();
	rte_mempool_put_bulk(hbufs, all.data(), 511);
	expect_all_back();
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("sidecar_comp", {}, 256));
	return RUN_ALL_TESTS();
}
