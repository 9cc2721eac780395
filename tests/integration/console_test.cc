// SPDX-License-Identifier: BSD-3-Clause
// The console as an operator uses it: a pseudo-terminal session (-i) and --cmdline-file,
// against a dpumesh replaying captures. Every command family, completion, history, reload,
// and malformed input answered with one error line while the console keeps answering.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <thread>

#include "jwt_signer.h"
#include "eal_env.h"
#include "subprocess.h"

using namespace dpumesh::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> eal_args(const std::string &tag)
{
	return {bin_path("dpumesh"), node_lcores_arg(), "--no-huge", "-m", "256", "--no-pci",
		"--file-prefix=dpumesh-console-" + tag + "-" + std::to_string(getpid()),
		"--log-level=lib.eal:warning"};
}

/** A node config with two replay ports: a finite capture and a looping one. */
std::string two_port_config(unsigned max_pods_echo, const char *loop_dev = "net_pcap1")
{
	std::ostringstream c;
	c << R"({
  "version": 1,
  "node": { "name": "cons1", "mac": "02:00:00:00:00:01", "ipv4": "192.168.50.1",
            "mesh_port": 7000, "control_socket": "/tmp/dpumesh-console-test-)"
	  << getpid() << R"(.sock" },
  "ports": [
    { "name": "uplink", "dev": "net_pcap0", "role": "replay" },
    { "name": "loop", "dev": ")"
	  << loop_dev << R"(", "role": "replay" }
  ],
  "mempool": { "mbufs": 4095, "cache": 64, "data_room": 2176 },
  "lcores": { "idle": "adaptive", "stages": { "port_rx": 1 } },
  "services": [ { "name": "frontend", "max_pods": 4 }, { "name": "echo", "max_pods": )"
	  << max_pods_echo << R"( } ],
  "peers": [ { "name": "node2", "mac": "02:00:00:00:00:02", "ipv4": "192.168.50.2" } ],
  "routes": [ { "service": "frontend", "to": "local" }, { "service": "echo", "to": "node2" } ],
  "policy": {
    "rate_limits": [ { "service": "echo", "key": "source", "rate": 1000, "burst": 2000 } ],
    "timeouts": [ { "service": "echo", "timeout_ms": 250, "retries": 2 } ]
  }
}
)";
	return c.str();
}

/** The number after "key=" in the first line of `text` that contains `anchor`; -1 if none. */
long long value_after(const std::string &text, const std::string &anchor, const std::string &key)
{
	size_t a = text.find(anchor);
	if (a == std::string::npos)
		return -1;
	size_t k = text.find(key + "=", a);
	if (k == std::string::npos)
		return -1;
	return std::strtoll(text.c_str() + k + key.size() + 1, nullptr, 10);
}

/** The number that follows `label` (after blanks); -1 if none. */
long long number_after(const std::string &text, const std::string &label)
{
	size_t a = text.find(label);
	if (a == std::string::npos)
		return -1;
	const char *p = text.c_str() + a + label.size();
	char *end = nullptr;
	long long v = std::strtoll(p, &end, 10);
	return end == p ? -1 : v;
}

/** A console session on a pseudo-terminal. */
class session {
public:
	explicit session(std::vector<std::string> argv) : _p(std::move(argv), subprocess::io::pty) {}

	subprocess &proc() { return _p; }

	/** Waits for a fresh prompt after `from` in the output. */
	bool wait_prompt(size_t from, std::chrono::milliseconds limit = 20s)
	{
		return _p.wait_output(
			[from](const std::string &o) {
				size_t at = o.rfind("dpumesh> ");
				return at != std::string::npos && at >= from &&
				       o.find('\n', from) != std::string::npos && at > o.find('\n', from);
			},
			limit);
	}

