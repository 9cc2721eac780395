// SPDX-License-Identifier: BSD-3-Clause
// A dpumesh process for end-to-end tests: its own config (with @SOCK@ for the control socket)
// in its own directory, a unique --file-prefix, pods started against it, stopped with SIGINT.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "eal_env.h"
#include "output.h"
#include "subprocess.h"

namespace dpumesh::test {

using namespace std::chrono_literals;

/** dpumesh with a config of its own, in its own directory. */
class mesh_node {
public:
	/** config: JSON with @SOCK@ for the control socket path. */
	mesh_node(const std::string &tag, std::string config, std::vector<std::string> eal_extra,
		  std::vector<std::string> app_extra = {})
	{
		sock = dir.file("ctl.sock");
		prefix = "dpumesh-" + tag + "-" + std::to_string(getpid());
		for (size_t at; (at = config.find("@SOCK@")) != std::string::npos;)
			config.replace(at, 6, sock);
		std::ofstream(dir.file("node.json")) << config;
		std::vector<std::string> args = {bin_path("dpumesh"), node_lcores_arg(), "--no-huge", "-m",
						 "512", "--no-pci", "--no-shconf",
						 "--file-prefix=" + prefix,
						 "--log-level=lib.eal:warning"};
		args.insert(args.end(), eal_extra.begin(), eal_extra.end());
		args.insert(args.end(), {"--", node_workers_arg(),
					 "--config", dir.file("node.json"), "--stats-period", "1",
					 "--stats-format", "full"});
		args.insert(args.end(), app_extra.begin(), app_extra.end());
		proc = std::make_unique<subprocess>(args);
		up = proc->wait_output([](const std::string &o) {
			return o.find("Ctrl-C to stop") != std::string::npos ||
			       o.find("dpumesh: stopped") != std::string::npos;
		}, 30s) && proc->output().find("Ctrl-C to stop") != std::string::npos;
	}

	std::unique_ptr<subprocess> pod(const std::vector<std::string> &args,
					const std::map<std::string, std::string> &env = {})
	{
		return start_pod(args, env);
	}

	/** Waits until the last periodic "sidecar:" line has key >= n. */
	bool wait_sidecar(const std::string &key, long long n, std::chrono::milliseconds limit)
	{
		return proc->wait_output([&](const std::string &o) {
			return value_of(o, "sidecar:", key) >= n;
		}, limit);
	}

	std::string stop()
	{
		proc->signal(SIGINT);
		int rc = proc->wait(30s);
		EXPECT_EQ(rc, 0) << proc->output();
		return proc->output();
	}

	temp_dir dir;
	std::string sock;
	std::string prefix; /* EAL's --file-prefix (telemetry_client.h runtime_dir()) */
	std::unique_ptr<subprocess> proc;
	bool up = false;
};

inline bool ready(subprocess &p)
{
	return p.wait_output([](const std::string &o) { return o.find("READY") != std::string::npos; },
			     20s);
}

} // namespace dpumesh::test
