// SPDX-License-Identifier: BSD-3-Clause
// A network flood of a saturated service, end to end: refused at port RX, one answer each.
//
// dpumesh (a real process) has a net_memif port; dpumesh-replay, in its own process, is the
// memif client and floods it with single-frame requests for "slow" (one echo pod, 4 RX
// slots, 2 ms per request: about 2,000 answers/s) at ten times what it answers, matching
// every answer to its request. Meanwhile a client pod does round trips to "quiet", another
// echo pod. The test asserts that
//   - every flooded request got exactly one answer (the generator: none lost, none twice),
//     200 from the pod or a refusal, and both happened;
//   - refusals were counted at port RX (refused_saturated: the service gate), not only in
//     the sidecar after reassembly and decode, and answered by port RX itself (its own 503
//     out of the port: answered_saturated), the sidecar answering only what it handed on;
//   - the pod-to-pod round trips all completed (completion, not timing);
//   - nothing is left behind (pending requests, header buffers, mbufs, messages).
// A second case floods requests of two or three frames: each refused at its first frame,
// its later frames dropped by a reassembler tombstone, one answer each. A third feeds a
// two-queue memif port from a generator sending on both queues (`--queues 2`): each worker's
// port RX takes exactly the frames of its queue, every request answered once; a generator
// asking for three queues is refused by the port (its link stays down) and says why.
#include <algorithm>
#include <gtest/gtest.h>

#include <jansson.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mesh_node.h"
#include "output.h"
#include "subprocess.h"
#include "telemetry_client.h"

using namespace dpumesh;
using namespace dpumesh::test;
using namespace std::chrono_literals;

namespace {

/** A field of the generator's fixed-mode trial in summary.json (-1: missing). */
long long trial_value(json_t *fixed, const char *key, const char *sub = nullptr)
{
	json_t *v = json_object_get(fixed, key);
	if (sub)
		v = json_object_get(v, sub);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/** A node on a memif server port at `memif`, every stage on one worker lcore: port_keys adds
 *  keys to the port (each followed by a comma), members the config's other members
 *  (services, pools, policy: JSON, separated by commas). */
std::string memif_node_config(const std::string &memif, const std::string &members,
			      const std::string &port_keys = "")
{
	return R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "192.168.50.1",
            "ipv6": "fd00:50::1", "control_socket": "@SOCK@" },
  "ports": [ { "name": "uplink", "role": "external", )" + port_keys + R"(
               "dev": "net_memif0,role=server,socket=)" + memif + R"(,socket-abstract=no" } ],
  "mempool": { "mbufs": 16383 },
  "lcores": { "idle": "adaptive", "stages": { "port_rx": 1, "port_tx": 1, "sidecar": 1, "dpa": 1 } },
  )" + members + R"(
})";
}

/** A node on a memif port with service "slow" (its pod's requests admitted up to 4 beyond its
 *  slots), "client" and what more_services adds (JSON objects, each after a comma). */
std::string slow_node_config(const std::string &memif, const std::string &more_services)
{
	return memif_node_config(memif, R"("pools": { "dest_queue": { "admit_beyond_slots": 4 } },
  "services": [ { "name": "slow", "max_pods": 4 }, { "name": "client", "max_pods": 4 })" +
					more_services + " ]");
}

struct flood_result {
	long long frames = -1, expected = -1, refused = -1;
};

/** The flood's fixed trial (summary.json under `out`): every request answered exactly once,
 *  by the pod (200) or a refusal, both seen, refusals the most (ten times its capacity). */