	/** Types a line; returns what the console printed up to the next prompt. */
	std::string cmd(const std::string &line)
	{
		size_t from = _p.output().size();
		EXPECT_TRUE(_p.write(line + "\n"));
		EXPECT_TRUE(wait_prompt(from)) << "no prompt after \"" << line << "\":\n"
					       << _p.output().substr(from);
		std::string out = _p.output().substr(from);
		size_t nl = out.find('\n'); /* drop the echoed line */
		out = nl == std::string::npos ? "" : out.substr(nl + 1);
		size_t pr = out.rfind("dpumesh> ");
		return pr == std::string::npos ? out : out.substr(0, pr);
	}

private:
	subprocess _p;
};

} // namespace

TEST(Console, InteractiveSessionOnAPty)
{
	temp_dir dir;
	capture_counts once{}, loop{};
	ASSERT_NO_FATAL_FAILURE(make_capture(dir.file("once.pcap"), 2000, "0.1", &once));
	ASSERT_NO_FATAL_FAILURE(make_capture(dir.file("loop.pcap"), 64, "0", &loop));
	ASSERT_EQ(loop.other, 0u);
	const std::string cfg = dir.file("node.json");
	std::ofstream(cfg) << two_port_config(8);

	auto args = eal_args("pty");
	args.push_back("--vdev=net_pcap0,rx_pcap=" + dir.file("once.pcap"));
	args.push_back("--vdev=net_pcap1,rx_pcap=" + dir.file("loop.pcap") + ",infinite_rx=1");
	args.insert(args.end(), {"--", node_workers_arg(), "--config", cfg, "-i"});
	session s(args);
	ASSERT_TRUE(s.wait_prompt(0, 40s)) << s.proc().output();

	/* the finite capture is received exactly once */
	std::string st;
	for (int i = 0; i < 100; i++) {
		st = s.cmd("show port stats 0");
		if (value_after(st, "port 0", "rx_packets") == 2000)
			break;
		std::this_thread::sleep_for(100ms);
	}
	EXPECT_EQ(value_after(st, "port 0", "rx_packets"), 2000) << st;
	EXPECT_NE(st.find("(uplink, net_pcap0)"), std::string::npos) << st;
	std::string all = s.cmd("show port stats all");
	EXPECT_EQ(value_after(all, "port 0", "rx_packets"), 2000) << all;
	EXPECT_GT(value_after(all, "port 1", "rx_packets"), 0) << all;

	/* drops: the looping capture is all mesh, so the non-mesh drops (ARP, TCP, other UDP
	 * ports) are exactly the finite one's */
	std::string drops = s.cmd("show drops");
	EXPECT_GE(value_after(drops, "port_rx", "frames"), 2000) << drops;
	EXPECT_EQ(number_after(drops, "drop other_port") + number_after(drops, "drop not_ip") +
			  number_after(drops, "drop not_udp"),
		  static_cast<long long>(once.other))
		<< drops;
	EXPECT_EQ(number_after(drops, "drop bad_magic"), 0) << drops;

	/* stop: counters no longer grow; start: they do again */
	EXPECT_NE(s.cmd("stop").find("forwarding stopped"), std::string::npos);
	std::this_thread::sleep_for(200ms);
	long long a = value_after(s.cmd("show port stats 1"), "port 1", "rx_packets");
	std::this_thread::sleep_for(500ms);
	long long b = value_after(s.cmd("show port stats 1"), "port 1", "rx_packets");
	EXPECT_EQ(a, b);
	EXPECT_NE(s.cmd("stop").find("already off"), std::string::npos);
	EXPECT_NE(s.cmd("show stages").find("forwarding=off"), std::string::npos);
	EXPECT_NE(s.cmd("start").find("forwarding started"), std::string::npos);
	long long c = b;
	for (int i = 0; i < 50 && c == b; i++) {
		std::this_thread::sleep_for(100ms);
		c = value_after(s.cmd("show port stats 1"), "port 1", "rx_packets");
	}
	EXPECT_GT(c, b);

	/* clear port stats */
	EXPECT_NE(s.cmd("clear port stats 0").find("cleared"), std::string::npos);
	EXPECT_EQ(value_after(s.cmd("show port stats 0"), "port 0", "rx_packets"), 0);

	std::string info = s.cmd("show port info all");
	EXPECT_NE(info.find("driver=net_pcap role=replay"), std::string::npos) << info;
	EXPECT_NE(s.cmd("show port xstats 1").find("rx_good_packets"), std::string::npos);

	std::string lc = s.cmd("show lcores");
	EXPECT_NE(lc.find("lcore 0  main"), std::string::npos) << lc;
	EXPECT_NE(lc.find("lcore 1  worker  running stages=port_rx"), std::string::npos) << lc;
	std::string stg = s.cmd("show stages");
	EXPECT_NE(stg.find("stage port_rx lcore=1"), std::string::npos) << stg;
	EXPECT_GT(value_after(stg, "stage port_rx", "work"), 2000) << stg;
	EXPECT_NE(stg.find("cycles_per_unit="), std::string::npos) << stg;
	EXPECT_NE(stg.find("cpu_cycles_per_unit="), std::string::npos) << stg;
	EXPECT_GE(value_after(stg, "stage port_rx", "cpu_polls"), 0) << stg;
	/* the worker thread from /proc: its id and wall time */
	EXPECT_GT(value_after(stg, "lcore 1 ", "thread"), 0) << stg;
	EXPECT_NE(stg.find("runqueue="), std::string::npos) << stg;

	std::string conf = s.cmd("show config");
	EXPECT_NE(conf.find("node cons1"), std::string::npos) << conf;
	EXPECT_NE(conf.find("port loop dev=net_pcap1"), std::string::npos) << conf;
	EXPECT_NE(s.cmd("show services").find("service echo             max_pods=8 route=node2"),
		  std::string::npos);
	EXPECT_NE(s.cmd("show routes").find("-> node2      (peer node2 192.168.50.2:7000)"),
		  std::string::npos);
	EXPECT_NE(s.cmd("show peers").find("peer node2        mac=02:00:00:00:00:02"),
		  std::string::npos);
	std::string pol = s.cmd("show policy");
	EXPECT_NE(pol.find("ratelimit echo / key=source rate=1000/s burst=2000"), std::string::npos)
		<< pol;
	EXPECT_NE(pol.find("timeout echo / timeout_ms=250 retries=2"), std::string::npos) << pol;

	/* logs */
	EXPECT_NE(s.cmd("set log port debug").find("log level of port: debug"), std::string::npos);
	EXPECT_NE(s.cmd("show log").find("dpumesh.port       debug"), std::string::npos);
	EXPECT_NE(s.cmd("set log all warning").find("log level of all: warning"), std::string::npos);
	EXPECT_NE(s.cmd("show log").find("dpumesh.console    warning"), std::string::npos);

	/* periodic stats under the prompt, then off again */
	size_t mark = s.proc().output().size();
	EXPECT_NE(s.cmd("set stats-period 1").find("stats-period 1 s"), std::string::npos);
	EXPECT_TRUE(s.proc().wait_output(
		[mark](const std::string &o) {
			return o.find("---- dpumesh stats at", mark) != std::string::npos;
		},
		10s));
	EXPECT_NE(s.cmd("set stats-period 0").find("periodic stats off"), std::string::npos);

	/* reload: a run-time section applies, a port change is refused */
	std::ofstream(cfg) << two_port_config(12);
	std::string rl = s.cmd("reload config");
	EXPECT_NE(rl.find("applied services"), std::string::npos) << rl;
	EXPECT_NE(s.cmd("show services").find("max_pods=12"), std::string::npos);
	std::ofstream(cfg) << two_port_config(12, "net_pcap7");
	rl = s.cmd("reload config");
	EXPECT_NE(rl.find("error: reload config: refused: /ports changed"), std::string::npos) << rl;
	std::ofstream(cfg) << "{ \"version\": 1, \"node\": ";
	rl = s.cmd("reload config");
	EXPECT_NE(rl.find("error: reload config: refused (nothing changed): " + cfg + ":1:"),
		  std::string::npos)
		<< rl;
	EXPECT_NE(s.cmd("show services").find("max_pods=12"), std::string::npos);

	/* tab completion: "sho" + TAB completes to "show ", "dro" + TAB to "drops " */
	size_t from = s.proc().output().size();
	ASSERT_TRUE(s.proc().write("sho\t"));
	EXPECT_TRUE(s.proc().wait_output(
		[from](const std::string &o) { return o.find("show ", from) != std::string::npos; },
		5s))
		<< s.proc().output().substr(from);
	ASSERT_TRUE(s.proc().write("dro\t"));
	EXPECT_TRUE(s.proc().wait_output(
		[from](const std::string &o) { return o.find("drops ", from) != std::string::npos; },
		5s))
		<< s.proc().output().substr(from);
	std::string completed = s.cmd("");
	EXPECT_NE(completed.find("port_rx frames="), std::string::npos) << completed;

	/* history: up-arrow recalls the previous command */
	std::string again = s.cmd("\x1b[A");
	EXPECT_NE(again.find("port_rx frames="), std::string::npos) << again;

	/* help */
	std::string help = s.cmd("help");
	for (const char *want : {"show port stats|info|xstats <port>", "clear port stats <port>",
			      "show lcores", "show stages", "show drops", "show config",
			      "show services", "show routes", "show peers", "show policy", "start",
			      "stop", "set log <type>", "show log", "set stats-period <seconds>",
			      "reload config", "quit", "show pods", "show pod <id>", "show pending",
			      "show dpa", "show dma", "show metrics", "set route <service> <to>",
			      "set ratelimit <service> <path_prefix> <key> <rate> <burst>",
			      "set timeout <service> <path_prefix> <timeout_ms> <retries>",
			      "set policy <pointer> <json...>"})
		EXPECT_NE(help.find(want), std::string::npos) << want;
	std::string hp = s.cmd("help port");
	EXPECT_NE(hp.find("clear port stats <port>"), std::string::npos) << hp;
	EXPECT_EQ(hp.find("show lcores"), std::string::npos) << hp;

	/* malformed commands: one error line each, and the console still answers */
	const char *bad[] = {
		"frobnicate",
		"shwo port stats all",
		"show",
		"show port",
		"show port stats",
		"show port stats 99",
		"show port stats x1",
		"show port stats all extra",
		"show port bogus all",
		"show port info 65535",
		"clear port stats",
		"clear port stats -1",
		"set",
		"set log",
		"set log port",
		"set log port loud",
		"set log nosuchtype debug",
		"set stats-period",
		"set stats-period -5",
		"set stats-period 99999",
		"set stats-period abc",
		"reload",
		"reload config now",
		"help a b",
		"help nosuchtopic",
		"start now",
		"quit please",
		"show drops 1",
		"show pods now",
		"show pod",
		"show pod 999",
		"set policy allow",
		"set route",
		"set route echo",
		"set route echo nowhere",
		"set ratelimit echo / source",
		"set ratelimit echo / source x 1",
		"set ratelimit nosuch / source 5 5",
		"set ratelimit echo / badkey 5 5",
		"set ratelimit echo /x source 0 0",
		"set timeout echo / 10",
		"set timeout echo / abc 1",
		"set timeout echo / 10 99",
		"set policy /policy/nosuch/0 1",
		"set policy /routes 1",
		"set policy /policy/default_timeout_ms 0",
		"set policy /policy/default_timeout_ms {bad",
		"set policy /policy/rbac/7 null",
		/* RFC 6901: an array index has no leading zero or sign; '~' only as ~0 or ~1 */
		"set policy /policy/timeouts/00/retries 3",
		"set policy /policy/rate_limits/+0 null",
		"set policy /policy/timeouts~2/0/retries 3",
		"set policy /policy/timeouts/0/retries~ 3",
		"show metrics now",
	};
	static_assert(std::size(bad) >= 20);
	for (const char *line : bad) {
		std::string out = s.cmd(line);
		while (!out.empty() && (out.back() == '\n' || out.back() == '\r'))
			out.pop_back();
		bool one_error = (out.rfind("Bad arguments", 0) == 0 ||
				  out.rfind("unknown command", 0) == 0 || out.rfind("error: ", 0) == 0) &&
				 out.find('\n') == std::string::npos;
		EXPECT_TRUE(one_error) << "\"" << line << "\" -> \"" << out << "\"";
	}
	std::string longline(300, 'x');
	EXPECT_NE(s.cmd(longline).find("unknown command"), std::string::npos);
	EXPECT_NE(s.cmd("show port stats 0").find("rx_packets="), std::string::npos);
	EXPECT_NE(s.cmd("shwo").find("did you mean \"show\""), std::string::npos);

	/* quit stops dpumesh cleanly */
	ASSERT_TRUE(s.proc().write("quit\n"));
	EXPECT_EQ(s.proc().wait(30s), 0) << s.proc().output();
	EXPECT_NE(s.proc().output().find("dpumesh: stopped"), std::string::npos);
}

