// SPDX-License-Identifier: BSD-3-Clause
// Operating dpumesh from outside: telemetry read the way dpdk-telemetry.py reads it, the
// Prometheus exporter, and packet capture with dpdk-dumpcap (a DPDK secondary process).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <glob.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <sstream>
#include <set>

#include "console.h"
#include "eal_env.h"
#include "subprocess.h"
#include "telemetry_client.h"

using namespace dpumesh::test;
using namespace std::chrono_literals;

namespace {

std::string src(const char *rel) { return std::string(DPUMESH_SOURCE_DIR) + "/" + rel; }

std::string prefix(const std::string &tag)
{
	return "dpumesh-tel-" + tag + "-" + std::to_string(getpid());
}

/** A plain HTTP/1.0 GET on 127.0.0.1. */
std::string http_get(unsigned port, const std::string &path)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_port = htons(static_cast<uint16_t>(port));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	std::string out;
	if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0) {
		std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
		if (send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size())) {
			char buf[4096];
			ssize_t n;
			while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
				out.append(buf, static_cast<size_t>(n));
		}
	}
	close(fd);
	return out;
}

/** The port the exporter serves on, from its first line (0 if it did not say in 20 s). */
unsigned exporter_port(subprocess &exp)
{
	unsigned port = 0;
	exp.wait_output(
		[&port](const std::string &o) {
			size_t at = o.find("serving http://127.0.0.1:");
			if (at == std::string::npos || o.find("/metrics", at) == std::string::npos)
				return false;
			port = static_cast<unsigned>(std::strtoul(o.c_str() + at + 25, nullptr, 10));
			return true;
		},
		20s);
	return port;
}

/** conf/pcap.json with text put first in each array named: {"services", "{...}, "}. */
std::string pcap_config_with(const temp_dir &dir,
			     const std::vector<std::pair<std::string, std::string>> &firsts)
{
	std::stringstream in;
	in << std::ifstream(private_config(dir, "conf/pcap.json")).rdbuf();
	std::string cfg = in.str();
	for (const auto &[array, text] : firsts) /* after `"name": [` and its line's end */
		cfg.replace(cfg.find("\"" + array + "\": [") + array.size() + 6, 0, text);
	return cfg;
}

/** dpumesh on config file cfg, replaying a capture of 10 frames, up (nullptr if not: a
 *  failure is added). */
std::unique_ptr<subprocess> start_node(const temp_dir &dir, const std::string &pfx,
				       const std::string &cfg)
{
	capture_counts cap{};
	make_capture(dir.file("few.pcap"), 10, "0.1", &cap);
	auto p = std::make_unique<subprocess>(std::vector<std::string>{
		bin_path("dpumesh"), node_lcores_arg(), "--no-huge", "-m", "256", "--no-pci",
		"--file-prefix=" + pfx, "--log-level=lib.eal:warning",
		"--vdev=net_pcap0,rx_pcap=" + dir.file("few.pcap"), "--", node_workers_arg(), "--config",
		cfg, "--stats-period", "0"});
	if (!p->wait_output([](const std::string &o) { return o.find(" up: ") != std::string::npos; },
			    40s)) {
		ADD_FAILURE() << p->output();
		return nullptr;
	}
	return p;
}

} // namespace