flood_result expect_one_answer_each(const std::string &out, const std::string &gen_log)
{
	flood_result f;
	json_error_t err;
	json_t *sum = json_load_file((out + "/summary.json").c_str(), 0, &err);
	EXPECT_NE(sum, nullptr) << err.text << "\n" << gen_log;
	if (!sum)
		return f;
	json_t *fixed = json_object_get(sum, "fixed");
	f.frames = trial_value(fixed, "tx_frames");
	f.expected = trial_value(fixed, "expected");
	const long long answered = trial_value(fixed, "answered"),
			ok = trial_value(fixed, "answers", "2xx");
	f.refused = trial_value(fixed, "answers", "5xx") + trial_value(fixed, "answers", "mesh_error");
	EXPECT_EQ(trial_value(fixed, "lost"), 0) << gen_log;
	EXPECT_EQ(trial_value(fixed, "duplicates"), 0) << gen_log;
	EXPECT_EQ(trial_value(fixed, "rx_other"), 0) << gen_log;
	EXPECT_EQ(answered, f.expected) << gen_log;
	EXPECT_EQ(trial_value(fixed, "answers", "4xx"), 0) << gen_log;
	EXPECT_EQ(trial_value(fixed, "answers", "other"), 0) << gen_log;
	EXPECT_EQ(ok + f.refused, answered) << gen_log;
	EXPECT_GT(ok, 0) << gen_log; /* the pod answered what it could */
	EXPECT_GT(f.refused, f.expected / 2) << gen_log;
	json_decref(sum);
	return f;
}

/** A service's refusals in `/dpumesh/metrics`: `refused`, and the `refused_<reason>` keys. */
struct service_refusals {
	long long refused = -1, by_reason = 0, saturated = 0;
	std::string text;
};
service_refusals refusals_of(const mesh_node &n, const char *service)
{
	service_refusals r;
	telemetry_client tc;
	std::string hello;
	if (!tc.connect(runtime_dir(n.prefix) + "/dpdk_telemetry.v2", &hello)) {
		ADD_FAILURE() << "no telemetry socket for " << n.prefix;
		return r;
	}
	json_ptr mx = tc.query("/dpumesh/metrics");
	json_t *m = mx ? json_object_get(mx.get(), service) : nullptr;
	if (!m) {
		ADD_FAILURE() << "no metrics for " << service;
		return r;
	}
	char *dump = json_dumps(m, JSON_COMPACT);
	r.text = dump ? dump : "";
	free(dump);
	r.refused = json_integer_value(json_object_get(m, "refused"));
	const char *key;
	json_t *v;
	json_object_foreach(m, key, v) {
		if (std::string_view(key).starts_with("refused_"))
			r.by_reason += json_integer_value(v);
	}
	r.saturated = json_integer_value(json_object_get(m, "refused_saturated"));
	return r;
}

/** dpumesh-replay as the memif client of `memif`: `cap` at `pps` frames/s ("max":
 *  unpaced) for `secs` seconds, every answer matched (2 s of drain), summary under `out`. */
std::vector<std::string> generator_args(const std::string &prefix, const std::string &memif,
					const std::string &cap, const char *pps, const char *secs,
					const char *idle_us, const std::string &out)
{
	/* The generator stands for another machine: on this 2-CPU box it shares CPU 0 with the
	 * pods, and a spinner there made the pods' wake-ups wait on the scheduler, not on the
	 * node (the quiet round trips' p50 swung 15-60 us with it). SCHED_IDLE gives the pods
	 * the CPU whenever they want it and the generator the rest, so what the tests measure
	 * is the node's share of the lcore between the network and the pods. */
	return {"/usr/bin/chrt", "--idle", "0", bin_path("dpumesh-replay"), "-l", "0", "--no-huge", "-m", "256", "--no-pci",
		"--no-shconf", "--file-prefix=" + prefix + "-" + std::to_string(getpid()),
		"--log-level=lib.eal:warning",
		"--vdev=net_memif0,role=client,socket=" + memif + ",socket-abstract=no", "--",
		"--pcap", cap, "--match", "mesh", "--mode", "fixed", "--pps", pps, "--duration", secs,
		"--drain", "2", "--idle-sleep", idle_us, "--wait-link", "30", "--out", out};
}

