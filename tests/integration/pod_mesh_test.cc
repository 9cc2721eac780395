// SPDX-License-Identifier: BSD-3-Clause
// Pods as real processes (dpumesh-pod on libdpumesh) registered with a DPU side run by
// this test: registrar + pod_registry + a harness that moves messages with CPU copies
// through the security core (take_tx, take_rx_slots, deliver, complete_tx).
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <tuple>

#include "cpu_mesh.h"
#include "fds.h"
#include "dpumesh/podreg/registrar.h"
#include "dpumesh/wire/l7.h"
#include "dpumesh/podreg/pod_registry.h"
#include "subprocess.h"

namespace {

using namespace dpumesh;
using test::subprocess;
using namespace std::chrono_literals;

using dpumesh::test::count_fds;

std::vector<config::service_config> services()
{
	return {{"echo", 4}, {"client", 4}};
}

/* The DPU side (tests/support/cpu_mesh.h) with this test's services. */
class mesh : public dpumesh::test::cpu_mesh {
public:
	explicit mesh(const std::string &sock) : cpu_mesh(sock, services()) {}
};

/* Value of "key=" in a line. */
uint64_t field(const std::string &line, const std::string &key)
{
	std::string k = " " + key;
	k += "=";
	size_t at = line.find(k);
	if (at == std::string::npos)
		return UINT64_MAX;
	return std::strtoull(line.c_str() + at + k.size(), nullptr, 0);
}

std::string pod_bin() { return std::string(DPUMESH_BINARY_DIR) + "/bin/dpumesh-pod"; }

class pod_mesh : public ::testing::Test {
protected:
	void SetUp() override
	{
		fds_before = count_fds();
		sock = dir.file("ctrl.sock");
		m = std::make_unique<mesh>(sock);
	}
	void expect_idle()
	{
		EXPECT_TRUE(m->run_until([&] { return m->reg.nb_pods() == 0; }, 10s));
		EXPECT_EQ(m->reg.nb_pods(), 0u);
		EXPECT_EQ(m->reg.mkeys().size(), 0u);
		EXPECT_EQ(m->srv.nb_connections(), 0u);
		for (uint32_t i = 0; i < DPUMESH_MAX_PODS; i++)
			EXPECT_EQ(m->reg.table()[i].is_active, 0u);
		retired = m->reg.retired_counters();
		requests_delivered = m->requests_delivered;
		requests_refused = m->requests_refused;
		m.reset();
		EXPECT_EQ(count_fds(), fds_before);
	}
	test::temp_dir dir;
	std::string sock;
	std::unique_ptr<mesh> m;
	int fds_before = 0;
	pod_counters retired;
	uint64_t requests_delivered = 0, requests_refused = 0;
};

/* dpumesh-pod refuses a number it cannot use, before it connects anywhere: exit 64 (usage)
 * naming the argument or variable. strtoul()/strtod() read "abc" as 0 and "8k" as 8: a
 * client of window "abc" ran with none, a rate of "fast" unpaced. An empty variable is an
 * unset one (a script's VAR=""). */
TEST(pod_cli, refuses_numbers_it_cannot_use)
{
	const std::string none = "/nonexistent/dpumesh-pod-cli.sock";
	const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
		{{"client", none, "ten", "1", "100"}, "N \"ten\": want a whole number"},
		{{"client", none, "10", "1", "-5"}, "MAXBODY \"-5\": want a whole number"},
		{{"client", none, "10", "1", "100", "flood", "0"}, "TXSLOTS \"0\": want"},
		{{"DPUMESH_CLIENT_WINDOW=abc", "client", none, "10", "1", "100"},
		 "DPUMESH_CLIENT_WINDOW \"abc\": want a whole number in [1, "},
		{{"DPUMESH_CLIENT_RATE=fast", "client", none, "10", "1", "100"},
		 "DPUMESH_CLIENT_RATE \"fast\": want a number in [0, "},
		{{"DPUMESH_CLIENT_SECONDS=nan", "client", none, "10", "1", "100"},
		 "DPUMESH_CLIENT_SECONDS \"nan\": want a number"},
		{{"DPUMESH_TEST_BODY_SLOT=8k", "echo", none}, "DPUMESH_TEST_BODY_SLOT \"8k\": want"},
		{{"DPUMESH_ECHO_DELAY_US=-1", "echo", none}, "DPUMESH_ECHO_DELAY_US \"-1\": want"},
	};
	for (const auto &[args, want] : cases) {
		std::vector<std::string> a = {"/usr/bin/env"};
		size_t i = 0;
		for (; i < args.size() && args[i].find('=') != std::string::npos; i++)
			a.push_back(args[i]);
		a.push_back(pod_bin());
		a.insert(a.end(), args.begin() + static_cast<long>(i), args.end());
		test::expect_refusal(a, 64, want);
	}
	/* an empty variable is unset: the client gets as far as the socket */
	const auto [rc, out] = test::run_command(
		{"/usr/bin/env", "DPUMESH_CLIENT_RATE=", "DPUMESH_CLIENT_WINDOW=", pod_bin(), "client", none,
		 "10", "1", "100"});
	EXPECT_EQ(rc, 2) << out;
	EXPECT_NE(out.find("OPEN FAILED"), std::string::npos) << out;
}

