// SPDX-License-Identifier: BSD-3-Clause
// The dpumesh program as a user runs it: --help, bad options and configs, and a real run
// on a replayed capture that is stopped with SIGINT.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "eal_env.h"
#include "subprocess.h"

using namespace dpumesh::test;
using namespace std::chrono_literals;

namespace {

std::string src(const char *rel) { return std::string(DPUMESH_SOURCE_DIR) + "/" + rel; }

std::vector<std::string> eal_args(const std::string &prefix)
{
	return {bin_path("dpumesh"), node_lcores_arg(), "--no-huge", "-m", "256", "--no-pci",
		"--file-prefix=dpumesh-app-" + prefix + "-" + std::to_string(getpid()),
		"--log-level=lib.eal:warning"};
}

/** The number after "key=" on the first line starting with line_prefix; UINT64_MAX if absent. */
uint64_t field(const std::string &out, const std::string &line_prefix, const std::string &key)
{
	size_t line = out.find(line_prefix);
	if (line == std::string::npos)
		return UINT64_MAX;
	size_t end = out.find('\n', line);
	std::string l = out.substr(line, end == std::string::npos ? std::string::npos : end - line);
	size_t at = l.find(" " + key + "=");
	if (at == std::string::npos)
		return UINT64_MAX;
	return std::strtoull(l.c_str() + at + key.size() + 2, nullptr, 10);
}

} // namespace

TEST(DpumeshApp, HelpListsEveryOption)
{
	auto [rc, out] = run_command({bin_path("dpumesh"), "--help"});
	EXPECT_EQ(rc, 0) << out;
	for (const char *opt : {"--config", "--interactive", "--cmdline-file", "--stats-period",
				"--dpa-backend", "--dma", "--help", "--version"})
		EXPECT_NE(out.find(opt), std::string::npos) << opt;
	auto [rc2, out2] = run_command({bin_path("dpumesh"), "--version"});
	EXPECT_EQ(rc2, 0);
	EXPECT_NE(out2.find("descriptor ABI 1"), std::string::npos) << out2;
}

TEST(DpumeshApp, BadOptionExitsNonZeroWithMessage)
{
	auto args = eal_args("badopt");
	args.insert(args.end(), {"--", node_workers_arg(), "--frobnicate"});
	auto [rc, out] = run_command(args);
	EXPECT_EQ(rc, 2) << out;
	EXPECT_NE(out.find("dpumesh: unknown option --frobnicate"), std::string::npos) << out;

	args = eal_args("badval");
	args.insert(args.end(), {"--", node_workers_arg(), "--dma", "gpu"});
	auto [rc2, out2] = run_command(args);
	EXPECT_EQ(rc2, 2) << out2;
	EXPECT_NE(out2.find("--dma: \"gpu\""), std::string::npos) << out2;
}

TEST(DpumeshApp, BadConfigExitsNonZeroWithLocation)
{
	temp_dir dir;
	std::ofstream(dir.file("bad.json")) << "{\n  \"node\": { \"name\": \"x\", \"mac\": "
					       "\"zz\", \"ipv4\": \"10.0.0.1\" }\n}\n";
	auto args = eal_args("badcfg");
	args.insert(args.end(), {"--", node_workers_arg(), "--config", dir.file("bad.json")});
	auto [rc, out] = run_command(args);
	EXPECT_EQ(rc, 1) << out;
	EXPECT_NE(out.find("dpumesh: config: " + dir.file("bad.json") +
			   ":2:33: /node/mac: \"zz\" is not a MAC address"),
		  std::string::npos)
		<< out;
}

TEST(DpumeshApp, MissingDeviceIsAClearError)
{
	auto args = eal_args("nodev");
	/* fails before binding */
	args.insert(args.end(), {"--", node_workers_arg(), "--config", src("conf/pcap.json")});
	auto [rc, out] = run_command(args);
	EXPECT_EQ(rc, 1) << out;
	EXPECT_NE(out.find("port uplink: device \"net_pcap0\" not found"), std::string::npos) << out;
}

/* "The simplest command works": the embedded default config needs no file of the user's;
 * its port is a net_memif server at /tmp/dpumesh-node1.memif (README, docs/benchmarks.md). */