TEST(NetFlood, ASaturatedServiceIsRefusedAtPortRxAndEveryRequestIsAnsweredOnce)
{
	temp_dir d;
	const std::string memif = "/tmp/netflood-" + std::to_string(getpid()) + ".memif";
	unlink(memif.c_str());
	const std::string cap = d.file("slow.pcap");
	auto [grc, gout] = run_command({bin_path("dpumesh-pcapgen"), "--out", cap, "--messages",
					"2000", "--frames", "2000", "--services", "slow",
					"--frame-size", "64", "--ipv6-share", "0", "--seed", "3"});
	ASSERT_EQ(grc, 0) << gout;

	mesh_node n("netflood", slow_node_config(memif, R"(, { "name": "quiet", "max_pods": 4 })"),
		    {}, {"--wait-pods", "2"});
	ASSERT_TRUE(n.up) << n.proc->output();
	auto slow = n.pod({"echo", n.sock}, {{"DPUMESH_POD_SERVICE", "slow"},
					     {"DPUMESH_POD_BODY_SLOTS", "4"},
					     {"DPUMESH_ECHO_DELAY_US", "2000"},
					     {"DPUMESH_POD_NOSUM", "1"}});
	auto quiet = n.pod({"echo", n.sock}, {{"DPUMESH_POD_SERVICE", "quiet"}});
	ASSERT_TRUE(ready(*slow)) << slow->output();
	ASSERT_TRUE(ready(*quiet)) << quiet->output();

	/* the flood: 20,000 requests/s for 3 s, every answer matched (--drain: the last ones) */
	const std::string out = d.file("gen");
	subprocess gen(generator_args("netflood-gen", memif, cap, "20000", "3", "50", out));
	/* round trips between two other pods while it floods (started once frames arrive) */
	ASSERT_TRUE(n.wait_sidecar("net_requests", 1, 40s)) << n.proc->output() << gen.output();
	auto client = n.pod({"client", n.sock, "300", "7", "64"},
			    {{"DPUMESH_CLIENT_SERVICE", "quiet"}, {"DPUMESH_CLIENT_WINDOW", "1"}});
	EXPECT_EQ(client->wait(120s), 0) << client->output();
	const std::string c = client->output();
	EXPECT_EQ(value_of(c, "DONE", "sent"), 300) << c;
	EXPECT_EQ(value_of(c, "DONE", "ok"), 300) << c;
	EXPECT_EQ(value_of(c, "DONE", "bad"), 0) << c;
	EXPECT_EQ(value_of(c, "DONE", "mesh_err"), 0) << c;
	const int grc2 = gen.wait(60s);
	/* exit 3: "fixed mode saw loss": the checks below say which */
	EXPECT_TRUE(grc2 == 0 || grc2 == 3) << gen.output();

	const flood_result f = expect_one_answer_each(out, gen.output());
	EXPECT_GT(f.frames, 30000) << gen.output(); /* most of 60,000: the box may be loaded */
	EXPECT_EQ(f.expected, f.frames) << gen.output();
	/* the service's metrics count every refusal by its reason, port RX's included (answered
	 * there or handed on): refused = the sum of refused_<reason>, most of it saturated */
	const service_refusals sr = refusals_of(n, "slow");
	EXPECT_EQ(sr.by_reason, sr.refused) << sr.text;
	EXPECT_GT(sr.saturated, 0) << sr.text;

	slow->signal(SIGTERM);
	quiet->signal(SIGTERM);
	slow->wait(10s);
	quiet->wait(10s);
	const std::string fin = n.stop();
	/* refused at port RX (the service gate), before reassembly and the sidecar's decode */
	const long long at_rx = value_of(fin, "final stage=port_rx", "refused_saturated");
	const long long in_sidecar = value_of(fin, "final stage=sidecar", "saturated");
	EXPECT_GT(at_rx, 0) << fin;
	EXPECT_GT(at_rx, in_sidecar) << fin; /* most of them: the sidecar only raises the flag */
	EXPECT_LE(at_rx + in_sidecar, f.refused) << fin;
	EXPECT_EQ(sr.saturated, at_rx + in_sidecar) << fin << sr.text;
	/* requests of one frame: answered by port RX itself, out of the port's queue on its
	 * lcore (docs/overload.md, "Port RX answers what it refuses"); what it handed on, the
	 * sidecar answered from the refusal ring, and nothing else came that way */
	const long long by_rx = value_of(fin, "final stage=port_rx", "answered_saturated");
	const long long handed_on = value_of(fin, "final stage=port_rx", "answers_handed_on");
	EXPECT_GT(by_rx, at_rx / 2) << fin;
	EXPECT_EQ(by_rx + handed_on, at_rx) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "rx_refusals"),
		  handed_on + value_of(fin, "final stage=port_rx", "refused_overloaded") +
			  value_of(fin, "final stage=port_rx", "refused_incomplete"))
		<< fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "responses_lost"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "pending"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final dpa", "hbufs_in_use"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final mempool", "rx_msgs_in_use"), 0) << fin;
	unlink(memif.c_str());
}

