// SPDX-License-Identifier: BSD-3-Clause
// What the ThreadSanitizer build's annotations of DPDK's hand-offs (dpumesh/common/tsan.h)
// order, and what they do not (built and run only with -DDPUMESH_TSAN=ON, scripts/tsan.sh).
//
//   tsan_handoff_test ordered   # must run without a report
//   tsan_handoff_test race      # must be reported (CTest looks for the report)
//
// Two plain threads (no lcore, so no mempool cache: every free and allocation goes through
// the pool's driver) pass frames through one net_ring port, whose TX queue and RX queue are
// the same ring. The sender allocates a frame, writes its bytes and sends it; the receiver
// takes it, reads and checks every byte, and frees it; the sender's next allocations get
// those mbufs back. In "ordered" each of the sender's writes follows the receiver's reads of
// that mbuf's last trip (the mempool driver's annotations) and precedes its next reads (the
// PMD's): without either annotation the sanitizer reports those bytes. In "race" the sender
// also writes a frame after it sent it, which nothing orders against the receiver's read:
// the annotations must not hide that.
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "dpumesh/common/eal.h"
#include "dpumesh/common/tsan.h"

namespace {

constexpr unsigned rounds = 5000;
constexpr uint16_t payload = 256;

/* the seeded race: a write into a frame the port already has */
[[gnu::noinline]] void write_after_handing_over(rte_mbuf *m)
{
	rte_pktmbuf_mtod(m, uint8_t *)[0] = 0;
}

int fail(const char *what)
{
	std::fprintf(stderr, "tsan_handoff_test: %s: %s\n", what, rte_strerror(rte_errno));
	return 1;
}

} // namespace

int main(int argc, char **argv)
{
	const bool race = argc > 1 && std::strcmp(argv[1], "race") == 0;
	std::vector<std::string> args = {
		"tsan_handoff_test",
		"--no-huge",
		"-m",
		"128",
		"--no-pci",
		"--no-shconf",
		"--lcores=0",
		"--log-level=lib.eal:warning",
		"--file-prefix=dpumesh-tsan-handoff-" + std::to_string(getpid()),
	};
	if (dpumesh::eal_init(args) < 0)
		return fail("rte_eal_init");
	/* fewer mbufs than rounds, no cache: each comes back through the driver many times */
	rte_mempool *pool = rte_pktmbuf_pool_create("handoff", 63, 0, 0, 2048, 0);
	rte_ring *ring = rte_ring_create("handoff", 32, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (pool == nullptr || ring == nullptr)
		return fail("pool or ring");
	const int port = rte_eth_from_rings("handoff", &ring, 1, &ring, 1, 0);
	if (port < 0)
		return fail("rte_eth_from_rings");
	const rte_eth_conf conf{};
	if (rte_eth_dev_configure(uint16_t(port), 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup(uint16_t(port), 0, 32, 0, nullptr, pool) != 0 ||
	    rte_eth_tx_queue_setup(uint16_t(port), 0, 32, 0, nullptr) != 0 ||
	    rte_eth_dev_start(uint16_t(port)) != 0)
		return fail("starting the port");

	std::atomic<unsigned> bad{0}, read{0};
	std::thread receiver([&] {
		[[maybe_unused]] volatile uint8_t first = 0;
		for (unsigned got = 0; got < rounds;) {
			rte_mbuf *m[8];
			const uint16_t n = rte_eth_rx_burst(uint16_t(port), 0, m, 8);
			DPUMESH_TSAN_PMD_TOOK(m, n);
			for (uint16_t i = 0; i < n; i++, got++) {
				const uint8_t *p = rte_pktmbuf_mtod(m[i], const uint8_t *);
				first = p[0]; /* the byte "race" writes again */
				for (uint16_t k = 1; k < payload; k++)
					if (p[k] != uint8_t(got + k))
						bad.fetch_add(1, std::memory_order_relaxed);
				rte_pktmbuf_free(m[i]);
				read.store(got + 1, std::memory_order_relaxed);
			}
			if (n == 0)
				std::this_thread::yield();
		}
	});
	for (unsigned i = 0; i < rounds; i++) {
		rte_mbuf *m;
		while ((m = rte_pktmbuf_alloc(pool)) == nullptr)
			std::this_thread::yield();
		uint8_t *p = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, payload));
		for (uint16_t k = 0; k < payload; k++)
			p[k] = uint8_t(i + k);
		DPUMESH_TSAN_PMD_GIVES(&m, 1);
		while (rte_eth_tx_burst(uint16_t(port), 0, &m, 1) == 0)
			std::this_thread::yield();
		if (i == rounds / 2) {
			if (race)
				write_after_handing_over(m);
			/* nothing more sent until the receiver has read this frame: a later frame's
			 * release would order the write before the receiver's burst (rightly so: a
			 * ring's dequeue orders everything before the enqueues it takes). A relaxed
			 * flag, which orders nothing. */
			while (read.load(std::memory_order_relaxed) <= rounds / 2)
				std::this_thread::yield();
		}
	}
	receiver.join();
	std::printf("tsan_handoff_test %s: %u frames through net_ring and back through the pool, "
		    "%u bytes wrong\n",
		    race ? "race" : "ordered", rounds, bad.load());
	rte_eth_dev_stop(uint16_t(port));
	rte_eth_dev_close(uint16_t(port));
	rte_ring_free(ring);
	rte_mempool_free(pool);
	dpumesh::eal_cleanup();
	return bad.load() == 0 ? 0 : 1;
}
