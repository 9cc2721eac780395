// SPDX-License-Identifier: BSD-3-Clause
// The dpumesh program as a user runs it: --help, bad options and configs, and a real run
// on a replayed capture that is stopped with SIGINT.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "subprocess.h"

using namespace dpumesh::test;
using namespace std::chrono_literals;

namespace {

std::string src(const char *rel) { return std::string(DPUMESH_SOURCE_DIR) + "/" + rel; }

std::vector<std::string> eal_args(const std::string &prefix)
{
	return {bin_path("dpumesh"), "-l",  "0-1", "--no-huge", "-m", "256", "--no-pci",
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
	args.insert(args.end(), {"--", "--frobnicate"});
	auto [rc, out] = run_command(args);
	EXPECT_EQ(rc, 2) << out;
	EXPECT_NE(out.find("dpumesh: unknown option --frobnicate"), std::string::npos) << out;

	args = eal_args("badval");
	args.insert(args.end(), {"--", "--dma", "gpu"});
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
	args.insert(args.end(), {"--", "--config", dir.file("bad.json")});
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
	args.insert(args.end(), {"--", "--config", src("conf/default.json")});
	auto [rc, out] = run_command(args);
	EXPECT_EQ(rc, 1) << out;
	EXPECT_NE(out.find("port uplink: device \"net_pcap0\" not found"), std::string::npos) << out;
}

TEST(DpumeshApp, DocaBackendIsRefusedClearly)
{
	auto args = eal_args("doca");
	args.insert(args.end(), {"--", "--dpa-backend", "doca"});
	auto [rc, out] = run_command(args);
	EXPECT_EQ(rc, 1) << out;
	EXPECT_NE(out.find("no DOCA SDK"), std::string::npos) << out;
}

TEST(DpumeshApp, ReplayedCaptureIsReceivedAndSigintExitsZero)
{
	temp_dir dir;
	const std::string pcap = dir.file("sample.pcap");
	auto [grc, gout] = run_command({bin_path("dpumesh-pcapgen"), "--out", pcap, "--count",
					"2000", "--payload", "200", "--other-share", "0.1",
					"--seed", "7"});
	ASSERT_EQ(grc, 0) << gout;
	unsigned long mesh = 0, other = 0;
	size_t paren = gout.find(" frames (");
	ASSERT_NE(paren, std::string::npos) << gout;
	ASSERT_EQ(std::sscanf(gout.c_str() + paren, " frames (%lu mesh, %lu other)", &mesh, &other), 2)
		<< gout;
	ASSERT_EQ(mesh + other, 2000u);
	ASSERT_GT(other, 0u);

	auto args = eal_args("replay");
	args.push_back("--vdev=net_pcap0,rx_pcap=" + pcap);
	args.insert(args.end(), {"--", "--config", src("conf/default.json"), "--stats-period", "1"});
	subprocess p(args);
	bool received = p.wait_output(
		[](const std::string &o) {
			return o.find("RX         2000 pkts") != std::string::npos;
		},
		30s);
	EXPECT_TRUE(received) << p.output();
	p.signal(SIGINT);
	int rc = p.wait(20s);
	const std::string &out = p.output();
	EXPECT_EQ(rc, 0) << out;
	EXPECT_EQ(field(out, "final port=0", "rx_packets"), 2000u) << out;
	EXPECT_EQ(field(out, "final stage=port_rx", "frames"), 2000u) << out;
	EXPECT_EQ(field(out, "final stage=port_rx", "drop_other_port"), other) << out;
	EXPECT_EQ(field(out, "final stage=port_rx", "drop_no_consumer"), mesh) << out;
	EXPECT_NE(out.find("dpumesh: stopped"), std::string::npos) << out;
}
