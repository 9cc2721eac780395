// SPDX-License-Identifier: BSD-3-Clause
// Isolation between tenants (issue 16, docs/quota.md "Quotas"): a pod that takes more than
// its share of the node runs beside a normal client for 30 s; the client gets every answer.
//
// An in-process node (lib/node) and real pod processes (dpumesh-pod) on the public API:
// - flood: posts requests without limit from one TX header slot (raw descriptors), drains
//   its TX completions and never releases what it receives;
// - nodrain: sends through the normal API as fast as it may and never releases its answers.
// Each time: the normal client's answers are all 200, the offender's refusals are counted
// against it (show pods / the pods telemetry family), and once it is killed the pending
// table, the hbufs, the destination queues and the pod slots go back to idle while the node
// still runs. $DPUMESH_ISOLATION_SECONDS sets the client's run (30 by default).
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <rte_mempool.h>

#include "eal_env.h"
#include "inproc_node.h"
#include "output.h"
#include "subprocess.h"

using namespace dpumesh::test;
using namespace std::chrono_literals;

namespace {

std::string isolation_config()
{
	/* a generous deadline: this box's two CPUs are shared with the offender's spinning,
	 * and the point here is the node's shared resources, not CPU time */
	return R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.0.0.1",
            "control_socket": "@SOCK@" },
  "lcores": { "idle": "adaptive", "stages": { "sidecar": 1, "dpa": 1 } },
  "services": [ { "name": "echo", "max_pods": 4 }, { "name": "client", "max_pods": 4 } ],
  "policy": { "timeouts": [ { "service": "echo", "timeout_ms": 10000 } ] }
})";
}

bool ready(subprocess &p)
{
	return p.wait_output([](const std::string &o) { return o.find("READY") != std::string::npos; },
			     20s);
}

unsigned client_seconds()
{
	const char *e = std::getenv("DPUMESH_ISOLATION_SECONDS");
	return e ? static_cast<unsigned>(std::strtoul(e, nullptr, 10)) : 30;
}

const dpumesh::control::pod_view *pod_by_id(const std::vector<dpumesh::control::pod_view> &v,
					    long long id)
{
	for (const auto &p : v)
		if (static_cast<long long>(p.pod_id) == id)
			return &p;
	return nullptr;
}

/* Kills the two echo pods, stops the node and checks that nothing is left behind: no pod,
 * no pending request, no hbuf, every mbuf and rx_msg back. */
void stop_idle(inproc_node &n, subprocess &e1, subprocess &e2)
{
	e1.signal(SIGKILL);
	e2.signal(SIGKILL);
	e1.wait(5s);
	e2.wait(5s);
	auto fin = n.stop();
	EXPECT_EQ(fin.nb_pods, 0u);
	EXPECT_EQ(fin.pending, 0u);
	EXPECT_EQ(fin.hbufs_in_use, 0u);
	EXPECT_EQ(n.mbufs_in_use, 0u);
	EXPECT_EQ(n.msgs_in_use, 0u);
}