/** dpumesh on dir's node.json and its capture (twice, ports 0 and 1), running `cmds` at start
 * (--cmdline-file) with every counter in its periodic block. */
static std::unique_ptr<subprocess> start_with_cmdline_file(const std::string &tag,
							   temp_dir &dir, const std::string &cmds)
{
	auto args = eal_args(tag);
	args.push_back("--vdev=net_pcap0,rx_pcap=" + dir.file("once.pcap"));
	args.push_back("--vdev=net_pcap1,rx_pcap=" + dir.file("once.pcap"));
	args.insert(args.end(), {"--", node_workers_arg(),
				 "--config", dir.file("node.json"), "--cmdline-file", cmds,
				 "--stats-format", "full"});
	return std::make_unique<subprocess>(args);
}

TEST(Console, CmdlineFileRunsCommandsAndKeepsForwarding)
{
	temp_dir dir;
	capture_counts once{};
	ASSERT_NO_FATAL_FAILURE(make_capture(dir.file("once.pcap"), 1000, "0.2", &once));
	std::ofstream(dir.file("node.json")) << two_port_config(8);
	const std::string cmds = dir.file("start.cmds");
	std::ofstream(cmds) << "# comment lines and blank lines are skipped\n"
			       "\n"
			       "show config\n"
			       "show port info all\n"
			       "show port stats all\n"
			       "show port xstats 0\n"
			       "show lcores\n"
			       "show stages\n"
			       "show drops\n"
			       "show services\n"
			       "show routes\n"
			       "show peers\n"
			       "show policy\n"
			       "set log port debug\n"
			       "show log\n"
			       "set stats-period 1\n"
			       "stop\n"
			       "start\n"
			       "reload config\n"
			       "clear port stats 1\n"
			       "show port stats 7\n" /* line 21 */
			       "bogus command\n"     /* line 22 */
			       "help\n";

	auto proc = start_with_cmdline_file("file", dir, cmds);
	subprocess &p = *proc;
	ASSERT_TRUE(p.wait_output(
		[](const std::string &o) { return o.find("command(s),") != std::string::npos; }, 40s))
		<< p.output();
	const std::string out = p.output();
	for (const char *echo : {"dpumesh> show config\n", "dpumesh> show port stats all\n",
				 "dpumesh> show drops\n", "dpumesh> reload config\n", "dpumesh> help\n"})
		EXPECT_NE(out.find(echo), std::string::npos) << echo;
	EXPECT_NE(out.find("node cons1"), std::string::npos) << out;
	EXPECT_NE(out.find("rx_packets="), std::string::npos) << out;
	EXPECT_NE(out.find("stage port_rx lcore=1"), std::string::npos) << out;
	EXPECT_NE(out.find("drop other_port"), std::string::npos) << out;
	EXPECT_NE(out.find("forwarding stopped"), std::string::npos) << out;
	EXPECT_NE(out.find("forwarding started"), std::string::npos) << out;
	EXPECT_NE(out.find("reloaded " + dir.file("node.json") + ": no change"), std::string::npos)
		<< out;
	EXPECT_NE(out.find("dpumesh.port       debug"), std::string::npos) << out;
	EXPECT_NE(out.find(cmds + ":21: Bad arguments: port 7 is not a dpumesh port (ports: 0, 1)"),
		  std::string::npos)
		<< out;
	EXPECT_NE(out.find(cmds + ":22: unknown command \"bogus\""), std::string::npos) << out;
	EXPECT_NE(out.find("start.cmds: 21 command(s), 2 failed"), std::string::npos) << out;

	/* the data plane keeps running after the file (periodic stats, set by the file, show
	 * both captures fully received; the file cleared port 1's ethdev stats, not the
	 * stage's); SIGINT stops it with full totals */
	EXPECT_NE(out.find("stats-period 1 s"), std::string::npos) << out;
	EXPECT_TRUE(p.wait_output(
		[](const std::string &o) {
			return o.find("port 0 uplink   RX         1000 pkts") != std::string::npos &&
			       o.find("port_rx: frames 2000 ") != std::string::npos;
		},
		30s))
		<< p.output();
	p.signal(SIGINT);
	EXPECT_EQ(p.wait(30s), 0) << p.output();
	const std::string fin = p.output();
	EXPECT_NE(fin.find("final port=0 name=uplink rx_packets=1000 "), std::string::npos) << fin;
	EXPECT_EQ(value_after(fin, "final stage=port_rx", "frames"), 2000) << fin;
	EXPECT_EQ(value_after(fin, "final stage=port_rx", "drop_other_port") +
			  value_after(fin, "final stage=port_rx", "drop_not_ip") +
			  value_after(fin, "final stage=port_rx", "drop_not_udp"),
		  static_cast<long long>(2 * once.other))
		<< fin;
}

