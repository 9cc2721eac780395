// SPDX-License-Identifier: BSD-3-Clause
// The console's command table, without EAL: rows parse, never overlap, cover the families
// (the console's own rows and those the policy module registers, as dpumesh does); `show
// pending`'s first line.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "dpumesh/policy/cli.h"
#include "internal/commands.h"

using namespace dpumesh::console;

namespace {

/* The policy rows come from its module, registered at start-up as app/dpumesh does. */
std::set<std::string> syntaxes()
{
	std::set<std::string> rows;
	for (const command_spec &c : commands())
		rows.insert(c.syntax);
	return rows;
}

const bool core_has_no_policy_rows = syntaxes().count("show policy") == 0;

struct register_policy_module : testing::Environment {
	void SetUp() override { dpumesh::policy::cli::register_module(); }
};
const auto *env = testing::AddGlobalTestEnvironment(new register_policy_module);

} // namespace

TEST(ConsoleTable, PolicyRowsComeFromTheModuleOnce)
{
	EXPECT_TRUE(core_has_no_policy_rows) << "the console's own table names a policy row";
	const size_t n = commands().size();
	dpumesh::policy::cli::register_module(); /* again: no duplicates */
	EXPECT_EQ(commands().size(), n);
	EXPECT_EQ(first_overlap(commands()), "");
	for (const char *want : {"show policy", "set policy <pointer> <json...>"})
		EXPECT_EQ(syntaxes().count(want), 1u) << want;
}

TEST(ConsoleTable, RowsParseAndHaveHelpAndHandlers)
{
	ASSERT_FALSE(commands().empty());
	for (const command_spec &c : commands()) {
		auto syn = parse_syntax(c.syntax);
		ASSERT_FALSE(syn.empty()) << c.syntax;
		EXPECT_FALSE(syn[0].choices.empty()) << c.syntax << ": first word must be a keyword";
		EXPECT_LE(syn.size(), 32u) << c.syntax;
		EXPECT_NE(c.run, nullptr) << c.syntax;
		EXPECT_GT(std::string(c.help).size(), 5u) << c.syntax;
		for (size_t i = 0; i < syn.size(); i++) {
			for (const std::string &ch : syn[i].choices)
				EXPECT_FALSE(ch.empty()) << c.syntax;
			if (syn[i].rest) {
				EXPECT_EQ(i + 1, syn.size()) << c.syntax << ": <...> must be last";
			}
		}
	}
}

TEST(ConsoleTable, NoTwoRowsCanMatchOneLine)
{
	EXPECT_EQ(first_overlap(commands()), "");
	/* the check itself catches what cmdline would call ambiguous */
	static const command_spec clash[] = {
		{"show <what>", "x", commands()[0].run},
		{"show drops|stages", "y", commands()[0].run},
	};
	EXPECT_EQ(first_overlap(clash), "show <what> / show drops|stages");
	static const command_spec fine[] = {
		{"show port stats <port>", "x", commands()[0].run},
		{"show port info <port>", "y", commands()[0].run},
		{"show port", "z", commands()[0].run},
	};
	EXPECT_EQ(first_overlap(fine), "");
}

TEST(ConsoleTable, EveryFamilyIsThere)
{
	std::set<std::string> rows;
	for (const command_spec &c : commands())
		rows.insert(c.syntax);
	for (const char *want :
	     {"help", "help <topic>", "show port stats|info|xstats <port>", "clear port stats <port>",
	      "show lcores", "show stages", "show config", "show services", "show routes",
	      "show peers", "show policy", "show metrics", "show drops", "start", "stop",
	      "show log", "set stats-period <seconds>", "reload config", "quit", "show pods",
	      "show pod <id>", "show pending", "show quota", "show sidecar", "show dpa", "show dma",
	      "set route <service> <to>", "set ratelimit <service> <path_prefix> <key> <rate> <burst>",
	      "set timeout <service> <path_prefix> <timeout_ms> <retries>",
	      "set policy <pointer> <json...>"})
		EXPECT_EQ(rows.count(want), 1u) << want;
	bool set_log = false;
	for (const std::string &r : rows)
		set_log = set_log || r.rfind("set log <type> ", 0) == 0;
	EXPECT_TRUE(set_log);
}

TEST(ConsoleTable, SplitWordsStopsAtTheEndOfTheLine)
{
	EXPECT_EQ(split_words("  show   port\tstats 0 \n ignored"),
		  (std::vector<std::string>{"show", "port", "stats", "0"}));
	EXPECT_TRUE(split_words("   ").empty());
	auto t = parse_syntax("set log <type> info|debug");
	ASSERT_EQ(t.size(), 4u);
	EXPECT_TRUE(t[2].matches("anything"));
	EXPECT_TRUE(t[3].matches("debug"));
	EXPECT_FALSE(t[3].matches("loud"));
	EXPECT_FALSE(t[2].rest);
	auto r = parse_syntax("set policy <pointer> <json...>");
	ASSERT_EQ(r.size(), 4u);
	EXPECT_FALSE(r[2].rest);
	EXPECT_TRUE(r[3].rest);
	EXPECT_TRUE(r[3].choices.empty());
}

/* `show pending`'s first line says how its entries relate to its count: every one listed,
 * the oldest 32 of more, or fewer because the walk missed requests that came in behind it
 * (which read as "the oldest 32:" over no entry at all before 2026-12-06, and failed
 * case3_test 4 times in 30 under qemu). */
TEST(ConsoleTable, PendingHeaderSaysWhatIsListed)
{
	EXPECT_EQ(pending_header(0, 65536, 0, 32), "pending requests: 0 (capacity 65536)\n");
	EXPECT_EQ(pending_header(3, 65536, 3, 32), "pending requests: 3 (capacity 65536)\n");
	EXPECT_EQ(pending_header(40, 65536, 32, 32),
		  "pending requests: 40 (capacity 65536), the oldest 32:\n");
	EXPECT_EQ(pending_header(32, 65536, 32, 32), "pending requests: 32 (capacity 65536)\n");
	EXPECT_EQ(pending_header(3, 65536, 0, 32),
		  "pending requests: 3 (capacity 65536), 0 listed (the others came in during the "
		  "listing):\n");
	EXPECT_EQ(pending_header(40, 65536, 31, 32),
		  "pending requests: 40 (capacity 65536), 31 listed (the others came in during the "
		  "listing):\n");
	/* answered during the walk: listed, no longer counted */
	EXPECT_EQ(pending_header(1, 65536, 3, 32), "pending requests: 1 (capacity 65536)\n");
}