TEST_F(pod_mesh, echo_roundtrip_across_processes)
{
	subprocess echo({pod_bin(), "echo", sock});
	std::string ready = m->wait_line(echo, "READY");
	ASSERT_FALSE(ready.empty()) << echo.output();
	const int fds_registered = count_fds();
	EXPECT_EQ(m->reg.nb_pods(), 1u);
	{
		subprocess client({pod_bin(), "client", sock, "400", "7", "8192"});
		std::string done = m->wait_line(client, "DONE");
		ASSERT_FALSE(done.empty()) << client.output();
		EXPECT_EQ(client.wait(10s), 0) << client.output();
		EXPECT_EQ(field(done, "ok"), 400u) << done;
		EXPECT_EQ(field(done, "bad"), 0u) << done;
		EXPECT_EQ(m->delivered, 800u); /* 400 requests + 400 responses */
	}
	EXPECT_TRUE(m->run_until([&] { return m->reg.nb_pods() == 1; }, 10s));
	EXPECT_EQ(count_fds(), fds_registered); /* the client's fds are all gone */
	echo.signal(SIGTERM);
	echo.wait(5s);
	expect_idle();
	EXPECT_EQ(retired.tx_refused_total(), 0u);
	EXPECT_EQ(retired.refill_refused_total(), 0u);
}

TEST_F(pod_mesh, malicious_descriptors_refused_and_reported)
{
	subprocess echo({pod_bin(), "echo", sock});
	std::string ready = m->wait_line(echo, "READY");
	ASSERT_FALSE(ready.empty()) << echo.output();
	uint32_t victim = static_cast<uint32_t>(field(ready, "pod"));
	auto reg = m->reg.registration(victim);
	ASSERT_TRUE(reg.is_ok());
	const region *vr = m->reg.mkeys().find(reg->mkey);
	ASSERT_NE(vr, nullptr);
	/* Canary: every byte of the victim's region (all its pools and rings). */
	std::string before(static_cast<const char *>(vr->data()), vr->size());
	char txh[32], rxb[32];
	std::snprintf(txh, sizeof(txh), "0x%llx", static_cast<unsigned long long>(field(ready, "txh")));
	std::snprintf(rxb, sizeof(rxb), "0x%llx", static_cast<unsigned long long>(field(ready, "rxb")));
	subprocess evil({pod_bin(), "evil", sock, txh, rxb});
	std::string done = m->wait_line(evil, "DONE");
	ASSERT_FALSE(done.empty()) << evil.output();
	EXPECT_EQ(evil.wait(10s), 0);
	const char *expect =
		"2,2,2,3,3,2,2,1,1,1,1,2,1,2,1,1,"; /* BAD_ADDRESS=2 TOO_LARGE=3 BAD_DESCRIPTOR=1 */
	EXPECT_NE(done.find(std::string("statuses=") + expect), std::string::npos) << done;
	EXPECT_EQ(field(done, "responses"), 0u);
	EXPECT_EQ(std::memcmp(before.data(), vr->data(), vr->size()), 0) << "victim memory changed";
	EXPECT_EQ(m->delivered, 0u);
	echo.signal(SIGTERM);
	echo.wait(5s);
	expect_idle();
	const pod_counters &c = retired;
	auto n = [&](tx_refusal r) { return c.tx_refused[static_cast<size_t>(r)]; };
	EXPECT_EQ(n(tx_refusal::header_outside), 3u * 4); /* #0 #2 #11 #13 */
	EXPECT_EQ(n(tx_refusal::body_outside), 3u);
	EXPECT_EQ(n(tx_refusal::header_too_long), 3u);
	EXPECT_EQ(n(tx_refusal::body_too_long), 3u);
	EXPECT_EQ(n(tx_refusal::header_unaligned), 3u);
	EXPECT_EQ(n(tx_refusal::body_unaligned), 3u);
	EXPECT_EQ(n(tx_refusal::reserved_bits), 3u * 2);
	EXPECT_EQ(n(tx_refusal::bad_op), 3u * 2);
	EXPECT_EQ(n(tx_refusal::bad_case), 3u);
	EXPECT_EQ(n(tx_refusal::no_header), 3u);
	EXPECT_EQ(n(tx_refusal::body_mismatch), 3u);
	EXPECT_EQ(c.tx_refused_total(), 3u * 16);
	EXPECT_EQ(c.tx_taken, 0u);
}

