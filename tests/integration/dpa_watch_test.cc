// SPDX-License-Identifier: BSD-3-Clause
// The DPA emulator's watch of the pods' TX doorbells across an unregistration whose grace
// period ends before the DPA thread has seen the pod go (docs/memory-model.md, "What a
// data-path thread keeps across quiescence"). The thread's poll is driven from the test's
// thread, so the interleaving that a loaded box makes now and then is made here every time:
// the thread reports quiescence without having looked at the membership since the pod left,
// the registry tears the pod down and closes its TX doorbell, a new pod gets that very
// descriptor number, and only then does the thread look. A parked new pod's ring must still
// wake the thread. Real EAL, a real registry, memfd regions, the cpu DMA engine.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dpumesh/config/config.h"
#include "dpumesh/dpa/emulator.h"
#include "dpumesh/podlayout/pod_layout.h"
#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/region/region.h"
#include "eal_env.h"

using namespace dpumesh;

namespace {

const char *config_json = R"({
  "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.0.0.1",
            "control_socket": "/nonexistent/dpa-watch.sock" },
  "dpa": { "threads": 1 },
  "pools": { "tx_header": { "slots": 64, "slot_size": 1024 }, "tx_body": { "slots": 64, "slot_size": 4096 },
             "rx_header": { "slots": 64, "slot_size": 1024 }, "rx_body": { "slots": 64, "slot_size": 4096 },
             "sq_depth": 64 },
  "services": [ { "name": "svc", "max_pods": 2 } ]
})";

dpumesh_geometry geometry()
{
	dpumesh_geometry g{};
	g.tx_header = g.rx_header = {64, 1024};
	g.tx_body = g.rx_body = {64, 4096};
	g.sq_depth = 64;
	return g;
}

class dpa_watch : public ::testing::Test {
protected:
	void SetUp() override
	{
		auto c = config::load_string(config_json, "dpa_watch.json");
		ASSERT_TRUE(c) << c.error().message();
		cfg = std::make_unique<config::node_config>(std::move(*c));
		reg = std::make_unique<pod_registry>(cfg->pools, cfg->services, 1);
		auto e = dpa::emulator::create(*cfg, *reg, 1);
		ASSERT_TRUE(e) << e.error().message();
		emu = std::move(*e);
		tx = emu->tx_stage(0);
		ASSERT_NE(tx.prepare_sleep, nullptr);
		ASSERT_GE(tx.wait_fd, 0);
		ASSERT_EQ(dpumesh_pod_layout_compute(&req.geometry, &layout), 0);
	}
	void TearDown() override
	{
		if (emu)
			(void)emu->stop();
		emu.reset();
		reg.reset();
	}

	result<region> new_region(const std::string &name)
	{
		return region::create(name, layout.total_size, false);
	}

	/* One DPA pass (TX kernel's stage: it looks at the membership first). */
	void poll() { (void)tx.poll(tx.arg); }

	/* Unregisters a pod the way the registrar does, this test being the DPA thread too. */
	void retire(uint32_t pod_id)
	{
		ASSERT_TRUE(reg->begin_unregister(pod_id));
		uint32_t done[4];
		for (int i = 0; i < 1000 && reg->nb_retiring() != 0; i++) {
			poll();
			(void)reg->poll_retiring(done, 4);
		}
		ASSERT_EQ(reg->nb_retiring(), 0u);
	}

	/* Readable: the lcore that sleeps on this thread's wait_fd would wake. */
	bool wait_fd_readable()
	{
		epoll_event ev;
		return epoll_wait(tx.wait_fd, &ev, 1, 0) == 1;
	}

	std::unique_ptr<config::node_config> cfg;
	std::unique_ptr<pod_registry> reg;
	std::unique_ptr<dpa::emulator> emu;
	lcore::stage_def tx{};
	register_request req{"svc", 1, geometry()};
	dpumesh_pod_layout layout{};
};

TEST_F(dpa_watch, APodThatGetsALeavingPodsDoorbellNumberStillWakesTheThread)
{
	/* Pod ids are handed out round robin: churn through 255 so that the leaving pod has the
	 * last id and the next pod the first, which the thread's look at its pods takes first. */
	for (uint32_t i = 0; i < DPUMESH_MAX_PODS - 1; i++) {
		auto r = new_region("dpa-watch-churn");
		ASSERT_TRUE(r) << r.error().message();
		uint32_t code = 0;
		auto p = reg->register_pod(req, std::move(*r), &code);
		ASSERT_TRUE(p) << p.error().message();
		ASSERT_EQ(p->pod_id, i);
		poll(); /* the thread watches it */
		retire(p->pod_id);
	}
	auto ra = new_region("dpa-watch-a");
	auto rb = new_region("dpa-watch-b"); /* before A's descriptors are freed */
	ASSERT_TRUE(ra && rb);
	uint32_t code = 0;
	auto a = reg->register_pod(req, std::move(*ra), &code);
	ASSERT_TRUE(a) << a.error().message();
	ASSERT_EQ(a->pod_id, DPUMESH_MAX_PODS - 1);
	const int a_bell = a->tx_doorbell_fd;
	poll();
	ASSERT_TRUE(reg->handle_live(a->handle));

	/* A leaves. The thread's pass that read the old membership reports quiescence after
	 * the grace period began: the report, not another look. */
	ASSERT_TRUE(reg->begin_unregister(a->pod_id));
	reg->dp_quiescent(emu->qsbr_id(0));
	uint32_t done[1];
	ASSERT_EQ(reg->poll_retiring(done, 1), 1u) << "the grace period should be over";
	ASSERT_EQ(fcntl(a_bell, F_GETFD), -1) << "the registry closed A's TX doorbell";

	/* B's TX doorbell gets A's number: fill every lower free number but one (B's RX
	 * doorbell, made first, takes that one) and leave A's number free. */
	std::vector<int> fillers;
	for (;;) {
		const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		ASSERT_GE(fd, 0);
		if (fd == a_bell) {
			close(fd);
			break;
		}
		ASSERT_LT(fd, a_bell) << "numbers are handed out lowest first";
		fillers.push_back(fd);
	}
	ASSERT_FALSE(fillers.empty()) << "A's RX doorbell was made before its TX doorbell";
	close(fillers.back());
	fillers.pop_back();
	auto b = reg->register_pod(req, std::move(*rb), &code);
	for (int fd : fillers)
		close(fd);
	ASSERT_TRUE(b) << b.error().message();
	ASSERT_EQ(b->pod_id, 0u);
	ASSERT_EQ(b->tx_doorbell_fd, a_bell) << "the arrangement did not give B A's number";

	/* The thread looks now (B first, then A's departure), then prepares to sleep: B is
	 * parked, so only its ring brings the thread back. */
	poll();
	ASSERT_TRUE(tx.prepare_sleep(tx.arg)) << "nothing to do: the lcore may sleep";
	ASSERT_FALSE(wait_fd_readable());
	const uint64_t one = 1;
	ASSERT_EQ(write(b->tx_doorbell_fd, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
	EXPECT_TRUE(wait_fd_readable()) << "B's ring did not reach the DPA thread (lost wake-up)";

	retire(b->pod_id);
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("dpa_watch", {}));
	return RUN_ALL_TESTS();
}
