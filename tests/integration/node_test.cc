// SPDX-License-Identifier: BSD-3-Clause
// lib/node in-process: nodes built, started, used by pods and stopped 100 times in one EAL,
// with no growth in open fds, memzones or mempool use; and clear errors when a part fails.
#include <dirent.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <rte_memzone.h>
#include <rte_mempool.h>

#include "dpumesh/config/config.h"
#include "dpumesh/host/dpumesh.h"
#include "dpumesh/node/node.h"
#include "eal_env.h"

using namespace dpumesh;
using namespace std::chrono_literals;

namespace {

std::string node_config(const std::string &sock, const std::string &port_dev)
{
	std::string ports = port_dev.empty()
				    ? ""
				    : R"("ports": [ { "name": "p0", "dev": ")" + port_dev +
					      R"(", "role": "external" } ],)";
	return R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.9.0.1",
            "control_socket": ")" + sock + R"(" },
  )" + ports + R"(
  "mempool": { "mbufs": 1023, "cache": 32, "data_room": 2176 },
  "lcores": { "idle": "adaptive", "stages": { "port_rx": 1, "port_tx": 1, "sidecar": 1, "dpa": 1 } },
  "pools": { "tx_header": { "slots": 16, "slot_size": 1024 }, "tx_body": { "slots": 16, "slot_size": 4096 },
             "rx_header": { "slots": 16, "slot_size": 1024 }, "rx_body": { "slots": 16, "slot_size": 4096 },
             "sq_depth": 16 },
  "services": [ { "name": "echo", "max_pods": 2 }, { "name": "client", "max_pods": 2 } ]
})";
}

unsigned open_fds()
{
	unsigned n = 0;
	DIR *d = opendir("/proc/self/fd");
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

unsigned memzones()
{
	unsigned n = 0;
	rte_memzone_walk([](const rte_memzone *, void *arg) { ++*static_cast<unsigned *>(arg); }, &n);
	return n;
}

/* net_null with no-rx: a port that is probed and removed with the node, receives nothing
 * (net_ring would do, but its rings outlive the device by design, so memzones would grow). */

/** A pod on its own thread: registers, answers (echo) or sends one request (client), and
 * runs its event loop until told to stop; the node may vanish under it. */
struct pod {
	std::thread thread;
	std::atomic<bool> registered{false}, stop{false};
	std::atomic<int> open_rc{1}, response_status{0};

	static void on_request(dpumesh_t *h, dpumesh_msg *m, void *)
	{
		dpumesh_send_response(h, 0, m, 200, nullptr, 0, m->body, m->body_len);
		dpumesh_msg_release(h, m);
	}
	static void on_response(dpumesh_t *h, dpumesh_msg *m, void *user)
	{
		static_cast<pod *>(user)->response_status.store(m->http_status ? m->http_status : 1);
		dpumesh_msg_release(h, m);
	}

	pod(const std::string &sock, const char *service, bool client)
	{
		thread = std::thread([this, sock, service, client] {
			dpumesh_options o{};
			o.socket_path = sock.c_str();
			o.service = service;
			o.nb_workers = 1;
			o.geometry = dpumesh_default_geometry();
			o.geometry.tx_header.slots = o.geometry.rx_header.slots = 16;
			o.geometry.tx_body.slots = o.geometry.rx_body.slots = 16;
			o.geometry.tx_body.slot_size = o.geometry.rx_body.slot_size = 4096;
			o.geometry.sq_depth = 16;
			o.callbacks.on_request = on_request;
			o.callbacks.on_response = on_response;
			o.user = this;
			dpumesh_t *h = nullptr;
			char err[128] = "";
			int rc = dpumesh_open(&o, &h, err, sizeof(err));
			open_rc.store(rc);
			if (rc != 0)
				return;
			registered.store(true);
			if (client) {
				static const char body[] = "ping";
				dpumesh_request r{};
				r.service = "echo";
				r.method = "GET";
				r.path = "/";
				r.body = body;
				r.body_len = sizeof(body);
				r.req_id = 1;
				r.deadline_ms = 2000;
				if (dpumesh_send_request(h, 0, &r) != 0)
					response_status.store(-1);
			}
			int ep = epoll_create1(EPOLL_CLOEXEC);
			epoll_event ev{};
			ev.events = EPOLLIN;
			epoll_ctl(ep, EPOLL_CTL_ADD, dpumesh_fd(h), &ev);
			while (!stop.load()) {
				epoll_event out;
				if (epoll_wait(ep, &out, 1, 2) > 0)
					dpumesh_progress(h);
			}
			close(ep);
			dpumesh_close(h);
		});
	}
	~pod()
	{
		stop.store(true);
		thread.join();
	}
};

/** Polls the node's control path until pred() or the limit. */
template <typename Pred>
bool drive(node::instance &n, Pred pred, std::chrono::milliseconds limit = 5s)
{
	auto end = std::chrono::steady_clock::now() + limit;
	while (!pred()) {
		if (std::chrono::steady_clock::now() > end)
			return false;
		n.poll_control();
		std::this_thread::sleep_for(1ms);
	}
	return true;
}

std::string sock_path(const char *tag)
{
	return "/tmp/dpumesh-node-test-" + std::string(tag) + "-" + std::to_string(getpid()) + ".sock";
}

} // namespace

