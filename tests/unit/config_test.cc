// SPDX-License-Identifier: BSD-3-Clause
// Config loading: the shipped configs are valid; invalid ones are rejected with file, line,
// column and JSON pointer.
#include <gtest/gtest.h>

#include <string>

#include "dpumesh/config/config.h"

using namespace dpumesh;

namespace {

std::string src(const char *rel) { return std::string(DPUMESH_SOURCE_DIR) + "/" + rel; }

/* A minimal valid node; tests replace one line to break it. Line numbers are 1-based. */
const char *const base_lines[] = {
	"{",                                                                  // 1
	"  \"node\": {",                                                       // 2
	"    \"name\": \"n1\",",                                               // 3
	"    \"mac\": \"02:00:00:00:00:01\",",                                 // 4
	"    \"ipv4\": \"10.9.0.1\",",                                         // 5
	"    \"mesh_port\": 7000",                                             // 6
	"  },",                                                                // 7
	"  \"ports\": [ { \"name\": \"p0\", \"dev\": \"net_null0\", \"mtu\": 1500 } ],", // 8
	"  \"services\": [ { \"name\": \"echo\" }, { \"name\": \"web\" } ],",  // 9
	"  \"peers\": [ { \"name\": \"n2\", \"ipv4\": \"10.9.0.2\" } ],",      // 10
	"  \"routes\": [ { \"service\": \"echo\", \"to\": \"local\" } ],",     // 11
	"  \"pools\": { \"rx_body\": { \"slots\": 64, \"slot_size\": 4096 } }", // 12
	"}",                                                                   // 13
};

std::string with_line(int line, const std::string &replacement)
{
	std::string out;
	int n = 1;
	for (const char *l : base_lines) {
		out += (n == line) ? replacement : std::string(l);
		out += "\n";
		n++;
	}
	return out;
}

struct bad_case {
	const char *what;
	std::string text;
	const char *location; /* "t.json:LINE:COL: POINTER" */
	const char *message;  /* substring of the message */
};

} // namespace

TEST(Config, BaseIsValid)
{
	auto c = config::load_string(with_line(0, ""), "t.json");
	ASSERT_TRUE(c) << c.error().message();
	EXPECT_EQ(c->node.name, "n1");
	EXPECT_EQ(c->node.mac[5], 1);
	EXPECT_TRUE(c->node.ipv4.has_value());
	EXPECT_FALSE(c->node.ipv6.has_value());
	EXPECT_EQ(c->ports.at(0).dev, "net_null0");
	EXPECT_EQ(c->pools.rx_body.slots, 64u);
	EXPECT_EQ(c->pools.tx_body.slots, 256u); /* default */
	ASSERT_NE(c->find_route("echo"), nullptr);
	EXPECT_TRUE(c->find_route("echo")->is_local());
	EXPECT_EQ(c->where("/ports/0/mtu"), "t.json:8:57");
}

TEST(Config, QuotasHaveDefaultsAndAreRead)
{
	auto d = config::load_string(with_line(0, ""), "t.json");
	ASSERT_TRUE(d) << d.error().message();
	EXPECT_EQ(d->pools.quota.requests_per_pod, 512u);
	EXPECT_EQ(d->pools.quota.requests_per_source, 4096u);
	EXPECT_EQ(d->pools.quota.answers_per_pod, 256u);
	EXPECT_EQ(d->pools.quota.answer_wait_ms, 5000u);
	EXPECT_EQ(d->pools.quota.rx_stall_ms, 500u);
	auto c = config::load_string(
		with_line(12, "  \"pools\": { \"quota\": { \"requests_per_pod\": 8, "
			      "\"requests_per_source\": 9, \"answers_per_pod\": 10, "
			      "\"answer_wait_ms\": 11, \"rx_stall_ms\": 12 } }"),
		"t.json");
	ASSERT_TRUE(c) << c.error().message();
	EXPECT_EQ(c->pools.quota.requests_per_pod, 8u);
	EXPECT_EQ(c->pools.quota.requests_per_source, 9u);
	EXPECT_EQ(c->pools.quota.answers_per_pod, 10u);
	EXPECT_EQ(c->pools.quota.answer_wait_ms, 11u);
	EXPECT_EQ(c->pools.quota.rx_stall_ms, 12u);
}