/* Policy rows take values of any length the config takes: cmdline's string tokens stop at
 * 127 characters, the console's value tokens at its line (64 KiB). */
TEST(Console, PolicyValuesOfAnyLength)
{
	temp_dir dir;
	capture_counts once{};
	ASSERT_NO_FATAL_FAILURE(make_capture(dir.file("once.pcap"), 10, "0.2", &once));
	std::ofstream(dir.file("node.json")) << two_port_config(8);

	auto json_escape = [](const std::string &text) {
		std::string o;
		for (char c : text)
			o += c == '\n' ? std::string("\\n") : std::string(1, c);
		return o;
	};
	auto rsa = dpumesh::test::signing_key::rsa(2048);
	ASSERT_TRUE(rsa);
	const std::string pem = json_escape(rsa->public_pem());
	ASSERT_GT(pem.size(), 400u);
	/* a PEM key: blanks inside ("BEGIN PUBLIC KEY"), ~450 characters */
	const std::string set_jwt = "set policy /policy/jwt {\"issuer\": \"console\", \"keys\": "
				    "[{\"kid\": \"k1\", \"alg\": \"RS256\", \"pem\": \"" +
				    pem + "\"}]}";
	/* an RBAC rule of more than 127 characters, with blanks */
	const std::string long_path = "/api/v1/" + std::string(150, 'p');
	const std::string set_rbac =
		"set policy /policy/rbac/- {\"service\": \"echo\", \"default\": \"deny\", "
		"\"rules\": [{\"methods\": [\"GET\", \"POST\"], \"prefix\": \"" +
		long_path + "\", \"claims\": {\"role\": \"admin\"}}]}";
	ASSERT_GT(set_rbac.size() - std::string("set policy /policy/rbac/- ").size(), 127u);
	/* a word of more than 127 characters (path_prefix: the config takes up to 1024) */
	const std::string set_timeout = "set timeout echo " + long_path + " 300 1";
	/* still too long for the config: a pem over 16384 bytes */
	const std::string huge_pem = "set policy /policy/jwt/keys/0/pem \"-----BEGIN PUBLIC KEY-----" +
				     std::string(17000, 'A') + "\"";
	/* and too long for the console's line */
	const std::string huge_line = "set policy /policy/default_timeout_ms " +
				      std::string(70000, ' ') + "7";

	const std::string cmds = dir.file("policy.cmds");
	std::ofstream(cmds) << set_jwt << "\n"      /* line 1 */
			    << set_rbac << "\n"     /* line 2 */
			    << set_timeout << "\n"  /* line 3 */
			    << "show policy\n"      /* line 4 */
			    << huge_pem << "\n"     /* line 5 */
			    << huge_line << "\n"    /* line 6 */
			    << "set policy /policy/default_timeout_ms  4000  \n" /* line 7 */
			    << "show policy\n";

	auto proc = start_with_cmdline_file("long", dir, cmds);
	subprocess &p = *proc;
	ASSERT_TRUE(p.wait_output(
		[](const std::string &o) { return o.find("command(s),") != std::string::npos; }, 40s))
		<< p.output();
	const std::string out = p.output();
	EXPECT_NE(out.find("/policy/jwt = {\"issuer\": \"console\""), std::string::npos) << out;
	EXPECT_EQ(out.find(cmds + ":1:"), std::string::npos) << out;
	EXPECT_EQ(out.find(cmds + ":2:"), std::string::npos) << out;
	EXPECT_EQ(out.find(cmds + ":3:"), std::string::npos) << out;
	EXPECT_NE(out.find("jwt issuer=console audiences=- clock_skew_s=30 keys: k1/RS256"),
		  std::string::npos)
		<< out;
	EXPECT_NE(out.find("rbac echo default=deny require_jwt=yes rules=1"), std::string::npos)
		<< out;
	EXPECT_NE(out.find("allow methods=GET,POST prefix " + long_path + " claims=1"),
		  std::string::npos)
		<< out;
	EXPECT_NE(out.find("timeout echo " + long_path + " timeout_ms=300 retries=1"),
		  std::string::npos)
		<< out;
	EXPECT_NE(out.find(cmds + ":5: error: "), std::string::npos) << out;
	EXPECT_NE(out.find("/policy/jwt/keys/0/pem: length 17026 is out of range [1, 16384]"),
		  std::string::npos)
		<< out;
	EXPECT_NE(out.find(cmds + ":6: error: line of 70039 bytes is longer than the console "
				  "takes (65536 bytes); nothing was run"),
		  std::string::npos)
		<< out;
	EXPECT_NE(out.find("default_timeout_ms=4000"), std::string::npos) << out;
	EXPECT_NE(out.find("policy.cmds: 8 command(s), 2 failed"), std::string::npos) << out;
	p.signal(SIGINT);
	EXPECT_EQ(p.wait(30s), 0) << p.output();
}