TEST(DpumeshApp, EmbeddedDefaultStartsWithoutAnyFileAndStopsOnSigint)
{
	const char *memif = "/tmp/dpumesh-node1.memif";
	if (access(memif, F_OK) == 0)
		GTEST_SKIP() << memif << " exists: another node on the default config is running";
	subprocess p(eal_args("default"));
	bool up = p.wait_output(
		[](const std::string &o) { return o.find("node node1 up: 1 port(s)") != std::string::npos; },
		30s);
	EXPECT_TRUE(up) << p.output();
	EXPECT_NE(p.output().find("(net_memif0, driver net_memif, external)"), std::string::npos)
		<< p.output();
	EXPECT_EQ(access(memif, F_OK), 0) << "the memif server socket is open";
	p.signal(SIGINT);
	int rc = p.wait(20s);
	EXPECT_EQ(rc, 0) << p.output();
	EXPECT_NE(access(memif, F_OK), 0) << "the memif socket is removed at exit";
}

/* --control-priority N runs the control thread (the process's main thread) as SCHED_FIFO N,
 * and `show lcores` says so; the worker lcores keep the default policy. */
TEST(DpumeshApp, ControlPriorityRunsTheControlThreadRealTime)
{
	temp_dir dir;
	std::ofstream(dir.file("cmds")) << "show lcores\n";
	auto args = eal_args("prio");
	args.insert(args.end(), {"--", node_workers_arg(), "--config",
				 private_config(dir, "conf/default.json"), "--stats-period", "0",
				 "--control-priority", "7", "--cmdline-file", dir.file("cmds")});
	subprocess p(args);
	bool up = p.wait_output(
		[](const std::string &o) {
			return o.find("SCHED_FIFO 7") != std::string::npos ||
			       o.find("CAP_SYS_NICE") != std::string::npos;
		},
		30s);
	if (p.output().find("CAP_SYS_NICE") != std::string::npos)
		GTEST_SKIP() << "no CAP_SYS_NICE here: " << p.output();
	ASSERT_TRUE(up) << p.output();
	EXPECT_NE(p.output().find("main    control: pod registrations, console, stats (SCHED_FIFO 7"),
		  std::string::npos)
		<< p.output();
	/* /proc/PID/task/TID/stat: field 40 rt_priority, 41 policy (1: SCHED_FIFO) */
	auto policy_of = [&](pid_t tid) {
		const std::vector<std::string> fields = task_stat(p.pid(), tid);
		return fields.size() > 38 ? fields[37] + " " + fields[38] : std::string("?");
	};
	EXPECT_EQ(policy_of(p.pid()), "7 1");
	unsigned others = 0;
	for (const auto &t : std::filesystem::directory_iterator("/proc/" + std::to_string(p.pid()) +
								 "/task")) {
		pid_t tid = std::stoi(t.path().filename().string());
		if (tid == p.pid())
			continue;
		EXPECT_EQ(policy_of(tid), "0 0") << "thread " << tid << " is not the control thread";
		others++;
	}
	EXPECT_GT(others, 0u); /* at least the worker lcore */
	p.signal(SIGINT);
	EXPECT_EQ(p.wait(20s), 0) << p.output();
}

/* A memif server socket left by a killed node is removed and the port comes up; one that a
 * running node listens on is refused with a clear error. */
TEST(DpumeshApp, StaleMemifSocketIsReplacedALiveOneRefused)
{
	temp_dir dir;
	const std::string node_json = private_config(dir, "conf/default.json");
	/* a socket file nobody listens on, as a SIGKILLed node leaves it */
	sockaddr_un sa{};
	sa.sun_family = AF_UNIX;
	std::snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", dir.file("uplink.memif").c_str());
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)), 0);
	close(fd);
	ASSERT_EQ(access(sa.sun_path, F_OK), 0);

	auto args = eal_args("stale");
	args.insert(args.end(),
		    {"--", node_workers_arg(), "--config", node_json, "--stats-period", "0"});
	subprocess p(args);
	EXPECT_TRUE(p.wait_output(
		[](const std::string &o) { return o.find("Ctrl-C to stop") != std::string::npos; }, 30s))
		<< p.output();
	EXPECT_NE(p.output().find("removed stale memif socket " + dir.file("uplink.memif")),
		  std::string::npos)
		<< p.output();
	/* a second node on the same memif socket while the first listens on it */
	std::stringstream conf;
	conf << std::ifstream(node_json).rdbuf();
	std::string cfg2 = conf.str();
	cfg2.replace(cfg2.find(dir.file("ctl.sock")), dir.file("ctl.sock").size(), dir.file("ctl2.sock"));
	std::ofstream(dir.file("node2.json")) << cfg2;
	auto args2 = eal_args("stale2");
	args2.insert(args2.end(), {"--", node_workers_arg(), "--config", dir.file("node2.json")});
	auto [rc2, out2] = run_command(args2);
	EXPECT_EQ(rc2, 1) << out2;
	EXPECT_NE(out2.find("is in use by another process"), std::string::npos) << out2;
	p.signal(SIGINT);
	EXPECT_EQ(p.wait(20s), 0) << p.output();
}