/* The offender `mode` beside two echo pods and a normal client. */
void run_beside(const char *mode)
{
	inproc_node n(std::string("iso-") + mode, isolation_config());
	ASSERT_TRUE(n.up) << n.error;
	auto e1 = n.pod({"echo", n.sock});
	auto e2 = n.pod({"echo", n.sock});
	ASSERT_TRUE(ready(*e1)) << e1->output();
	ASSERT_TRUE(ready(*e2)) << e2->output();
	auto bad = n.pod({mode, n.sock});
	ASSERT_TRUE(ready(*bad)) << bad->output();
	const long long bad_id = value_of(bad->output(), "READY", "pod");
	/* it is at it before the client starts */
	ASSERT_TRUE(bad->wait_output(
		[](const std::string &o) { return o.find("STAT") != std::string::npos; }, 20s))
		<< bad->output();

	const std::string secs = std::to_string(client_seconds());
	auto c = n.pod({"client", n.sock, "100000000", "5", "512"},
		       {{"DPUMESH_CLIENT_SECONDS", secs}, {"DPUMESH_CLIENT_STALL", "20"}});
	const int rc = c->wait(std::chrono::seconds(client_seconds() + 120));
	const std::string out = c->output();
	EXPECT_EQ(rc, 0) << out;
	const long long sent = value_of(out, "DONE", "sent");
	EXPECT_GT(sent, 100) << out;
	/* every request answered 200, byte-exact, exactly once */
	EXPECT_EQ(value_of(out, "DONE", "ok"), sent) << out;
	EXPECT_EQ(value_of(out, "DONE", "refused"), 0) << out;
	EXPECT_EQ(value_of(out, "DONE", "mesh_err"), 0) << out;
	EXPECT_EQ(value_of(out, "DONE", "bad"), 0) << out;
	if (out.rfind("PERF") != std::string::npos)
		std::printf("client: %s", out.substr(out.rfind("PERF")).c_str());

	/* the offender's refusals are counted against it, by name */
	const std::string bo = bad->output();
	const auto stat_at = bo.rfind("STAT");
	ASSERT_NE(stat_at, std::string::npos) << bo;
	std::printf("%s: %s", mode, bo.substr(stat_at, bo.find('\n', stat_at) - stat_at + 1).c_str());
	auto pods = n.pods("all");
	ASSERT_TRUE(pods);
	const dpumesh::control::pod_view *p = pod_by_id(*pods, bad_id);
	ASSERT_NE(p, nullptr);
	std::printf("%s: pod %lld in_flight=%lu peak=%lu quota_refused=%lu answers_refused=%lu\n",
		    mode, bad_id, (unsigned long)p->quota.in_flight, (unsigned long)p->quota.peak,
		    (unsigned long)p->quota.refused, (unsigned long)p->quota.answers_refused);
	const auto cfg = n.control().config();
	EXPECT_LE(p->quota.peak, cfg->pools.quota.requests_per_pod);
	if (std::string(mode) == "flood") {
		/* it asked far more than its share: refused at once, by its TX status */
		EXPECT_GT(p->quota.refused, 0u);
		EXPECT_GT(value_of(bo.substr(stat_at), "STAT", "tx_quota"), 0) << bo;
	}
	/* its answers could not all be delivered: given up, counted against it */
	EXPECT_GT(p->quota.answers_refused, 0u);
	for (const auto &q : *pods)
		if (static_cast<long long>(q.pod_id) != bad_id) {
			EXPECT_EQ(q.quota.refused, 0u) << "pod " << q.pod_id;
			EXPECT_EQ(q.quota.answers_refused, 0u) << "pod " << q.pod_id;
		}
	auto mid = n.snapshot();
	EXPECT_EQ(mid.sidecar_value("responses_lost"), 0u);
	EXPECT_GT(mid.sidecar_value("quota_refused") + mid.sidecar_value("answers_refused"), 0u);

	/* killed: every pool and table goes back to idle while the node runs on */
	bad->signal(SIGKILL);
	bad->wait(5s);
	dpumesh::control::snapshot s;
	const auto until = std::chrono::steady_clock::now() + 30s;
	do {
		std::this_thread::sleep_for(100ms);
		s = n.snapshot();
	} while ((s.pending || s.waiting || s.hbufs_in_use || s.nb_pods != 2) &&
		 std::chrono::steady_clock::now() < until);
	EXPECT_EQ(s.pending, 0u);
	EXPECT_EQ(s.waiting, 0u);
	EXPECT_EQ(s.hbufs_in_use, 0u);
	EXPECT_EQ(s.nb_pods, 2u); /* its pod slot is free again */
	EXPECT_EQ(s.sidecar_value("responses_lost"), 0u);
	std::printf("node: quota_refused=%lu answers_refused=%lu answers_orphaned=%lu "
		    "park_refused=%lu park_expired=%lu dest_full=%lu timeouts=%lu\n",
		    (unsigned long)s.sidecar_value("quota_refused"),
		    (unsigned long)s.sidecar_value("answers_refused"),
		    (unsigned long)s.sidecar_value("answers_orphaned"),
		    (unsigned long)s.sidecar_value("park_refused"),
		    (unsigned long)s.sidecar_value("park_expired"),
		    (unsigned long)s.sidecar_value("dest_full"),
		    (unsigned long)s.sidecar_value("timeouts"));

	stop_idle(n, *e1, *e2);
}