/* A --cmdline-file of one line without end (/dev/zero) is read up to a bound and refused:
 * neither read nor held forever (before, the whole line was read into memory first). */
TEST(Console, CmdlineFileOfALineWithoutEndIsRefused)
{
	temp_dir dir;
	capture_counts once{};
	ASSERT_NO_FATAL_FAILURE(make_capture(dir.file("once.pcap"), 10, "0.2", &once));
	std::ofstream(dir.file("node.json")) << two_port_config(8);
	auto proc = start_with_cmdline_file("endless", dir, "/dev/zero");
	subprocess &p = *proc;
	/* well under a second here; 20 s, not more: a build that reads the line whole grows
	 * by hundreds of MB a second meanwhile */
	ASSERT_TRUE(p.wait_output(
		[](const std::string &o) { return o.find("command(s),") != std::string::npos; }, 20s))
		<< p.output().substr(0, 4096);
	const std::string out = p.output();
	EXPECT_NE(out.find("/dev/zero:1: error: line of more than 16777216 bytes; nothing was "
			   "run, and the rest of the file is not read"),
		  std::string::npos)
		<< out.substr(0, 4096);
	EXPECT_NE(out.find("dpumesh: /dev/zero: 1 command(s), 1 failed"), std::string::npos);
	p.signal(SIGINT);
	EXPECT_EQ(p.wait(30s), 0) << p.output().substr(0, 4096);
}

TEST(Console, CmdlineFileThatCannotBeReadIsAStartError)
{
	auto args = eal_args("nofile");
	args.insert(args.end(), {"--", node_workers_arg(),
				 "--cmdline-file", "/nonexistent/x.cmds"});
	auto [rc, out] = run_command(args);
	EXPECT_EQ(rc, 2) << out;
	EXPECT_NE(out.find("dpumesh: --cmdline-file /nonexistent/x.cmds: No such file or directory"),
		  std::string::npos)
		<< out;
}