TEST(DpumeshApp, DocaBackendIsRefusedClearly)
{
	auto args = eal_args("doca");
	args.insert(args.end(), {"--", node_workers_arg(), "--dpa-backend", "doca"});
	auto [rc, out] = run_command(args);
	EXPECT_EQ(rc, 1) << out;
	EXPECT_NE(out.find("no DOCA SDK"), std::string::npos) << out;
	EXPECT_NE(out.find("-DDPUMESH_DOCA=ON"), std::string::npos) << out; /* the build option */
}

TEST(DpumeshApp, ReplayedCaptureIsReassembledCountedAndSigintExitsZero)
{
	temp_dir dir;
	const std::string pcap = dir.file("sample.pcap");
	/* bodies up to 1000 B: every message fits one frame, so a corrupted frame is a whole
	 * malformed message and nothing waits for a reassembly timeout */
	auto [grc, gout] = run_command({bin_path("dpumesh-pcapgen"), "--out", pcap, "--messages",
					"2000", "--body", "0:1000", "--ipv6-share", "0.3",
					"--malformed-share", "0.05", "--other-share", "0.1", "--seed", "7"});
	ASSERT_EQ(grc, 0) << gout;
	const uint64_t frames = field(gout, "summary", "frames");
	const uint64_t valid = field(gout, "summary", "valid_messages");
	const uint64_t malformed = field(gout, "summary", "malformed");
	const uint64_t other = field(gout, "summary", "other");
	ASSERT_EQ(frames, 2000 + other);
	ASSERT_GT(malformed, 50u);
	ASSERT_GT(other, 100u);

	auto args = eal_args("replay");
	args.push_back("--vdev=net_pcap0,rx_pcap=" + pcap);
	args.insert(args.end(), {"--", node_workers_arg(), "--config",
				 private_config(dir, "conf/pcap.json"), "--stats-period", "1",
				 "--stats-format", "full"});
	subprocess p(args);
	const std::string rx_line = "RX " + std::string(12 - std::to_string(frames).size(), ' ') +
				    std::to_string(frames) + " pkts";
	bool received = p.wait_output(
		[&](const std::string &o) { return o.find(rx_line) != std::string::npos; }, 30s);
	EXPECT_TRUE(received) << rx_line << "\n" << p.output();
	p.signal(SIGINT);
	int rc = p.wait(20s);
	const std::string &out = p.output();
	EXPECT_EQ(rc, 0) << out;
	EXPECT_EQ(field(out, "final port=0", "rx_packets"), frames) << out;
	EXPECT_EQ(field(out, "final stage=port_rx", "frames"), frames) << out;
	EXPECT_EQ(field(out, "final stage=port_rx", "messages"), valid) << out;
	/* every message reaches the sidecar; with no pod registered each request is refused
	 * (503 no_live_pod), and the refusal is not sent: a replay port only receives */
	EXPECT_EQ(field(out, "final stage=port_rx", "msg_no_consumer"), 0u) << out;
	EXPECT_EQ(field(out, "final stage=sidecar", "net_requests"), valid) << out;
	EXPECT_EQ(field(out, "final stage=sidecar", "no_live_pod"), valid) << out;
	EXPECT_EQ(field(out, "final stage=sidecar", "no_egress"), valid) << out;
	uint64_t not_mesh = field(out, "final stage=port_rx", "drop_not_ip") +
			    field(out, "final stage=port_rx", "drop_not_udp") +
			    field(out, "final stage=port_rx", "drop_other_port");
	EXPECT_EQ(not_mesh, other) << out;
	uint64_t bad = 0;
	for (const char *r : {"drop_truncated", "drop_bad_magic", "drop_bad_version",
			      "drop_bad_kind", "drop_bad_reserved", "drop_bad_length"})
		bad += field(out, "final stage=port_rx", r);
	EXPECT_EQ(bad, malformed) << out;
	EXPECT_EQ(field(out, "final stage=port_rx", "drop_timeout"), 0u) << out;
	EXPECT_NE(out.find("dpumesh: stopped"), std::string::npos) << out;
}

/* The default periodic block is the compact display: ports, messages by case, answers by
 * class, and drops as a total with the top reasons (the full counters: --stats-format full,
 * the console, telemetry). */