/* The same flood with requests of two or three frames (docs/overload.md "Tombstones"): once
 * the service is saturated, port RX refuses each at its first frame and the reassembler's
 * tombstone drops the others; every request still gets exactly one answer, and no refused
 * request's frames wait in reassembly until they time out. */
TEST(NetFlood, RequestsOfSeveralFramesAreRefusedAtTheirFirstFrameOnceEach)
{
	temp_dir d;
	const std::string memif = "/tmp/netflood-m" + std::to_string(getpid()) + ".memif";
	unlink(memif.c_str());
	const std::string cap = d.file("slow-multi.pcap");
	auto [grc, gout] = run_command({bin_path("dpumesh-pcapgen"), "--out", cap, "--messages",
					"1000", "--services", "slow", "--body", "1600:3000",
					"--ipv6-share", "0", "--seed", "4"});
	ASSERT_EQ(grc, 0) << gout;

	mesh_node n("netflood-m", slow_node_config(memif, ""),
		    {}, {"--wait-pods", "1"});
	ASSERT_TRUE(n.up) << n.proc->output();
	auto slow = n.pod({"echo", n.sock}, {{"DPUMESH_POD_SERVICE", "slow"},
					     {"DPUMESH_POD_BODY_SLOTS", "4"},
					     {"DPUMESH_ECHO_DELAY_US", "2000"},
					     {"DPUMESH_POD_NOSUM", "1"}});
	ASSERT_TRUE(ready(*slow)) << slow->output();

	/* 20,000 frames/s for 3 s: about 8,000 requests/s against a pod that answers 2,000 */
	const std::string out = d.file("gen");
	subprocess gen(generator_args("netflood-m-gen", memif, cap, "20000", "3", "50", out));
	const int grc2 = gen.wait(90s);
	EXPECT_TRUE(grc2 == 0 || grc2 == 3) << gen.output();

	const flood_result f = expect_one_answer_each(out, gen.output());
	const long long expected = f.expected;
	EXPECT_GT(expected, 10000) << gen.output(); /* most of ~24,000: the box may be loaded */
	EXPECT_GT(f.frames, 2 * expected) << gen.output();

	slow->signal(SIGTERM);
	slow->wait(10s);
	const std::string fin = n.stop();
	const long long at_rx = value_of(fin, "final stage=port_rx", "refused_saturated");
	const long long later = value_of(fin, "final stage=port_rx", "drop_refused_frag");
	EXPECT_GT(at_rx, expected / 4) << fin;
	EXPECT_GE(later, at_rx) << fin; /* at least one later frame each */
	EXPECT_LE(later, 2 * at_rx) << fin; /* at most two: no request has more than 3 frames */
	/* several frames: the sidecar answers them (port RX answers only one-frame requests) */
	EXPECT_EQ(value_of(fin, "final stage=port_rx", "answered_saturated"), 0) << fin;
	EXPECT_GE(value_of(fin, "final stage=sidecar", "rx_refusals"), at_rx) << fin;
	/* only the message the trial ended inside (its last frames never sent) may time out, when
	 * its first frame came while the flag was down */
	EXPECT_LE(value_of(fin, "final stage=port_rx", "drop_timeout"), 1) << fin;
	EXPECT_EQ(value_of(fin, "final stage=port_rx", "drop_table_full"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final stage=port_rx", "drop_source_limit"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "responses_lost"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "pending"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final dpa", "hbufs_in_use"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final mempool", "mbufs_in_use"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final mempool", "rx_msgs_in_use"), 0) << fin;
	unlink(memif.c_str());
}