TEST(Config, LcoreSpinHasADefaultAndIsRead)
{
	auto d = config::load_string(with_line(0, ""), "t.json");
	ASSERT_TRUE(d) << d.error().message();
	EXPECT_EQ(d->lcores.spin_us, 50u);
	auto c = config::load_string(with_line(12, "  \"lcores\": { \"spin_us\": 1000 }"), "t.json");
	ASSERT_TRUE(c) << c.error().message();
	EXPECT_EQ(c->lcores.spin_us, 1000u);
}

TEST(Config, AdmissionQueueBeyondSlots)
{
	auto c = config::load_string(with_line(0, ""), "t.json");
	ASSERT_TRUE(c) << c.error().message();
	/* not given: what the destination queue takes per destination */
	EXPECT_EQ(c->pools.admit_queue(), c->pools.dest_queue_share);
	c = config::load_string(
		with_line(12, "  \"pools\": { \"dest_queue\": { \"per_destination\": 64, \"admit_beyond_slots\": 0 } }"),
		"t.json");
	ASSERT_TRUE(c) << c.error().message();
	EXPECT_EQ(c->pools.dest_queue_share, 64u);
	EXPECT_EQ(c->pools.admit_queue(), 0u);
	c = config::load_string(
		with_line(12, "  \"pools\": { \"dest_queue\": { \"admit_beyond_slots\": 2000000 } }"),
		"t.json");
	ASSERT_FALSE(c);
	EXPECT_EQ(c.error().message().rfind("t.json:12:52: /pools/dest_queue/admit_beyond_slots", 0), 0u)
		<< c.error().message();
}

TEST(Config, PortTxBacklogDefaultsToAQuarterOfThePool)
{
	auto d = config::load_string(with_line(0, ""), "t.json");
	ASSERT_TRUE(d) << d.error().message();
	EXPECT_FALSE(d->ports.at(0).tx_backlog.has_value());
	EXPECT_EQ(d->tx_backlog_of(d->ports.at(0)), 1024u); /* 8191 mbufs */
	auto c = config::load_string(
		with_line(8, "  \"ports\": [ { \"name\": \"p0\", \"dev\": \"net_null0\", \"tx_backlog\": 0 } ],"),
		"t.json");
	ASSERT_TRUE(c) << c.error().message();
	EXPECT_EQ(c->tx_backlog_of(c->ports.at(0)), 0u);
	c = config::load_string(
		with_line(8, "  \"ports\": [ { \"name\": \"p0\", \"dev\": \"net_null0\", \"tx_backlog\": 100 } ],"),
		"t.json");
	ASSERT_FALSE(c);
	EXPECT_EQ(c.error().message().rfind("t.json:8:64: /ports/0/tx_backlog", 0), 0u)
		<< c.error().message();
	/* more than half the pool: RX would starve while a dead peer holds it */
	c = config::load_string(
		with_line(8, "  \"ports\": [ { \"name\": \"p0\", \"dev\": \"net_null0\", \"tx_backlog\": 8192 } ],"),
		"t.json");
	ASSERT_FALSE(c);
	EXPECT_NE(c.error().message().find("more than half the packet pool"), std::string::npos)
		<< c.error().message();
}

TEST(Config, NetworkBoundsOfTheMessagePool)
{
	auto d = config::load_string(with_line(0, ""), "t.json");
	ASSERT_TRUE(d) << d.error().message();
	EXPECT_EQ(d->pools.network_backlog, 1024u);
	EXPECT_EQ(d->pools.network_queued, 2047u);
	auto c = config::load_string(
		with_line(12, "  \"pools\": { \"network\": { \"backlog\": 64, \"queued\": 100 } }"),
		"t.json");
	ASSERT_TRUE(c) << c.error().message();
	EXPECT_EQ(c->pools.network_backlog, 64u);
	EXPECT_EQ(c->pools.network_queued, 100u);
	c = config::load_string(
		with_line(12, "  \"pools\": { \"network\": { \"backlog\": 5000 } }"), "t.json");
	ASSERT_FALSE(c);
	EXPECT_NE(c.error().message().find("/pools/network/backlog"), std::string::npos)
		<< c.error().message();
	EXPECT_NE(c.error().message().find("out of range [1, 4095]"), std::string::npos)
		<< c.error().message();
}