/* Error answers (503 no_live_pod: the service has no pod) while the test holds every DPU
 * header buffer but one: an answer that finds no hbuf is owed, not dropped, and goes out
 * when an hbuf returns. The client must get exactly one answer per request (DONE: sent =
 * mesh errors + refused; a lost answer is a STALL, exit 4). */
void error_answers_wait_for_hbufs()
{
	inproc_node n("iso-owed", isolation_config());
	ASSERT_TRUE(n.up) << n.error;
	rte_mempool *hbufs = rte_mempool_lookup("dpumesh_hbufs");
	ASSERT_NE(hbufs, nullptr);
	std::vector<void *> held;
	held.reserve(rte_mempool_avail_count(hbufs) + 64);
	auto take_all = [&] {
		void *obj;
		while (rte_mempool_get(hbufs, &obj) == 0)
			held.push_back(obj);
	};
	take_all();
	/* one hbuf left to the node: a request's header takes it, so its error answer finds
	 * none; it comes back with the request's TX completion, and the answer goes then */
	ASSERT_FALSE(held.empty());
	/* puts bypass this lcore's mempool cache (the test runs on the main lcore): the
	 * node's worker takes from the pool itself */
	rte_mempool_generic_put(hbufs, &held.back(), 1, nullptr);
	held.pop_back();
	/* no echo pod: every request is answered 503 no_live_pod by the sidecar, each answer in
	 * an hbuf of its own, 256 requests outstanding */
	auto c = n.pod({"client", n.sock, "20000", "3", "64"},
		       {{"DPUMESH_CLIENT_SERVICE", "echo"}, {"DPUMESH_CLIENT_WINDOW", "256"},
			{"DPUMESH_CLIENT_STALL", "20"}});
	const auto until = std::chrono::steady_clock::now() + 60s;
	uint64_t owed = 0;
	while (std::chrono::steady_clock::now() < until &&
	       c->output().find("DONE") == std::string::npos) {
		owed = n.snapshot().sidecar_value("answers_owed");
		if (owed > 100)
			break;
		std::this_thread::sleep_for(1ms);
	}
	const uint64_t owed_mid = n.snapshot().sidecar_value("answers_owed");
	/* then every hbuf back: the rest of the requests go at full speed */
	rte_mempool_generic_put(hbufs, held.data(), static_cast<unsigned>(held.size()), nullptr);
	held.clear();
	ASSERT_GT(owed, 0u) << "no error answer had to wait for an hbuf; output: " << c->output();
	const int rc = c->wait(120s);
	const std::string out = c->output();
	EXPECT_EQ(rc, 0) << out;
	const long long sent = value_of(out, "DONE", "sent");
	EXPECT_EQ(sent, 20000) << out;
	EXPECT_EQ(value_of(out, "DONE", "ok"), 0) << out;
	EXPECT_EQ(value_of(out, "DONE", "mesh_err") + value_of(out, "DONE", "refused"), sent) << out;
	EXPECT_EQ(value_of(out, "DONE", "dup"), 0) << out;
	auto fin = n.stop();
	std::printf("owed: answers_owed=%lu (while held %lu) answers_unsent=%lu hbuf_empty=%lu "
		    "no_live_pod=%lu\n",
		    (unsigned long)fin.sidecar_value("answers_owed"), (unsigned long)owed_mid,
		    (unsigned long)fin.sidecar_value("answers_unsent"),
		    (unsigned long)fin.sidecar_value("hbuf_empty"),
		    (unsigned long)fin.sidecar_value("no_live_pod"));
	EXPECT_EQ(fin.sidecar_value("answers_unsent"), 0u);
	EXPECT_EQ(fin.sidecar_value("responses_lost"), 0u);
	EXPECT_EQ(fin.hbufs_in_use, 0u);
	EXPECT_EQ(fin.pending, 0u);
}

/* A client that stops draining its RX for longer than rx_stall_ms (100 ms here) with
 * requests outstanding, then drains again: the answers that found no room were refused (the
 * responders' buffers went back at once), and each of those requests still gets exactly one
 * answer, a 504 answer_refused, once the client takes deliveries again. DONE: sent = ok +
 * mesh errors, no duplicate, no STALL; then every pool and table is idle. */