TEST(Telemetry, CountersMatchTheCaptureAndTheExporterServesThem)
{
	temp_dir dir;
	capture_counts cap{};
	ASSERT_NO_FATAL_FAILURE(make_capture(dir.file("once.pcap"), 1000, "0.1", &cap));
	const std::string pfx = prefix("counters");
	subprocess p({bin_path("dpumesh"), node_lcores_arg(), "--no-huge", "-m", "256", "--no-pci",
		      "--file-prefix=" + pfx, "--log-level=lib.eal:warning",
		      "--vdev=net_pcap0,rx_pcap=" + dir.file("once.pcap"), "--", node_workers_arg(),
		      "--config",
		      private_config(dir, "conf/pcap.json"), "--stats-period", "0"});
	ASSERT_TRUE(p.wait_output(
		[](const std::string &o) { return o.find(" up: ") != std::string::npos; }, 40s))
		<< p.output();

	const std::string sock = runtime_dir(pfx) + "/dpdk_telemetry.v2";
	telemetry_client t;
	std::string hello;
	ASSERT_TRUE(t.connect(sock, &hello)) << sock << ": " << std::strerror(errno);
	EXPECT_NE(hello.find("\"version\":\"DPDK 22.11"), std::string::npos) << hello;
	EXPECT_NE(hello.find("\"max_output_len\""), std::string::npos) << hello;

	json_ptr ports{nullptr, &json_decref};
	for (int i = 0; i < 300; i++) {
		ports = t.query("/dpumesh/ports");
		ASSERT_TRUE(ports) << "no /dpumesh/ports";
		if (u64_at(ports.get(), "rx_packets", 0) == 1000)
			break;
		std::this_thread::sleep_for(100ms);
	}
	EXPECT_EQ(u64_at(ports.get(), "rx_packets", 0), 1000u);
	EXPECT_EQ(u64_at(ports.get(), "port_id", 0), 0u);
	EXPECT_EQ(str_at(ports.get(), "name", 0), "uplink");
	EXPECT_EQ(str_at(ports.get(), "driver", 0), "net_pcap");
	EXPECT_EQ(u64_at(ports.get(), "tx_packets", 0), 0u);

	json_ptr drops = t.query("/dpumesh/drops");
	ASSERT_TRUE(drops);
	EXPECT_EQ(u64_at(drops.get(), "frames", 0), 1000u);
	EXPECT_EQ(u64_at(drops.get(), "accepted", 0), cap.mesh);
	EXPECT_EQ(u64_at(drops.get(), "other_port", 0) + u64_at(drops.get(), "not_ip", 0) +
			  u64_at(drops.get(), "not_udp", 0),
		  cap.other);
	EXPECT_EQ(u64_at(drops.get(), "messages", 0) + u64_at(drops.get(), "no_consumer", 0), cap.mesh);
	EXPECT_EQ(u64_at(drops.get(), "bad_magic", 0), 0u);

	json_ptr stages = t.query("/dpumesh/stages");
	ASSERT_TRUE(stages);
	EXPECT_EQ(str_at(stages.get(), "name", 0), "port_rx");
	EXPECT_EQ(u64_at(stages.get(), "lcore", 0), 1u);
	EXPECT_EQ(u64_at(stages.get(), "work", 0), 1000u);
	EXPECT_GT(u64_at(stages.get(), "busy_cycles", 0), 0u);
	/* the sampled thread CPU columns (few busy polls here: maybe no sample yet) */
	EXPECT_LE(u64_at(stages.get(), "cpu_work", 0), 1000u);
	EXPECT_LE(u64_at(stages.get(), "cpu_polls", 0), u64_at(stages.get(), "calls", 0));
	EXPECT_NE(u64_at(stages.get(), "cpu_ns", 0), UINT64_MAX);
	EXPECT_NE(u64_at(stages.get(), "cpu_cycles_per_unit", 0), UINT64_MAX);

	/* the worker thread's CPU from /proc */
	json_ptr lcc = t.query("/dpumesh/lcore_cpu");
	ASSERT_TRUE(lcc);
	EXPECT_EQ(u64_at(lcc.get(), "lcore", 0), 1u);
	EXPECT_GT(u64_at(lcc.get(), "tid", 0), 0u);
	EXPECT_EQ(u64_at(lcc.get(), "running", 0), 1u);
	EXPECT_GT(u64_at(lcc.get(), "wall_ns", 0), 0u);
	EXPECT_LE(u64_at(lcc.get(), "oncpu_ns", 0),
		  u64_at(lcc.get(), "wall_ns", 0) + u64_at(lcc.get(), "wall_ns", 0) / 10);

	json_ptr lcores = t.query("/dpumesh/lcores");
	ASSERT_TRUE(lcores);
	EXPECT_EQ(str_at(lcores.get(), "role", 0), "control");
	EXPECT_EQ(str_at(lcores.get(), "state", 1), "running");

	json_ptr services = t.query("/dpumesh/services");
	ASSERT_TRUE(services);
	EXPECT_EQ(str_at(services.get(), "name", 0), "frontend");
	EXPECT_EQ(u64_at(services.get(), "max_pods", 1), 8u);
	EXPECT_EQ(str_at(services.get(), "route", 1), "local");
	json_ptr routes = t.query("/dpumesh/routes");
	ASSERT_TRUE(routes);
	EXPECT_EQ(str_at(routes.get(), "echo", 0), "local");
	json_ptr cfg = t.query("/dpumesh/config");
	ASSERT_TRUE(cfg);
	EXPECT_EQ(str_at(cfg.get(), "node", 0), "node1");
	EXPECT_EQ(u64_at(cfg.get(), "forwarding", 0), 1u);
	EXPECT_EQ(u64_at(cfg.get(), "mesh_port", 0), 7000u);
	json_ptr peers = t.query("/dpumesh/peers");
	ASSERT_TRUE(peers);
	EXPECT_EQ(json_array_size(json_object_get(peers.get(), "name")), 0u);

	/* the Prometheus exporter, once */
	subprocess exp({"/usr/bin/python3", src("scripts/dpumesh-exporter.py"), "--file-prefix", pfx,
			"--port", "0"});
	const unsigned port = exporter_port(exp);
	ASSERT_GT(port, 0u) << exp.output();
	std::string metrics = http_get(port, "/metrics");
	EXPECT_NE(metrics.find("HTTP/1.0 200"), std::string::npos) << metrics;
	EXPECT_NE(metrics.find("# TYPE dpumesh_port_rx_packets_total counter"), std::string::npos)
		<< metrics;
	EXPECT_NE(metrics.find("\ndpumesh_port_rx_packets_total{port=\"0\",name=\"uplink\"} 1000\n"),
		  std::string::npos)
		<< metrics;
	EXPECT_NE(metrics.find("\ndpumesh_port_rx_drops_total{reason=\"other_port\"} " +
			       std::to_string(u64_at(drops.get(), "other_port", 0)) + "\n"),
		  std::string::npos)
		<< metrics;
	EXPECT_NE(metrics.find("\ndpumesh_stage_work_total{stage=\"port_rx\",lcore=\"1\"} 1000\n"),
		  std::string::npos)
		<< metrics;
	/* the policy families: version, verdicts, breakers, per-service requests and latency */
	for (const char *want :
	     {"\ndpumesh_policy_version 1\n", "# TYPE dpumesh_policy_verdicts_total counter",
	      "# TYPE dpumesh_service_requests_total counter",
	      "# TYPE dpumesh_service_latency_seconds histogram"})
		EXPECT_NE(metrics.find(want), std::string::npos) << want << "\n" << metrics;
	EXPECT_NE(http_get(port, "/other").find("404"), std::string::npos);

	p.signal(SIGTERM); /* non-interactive runs stop on SIGTERM as on SIGINT */
	EXPECT_EQ(p.wait(30s), 0) << p.output();
	EXPECT_NE(p.output().find("dpumesh: stopped"), std::string::npos) << p.output();
	/* and its EAL runtime directory with it (config, memseg lists, the telemetry socket:
	 * dpumesh::eal_cleanup()), though the exporter was connected to it */
	EXPECT_NE(access(runtime_dir(pfx).c_str(), F_OK), 0) << runtime_dir(pfx);
	/* dpumesh gone: the exporter answers 503 with dpumesh_up 0, it does not crash */
	std::string down = http_get(port, "/metrics");
	EXPECT_NE(down.find("503"), std::string::npos) << down;
	EXPECT_NE(down.find("dpumesh_up 0"), std::string::npos) << down;
}

