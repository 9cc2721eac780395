// SPDX-License-Identifier: BSD-3-Clause
// dpumesh's own command line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dpumesh/app/options.h"

using namespace dpumesh;

namespace {

result<app::options> parse(std::vector<std::string> args)
{
	args.insert(args.begin(), "dpumesh");
	std::vector<char *> argv;
	for (auto &a : args)
		argv.push_back(a.data());
	return app::parse_options(static_cast<int>(argv.size()), argv.data());
}

} // namespace

TEST(Options, Defaults)
{
	auto o = parse({});
	ASSERT_TRUE(o);
	EXPECT_TRUE(o->config_path.empty());
	EXPECT_EQ(o->stats_period, 1u);
	EXPECT_FALSE(o->interactive);
}

TEST(Options, AllOptions)
{
	auto o = parse({"--config", "x.json", "-i", "--stats-period", "5", "--dpa-backend", "emu",
			"--dma", "dmadev:dma_skeleton0"});
	ASSERT_TRUE(o) << o.error().message();
	EXPECT_EQ(o->config_path, "x.json");
	EXPECT_TRUE(o->interactive);
	EXPECT_EQ(o->stats_period, 5u);
	EXPECT_EQ(o->dpa_backend, config::dpa_backend::emu);
	EXPECT_EQ(o->dma_backend, config::dma_backend::dmadev);
	EXPECT_EQ(o->dma_device, "dma_skeleton0");
	EXPECT_FALSE(o->workers);
	auto c = parse({"-c", "y.json", "--dma", "cpu", "--workers", "2"});
	ASSERT_TRUE(c);
	ASSERT_TRUE(c->workers);
	EXPECT_EQ(*c->workers, 2u);
	config::node_config cfg;
	app::apply_overrides(*c, cfg);
	EXPECT_EQ(cfg.lcores.workers, 2u);
	EXPECT_EQ(c->config_path, "y.json");
	EXPECT_EQ(c->dma_backend, config::dma_backend::cpu);
	EXPECT_EQ(cfg.lcores.control_priority, 0u); /* not given: the config's stays */
	auto p = parse({"--control-priority", "10"});
	ASSERT_TRUE(p) << p.error().message();
	app::apply_overrides(*p, cfg);
	EXPECT_EQ(cfg.lcores.control_priority, 10u);
	auto z = parse({"--control-priority", "0"}); /* 0 overrides a config's priority too */
	ASSERT_TRUE(z);
	app::apply_overrides(*z, cfg);
	EXPECT_EQ(cfg.lcores.control_priority, 0u);
}

TEST(Options, Errors)
{
	struct {
		std::vector<std::string> args;
		const char *message;
	} cases[] = {
		{{"--bogus"}, "unknown option --bogus"},
		{{"-z"}, "unknown option -z"},
		{{"--config"}, "--config needs an argument"},
		{{"--stats-period", "x"}, "--stats-period: \"x\" is not a whole number"},
		{{"--stats-period", "-1"}, "--stats-period: \"-1\""},
		{{"--stats-period", "99999"}, "in [0, 3600]"},
		{{"--dpa-backend", "fpga"}, "--dpa-backend: \"fpga\" is not one of: emu, doca"},
		{{"--dma", "gpu"}, "--dma: \"gpu\" is not one of: cpu, dmadev[:NAME]"},
		{{"--dpa-device", "03:00"}, "--dpa-device: \"03:00\" is not a PCI address"},
		{{"--dpa-device", "0000:03:00.8"}, "is not a PCI address"},
		{{"--dpa-device", "03:20.0"}, "is not a PCI address"},
		{{"--dpa-device", "000:03:00.0"}, "is not a PCI address"},
		{{"--dpa-device", "0000-03:00.0"}, "is not a PCI address"},
		{{"--dpa-device"}, "--dpa-device needs an argument"},
		{{"extra"}, "unexpected argument \"extra\""},
		{{"--workers", "0"}, "--workers: must be 1 to 16"},
		{{"--workers", "17"}, "in [0, 16]"},
		{{"--control-priority", "100"}, "--control-priority: \"100\" is not a whole number in [0, 99]"},
		{{"--control-priority", "fifo"}, "--control-priority: \"fifo\""},
	};
	for (auto &c : cases) {
		auto o = parse(c.args);
		ASSERT_FALSE(o) << c.args[0];
		EXPECT_NE(o.error().message().find(c.message), std::string::npos)
			<< o.error().message();
	}
}