void stalled_requester_gets_every_answer()
{
	std::string cfg = isolation_config();
	cfg.insert(cfg.rfind('}'), R"(, "pools": { "quota": { "rx_stall_ms": 100 } })");
	inproc_node n("iso-stall", cfg);
	ASSERT_TRUE(n.up) << n.error;
	auto e1 = n.pod({"echo", n.sock});
	auto e2 = n.pod({"echo", n.sock});
	ASSERT_TRUE(ready(*e1)) << e1->output();
	ASSERT_TRUE(ready(*e2)) << e2->output();
	/* 16 RX body slots, 64 requests outstanding: most answers find no room while it sleeps.
	 * Its TX body pool keeps its size: with 16 TX slots too, a slow (ASan) run never had
	 * its window full before the end, so it paused with nothing to refuse */
	auto c = n.pod({"client", n.sock, "3000", "11", "512"},
		       {{"DPUMESH_CLIENT_WINDOW", "64"}, {"DPUMESH_POD_RX_BODY_SLOTS", "16"},
			{"DPUMESH_CLIENT_PAUSE_AT", "300"}, {"DPUMESH_CLIENT_PAUSE_MS", "1500"},
			{"DPUMESH_CLIENT_STALL", "20"}});
	const int rc = c->wait(120s);
	const std::string out = c->output();
	auto mid = n.snapshot();
	std::printf("stall: node answers_refused=%lu answers_owed=%lu answers_unsent=%lu "
		    "answers_orphaned=%lu park_refused=%lu dest_full=%lu resumes=%lu waiting=%u\n",
		    (unsigned long)mid.sidecar_value("answers_refused"),
		    (unsigned long)mid.sidecar_value("answers_owed"),
		    (unsigned long)mid.sidecar_value("answers_unsent"),
		    (unsigned long)mid.sidecar_value("answers_orphaned"),
		    (unsigned long)mid.sidecar_value("park_refused"),
		    (unsigned long)mid.sidecar_value("dest_full"),
		    (unsigned long)mid.sidecar_value("resumes"), (unsigned)mid.waiting);
	EXPECT_EQ(rc, 0) << out;
	EXPECT_NE(out.find("PAUSE"), std::string::npos) << out;
	const long long sent = value_of(out, "DONE", "sent");
	EXPECT_EQ(sent, 3000) << out;
	EXPECT_EQ(value_of(out, "DONE", "ok") + value_of(out, "DONE", "mesh_err") +
			  value_of(out, "DONE", "refused"),
		  sent)
		<< out;
	EXPECT_EQ(value_of(out, "DONE", "dup"), 0) << out;
	EXPECT_EQ(value_of(out, "DONE", "bad"), 0) << out;
	/* its answers were refused while it slept, and it heard of each */
	EXPECT_GT(value_of(out, "DONE", "mesh_err"), 0) << out;
	EXPECT_NE(out.find("answer_refused:"), std::string::npos) << out;
	EXPECT_GT(mid.sidecar_value("answers_refused"), 0u);
	EXPECT_EQ(mid.sidecar_value("answers_unsent"), 0u);
	EXPECT_EQ(mid.sidecar_value("responses_lost"), 0u);
	if (out.rfind("DONE") != std::string::npos)
		std::printf("stall: %s", out.substr(out.rfind("DONE")).c_str());
	dpumesh::control::snapshot s;
	const auto until = std::chrono::steady_clock::now() + 30s;
	do {
		std::this_thread::sleep_for(100ms);
		s = n.snapshot();
	} while ((s.pending || s.waiting || s.hbufs_in_use) &&
		 std::chrono::steady_clock::now() < until);
	EXPECT_EQ(s.pending, 0u);
	EXPECT_EQ(s.waiting, 0u); /* the queues, parking and the refusals owed */
	EXPECT_EQ(s.hbufs_in_use, 0u);
	stop_idle(n, *e1, *e2);
}

} // namespace

TEST(Isolation, AStalledRequesterGetsOneAnswerForEveryRequest)
{
	stalled_requester_gets_every_answer();
}

TEST(Isolation, APodFloodingRequestsDoesNotStallAnother) { run_beside("flood"); }

TEST(Isolation, APodThatNeverDrainsItsRxDoesNotStallAnother) { run_beside("nodrain"); }

TEST(Isolation, AnErrorAnswerThatFindsNoHbufWaitsForOne) { error_answers_wait_for_hbufs(); }

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("isolation", {}, 512));
	return RUN_ALL_TESTS();
}