namespace {

/** Free 2 MiB hugepages and a mounted hugetlbfs, as EAL needs them without --no-huge. */
bool hugepages_usable(std::string *why)
{
	std::ifstream mi("/proc/meminfo");
	std::string line;
	long free_pages = 0;
	while (std::getline(mi, line))
		if (line.rfind("HugePages_Free:", 0) == 0)
			free_pages = std::strtol(line.c_str() + 15, nullptr, 10);
	std::ifstream mounts("/proc/mounts");
	bool mounted = false;
	while (std::getline(mounts, line))
		if (line.find(" hugetlbfs ") != std::string::npos)
			mounted = true;
	if (free_pages >= 128 && mounted)
		return true;
	*why = "HugePages_Free=" + std::to_string(free_pages) + " (need 128 x 2 MiB), hugetlbfs " +
	       (mounted ? "mounted" : "not mounted");
	return false;
}

/* The last number of dumpcap's progress line ("Packets captured: 0 32 64", the numbers
 * separated by backspaces); -1 before the line. */
long captured_so_far(const std::string &out)
{
	size_t at = out.find("Packets captured: ");
	if (at == std::string::npos)
		return -1;
	long last = -1;
	for (const char *q = out.c_str() + at + 18; *q && *q != '\n';) {
		char *end = nullptr;
		long v = std::strtol(q, &end, 10);
		if (end == q) {
			q++;
			continue;
		}
		last = v;
		q = end;
	}
	return last;
}

/* The hugepage files of the primary with prefix @p pfx ("<pfx>map_<n>" in the hugetlbfs
 * mounts), counted, or removed (@p remove). EAL keeps them after the primary exits (for a
 * restart with the same prefix); dpumesh removes its own (eal_cleanup()), checked below,
 * and the test removes what a failed run left so that the pages are free for the next (a
 * left-over 128 made the next run skip). */
unsigned hugepage_files(const std::string &pfx, bool remove)
{
	std::ifstream mounts("/proc/mounts");
	std::string dev, dir, type, rest;
	unsigned n = 0;
	while (mounts >> dev >> dir >> type && std::getline(mounts, rest)) {
		if (type != "hugetlbfs")
			continue;
		/* every list's files: EAL numbers them list * segments-per-list + segment */
		glob_t g{};
		if (glob((dir + "/" + pfx + "map_*").c_str(), 0, nullptr, &g) == 0)
			for (size_t i = 0; i < g.gl_pathc; i++) {
				n++;
				if (remove)
					(void)unlink(g.gl_pathv[i]);
			}
		globfree(&g);
	}
	return n;
}

} // namespace

