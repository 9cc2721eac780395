// SPDX-License-Identifier: BSD-3-Clause
// The service graph across two nodes, through the ingress: scripts/e2e-topology.sh builds
// the topology (namespaces, veth pairs, a bridge, two dpumesh nodes, dpumesh-service pods of
// conf/e2e/graph.json: s0 -> (s1 || s2) -> s3, dpumesh-gateway), and curl walks it.
//
//   WalksGraphAndSurvivesKilledPods  GET and POST 0 B .. 1 MiB to s0 visit s0, s1, s3 on
//       node1 and s2, s3 on node2 with the body intact at every hop; s3 answers from both
//       nodes; one of two s2 pods killed: the other serves; both killed: s0 answers 502
//       naming s2, s2 itself 503 no_live_pod, s1 still 200; then the script tears it all
//       down (no namespace or link left).
//
// Needs root; skips with the reason otherwise.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <thread>

#include "gateway_env.h"
#include "dpumesh/common/fnv.h"

using namespace dpumesh::test;
using namespace std::chrono_literals;

namespace {

uint32_t fnv(const std::string &b) { return dpumesh::fnv1a(b.data(), b.size()); }

std::string hex8(uint32_t v)
{
	char s[16];
	std::snprintf(s, sizeof(s), "%08x", v);
	return s;
}

int pid_of(const std::string &dir, const std::string &name)
{
	std::ifstream f(dir + "/pids/" + name + ".pid");
	int p = 0;
	f >> p;
	return p;
}

/* The whole walk; s2_cmd: what runs s2's pods ("" : dpumesh-service). */
void walk_graph(const std::string &s2_cmd)
{
	const std::string tag = "dpg" + std::to_string(getpid() % 10000);
	temp_dir run;
	temp_dir d;
	/* the script runs this build's programs */
	setenv("DPUMESH_BUILD_DIR", DPUMESH_BINARY_DIR, 1);
	setenv("DPUMESH_E2E_S2_CMD", s2_cmd.c_str(), 1);
	subprocess topo({std::string(DPUMESH_SOURCE_DIR) + "/scripts/e2e-topology.sh", "--tag", tag,
			 "--dir", run.path()});
	ASSERT_TRUE(topo.wait_output([](const std::string &o) {
		return o.find("TOPOLOGY READY") != std::string::npos ||
		       o.find("e2e-topology.sh:") != std::string::npos;
	}, 120s)) << topo.output();
	ASSERT_NE(topo.output().find("TOPOLOGY READY"), std::string::npos) << topo.output();
	if (!s2_cmd.empty()) { /* the s2 pods are the Python ones */
		for (const char *pod : {"s2-a", "s2-b"}) {
			std::ifstream lf(run.file(std::string(pod) + ".log"));
			std::string l((std::istreambuf_iterator<char>(lf)), {});
			EXPECT_NE(l.find("READY service=s2"), std::string::npos) << l;
			EXPECT_NE(l.find("python=1"), std::string::npos) << l;
		}
	}
	const std::string ns = tag + "-ing", base = "http://127.0.0.1:8080";

	const std::string walk = "s0(s1(s3),s2(s3))",
			  nodes = "s0@node1 s1@node1 s3@node1 s2@node2 s3@node2";
	http_result g = curl(ns, base + "/s0/get", d);
	ASSERT_EQ(g.code, 200) << g.raw << g.body;
	EXPECT_EQ(header_of(g.headers, "x-visited"), walk);
	EXPECT_EQ(header_of(g.headers, "x-nodes"), nodes);
	EXPECT_EQ(g.body, "");
	uint32_t seed = 100;
	for (size_t size : {size_t(0), size_t(1), size_t(1400), size_t(100000), size_t(1048576)}) {
		SCOPED_TRACE(size);
		std::string body = make_body(size, seed++);
		std::string f = d.file("b" + std::to_string(seed));
		std::ofstream(f, std::ios::binary) << body;
		http_result r = curl(ns, base + "/s0/post", d, f);
		ASSERT_EQ(r.code, 200) << r.raw << r.body.substr(0, 300);
		EXPECT_TRUE(r.body == body) << "body of " << r.body.size() << " B differs";
		EXPECT_EQ(header_of(r.headers, "x-visited"), walk);
		EXPECT_EQ(header_of(r.headers, "x-nodes"), nodes);
		EXPECT_EQ(header_of(r.headers, "x-digest"), hex8(fnv(body)));
	}
	/* s3 is served on both nodes; the ingress spreads it over them */
	std::set<std::string> s3_nodes;
	for (int i = 0; i < 4; i++)
		s3_nodes.insert(header_of(curl(ns, base + "/s3/x", d).headers, "x-nodes"));
	EXPECT_EQ(s3_nodes, (std::set<std::string>{"s3@node1", "s3@node2"}));

	/* one of the two s2 pods dies: answers stay 200 (or a few 5xx while node2 notices) */
	ASSERT_EQ(kill(pid_of(run.path(), "s2-a"), SIGKILL), 0);
	int ok = 0;
	for (int i = 0; i < 20; i++) {
		http_result r = curl(ns, base + "/s0/k", d);
		ASSERT_TRUE(r.code == 200 || r.code == 502 || r.code == 503 || r.code == 504)
			<< r.raw << r.body;
		ok += r.code == 200;
	}
	EXPECT_GE(ok, 15);
	for (int i = 0; i < 5; i++) {
		http_result r = curl(ns, base + "/s0/k", d, "", {"-d", "after"});
		EXPECT_EQ(r.code, 200) << r.body;
		EXPECT_EQ(r.body, "after");
		EXPECT_EQ(header_of(r.headers, "x-visited"), walk);
	}
	/* both gone: s0 reports the failed hop, s2 is refused by node2, s1 still serves */
	ASSERT_EQ(kill(pid_of(run.path(), "s2-b"), SIGKILL), 0);
	http_result r;
	for (int i = 0; i < 20; i++) {
		r = curl(ns, base + "/s2/direct", d);
		if (r.code == 503)
			break;
		std::this_thread::sleep_for(100ms);
	}
	EXPECT_EQ(r.code, 503) << r.body;
	EXPECT_NE(r.body.find("\"error\":\"no_live_pod\""), std::string::npos) << r.body;
	EXPECT_NE(r.body.find("\"hop\":\"node2/"), std::string::npos) << r.body;
	http_result s0 = curl(ns, base + "/s0/x", d);
	EXPECT_EQ(s0.code, 502) << s0.body;
	EXPECT_EQ(s0.body, "{\"error\":\"downstream\",\"service\":\"s2\",\"status\":503}\n");
	EXPECT_EQ(header_of(s0.headers, "x-visited"), "s0(s1(s3),s2!503)");
	http_result s1 = curl(ns, base + "/s1/x", d, "", {"-d", "still"});
	EXPECT_EQ(s1.code, 200);
	EXPECT_EQ(s1.body, "still");
	EXPECT_EQ(header_of(s1.headers, "x-visited"), "s1(s3)");

	/* Ctrl-C: everything stopped and deleted */
	topo.signal(SIGINT);
	EXPECT_NE(topo.wait(60s), -1) << topo.output();
	auto [rc, list] = run_command({which("ip"), "netns", "list"});
	EXPECT_EQ(list.find(tag + "-"), std::string::npos) << list;
	auto [rc2, links] = run_command({which("ip"), "-o", "link"});
	EXPECT_EQ(links.find(tag + "-"), std::string::npos) << links;
	std::ifstream ing(run.file("ingress.log"));
	std::string log((std::istreambuf_iterator<char>(ing)), {});
	EXPECT_NE(log.find("final requests="), std::string::npos) << log;
}

TEST(GraphE2E, WalksGraphAndSurvivesKilledPods)
{
	std::string why = netns_unavailable();
	if (!why.empty())
		GTEST_SKIP() << why;
	walk_graph("");
}

/* The same walk with both s2 pods in Python (python/examples/service.py on the dpumesh
 * package, installed offline into a venv): a mix of C++ and Python pods. */
TEST(GraphE2E, WalksGraphWithS2AsAPythonPod)
{
	std::string why = netns_unavailable();
	if (!why.empty())
		GTEST_SKIP() << why;
#ifdef DPUMESH_SANITIZED
	GTEST_SKIP() << "sanitizer build: an uninstrumented python cannot load an ASan libdpumesh";
#endif
	temp_dir py;
	auto [rc, out] = run_command({std::string(DPUMESH_SOURCE_DIR) + "/python/install-venv.sh",
				      DPUMESH_BINARY_DIR, py.path()},
				     300s);
	ASSERT_EQ(rc, 0) << out;
	walk_graph(py.file("venv/bin/python") + " " + DPUMESH_SOURCE_DIR +
		   "/python/examples/service.py");
}

/* dpumesh-service refuses what it cannot use before it touches a socket: a number that is
 * not one (it read "abc" as 0), 0 where 0 is meaningless, an option without its value (it
 * was skipped without a word). Exit 2, the option named. No root needed. */
TEST(ServiceCli, RefusesBadOptions)
{
	const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
		{{"--body-slot", "abc"}, "--body-slot \"abc\" is not a whole number"},
		{{"--body-slot", "-5"}, "--body-slot \"-5\" is not a whole number"},
		{{"--deadline-ms", "0"}, "--deadline-ms \"0\" is not a whole number"},
		{{"--deadline-ms", "10x"}, "--deadline-ms \"10x\" is not a whole number"},
		{{"--service", "s0", "--socket"}, "--socket wants a value"},
	};
	for (const auto &[opts, want] : cases) {
		std::vector<std::string> a = {bin_path("dpumesh-service")};
		a.insert(a.end(), opts.begin(), opts.end());
		expect_refusal(a, 2, want);
	}
}