TEST_F(pod_mesh, crash_cleans_up_and_restart_gets_new_generation)
{
	subprocess echo1({pod_bin(), "echo", sock});
	subprocess echo2({pod_bin(), "echo", sock});
	std::string r1 = m->wait_line(echo1, "READY"), r2 = m->wait_line(echo2, "READY");
	ASSERT_FALSE(r1.empty() || r2.empty());
	const int fds_two_echo = count_fds();
	{
		subprocess client({pod_bin(), "client", sock, "3000", "11", "4096"});
		ASSERT_TRUE(m->run_until([&] { return m->delivered >= 300; }, 20s));
		echo1.signal(SIGKILL);
		std::string done = m->wait_line(client, "DONE");
		ASSERT_FALSE(done.empty()) << client.output();
		EXPECT_EQ(client.wait(10s), 0) << client.output();
		EXPECT_EQ(field(done, "bad"), 0u);
		EXPECT_EQ(field(done, "ok") + field(done, "refused") + field(done, "mesh_err"), 3000u)
			<< done;
		EXPECT_GT(field(done, "ok"), 300u) << done; /* echo2 kept working */
	}
	echo1.wait(5s);
	ASSERT_TRUE(m->run_until([&] { return m->reg.nb_pods() == 1; }, 10s));
	EXPECT_EQ(m->reg.mkeys().size(), 1u);
	/* Restart under the same service: a new generation. */
	subprocess echo3({pod_bin(), "echo", sock});
	std::string r3 = m->wait_line(echo3, "READY");
	ASSERT_FALSE(r3.empty());
	EXPECT_NE(field(r3, "gen"), field(r1, "gen"));
	EXPECT_NE(field(r3, "gen"), field(r2, "gen"));
	/* Work stamped with the dead registration is refused. */
	uint32_t old = dpumesh_pod_handle(field(r1, "pod"), field(r1, "gen"));
	rx_slots s;
	EXPECT_EQ(m->reg.take_rx_slots(old, 64, 64, &s), static_cast<uint32_t>(DPUMESH_STATUS_DEST_GONE));
	sw_descriptor d = {};
	EXPECT_EQ(m->reg.deliver(old, d), static_cast<uint32_t>(DPUMESH_STATUS_DEST_GONE));
	EXPECT_EQ(count_fds(), fds_two_echo);
	echo2.signal(SIGTERM);
	echo3.signal(SIGTERM);
	echo2.wait(5s);
	echo3.wait(5s);
	expect_idle();
}

/* A grace period asked for by a real-time control thread (lcores.control_priority) ends
 * once a data-path thread that shares its CPU, time-sharing, has reported: the wait sleeps
 * between looks. rte_rcu_qsbr_check's own wait spins, which left that thread runnable and
 * not running until the kernel's real-time throttling gave it a turn (~1 s here). */