/*
 * dpdk-dumpcap against a running node: the packets it writes are what it says it captured.
 * The capture is ended with forwarding paused (the console's `stop`): DPDK 22.11's pdump
 * removes its RX callback without waiting for a poll that is inside it, and dumpcap frees
 * the mempool the callback copies into right after, so a capture that ends while frames
 * arrive can make the primary allocate from freed memory (this test's earlier form, -c 50
 * with the frames flowing, crashed the ASan build's dpumesh in 2 runs of 4: the freed pool
 * zeroed, its ops index 0, octeontx's dequeue called; docs/console.md).
 */
/* DPDK 22.11 writes at most 16 KiB a reply and used to leave out, without a word, what
 * did not fit: /dpumesh/metrics at 64 services ended after ~70 of its entries. Now every
 * listing comes in pages within it: each page says where the next starts ("next"), the
 * pages hold every entry once and in order, a table's columns stay of one length, and a
 * parameter that is not a whole number gets DPDK's null. */
TEST(Telemetry, LongListingsComeInPagesThatFitDpdksReply)
{
	temp_dir dir;
	const std::string pfx = prefix("pages");
	constexpr int extra = 300;
	std::string svcs, routes;
	for (int i = 0; i < extra; i++) {
		char name[16];
		std::snprintf(name, sizeof(name), "svc%03d", i);
		svcs += std::string("{\"name\": \"") + name + "\", \"max_pods\": 2}, ";
		routes += std::string("{\"service\": \"") + name + "\", \"to\": \"local\"}, ";
	}
	std::ofstream(dir.file("many.json"))
		<< pcap_config_with(dir, {{"services", svcs}, {"routes", routes}});
	auto node = start_node(dir, pfx, dir.file("many.json"));
	ASSERT_TRUE(node);
	subprocess &p = *node;
	telemetry_client t;
	std::string hello;
	ASSERT_TRUE(t.connect(runtime_dir(pfx) + "/dpdk_telemetry.v2", &hello));
	const size_t nb_services = extra + 3;

	/* the pages of one command: their keys in order (listed entries), or their rows of
	 * column `col` (tables), every page checked */
	const auto pages = [&](const std::string &cmd, const char *col, size_t *nb_pages) {
		std::vector<std::string> got;
		uint64_t next = 0;
		*nb_pages = 0;
		for (int guard = 0; guard < 1000; guard++) {
			const std::string q = next ? cmd + "," + std::to_string(next) : cmd;
			const std::string text = t.raw(q);
			EXPECT_LE(text.size(), 16384u) << q;
			json_error_t err;
			json_ptr root(json_loads(text.c_str(), 0, &err), &json_decref);
			EXPECT_TRUE(root) << q << ": " << err.text << ": " << text.substr(0, 300);
			if (!root)
				break;
			json_t *v = json_object_get(root.get(), cmd.c_str());
			EXPECT_TRUE(json_is_object(v)) << text.substr(0, 300);
			if (!json_is_object(v))
				break;
			++*nb_pages;
			const char *k;
			json_t *x;
			size_t rows = SIZE_MAX;
			json_object_foreach(v, k, x) {
				if (col && json_is_array(x)) {
					if (rows == SIZE_MAX)
						rows = json_array_size(x);
					EXPECT_EQ(json_array_size(x), rows) << q << " column " << k;
				}
				if (!col && std::string(k) != "next")
					got.emplace_back(k);
			}
			if (col) {
				json_t *names = json_object_get(v, col);
				for (size_t i = 0; i < json_array_size(names); i++)
					got.emplace_back(json_string_value(json_array_get(names, i)));
			}
			json_t *n = json_object_get(v, "next");
			if (!n)
				break;
			EXPECT_GT(static_cast<uint64_t>(json_integer_value(n)), next) << q;
			next = static_cast<uint64_t>(json_integer_value(n));
		}
		return got;
	};
	size_t np = 0;
	/* every service, then every route (a default one of each service, and the policy's) */
	std::vector<std::string> m = pages("/dpumesh/metrics", nullptr, &np);
	EXPECT_GT(np, 2u) << "303 services and their routes in one 16 KiB reply?";
	ASSERT_GE(m.size(), 2 * nb_services); /* pcap.json's policy adds routes of its own */
	std::vector<std::string> want; /* the config's order: ours first, then pcap.json's */
	for (int i = 0; i < extra; i++) {
		char name[16];
		std::snprintf(name, sizeof(name), "svc%03d", i);
		want.emplace_back(name);
	}
	want.insert(want.end(), {"frontend", "echo", "client"});
	EXPECT_EQ(std::vector<std::string>(m.begin(), m.begin() + nb_services), want);
	for (size_t i = nb_services; i < m.size(); i++)
		EXPECT_EQ(m[i].rfind("route/", 0), 0u) << m[i];
	EXPECT_NE(std::find(m.begin(), m.end(), "route/svc299/default"), m.end());
	EXPECT_EQ(std::set<std::string>(m.begin(), m.end()).size(), m.size());
	std::vector<std::string> lat = pages("/dpumesh/latency", nullptr, &np);
	ASSERT_EQ(lat.size(), nb_services);
	EXPECT_EQ(std::vector<std::string>(m.begin(), m.begin() + nb_services), lat);
	std::vector<std::string> rt = pages("/dpumesh/routes", nullptr, &np);
	EXPECT_EQ(rt.size(), nb_services);
	EXPECT_GT(np, 1u) << "303 routes: more than a dict's 256 entries";
	std::vector<std::string> names = pages("/dpumesh/services", "name", &np);
	ASSERT_EQ(names.size(), nb_services);
	EXPECT_EQ(std::vector<std::string>(m.begin(), m.begin() + nb_services), names);
	/* past the end: an empty table, no next; a parameter that is no number: null */
	std::string past = t.raw("/dpumesh/services,100000");
	EXPECT_NE(past.find("\"name\":[]"), std::string::npos) << past;
	EXPECT_EQ(past.find("next"), std::string::npos) << past;
	EXPECT_EQ(t.raw("/dpumesh/metrics,abc"), "{\"/dpumesh/metrics\":null}");
	p.signal(SIGINT);
	EXPECT_EQ(p.wait(30s), 0) << p.output();
}