/** A client pod's round trips to `service`, one at a time for `secs` seconds (the first
 *  0.3 s not measured): its output (PERF rtt_p50_us=..., DONE sent=... ok=...). */
std::string round_trips(mesh_node &n, const char *service, const char *secs)
{
	auto client = n.pod({"client", n.sock, "100000000", "7", "64"},
			    {{"DPUMESH_CLIENT_SERVICE", service}, {"DPUMESH_CLIENT_WINDOW", "1"},
			     {"DPUMESH_CLIENT_SECONDS", secs}, {"DPUMESH_CLIENT_WARMUP", "0.3"},
			     {"DPUMESH_POD_NOSUM", "1"}});
	EXPECT_EQ(client->wait(120s), 0) << client->output();
	return client->output();
}

double rtt_p50(const std::string &c)
{
	const std::string v = text_of(c, "PERF", "rtt_p50_us");
	return v.empty() ? -1 : std::stod(v);
}

/* Fairness between the network and the pods (docs/overload.md "Fairness"): an unpaced
 * flood of requests the sidecar refuses after verifying their JWT (HS256, a bad signature:
 * 401, microseconds each) fills every pass of the worker lcore with a full burst of dear
 * network work; while pods' messages pass, the network gets about a microsecond of each
 * pass at its measured cost, so the pod round trips beside it stay near their quiet
 * latency. Without that share they took several times it (docs/overload.md). */