TEST_F(pod_mesh, a_real_time_control_thread_s_grace_period_lets_a_data_path_thread_on_its_cpu_report)
{
	ASSERT_TRUE(m->reg.dp_thread_register(0).is_ok());
	cpu_set_t mine, one;
	ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
	std::atomic<bool> stop{false};
	std::atomic<uint64_t> reports{0};
	std::thread dp([&] {
		(void)sched_setaffinity(0, sizeof(one), &one);
		while (!stop.load(std::memory_order_relaxed)) {
			m->reg.dp_quiescent(0);
			reports.fetch_add(1, std::memory_order_relaxed);
		}
	});
	auto finish = [&] {
		sched_param other{};
		(void)pthread_setschedparam(pthread_self(), SCHED_OTHER, &other);
		stop.store(true);
		dp.join();
		m->reg.dp_thread_unregister(0);
		(void)sched_setaffinity(0, sizeof(mine), &mine);
	};
	while (reports.load() == 0)
		std::this_thread::sleep_for(1ms);
	sched_param fifo{};
	fifo.sched_priority = 10;
	if (const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo); rc != 0) {
		finish();
		GTEST_SKIP() << "cannot run real-time here: " << std::strerror(rc);
	}
	const auto t0 = std::chrono::steady_clock::now();
	m->reg.dp_synchronize();
	const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
	finish();
	std::printf("grace period from SCHED_FIFO 10, the data-path thread on the same CPU: %.1f ms\n", ms);
	EXPECT_LT(ms, 300.0) << "the grace period waited for a thread that could not run";
}

/* A pod's unregistration waits for the data path's grace period in the background: a
 * data-path thread that reports no quiescence holds up that pod's teardown (and its
 * UNREGISTERED), never another pod's REGISTER (the soak's client starts timed out waiting
 * for REGISTERED while the registrar sat in an unregistration's wait). */
TEST_F(pod_mesh, unregistration_waits_in_the_background_and_registrations_go_on)
{
	ASSERT_TRUE(m->reg.dp_thread_register(0).is_ok()); /* online, silent for now */
	subprocess echo1({pod_bin(), "echo", sock});
	ASSERT_FALSE(m->wait_line(echo1, "READY").empty()) << echo1.output();
	/* a client that closes as a pod should: UNREGISTER, then wait for the answer */
	subprocess client({pod_bin(), "client", sock, "20", "3", "256"});
	std::string r1 = m->wait_line(client, "READY");
	ASSERT_FALSE(r1.empty()) << client.output();
	ASSERT_FALSE(m->wait_line(client, "DONE").empty()) << client.output();
	ASSERT_TRUE(m->run_until([&] { return m->reg.nb_retiring() == 1; }, 10s));
	EXPECT_EQ(m->srv.counters().unregistered, 1u);

	subprocess echo2({pod_bin(), "echo", sock});
	std::string r2 = m->wait_line(echo2, "READY");
	ASSERT_FALSE(r2.empty()) << echo2.output();
	EXPECT_NE(field(r2, "pod"), field(r1, "pod")) << "a retiring pod's id is still taken";
	EXPECT_EQ(m->reg.nb_retiring(), 1u);
	EXPECT_EQ(m->reg.nb_pods(), 3u);
	EXPECT_EQ(m->srv.counters().unregister_replies, 0u);
	EXPECT_EQ(m->reg.retirements().retired, 0u);
	EXPECT_EQ(client.wait(300ms), -1) << "answered before its pod was torn down";
	m->run_until([] { return false; }, 20ms); /* past 100 ms: the laggard is named, once */
	m->run_until([] { return false; }, 20ms);
	EXPECT_EQ(m->reg.retirements().lagging, 1u);

	m->reg.dp_quiescent(0); /* the grace period ends */
	ASSERT_TRUE(m->run_until([&] { return m->reg.nb_retiring() == 0; }, 10s));
	EXPECT_EQ(m->srv.counters().unregister_replies, 1u);
	EXPECT_EQ(m->reg.retirements().retired, 1u);
	EXPECT_GE(m->reg.retirements().max_ms, 300u); /* it waited for the thread above */
	EXPECT_EQ(m->reg.nb_pods(), 2u);
	EXPECT_EQ(client.wait(10s), 0) << client.output();
	m->reg.dp_thread_unregister(0);
	echo1.signal(SIGTERM);
	echo2.signal(SIGTERM);
	echo1.wait(5s);
	echo2.wait(5s);
	expect_idle();
}