/*
 * rte_telemetry takes keys of letters, digits, '_' and '/', and only their first 127 bytes:
 * services a-b, a_b and a.b were all the key a_b, a service named "next" was the pages' own
 * key, and route prefixes that differ past byte 127 one key. A reply held the key twice
 * (JSON readers keep one of the two, the exporter labelled service a-b "a_b"), and the
 * exporter took the "next" service's dict for a page number. Now each entry has a key of
 * its own and carries its names, and the exporter labels with the names.
 */
TEST(Telemetry, NamesThatMapToOneKeyKeepAnEntryEachAndTheirNames)
{
	temp_dir dir;
	const std::string pfx = prefix("keys");
	const std::vector<std::string> names = {"a-b", "a_b", "a.b", "next", "a_b_2"};
	const std::string longp = "/" + std::string(200, 'p');
	std::string svcs, routes, timeouts, breakers_cfg;
	for (const std::string &n : names) {
		svcs += "{\"name\": \"" + n + "\", \"max_pods\": 2}, ";
		routes += "{\"service\": \"" + n + "\", \"to\": \"local\"}, ";
		breakers_cfg += "{\"service\": \"" + n + "\", \"consecutive_failures\": 5}, ";
	}
	for (const std::string &pp : {std::string("/v1-x"), std::string("/v1.x"), longp + "1", longp + "2"})
		timeouts += "{\"service\": \"a-b\", \"path_prefix\": \"" + pp +
			    "\", \"timeout_ms\": 100}, ";
	std::ofstream(dir.file("keys.json")) << pcap_config_with(
		dir, {{"services", svcs}, {"routes", routes}, {"timeouts", timeouts},
		      {"circuit_breakers", breakers_cfg}});
	auto node = start_node(dir, pfx, dir.file("keys.json"));
	ASSERT_TRUE(node);
	subprocess &p = *node;
	telemetry_client t;
	std::string hello;
	ASSERT_TRUE(t.connect(runtime_dir(pfx) + "/dpdk_telemetry.v2", &hello));

	/* a reply as dpdk-telemetry.py reads it, a key twice refused; its value's entries */
	const auto read = [&](const std::string &cmd) {
		const std::string text = t.raw(cmd);
		json_error_t err;
		json_ptr root(json_loads(text.c_str(), JSON_REJECT_DUPLICATES, &err), &json_decref);
		EXPECT_TRUE(root) << cmd << ": " << err.text << ": " << text;
		json_t *v = root ? json_object_get(root.get(), cmd.c_str()) : nullptr;
		EXPECT_TRUE(json_is_object(v)) << text;
		EXPECT_FALSE(json_object_get(v, "next")) << cmd << ": one page: " << text;
		return std::make_pair(std::move(root), v);
	};
	const auto str = [](json_t *o, const char *k) {
		const char *s = json_string_value(json_object_get(o, k));
		return std::string(s ? s : "(none)");
	};

	/* metrics: every service once, under its own key, its name inside */
	auto [mroot, m] = read("/dpumesh/metrics");
	ASSERT_TRUE(m);
	std::map<std::string, std::string> key_of; /* service -> key */
	std::multiset<std::string> route_names;
	const char *k;
	json_t *x;
	json_object_foreach(m, k, x) {
		EXPECT_LE(std::strlen(k), 127u) << k;
		if (json_object_get(x, "route")) {
			EXPECT_EQ(std::string_view(k).substr(0, 6), "route/") << k;
			if (str(x, "service") == "a-b")
				route_names.insert(str(x, "route"));
		} else {
			EXPECT_TRUE(key_of.emplace(str(x, "service"), k).second) << str(x, "service");
		}
	}
	for (const std::string &n : names)
		EXPECT_EQ(key_of.count(n), 1u) << n;
	EXPECT_EQ(key_of["a-b"], "a_b");
	EXPECT_EQ(key_of["frontend"], "frontend");
	EXPECT_NE(key_of["next"], "next");
	/* a-b's routes: its default, the two that share a key, the two long ones (127 bytes
	 * of their prefix each: DPDK keeps no more of a string) */
	EXPECT_EQ(route_names.count("default"), 1u);
	EXPECT_EQ(route_names.count("/v1-x"), 1u);
	EXPECT_EQ(route_names.count("/v1.x"), 1u);
	EXPECT_EQ(route_names.count(longp.substr(0, 127)), 2u);
	EXPECT_EQ(route_names.size(), 5u);

	/* latency: the same key for a service as in metrics */
	auto [lroot, lat] = read("/dpumesh/latency");
	ASSERT_TRUE(lat);
	EXPECT_EQ(json_object_size(lat), key_of.size());
	for (const auto &[svc, key] : key_of)
		EXPECT_TRUE(json_is_array(json_object_get(lat, key.c_str()))) << svc << " " << key;
	/* breakers and routes: an entry each */
	auto [proot, pol] = read("/dpumesh/policy");
	ASSERT_TRUE(pol);
	std::set<std::string> breakers;
	json_object_foreach(pol, k, x) {
		if (std::string_view(k).starts_with("breaker/")) {
			EXPECT_EQ(str(x, "state"), "closed") << k;
			breakers.insert(str(x, "service"));
		}
	}
	for (const std::string &n : names)
		EXPECT_EQ(breakers.count(n), 1u) << n;
	auto [rroot, rts] = read("/dpumesh/routes");
	ASSERT_TRUE(rts);
	EXPECT_EQ(json_object_size(rts), names.size() + 3);

	/* the exporter: labels of the names, not of the keys; a service "next" is a service */
	subprocess exp({"/usr/bin/python3", src("scripts/dpumesh-exporter.py"), "--file-prefix", pfx,
			"--port", "0"});
	const unsigned port = exporter_port(exp);
	ASSERT_GT(port, 0u) << exp.output();
	const std::string text = http_get(port, "/metrics");
	EXPECT_NE(text.find("HTTP/1.0 200"), std::string::npos) << text;
	for (const std::string &n : names) {
		for (const std::string &want :
		     {"\ndpumesh_service_requests_total{service=\"" + n + "\"} 0\n",
		      "\ndpumesh_service_latency_seconds_count{service=\"" + n + "\"} 0\n",
		      "\ndpumesh_breaker_state{service=\"" + n + "\",state=\"closed\"} 1\n"})
			EXPECT_NE(text.find(want), std::string::npos) << want << text;
	}
	EXPECT_NE(text.find("\ndpumesh_route_requests_total{service=\"a-b\",route=\"/v1-x\"} 0\n"),
		  std::string::npos)
		<< text;
	EXPECT_NE(text.find("\ndpumesh_route_requests_total{service=\"a-b\",route=\"/v1.x\"} 0\n"),
		  std::string::npos)
		<< text;
	/* one sample per series: no name and labels twice */
	std::set<std::string> series;
	std::istringstream lines(text.substr(text.find("\r\n\r\n") + 4));
	for (std::string line; std::getline(lines, line);) {
		if (!line.empty() && line[0] != '#') {
			EXPECT_TRUE(series.insert(line.substr(0, line.rfind(' '))).second) << line;
		}
	}
	p.signal(SIGINT);
	EXPECT_EQ(p.wait(30s), 0) << p.output();
}