TEST(NetFlood, AnUnpacedFloodLeavesOtherPodsRoundTripsNearTheirQuietLatency)
{
	temp_dir d;
	const std::string memif = "/tmp/netflood-u" + std::to_string(getpid()) + ".memif";
	unlink(memif.c_str());
	const std::string cap = d.file("gone.pcap");
	/* HS256 over the right header and claims, a signature no key made: every request costs
	 * the verification (failures are not cached) and is refused 401 */
	const std::string bad_jwt =
		"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImgxIn0."
		"eyJpc3MiOiJkcHVtZXNoLXRlc3QiLCJhdWQiOiJtZXNoIiwic3ViIjoiZmxvb2QiLCJleHAiOjIwMDAwMDAwMDB9."
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
	auto [grc, gout] = run_command({bin_path("dpumesh-pcapgen"), "--out", cap, "--messages",
					"2000", "--frames", "2000", "--services", "gone",
					"--frame-size", "64", "--header", "authorization:Bearer " + bad_jwt, "--ipv6-share", "0", "--seed", "5"});
	ASSERT_EQ(grc, 0) << gout;

	mesh_node n("netflood-u", memif_node_config(memif, R"(
  "services": [ { "name": "gone", "max_pods": 4 }, { "name": "quiet", "max_pods": 4 },
                { "name": "client", "max_pods": 4 } ],
  "policy": {
    "jwt": { "issuer": "dpumesh-test", "audiences": [ "mesh" ],
             "keys": [ { "kid": "h1", "alg": "HS256",
                         "secret": "bm90LXRoZS1zaWduZXJzLXNlY3JldC0wMTIzNDU2Nzg5" } ] },
    "rbac": [ { "service": "gone", "default": "allow", "require_jwt": true, "rules": [] } ] })"),
		    {}, {"--wait-pods", "1"});
	ASSERT_TRUE(n.up) << n.proc->output();
	auto quiet = n.pod({"echo", n.sock}, {{"DPUMESH_POD_SERVICE", "quiet"},
					      {"DPUMESH_POD_NOSUM", "1"}});
	ASSERT_TRUE(ready(*quiet)) << quiet->output();

	/* quiet: the round trips alone */
	const std::string c0 = round_trips(n, "quiet", "2");
	EXPECT_EQ(value_of(c0, "DONE", "ok"), value_of(c0, "DONE", "sent")) << c0;
	const double quiet_before_p50 = rtt_p50(c0);
	ASSERT_GT(quiet_before_p50, 0) << c0;

	/* the flood, unpaced, and the same round trips once its frames arrive */
	const std::string out = d.file("gen");
	subprocess gen(generator_args("netflood-ugen", memif, cap, "max", "8", "20", out));
	ASSERT_TRUE(n.wait_sidecar("net_requests", 1, 60s)) << n.proc->output() << gen.output();
	const std::string c1 = round_trips(n, "quiet", "2");
	const long long sent = value_of(c1, "DONE", "sent");
	EXPECT_GT(sent, 0) << c1;
	EXPECT_EQ(value_of(c1, "DONE", "ok"), sent) << c1;
	EXPECT_EQ(value_of(c1, "DONE", "mesh_err"), 0) << c1;
	EXPECT_EQ(value_of(c1, "DONE", "bad"), 0) << c1;
	const double flood_p50 = rtt_p50(c1);
	const int grc2 = gen.wait(60s);
	EXPECT_TRUE(grc2 == 0 || grc2 == 3) << gen.output();
	/* quiet again once the flood is over: the reference is the slower of the two quiet
	 * phases (one alone swung 9-45 us on this box) */
	const std::string c2 = round_trips(n, "quiet", "2");
	EXPECT_EQ(value_of(c2, "DONE", "ok"), value_of(c2, "DONE", "sent")) << c2;
	const double quiet_p50 = std::max(quiet_before_p50, rtt_p50(c2));

	json_error_t err;
	json_t *sum = json_load_file((out + "/summary.json").c_str(), 0, &err);
	ASSERT_NE(sum, nullptr) << err.text << "\n" << gen.output();
	json_t *fixed = json_object_get(sum, "fixed");
	const long long fsent = trial_value(fixed, "tx_frames");
	/* unpaced: more than the paced flood above sends (60,000), on a loaded box too */
	EXPECT_GT(fsent, 100000) << gen.output();
	EXPECT_EQ(trial_value(fixed, "expected"), fsent) << gen.output();
	/* every request answered once, but for answers lost on the way back to the
	 * generator: port TX's counted drops (its ring stayed full while the generator,
	 * descheduled on a loaded box, did not read) and, seen in both builds, up to one
	 * memif ring's worth (1,024) the generator never read (docs/overload.md "Not done
	 * yet"); bounded below */
	const long long lost = trial_value(fixed, "lost");
	EXPECT_EQ(trial_value(fixed, "duplicates"), 0) << gen.output();
	EXPECT_EQ(trial_value(fixed, "answered") + lost, fsent) << gen.output();
	/* each refused (401, a mesh refusal), none passed on */
	EXPECT_EQ(trial_value(fixed, "answers", "2xx"), 0) << gen.output();
	EXPECT_EQ(trial_value(fixed, "answers", "4xx") + trial_value(fixed, "answers", "mesh_error"),
		  fsent - lost) << gen.output();
	json_decref(sum);

	/* the pods' round trips beside the flood: near their quiet latency. Measured with this
	 * test on a quiet box (2026-11-24, load ~1): a node without the network's share took
	 * x10.2-10.5 the quiet p50 (x4.2 once, when the quiet phase itself ran slow); with it,
	 * x2.6-2.8 (x5.6 once, when the quiet phase ran unusually fast, 9 us); on a loaded box
	 * x0.8-2.3. The bound sits between the two (docs/overload.md "Fairness": the issue's
	 * x2 is not met on a quiet box) */
	EXPECT_LE(flood_p50, 5 * quiet_p50)
		<< "quiet p50 " << quiet_p50 << " us, beside the flood " << flood_p50 << " us\n"
		<< c0 << c1 << c2;
	std::printf("round trips p50: quiet %.1f us, beside the unpaced flood %.1f us (x%.2f); "
		    "flood %lld requests\n", quiet_p50, flood_p50, flood_p50 / quiet_p50, fsent);

	quiet->signal(SIGTERM);
	quiet->wait(10s);
	const std::string fin = n.stop();
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "responses_lost"), 0) << fin;
	EXPECT_LE(lost, value_of(fin, "final stage=port_tx", "dropped") + 1024) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "pending"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final dpa", "hbufs_in_use"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final mempool", "rx_msgs_in_use"), 0) << fin;
	unlink(memif.c_str());
}