/* Connections that never register are closed after the registrar's idle time (each held a
 * slot of its max_connections for ever: 512 of them kept every pod out), one that was refused
 * likewise; a registered pod's connection stays however quiet it is. */
TEST_F(pod_mesh, connections_without_a_pod_are_closed_after_the_idle_time)
{
	m->srv.set_idle_close(300ms);
	subprocess echo({pod_bin(), "echo", sock});
	ASSERT_FALSE(m->wait_line(echo, "READY").empty()) << echo.output();
	sockaddr_un a{};
	a.sun_family = AF_UNIX;
	std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock.c_str());
	std::vector<int> silent;
	for (int i = 0; i < 5; i++) {
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		ASSERT_GE(s, 0);
		ASSERT_EQ(connect(s, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0)
			<< std::strerror(errno);
		silent.push_back(s);
	}
	ASSERT_TRUE(m->run_until([&] { return m->srv.nb_connections() == 6; }, 5s));
	const auto t0 = std::chrono::steady_clock::now();
	ASSERT_TRUE(m->run_until([&] { return m->srv.nb_connections() == 1; }, 5s))
		<< m->srv.nb_connections() << " connections";
	EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms) << "closed before the idle time";
	EXPECT_EQ(m->srv.counters().idle_closed, 5u);
	for (int s : silent) { /* the registrar closed its end: EOF */
		char b;
		EXPECT_EQ(recv(s, &b, 1, MSG_DONTWAIT), 0);
		close(s);
	}
	/* the registered pod, silent all along, is still there */
	m->run_until([] { return false; }, 400ms);
	EXPECT_EQ(m->reg.nb_pods(), 1u);
	EXPECT_EQ(m->srv.nb_connections(), 1u);
	echo.signal(SIGTERM);
	echo.wait(5s);
	expect_idle();
}

TEST_F(pod_mesh, full_queue_and_empty_pool_say_try_again)
{
	subprocess echo({pod_bin(), "echo", sock});
	ASSERT_FALSE(m->wait_line(echo, "READY").empty());
	/* TX header pool (128) larger than the TX SQ (64): the SQ fills first -> -EAGAIN. */
	{
		subprocess client({pod_bin(), "client", sock, "200", "3", "2048", "flood", "128"});
		std::string full = m->wait_line(client, "FULL", /*move_tx=*/false);
		ASSERT_FALSE(full.empty()) << client.output();
		EXPECT_EQ(field(full, "sent"), 64u) << full;
		EXPECT_EQ(static_cast<int>(field(full, "rc")), -EAGAIN) << full;
		std::string done = m->wait_line(client, "DONE");
		ASSERT_FALSE(done.empty()) << client.output();
		EXPECT_EQ(client.wait(10s), 0) << client.output();
		EXPECT_EQ(field(done, "ok") + field(done, "refused"), 200u) << done;
	}
	/* TX header pool (32) smaller than the SQ: the pool empties first -> -ENOBUFS. */
	{
		subprocess client({pod_bin(), "client", sock, "100", "4", "2048", "flood", "32"});
		std::string full = m->wait_line(client, "FULL", false);
		ASSERT_FALSE(full.empty()) << client.output();
		EXPECT_EQ(field(full, "sent"), 32u) << full;
		EXPECT_EQ(static_cast<int>(field(full, "rc")), -ENOBUFS) << full;
		std::string done = m->wait_line(client, "DONE");
		EXPECT_EQ(client.wait(10s), 0) << client.output();
		EXPECT_EQ(field(done, "ok") + field(done, "refused"), 100u) << done;
	}
	echo.signal(SIGTERM);
	echo.wait(5s);
	expect_idle();
	/* sent = delivered + refused: every request was either delivered to echo or refused. */
	EXPECT_EQ(requests_delivered + requests_refused, 300u);
}

} // namespace