TEST(Config, ShippedConfigsLoad)
{
	for (const char *f : {"conf/default.json", "conf/pcap.json", "conf/two-node/node1.json",
			      "conf/two-node/node2.json"}) {
		auto c = config::load_file(src(f));
		ASSERT_TRUE(c) << f << ": " << c.error().message();
		EXPECT_FALSE(c->services.empty()) << f;
	}
	auto c = config::load_file(src("conf/two-node/node1.json"));
	ASSERT_TRUE(c);
	ASSERT_NE(c->find_route("billing"), nullptr);
	EXPECT_EQ(c->find_route("billing")->to, "node2");
}

TEST(Config, MissingFileIsAnError)
{
	auto c = config::load_file("/nonexistent/x.json");
	ASSERT_FALSE(c);
	EXPECT_NE(c.error().message().find("/nonexistent/x.json: cannot open"), std::string::npos)
		<< c.error().message();
}

TEST(Config, InvalidConfigsAreRejectedWithLocation)
{
	const bad_case cases[] = {
		{"syntax error", with_line(6, "    \"mesh_port\": 7000,"), "t.json:7:3",
		 "string or '}' expected"},
		{"unknown key", with_line(6, "    \"mesh_prot\": 7000"), "t.json:6:5: /node/mesh_prot",
		 "unknown key \"mesh_prot\" (did you mean \"mesh_port\"?)"},
		{"wrong type", with_line(6, "    \"mesh_port\": \"7000\""), "t.json:6:18: /node/mesh_port",
		 "expected an integer, got a string"},
		{"port out of range", with_line(6, "    \"mesh_port\": 70000"),
		 "t.json:6:18: /node/mesh_port", "70000 is out of range [1, 65535]"},
		{"bad MAC", with_line(4, "    \"mac\": \"02:00:00:00:00\","), "t.json:4:12: /node/mac",
		 "is not a MAC address"},
		{"multicast MAC", with_line(4, "    \"mac\": \"01:00:5e:00:00:01\","),
		 "t.json:4:12: /node/mac", "multicast"},
		{"bad IPv4", with_line(5, "    \"ipv4\": \"10.9.0.300\","), "t.json:5:13: /node/ipv4",
		 "is not an IPv4 address"},
		{"duplicate service",
		 with_line(9, "  \"services\": [ { \"name\": \"echo\" }, { \"name\": \"echo\" } ],"),
		 "t.json:9:47: /services/1/name", "duplicate service \"echo\""},
		{"route to a missing service",
		 with_line(11, "  \"routes\": [ { \"service\": \"nope\", \"to\": \"local\" } ],"),
		 "t.json:11:28: /routes/0/service", "unknown service \"nope\""},
		{"route to a missing peer",
		 with_line(11, "  \"routes\": [ { \"service\": \"echo\", \"to\": \"n9\" } ],"),
		 "t.json:11:42: /routes/0/to", "neither \"local\" nor a peer"},
		{"pool size 0",
		 with_line(12, "  \"pools\": { \"rx_body\": { \"slots\": 0, \"slot_size\": 4096 } }"),
		 "t.json:12:36: /pools/rx_body/slots", "0 is out of range [1, 65536]"},
		{"MTU out of range",
		 with_line(8, "  \"ports\": [ { \"name\": \"p0\", \"dev\": \"net_null0\", \"mtu\": 9 } ],"),
		 "t.json:8:57: /ports/0/mtu", "9 is out of range [68, 9600]"},
		{"missing required key", with_line(3, "    \"nam\": \"n1\","), "t.json:2:11: /node",
		 "missing required key \"name\""},
		{"bad name", with_line(3, "    \"name\": \"-n1\","), "t.json:3:13: /node/name",
		 "is not a valid name"},
		{"duplicate JSON key", with_line(3, "    \"name\": \"n1\", \"name\": \"n2\","), "t.json:3:",
		 "duplicate object key"},
		{"negative number", with_line(6, "    \"mesh_port\": -1"), "t.json:6:18: /node/mesh_port",
		 "-1 is out of range"},
		{"real where integer",
		 with_line(12, "  \"pools\": { \"rx_body\": { \"slots\": 1.5, \"slot_size\": 4096 } }"),
		 "t.json:12:36: /pools/rx_body/slots", "expected an integer, got a real number"},
		{"peer named like the node",
		 with_line(10, "  \"peers\": [ { \"name\": \"n1\", \"ipv4\": \"10.9.0.2\" } ],"),
		 "t.json:10:24: /peers/0/name", "is reserved"},
		{"object expected", with_line(12, "  \"pools\": [1]"), "t.json:12:12: /pools",
		 "expected an object, got an array"},
		{"unknown stage",
		 with_line(12, "  \"lcores\": { \"stages\": { \"port_rxx\": 1 } }"),
		 "t.json:12:27: /lcores/stages/port_rxx", "unknown key \"port_rxx\""},
		{"no workers", with_line(12, "  \"lcores\": { \"workers\": 0 }"),
		 "t.json:12:26: /lcores/workers", "0 is out of range [1, 16]"},
		{"spin past its range", with_line(12, "  \"lcores\": { \"spin_us\": 1000001 }"),
		 "t.json:12:26: /lcores/spin_us", "1000001 is out of range [0, 1000000]"},
		{"control priority", with_line(12, "  \"lcores\": { \"control_priority\": 100 }"),
		 "t.json:12:35: /lcores/control_priority", "100 is out of range [0, 99]"},
		{"sq_depth not a power of two", with_line(12, "  \"pools\": { \"sq_depth\": 100 }"),
		 "t.json:12:26: /pools/sq_depth", "not a power of two"},
		{"dest_queue share over its pool",
		 with_line(12, "  \"pools\": { \"dest_queue\": { \"entries\": 2048, \"per_destination\": 4096 } }"),
		 "t.json:12:66: /pools/dest_queue/per_destination", "4096 is more than entries (2048)"},
		{"dest_queue too small",
		 with_line(12, "  \"pools\": { \"dest_queue\": { \"entries\": 16 } }"),
		 "t.json:12:41: /pools/dest_queue/entries", "16 is out of range [1024, 1048576]"},
		{"quota of zero",
		 with_line(12, "  \"pools\": { \"quota\": { \"requests_per_pod\": 0 } }"),
		 "t.json:12:45: /pools/quota/requests_per_pod", "0 is out of range [1, 65536]"},
		{"quota unknown key",
		 with_line(12, "  \"pools\": { \"quota\": { \"hbufs\": 3 } }"),
		 "t.json:12:25: /pools/quota/hbufs", "unknown key \"hbufs\""},
		{"dmadev without device", with_line(12, "  \"dma\": { \"backend\": \"dmadev\" }"),
		 "t.json:12:10: /dma", "needs \"device\""},
		{"enum value", with_line(12, "  \"dpa\": { \"backend\": \"fpga\" }"),
		 "t.json:12:23: /dpa/backend", "\"fpga\" is not one of: emu, doca"},
		{"dpa device", with_line(12, "  \"dpa\": { \"device\": \"pci0\" }"),
		 "t.json:12:22: /dpa/device", "\"pci0\" is not a PCI address"},
		{"dpa host device", with_line(12, "  \"dpa\": { \"host_device\": \"3b:00\" }"),
		 "t.json:12:27: /dpa/host_device", "\"3b:00\" is not a PCI address"},
		{"rbac on missing service",
		 with_line(12, "  \"policy\": { \"rbac\": [ { \"service\": \"zz\", \"require_jwt\": false } ] }"),
		 "t.json:12:38: /policy/rbac/0/service", "unknown service \"zz\""},
		{"no address", with_line(5, "    \"ipv6x\": \"::1\","), "t.json:2:11: /node",
		 "needs \"ipv4\" or \"ipv6\""},
	};
	for (const bad_case &bc : cases) {
		auto c = config::load_string(bc.text, "t.json");
		ASSERT_FALSE(c) << bc.what << ": accepted";
		const std::string &m = c.error().message();
		EXPECT_EQ(m.rfind(bc.location, 0), 0u) << bc.what << ": " << m;
		EXPECT_NE(m.find(bc.message), std::string::npos) << bc.what << ": " << m;
	}
}

