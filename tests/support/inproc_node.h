// SPDX-License-Identifier: BSD-3-Clause
// A dpumesh node built in the test's own process (lib/node, EAL from the test's eal_env) with
// its control loop on a thread, and real pod processes (dpumesh-pod) against it. Tests read
// the node's counters from control snapshots instead of scraping printed text.
//
//   dpumesh::test::inproc_node n("c3", config_json_with_@SOCK@, "cpu");
//   ASSERT_TRUE(n.up) << n.error;
//   auto echo = n.pod({"echo", n.sock});
//   control::snapshot fin = n.stop();            // pods unregistered, lcores stopped
//   EXPECT_EQ(fin.sidecar_value("answered"), 500u);
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <rte_mempool.h>

#include "dpumesh/config/config.h"
#include "dpumesh/control/control.h"
#include "dpumesh/control/snapshot.h"
#include "dpumesh/node/node.h"
#include "eal_env.h"
#include "output.h"
#include "subprocess.h"

namespace dpumesh::test {

class inproc_node {
public:
	/**
	 * @param config JSON with @SOCK@ where the control socket path goes
	 * @param dma    "cpu" or "dmadev:NAME" (the dmadev must exist in the test's EAL)
	 */
	inproc_node(const std::string &tag, std::string config, const std::string &dma = "cpu")
	{
		sock = dir.file(tag + ".sock");
		for (size_t at; (at = config.find("@SOCK@")) != std::string::npos;)
			config.replace(at, 6, sock);
		auto cfg = config::load_string(config, tag + ".json");
		if (!cfg) {
			error = cfg.error().message();
			return;
		}
		if (test_workers() > 1)
			(void)config::set_workers(*cfg, test_workers());
		if (dma != "cpu") {
			cfg->dma.backend = config::dma_backend::dmadev;
			cfg->dma.device = dma.substr(dma.find(':') + 1);
		}
		auto n = node::create(*cfg, {});
		status st = n ? (*n)->start() : n.error();
		if (!st.is_ok()) {
			error = st.message();
			return;
		}
		_node = std::move(*n);
		_ctl = std::make_unique<control::node>(*_node, false, nullptr);
		_control = std::thread([this] {
			/* as a node on a shared host is advised to run (docs/config.md, "The
			 * control thread's priority"): the test's pods and the suite's other tests
			 * share its CPUs, and a time-sharing control thread has been left waiting
			 * past the pods' 5 s REGISTERED wait under CI's load. As root only. */
			if (geteuid() == 0)
				(void)lcore::set_control_priority(10);
			while (!_quit.load()) {
				{
					std::lock_guard<std::mutex> lock(_control_mu);
					_node->poll_control();
					_ctl->tick();
				}
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
			}
		});
		up = true;
	}
	~inproc_node()
	{
		if (up)
			stop();
	}
	inproc_node(const inproc_node &) = delete;
	inproc_node &operator=(const inproc_node &) = delete;

	/** Starts `dpumesh-pod ARGS` with extra environment variables. */
	std::unique_ptr<subprocess> pod(const std::vector<std::string> &args,
					const std::map<std::string, std::string> &env = {})
	{
		return start_pod(args, env);
	}

	/** The counters now (any section). */
	control::snapshot snapshot() const { return control::take_snapshot(*_ctl); }
	const control::node &control() const { return *_ctl; }
	/**
	 * control::pods() between two passes of the control thread: the registry's own state
	 * changes only on that thread (in dpumesh the console shares it), so a test thread
	 * reads it under the lock the passes hold, not beside them.
	 */
	result<std::vector<control::pod_view>> pods(const std::string &which)
	{
		std::lock_guard<std::mutex> lock(_control_mu);
		return control::pods(*_ctl, which);
	}

	/**
	 * Unregisters the pods, stops the lcores and returns the final counters; then frees the
	 * data path and records what its pools still hold (mbufs_in_use, msgs_in_use).
	 */
	control::snapshot stop()
	{
		if (!up)
			return {};
		up = false;
		_quit.store(true);
		_control.join();
		_node->stop();
		control::snapshot fin = control::take_snapshot(*_ctl);
		_ctl.reset();
		_node->drain();
		mbufs_in_use = rte_mempool_in_use_count(_node->packet_pool());
		msgs_in_use = rte_mempool_in_use_count(_node->message_pool()) +
			      rte_mempool_in_use_count(_node->message_reserve());
		_node.reset();
		return fin;
	}

	temp_dir dir;
	std::string sock;
	bool up = false;
	std::string error;
	unsigned mbufs_in_use = 0, msgs_in_use = 0;

private:
	std::unique_ptr<node::instance> _node;
	std::unique_ptr<control::node> _ctl;
	std::thread _control;
	std::mutex _control_mu; /* a pass of the control thread; pods() */
	std::atomic<bool> _quit{false};
};

} // namespace dpumesh::test