TEST(DpumeshApp, CompactDisplayShowsRatesAnswersAndTopDrops)
{
	temp_dir dir;
	const std::string pcap = dir.file("sample.pcap");
	auto [grc, gout] = run_command({bin_path("dpumesh-pcapgen"), "--out", pcap, "--messages",
					"500", "--body", "0:500", "--other-share", "0.2", "--seed", "3"});
	ASSERT_EQ(grc, 0) << gout;
	const uint64_t other = field(gout, "summary", "other");
	const uint64_t valid = field(gout, "summary", "valid_messages");
	const uint64_t malformed = field(gout, "summary", "malformed");
	ASSERT_GT(other, 50u);
	auto args = eal_args("compact");
	args.push_back("--vdev=net_pcap0,rx_pcap=" + pcap);
	args.insert(args.end(), {"--", node_workers_arg(), "--config",
				 private_config(dir, "conf/pcap.json"), "--stats-period", "1"});
	subprocess p(args);
	/* the capture is read once: a later block counts every foreign and malformed frame, and
	 * every request's refusal that a receive-only port could not send (no_egress) */
	const std::string total = "(total " + std::to_string(other + malformed + valid) + ")";
	EXPECT_TRUE(p.wait_output(
		[&](const std::string &o) { return o.find(total) != std::string::npos; }, 30s))
		<< total << "\n" << p.output();
	p.signal(SIGINT);
	EXPECT_EQ(p.wait(20s), 0) << p.output();
	const std::string &out = p.output();
	size_t at = out.rfind("---- dpumesh stats at");
	ASSERT_NE(at, std::string::npos) << out;
	const std::string block = out.substr(at, out.find("dpumesh: stopping") - at);
	EXPECT_NE(block.find("port 0  uplink"), std::string::npos) << block;
	EXPECT_NE(block.find("msgs/s    network in"), std::string::npos) << block;
	EXPECT_NE(block.find("answers/s 2xx"), std::string::npos) << block;
	EXPECT_NE(block.find("drops/s"), std::string::npos) << block;
	EXPECT_NE(block.find("no_egress " + std::to_string(valid)), std::string::npos) << block;
	EXPECT_EQ(block.find("cycles/unit"), std::string::npos) << block; /* not the full block */
}

TEST(PcapTools, GeneratedCaptureDecodesToWhatWasWritten)
{
	temp_dir dir;
	const std::string pcap = dir.file("mix.pcap");
	/* large, fragmented messages over both families, with malformed and foreign frames */
	auto [grc, gout] = run_command({bin_path("dpumesh-pcapgen"), "--out", pcap, "--messages",
					"300", "--services", "a,b,c", "--body", "0:1048576",
					"--ipv6-share", "0.5", "--response-share", "0.2",
					"--malformed-share", "0.1", "--other-share", "0.2", "--seed", "3"});
	ASSERT_EQ(grc, 0) << gout;
	auto [drc, dout] = run_command({bin_path("dpumesh-pcapdump"), pcap});
	ASSERT_EQ(drc, 0) << dout;
	EXPECT_EQ(field(dout, "frames=", "messages"), field(gout, "summary", "valid_messages")) << dout;
	EXPECT_EQ(field(dout, "frames=", "bad_l7"), 0u) << dout;
	EXPECT_NE(dout.find(" GET a /a/"), std::string::npos) << dout.substr(0, 2000);
	EXPECT_NE(dout.find("[fd00:50::2]:"), std::string::npos);
	uint64_t frames = 0;
	ASSERT_EQ(std::sscanf(dout.c_str() + dout.rfind("frames="), "frames=%lu", &frames), 1);
	EXPECT_EQ(frames, field(gout, "summary", "frames"));
	uint64_t bad = 0;
	for (const char *r : {"truncated", "bad_magic", "bad_version", "bad_kind", "bad_reserved",
			      "bad_length"}) {
		uint64_t n = field(dout, "frames=", r);
		bad += n == UINT64_MAX ? 0 : n;
	}
	EXPECT_EQ(bad, field(gout, "summary", "malformed")) << dout;
	uint64_t foreign = 0;
	for (const char *r : {"not_ip", "not_udp", "other_port"}) {
		uint64_t n = field(dout, "frames=", r);
		foreign += n == UINT64_MAX ? 0 : n;
	}
	EXPECT_EQ(foreign, field(gout, "summary", "other")) << dout;

	auto [brc, bout] = run_command({bin_path("dpumesh-pcapgen"), "--out", pcap, "--body", "9:1"});
	EXPECT_EQ(brc, 2) << bout;
	EXPECT_NE(bout.find("bad value \"9:1\" for --body"), std::string::npos) << bout;
}