/* The generator sends on two memif queues (`dpumesh-replay --queues 2`: each flow on the queue
 * its addresses and ports hash to) into a port with two RX and two TX queues. With two
 * workers (the _w2 run) worker k polls RX queue k, so its port RX takes exactly the frames
 * the generator sent on queue k; with one, the worker polls both. Every request is answered
 * exactly once whichever worker took it. */
TEST(NetFlood, EachWorkerTakesTheFramesOfItsMemifQueue)
{
	temp_dir d;
	const std::string memif = "/tmp/netflood-q" + std::to_string(getpid()) + ".memif";
	unlink(memif.c_str());
	const std::string cap = d.file("q.pcap");
	auto [grc, gout] = run_command({bin_path("dpumesh-pcapgen"), "--out", cap, "--messages",
					"1500", "--services", "echo", "--body", "0:3000",
					"--malformed-share", "0", "--other-share", "0", "--seed", "11"});
	ASSERT_EQ(grc, 0) << gout;
	/* 1,500 requests, some of several frames */
	const long long frames = value_of(gout, "summary", "frames");
	ASSERT_GT(frames, 1500) << gout;
	mesh_node n("netflood-q",
		    memif_node_config(memif, R"("services": [ { "name": "echo", "max_pods": 4 } ])",
				      R"("rx_queues": 2, "tx_queues": 2,)"),
		    {}, {"--wait-pods", "1"});
	ASSERT_TRUE(n.up) << n.proc->output();
	auto echo = n.pod({"echo", n.sock}, {{"DPUMESH_POD_NOSUM", "1"}});
	ASSERT_TRUE(ready(*echo)) << echo->output();

	/* the capture 4 times through at 4,000 frames/s, on both queues */
	const std::string out = d.file("gen");
	std::vector<std::string> args = generator_args("netflood-qgen", memif, cap, "4000", "0", "50", out);
	args.insert(args.end(), {"--passes", "4", "--queues", "2"});
	subprocess gen(args);
	const int rc = gen.wait(120s);
	const std::string glog = gen.output();
	EXPECT_EQ(rc, 0) << glog; /* 3: some request had no answer */
	/* "queues: 2, frames of a pass out of each: A B" */
	const size_t at = glog.find("frames of a pass out of each:");
	ASSERT_NE(at, std::string::npos) << glog;
	long long per_queue[2] = {-1, -1};
	ASSERT_EQ(std::sscanf(glog.c_str() + at, "frames of a pass out of each: %lld %lld",
			      &per_queue[0], &per_queue[1]), 2) << glog;
	EXPECT_EQ(per_queue[0] + per_queue[1], frames) << glog;
	/* the flows' hash: neither queue far from half */
	EXPECT_GT(per_queue[0], frames / 3) << glog;
	EXPECT_GT(per_queue[1], frames / 3) << glog;

	json_error_t err;
	json_t *sum = json_load_file((out + "/summary.json").c_str(), 0, &err);
	ASSERT_NE(sum, nullptr) << err.text << "\n" << glog;
	json_t *fixed = json_object_get(sum, "fixed");
	EXPECT_EQ(trial_value(fixed, "tx_frames"), 4 * frames) << glog;
	EXPECT_EQ(trial_value(fixed, "expected"), 4 * 1500) << glog;
	EXPECT_EQ(trial_value(fixed, "answered"), 4 * 1500) << glog;
	EXPECT_EQ(trial_value(fixed, "lost"), 0) << glog;
	EXPECT_EQ(trial_value(fixed, "duplicates"), 0) << glog;
	EXPECT_EQ(trial_value(fixed, "rx_other"), 0) << glog;
	EXPECT_GT(trial_value(fixed, "answers", "2xx"), 0) << glog;
	json_decref(sum);

	/* port RX's frames on each worker lcore, and which RX queue that worker polls */
	telemetry_client tc;
	std::string hello;
	ASSERT_TRUE(tc.connect(runtime_dir(n.prefix) + "/dpdk_telemetry.v2", &hello));
	json_ptr st = tc.query("/dpumesh/stages");
	json_ptr lc = tc.query("/dpumesh/lcores");
	ASSERT_TRUE(st && lc);
	json_t *names = json_object_get(st.get(), "name"), *st_lcore = json_object_get(st.get(), "lcore"),
	       *work = json_object_get(st.get(), "work");
	json_t *lc_lcore = json_object_get(lc.get(), "lcore"),
	       *placement = json_object_get(lc.get(), "placement");
	ASSERT_TRUE(json_is_array(names) && json_is_array(work) && json_is_array(st_lcore));
	ASSERT_TRUE(json_is_array(lc_lcore) && json_is_array(placement));
	std::map<long long, long long> rx_frames; /* lcore: port RX's frames */
	for (size_t i = 0; i < json_array_size(names); i++)
		if (std::string_view(json_string_value(json_array_get(names, i))) == "port_rx")
			rx_frames[json_integer_value(json_array_get(st_lcore, i))] +=
				json_integer_value(json_array_get(work, i));
	const std::string stages_text = [&] {
		char *t = json_dumps(st.get(), JSON_COMPACT);
		std::string r = t ? t : "";
		free(t);
		return r + "\n" + hello;
	}();
	if (test_workers() == 1) {
		ASSERT_EQ(rx_frames.size(), 1u) << stages_text;
		EXPECT_EQ(rx_frames.begin()->second, 4 * frames) << stages_text;
	} else {
		ASSERT_EQ(rx_frames.size(), 2u) << stages_text;
		int polled = 0; /* queues found in the workers' placement */
		for (size_t i = 0; i < json_array_size(lc_lcore); i++) {
			const std::string where = json_string_value(json_array_get(placement, i));
			const long long l = json_integer_value(json_array_get(lc_lcore, i));
			for (int q = 0; q < 2; q++)
				if (where.find("rx=uplink:" + std::to_string(q)) != std::string::npos) {
					polled++;
					EXPECT_EQ(rx_frames[l], 4 * per_queue[q])
						<< "lcore " << l << " polls queue " << q << "\n" << stages_text;
				}
		}
		EXPECT_EQ(polled, 2) << "each queue on one worker\n" << stages_text;
	}
	/* the node warns that its peer must open as many queues (a memif server left with fewer
	 * maps the others onto the client's first ring); a client that asks for more is refused
	 * by the server: its link stays down, it says why, and the node takes nothing from it */
	EXPECT_NE(n.proc->output().find("its peer must open as many (dpumesh-replay --queues 2)"),
		  std::string::npos) << n.proc->output();
	std::vector<std::string> more = generator_args("netflood-q3gen", memif, cap, "4000", "1", "50",
						       d.file("gen3"));
	more.insert(more.end(), {"--queues", "3", "--wait-link", "2"});
	subprocess gen3(more);
	EXPECT_EQ(gen3.wait(60s), 1) << gen3.output();
	EXPECT_NE(gen3.output().find("A memif server refuses a client that opens more queues"),
		  std::string::npos) << gen3.output();
	echo->signal(SIGTERM);
	echo->wait(10s);
	const std::string fin = n.stop();
	EXPECT_EQ(value_of(fin, "final stage=port_rx", "frames"), 4 * frames) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "responses_lost"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final stage=sidecar", "pending"), 0) << fin;
	EXPECT_EQ(value_of(fin, "final mempool", "rx_msgs_in_use"), 0) << fin;
	unlink(memif.c_str());
}

} // namespace
