// SPDX-License-Identifier: BSD-3-Clause
// End-to-end fixtures for the ingress gateway: namespaces, veth pairs, dpumesh nodes, pods,
// dpumesh-gateway, and curl run inside the client namespace.
#pragma once

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "mesh_node.h"
#include "netns.h"
#include "output.h"
#include "subprocess.h"

namespace dpumesh::test {

/** A command run inside network namespace ns. */
inline std::vector<std::string> in_ns(const std::string &ns, std::vector<std::string> argv)
{
	argv.insert(argv.begin(), {which("ip"), "netns", "exec", ns});
	return argv;
}

/** An HTTP answer as curl saw it. */
struct http_result {
	int code = 0;              /**< 0: no answer (connection closed or refused) */
	std::string headers, body; /**< headers as received (lowercase names not guaranteed) */
	std::string raw;           /**< curl's output, for messages */
};

/** curl against url from namespace ns; body_file: POST it (--data-binary @file). */
inline http_result curl(const std::string &ns, const std::string &url, const temp_dir &d,
			const std::string &body_file = "",
			std::vector<std::string> extra = {})
{
	static int n = 0;
	const std::string out = d.file("curl." + std::to_string(++n) + ".out"),
			  hdr = d.file("curl." + std::to_string(n) + ".hdr");
	std::vector<std::string> a = {"curl", "-sS", "--max-time", "20", "-o", out, "-D", hdr,
				      "-w", "CODE=%{http_code}\n"};
	if (!body_file.empty())
		a.insert(a.end(), {"--data-binary", "@" + body_file, "-H",
				   "Content-Type: application/octet-stream"});
	a.insert(a.end(), extra.begin(), extra.end());
	a.push_back(url);
	auto [rc, o] = run_command(in_ns(ns, a), std::chrono::seconds(30));
	http_result r;
	r.raw = o;
	size_t at = o.find("CODE=");
	if (at != std::string::npos)
		r.code = std::atoi(o.c_str() + at + 5);
	std::ifstream hb(hdr), bb(out, std::ios::binary);
	r.headers.assign(std::istreambuf_iterator<char>(hb), {});
	r.body.assign(std::istreambuf_iterator<char>(bb), {});
	return r;
}

/** The value of header `name` (case-insensitive) in curl's -D output; "" if absent. */
inline std::string header_of(const std::string &headers, std::string name)
{
	std::string low = headers;
	for (auto &c : low)
		c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	for (auto &c : name)
		c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	size_t at = low.rfind("\n" + name + ":");
	if (at == std::string::npos)
		return "";
	size_t v = at + name.size() + 2;
	size_t end = headers.find('\r', v);
	std::string val = headers.substr(v, end == std::string::npos ? std::string::npos : end - v);
	while (!val.empty() && val[0] == ' ')
		val.erase(0, 1);
	return val;
}

/** Deterministic bytes of a given size (seeded), written to a file too. */
inline std::string make_body(size_t n, uint32_t seed)
{
	std::string b(n, '\0');
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = static_cast<char>(x);
	}
	return b;
}

/** dpumesh-gateway running in namespace ns with config text. */
class ingress_proc {
public:
	/** `wrap`: a command the gateway runs under (e.g. prlimit and its options). */
	ingress_proc(const std::string &ns, const std::string &config,
		     std::vector<std::string> wrap = {})
	{
		std::ofstream(dir.file("ingress.json")) << config;
		wrap.insert(wrap.end(),
			    {bin_path("dpumesh-gateway"), "--config", dir.file("ingress.json")});
		proc = std::make_unique<subprocess>(in_ns(ns, wrap));
		up = proc->wait_output([](const std::string &o) {
			return o.find("READY") != std::string::npos ||
			       o.find("dpumesh-gateway: ") != std::string::npos;
		}, 10s) && proc->output().find("READY") != std::string::npos;
	}
	std::string stop()
	{
		proc->signal(SIGINT);
		EXPECT_EQ(proc->wait(10s), 0) << proc->output();
		return proc->output();
	}
	temp_dir dir;
	std::unique_ptr<subprocess> proc;
	bool up = false;
};

} // namespace dpumesh::test