TEST(Config, NonObjectRootsAreErrors)
{
	/* found by config_fuzz: a root that is not an object crashed the reader */
	for (const char *text : {"[]", "[{\"node\": 1}]", "{\"node\": []}", "{\"node\": null}"}) {
		auto c = config::load_string(text, "t.json");
		ASSERT_FALSE(c) << text;
		EXPECT_EQ(c.error().message().rfind("t.json:1:", 0), 0u) << c.error().message();
	}
}

TEST(Config, JwtKeysValidated)
{
	auto load = [&](const std::string &policy) {
		return config::load_string(with_line(13, ", \"policy\": " + policy + "}"), "t.json");
	};
	auto ok = load(R"({"jwt": {"issuer": "me", "keys": [{"kid": "k1", "alg": "HS256",
		"secret": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"}]},
		"rbac": [{"service": "echo", "default": "deny",
		"rules": [{"methods": ["GET"], "prefix": "/api", "claims": {"role": "admin"}}]}]})");
	ASSERT_TRUE(ok) << ok.error().message();
	ASSERT_TRUE(ok->policy.jwt.has_value());
	EXPECT_EQ(ok->policy.jwt->keys.at(0).secret.size(), 32u);
	EXPECT_EQ(ok->policy.rbac.at(0).rules.at(0).claims.at("role"), "admin");

	auto short_secret = load(R"({"jwt": {"keys": [{"kid": "k1", "alg": "HS256", "secret": "c2hvcnQ"}]}})");
	ASSERT_FALSE(short_secret);
	EXPECT_NE(short_secret.error().message().find("at least 32"), std::string::npos);

	/* secrets are operator input: plain base64 with padding is taken too (lenient form) */
	auto padded = load(R"({"jwt": {"keys": [{"kid": "k1", "alg": "HS256",
		"secret": "+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}]}})");
	ASSERT_TRUE(padded) << padded.error().message();
	EXPECT_EQ(padded->policy.jwt->keys.at(0).secret.size(), 33u + 32u);
	EXPECT_EQ(padded->policy.jwt->keys.at(0).secret.substr(0, 3), "\xfb\xff\xbf");
	/* ... but not text with '=' inside it, nor a length that would drop bits */
	for (const char *bad : {"MDEyMzQ1Njc4OWFi=2RlZjAxMjM0NTY3ODlhYmNkZWYMDEyMzQ1Njc4OWFi",
				"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWYMDEyMzQ1Njc4OWFiY2"}) {
		auto r = load(std::string(R"({"jwt": {"keys": [{"kid": "k1", "alg": "HS256", "secret": ")") +
			      bad + "\"}]}}");
		ASSERT_FALSE(r) << bad;
		EXPECT_NE(r.error().message().find("/policy/jwt/keys/0/secret: not valid base64url"),
			  std::string::npos)
			<< r.error().message();
	}

	auto bad_alg = load(R"({"jwt": {"keys": [{"kid": "k1", "alg": "none", "secret": "x"}]}})");
	ASSERT_FALSE(bad_alg);
	EXPECT_NE(bad_alg.error().message().find("/policy/jwt/keys/0/alg"), std::string::npos)
		<< bad_alg.error().message();

	auto rbac_needs_jwt = load(R"({"rbac": [{"service": "echo"}]})");
	ASSERT_FALSE(rbac_needs_jwt);
	EXPECT_NE(rbac_needs_jwt.error().message().find("requires JWT"), std::string::npos);
}