TEST(Capture, DumpcapWritesTheRequestedPackets)
{
	const std::string dumpcap = "/usr/bin/dpdk-dumpcap";
	if (access(dumpcap.c_str(), X_OK) != 0)
		GTEST_SKIP() << dumpcap << " is not installed (Debian package dpdk; scripts/setup.sh)";
	temp_dir dir;
	capture_counts cap{};
	ASSERT_NO_FATAL_FAILURE(make_capture(dir.file("loop.pcap"), 64, "0.25", &cap));
	std::string why;
	const bool huge = hugepages_usable(&why);
	const std::string pfx = prefix(huge ? "dumpcap" : "dumpcap-nohuge");
	std::vector<std::string> args = {bin_path("dpumesh"), node_lcores_arg(), "--no-pci",
					 "--file-prefix=" + pfx, "--log-level=lib.eal:warning"};
	/* the secondary maps the primary's memory at the primary's addresses: EAL's default
	 * choice (below the libraries) collided with what ASLR had put there in dumpcap in 1
	 * run of 6 ("Cannot get a virtual area at requested address"); 32 TiB up is free in
	 * both (and outside ASan's shadow) */
	if (huge)
		args.insert(args.end(), {"-m", "256", "--base-virtaddr=0x200000000000"});
	else
		args.insert(args.end(), {"--no-huge", "-m", "256"});
	args.insert(args.end(), {"--vdev=net_pcap0,rx_pcap=" + dir.file("loop.pcap") + ",infinite_rx=1",
				 "--", node_workers_arg(), "--config", private_config(dir, "conf/pcap.json"),
				 "--stats-period", "0", "-i"});
	subprocess p(args, subprocess::io::pty);
	ASSERT_TRUE(p.wait_output(
		[](const std::string &o) { return o.find("dpumesh> ") != std::string::npos; }, 40s))
		<< p.output();

	const std::string out = dir.file("cap.pcapng");
	if (!huge) {
		/* dumpcap is a secondary process: it needs the primary's hugepage info and memory
		 * shared through hugetlbfs files, which --no-huge does not create. It must fail
		 * cleanly, and dpumesh must keep running. */
		auto [rc, dout] = run_command(
			{dumpcap, "--file-prefix=" + pfx, "-i", "0", "-c", "50", "-w", out}, 40s);
		EXPECT_NE(rc, 0) << dout;
		EXPECT_NE(dout.find("Cannot get hugepage information"), std::string::npos) << dout;
		std::this_thread::sleep_for(200ms);
		EXPECT_EQ(waitpid(p.pid(), nullptr, WNOHANG), 0) << p.output();
		p.signal(SIGINT);
		EXPECT_EQ(p.wait(30s), 0) << p.output();
		GTEST_SKIP() << "dpdk-dumpcap cannot attach to a --no-huge primary (\"EAL: Cannot get "
				"hugepage information\": a secondary maps the primary's hugepage files, "
				"and --no-huge memory is private); this box has "
			     << why << ". Reserve hugepages (scripts/hugepages.sh 256) to run it.";
	}
	struct cleanup {
		std::string pfx;
		~cleanup() { hugepage_files(pfx, true); }
	} give_back{pfx};
	EXPECT_GT(hugepage_files(pfx, false), 0u) << "the running primary's hugepage files";
	/* on CPU 0 only: dumpcap's EAL starts a thread on every CPU it may use and waits at
	 * start for each to answer; on CPU 1, under the node's busy-polling worker lcores
	 * (two with DPUMESH_TEST_WORKERS=2), that took 20 to over 40 s (docs/console.md) */
	subprocess dc({"/usr/bin/taskset", "-c", "0", dumpcap, "--file-prefix=" + pfx, "-i", "0",
		       "-w", out});
	ASSERT_TRUE(dc.wait_output([](const std::string &o) { return captured_so_far(o) >= 50; },
				   40s))
		<< dc.output();
	/* no frame in flight through the callback when dumpcap detaches (above) */
	EXPECT_NE(console_cmd(p, "stop").find("forwarding stopped"), std::string::npos);
	std::this_thread::sleep_for(100ms);
	dc.signal(SIGINT);
	EXPECT_EQ(dc.wait(30s), 0) << dc.output();
	const std::string dout = dc.output();
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(out.c_str(), err);
	ASSERT_NE(pc, nullptr) << err;
	pcap_pkthdr *h;
	const u_char *data;
	unsigned long n = 0;
	while (pcap_next_ex(pc, &h, &data) == 1)
		n++;
	pcap_close(pc);
	/* the file holds exactly what dumpcap reports as captured, at least the 50 waited for */
	const long reported = captured_so_far(dout);
	ASSERT_GE(reported, 0) << dout;
	EXPECT_EQ(n, static_cast<unsigned long>(reported)) << dout;
	EXPECT_GE(n, 50u);
	/* the node still forwards once started again, and stops cleanly */
	EXPECT_NE(console_cmd(p, "start").find("forwarding started"), std::string::npos);
	p.signal(SIGINT);
	EXPECT_EQ(p.wait(30s), 0) << p.output();
	/* and gives its hugepages back as it exits */
	EXPECT_EQ(hugepage_files(pfx, false), 0u);
}