/* A graph with a cycle is refused (each hop's calls are fresh calls with their own
 * deadline: a request would call round the cycle until the pools filled), by every service
 * given the file, naming the call that closes it; and a node that is not there is an error
 * (exit 1), not a crash of the coroutine API's half-made pod. No root needed. */
TEST(ServiceCli, RefusesAGraphWithACycleAndSaysWhenNoNodeListens)
{
	temp_dir d;
	const std::string loop3 = d.file("loop3.json"), self = d.file("self.json");
	std::ofstream(loop3) << R"({ "services": { "s0": { "calls": [ ["s1", "s2"] ] },
  "s1": { "calls": [ ["s3"] ] }, "s2": { "calls": [ ["s3"] ] },
  "s3": { "calls": [ ["s4"], ["s1"] ] }, "s4": {} } })";
	std::ofstream(self) << R"({ "services": { "s0": { "calls": [ ["s0"] ] } } })";
	const std::string nobody = d.file("nobody.sock");
	for (const char *svc : {"s0", "s4"})
		expect_refusal({bin_path("dpumesh-service"), "--socket", nobody, "--graph", loop3,
				"--service", svc},
			       1,
			       "/services/s3/calls/1/0: \"s1\" is called back within its own calls "
			       "(s1 -> s3 -> s1): the graph must have no cycle");
	expect_refusal({bin_path("dpumesh-service"), "--socket", nobody, "--graph", self,
			"--service", "s0"},
		       1, "/services/s0/calls/0/0: \"s0\" is called back within its own calls (s0 -> s0)");
	expect_refusal({bin_path("dpumesh-service"), "--socket", nobody, "--graph",
			std::string(DPUMESH_SOURCE_DIR) + "/conf/e2e/graph.json", "--service", "s0"},
		       1, "dpumesh-service: open " + nobody + " as s0: connect");
}

} // namespace