TEST(Options, DpaDeviceOverridesTheConfigAndDocaIsCheckedAgainstTheBuild)
{
	auto o = parse({"--dpa-backend", "doca", "--dpa-device", "0000:03:00.1"});
	ASSERT_TRUE(o) << o.error().message();
	config::node_config cfg;
	cfg.dpa.device = "0000:04:00.0";
	app::apply_overrides(*o, cfg);
	EXPECT_EQ(cfg.dpa.backend, config::dpa_backend::doca);
	EXPECT_EQ(cfg.dpa.device, "0000:03:00.1");
	/* the host PF whose pods register over comch is the config's (no option) */
	status host = app::check_dpa_backend(cfg, true);
	ASSERT_FALSE(host.is_ok());
	EXPECT_NE(host.message().find("/dpa/host_device"), std::string::npos) << host.message();
	cfg.dpa.host_device = "0000:3b:00.0";
	EXPECT_TRUE(app::check_dpa_backend(cfg, true).is_ok());

	/* a portable build names the build option */
	status st = app::check_dpa_backend(cfg, false);
	ASSERT_FALSE(st.is_ok());
	EXPECT_NE(st.message().find("-DDPUMESH_DOCA=ON"), std::string::npos) << st.message();
	EXPECT_NE(st.message().find("--dpa-backend emu"), std::string::npos) << st.message();

	/* a DOCA build without a device says where to give one */
	auto bare = parse({"--dpa-backend", "doca"});
	ASSERT_TRUE(bare);
	config::node_config cfg2;
	app::apply_overrides(*bare, cfg2);
	st = app::check_dpa_backend(cfg2, true);
	ASSERT_FALSE(st.is_ok());
	EXPECT_NE(st.message().find("--dpa-device"), std::string::npos) << st.message();
	EXPECT_NE(st.message().find("/dpa/device"), std::string::npos) << st.message();

	/* the emulator needs neither */
	config::node_config emu;
	EXPECT_TRUE(app::check_dpa_backend(emu, false).is_ok());
	EXPECT_TRUE(config::valid_pci_address("03:00.0"));
	EXPECT_TRUE(config::valid_pci_address("0000:af:1f.7"));
	EXPECT_FALSE(config::valid_pci_address(""));
}

TEST(Options, UsageListsEveryOption)
{
	std::string u = app::usage("dpumesh");
	for (const char *opt : {"--config", "--interactive", "--cmdline-file", "--stats-period",
				"--dpa-backend", "--dpa-device", "--dma", "--workers", "--control-priority",
				"--help", "--version"})
		EXPECT_NE(u.find(opt), std::string::npos) << opt;
}

TEST(Options, HelpDetection)
{
	std::vector<std::string> a = {"dpumesh", "-l", "0-1", "--", "--help"};
	std::vector<char *> argv;
	for (auto &s : a)
		argv.push_back(s.data());
	bool version = false;
	EXPECT_TRUE(app::wants_help_or_version(5, argv.data(), &version));
	EXPECT_FALSE(version);
	std::vector<std::string> b = {"dpumesh", "-l", "0-1", "--", "-c", "x"};
	argv.clear();
	for (auto &s : b)
		argv.push_back(s.data());
	EXPECT_FALSE(app::wants_help_or_version(6, argv.data(), &version));
}