TEST(Node, StartsServesAndStops100TimesWithoutGrowth)
{
	const std::string sock = sock_path("loop");
	auto cfg = config::load_string(node_config(sock, "net_null0,no-rx=1"), "node_test");
	ASSERT_TRUE(cfg) << cfg.error().message();

	unsigned fds0 = 0, zones0 = 0;
	for (int i = 0; i < 100; i++) {
		auto n = node::create(*cfg, {});
		ASSERT_TRUE(n) << "iteration " << i << ": " << n.error().message();
		ASSERT_TRUE((*n)->start().is_ok());
		{
			pod echo(sock, "echo", false);
			ASSERT_TRUE(drive(**n, [&] { return echo.registered.load() || echo.open_rc.load() < 0; }))
				<< "iteration " << i;
			ASSERT_EQ(echo.open_rc.load(), 0) << "iteration " << i;
			pod client(sock, "client", true);
			ASSERT_TRUE(drive(**n, [&] { return client.response_status.load() != 0; }))
				<< "iteration " << i << ": no answer";
			EXPECT_EQ(client.response_status.load(), 200) << "iteration " << i;
			EXPECT_EQ((*n)->registry().nb_pods(), 2u);
			/* the node stops with both pods attached; they notice and close afterwards */
			(*n)->stop();
		}
		(*n)->drain();
		EXPECT_EQ(rte_mempool_in_use_count((*n)->packet_pool()), 0u) << "iteration " << i;
		EXPECT_EQ(rte_mempool_in_use_count((*n)->message_pool()), 0u) << "iteration " << i;
		n->reset();
		if (i == 0) { /* after the first round: EAL's lazily opened fds and zones exist */
			fds0 = open_fds();
			zones0 = memzones();
		} else {
			ASSERT_EQ(open_fds(), fds0) << "fd growth at iteration " << i;
			ASSERT_EQ(memzones(), zones0) << "memzone growth at iteration " << i;
		}
	}
}

TEST(Node, AControlPassThatComesLateIsCountedAsAStall)
{
	const std::string sock = sock_path("watch");
	auto cfg = config::load_string(node_config(sock, "net_null0,no-rx=1"), "node_test");
	ASSERT_TRUE(cfg) << cfg.error().message();
	auto n = node::create(*cfg, {});
	ASSERT_TRUE(n) << n.error().message();
	ASSERT_TRUE((*n)->start().is_ok());
	for (int i = 0; i < 20; i++) {
		(*n)->poll_control();
		std::this_thread::sleep_for(5ms);
	}
	auto w = (*n)->control_watched();
	EXPECT_EQ(w.passes, 20u);
	EXPECT_EQ(w.stalls, 0u); /* 5 ms apart: no stall (a loaded box may stretch one, not to 500 ms) */
	EXPECT_LT(w.worst_gap_ns, uint64_t{node::instance::control_stall_ms} * 1000000u);
	/* the control thread away for longer than the threshold: one stall, its gap measured */
	std::this_thread::sleep_for(std::chrono::milliseconds(node::instance::control_stall_ms + 100));
	(*n)->poll_control();
	w = (*n)->control_watched();
	EXPECT_EQ(w.passes, 21u);
	EXPECT_EQ(w.stalls, 1u);
	EXPECT_GE(w.worst_gap_ns, uint64_t{node::instance::control_stall_ms + 100} * 1000000u);
	EXPECT_EQ(w.slow_passes, 0u);
	(*n)->poll_control();
	EXPECT_EQ((*n)->control_watched().stalls, 1u);
	(*n)->stop();
}

TEST(Node, FailedPartIsAClearErrorAndLeavesNothing)
{
	const unsigned fds0 = open_fds(), zones0 = memzones();
	/* a port that cannot be probed */
	auto bad_port = config::load_string(node_config(sock_path("badport"), "net_nosuchpmd0"), "x");
	ASSERT_TRUE(bad_port);
	auto n = node::create(*bad_port, {});
	ASSERT_FALSE(n);
	EXPECT_NE(n.error().message().find("ports: "), std::string::npos) << n.error().message();
	/* a control socket that cannot be bound: its directory does not exist */
	auto bad_sock = config::load_string(node_config("/nonexistent-dir/x.sock", ""), "x");
	ASSERT_TRUE(bad_sock);
	n = node::create(*bad_sock, {});
	ASSERT_FALSE(n);
	EXPECT_NE(n.error().message().find("control socket: bind /nonexistent-dir/x.sock"),
		  std::string::npos)
		<< n.error().message();
	EXPECT_EQ(open_fds(), fds0);
	EXPECT_EQ(memzones(), zones0);
	/* and a good node still comes up afterwards: names and ports were all given back */
	auto good = config::load_string(node_config(sock_path("good"), "net_null0,no-rx=1"), "x");
	ASSERT_TRUE(good);
	auto g = node::create(*good, {});
	ASSERT_TRUE(g) << g.error().message();
}

/* A "doca:<PCI>" path needs libdpumesh built with DOCA; this portable one says so */
TEST(Node, PortableLibdpumeshRefusesADocaPathClearly)
{
	dpumesh_options o{};
	o.socket_path = "doca:0000:03:00.1";
	o.service = "echo";
	o.nb_workers = 1;
	o.geometry = dpumesh_default_geometry();
	dpumesh_t *h = nullptr;
	char err[256] = "";
	EXPECT_EQ(dpumesh_open(&o, &h, err, sizeof(err)), -ENOTSUP);
	EXPECT_EQ(h, nullptr);
	EXPECT_NE(std::string(err).find("built without DOCA"), std::string::npos) << err;
	EXPECT_NE(std::string(err).find("-DDPUMESH_DOCA=ON"), std::string::npos) << err;
}

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("node", {}, 512));
	return RUN_ALL_TESTS();
}
