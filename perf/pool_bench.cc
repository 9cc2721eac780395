// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-pool-bench: net_pcap's rx_burst cycles per frame from dpumesh's packet pool
// (port::create_pktmbuf_pool) next to the same pool without its pad, alternately, in one run.
//
//   build-perf/bin/dpumesh-pool-bench CAPTURE [TOUCH_LINES [HELD [MBUFS]]]
// Two net_pcap ports replay CAPTURE (infinite_rx=1) on lcore 1, each into one of the pools;
// eight rounds of half a second on each. After each burst, TOUCH_LINES random cache lines per
// frame of a 64 MiB buffer are written (what the rest of a node touches between bursts) and
// the frames are freed HELD frames later (a node frees them after port TX). Printed: the
// median cycles per frame of full bursts (rte_rdtsc around rte_eth_rx_burst; a median, so
// that a burst the lcore was preempted in does not count) per round, then the two medians
// and their ratio. EAL: --no-huge -m 1024 (the pad only exists without hugepages).
// docs/benchmarks-log.md, track portrx.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dpumesh/common/eal.h"
#include "dpumesh/config/config.h"
#include "dpumesh/common/numbers.h"
#include "dpumesh/port/port.h"

using namespace dpumesh;

namespace {

struct replay {
	uint16_t port;
	uint64_t x = 88172645463325252ull; /* xorshift state for the touched lines */
	std::vector<rte_mbuf *> held;
};

bool start_port(uint16_t port, rte_mempool *mp)
{
	rte_eth_conf conf{};
	return rte_eth_dev_configure(port, 1, 1, &conf) == 0 &&
	       rte_eth_rx_queue_setup(port, 0, 512, 0, nullptr, mp) == 0 &&
	       rte_eth_tx_queue_setup(port, 0, 512, 0, nullptr) == 0 && rte_eth_dev_start(port) == 0;
}

/* the median cycles per frame of the full bursts of one window of `seconds` */
double window(replay &r, double seconds, uint8_t *area, size_t area_size, unsigned touch,
	      size_t nb_held)
{
	std::vector<uint32_t> per_burst;
	per_burst.reserve(1 << 20);
	const uint64_t end = rte_rdtsc() + static_cast<uint64_t>(seconds * rte_get_tsc_hz());
	while (rte_rdtsc() < end) {
		rte_mbuf *b[32];
		const uint64_t t0 = rte_rdtsc();
		const uint16_t n = rte_eth_rx_burst(r.port, 0, b, 32);
		const uint64_t d = rte_rdtsc() - t0;
		if (n == 32 && per_burst.size() < per_burst.capacity())
			per_burst.push_back(static_cast<uint32_t>(std::min<uint64_t>(d, UINT32_MAX)));
		for (uint16_t i = 0; i < n; i++) {
			for (unsigned k = 0; k < touch; k++) {
				r.x ^= r.x << 13;
				r.x ^= r.x >> 7;
				r.x ^= r.x << 17;
				area[(r.x % area_size) & ~uint64_t{63}] += 1;
			}
			r.held.push_back(b[i]);
		}
		if (r.held.size() >= nb_held + 32) {
			const size_t f = r.held.size() - nb_held;
			rte_pktmbuf_free_bulk(r.held.data(), static_cast<unsigned>(f));
			r.held.erase(r.held.begin(), r.held.begin() + static_cast<std::ptrdiff_t>(f));
		}
	}
	if (per_burst.empty())
		return 0;
	std::nth_element(per_burst.begin(), per_burst.begin() + per_burst.size() / 2,
			 per_burst.end());
	return per_burst[per_burst.size() / 2] / 32.0;
}

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2) {
		std::fprintf(stderr, "usage: %s CAPTURE [TOUCH_LINES [HELD [MBUFS]]]\n", argv[0]);
		return 2;
	}
	const std::string cap = argv[1];
	const unsigned touch =
		argc > 2 ? static_cast<unsigned>(whole_arg(argv[0], "TOUCH_LINES", argv[2], 0, 4096))
			 : 16;
	const size_t nb_held = argc > 3 ? whole_arg(argv[0], "HELD", argv[3], 0, 1u << 20) : 64;
	const unsigned mbufs =
		argc > 4 ? static_cast<unsigned>(whole_arg(argv[0], "MBUFS", argv[4], 64, 1u << 22))
			 : 32767;
	std::string prefix = "--file-prefix=dpumesh-pool-bench-" + std::to_string(getpid());
	std::vector<std::string> args = {argv[0],
					 "--no-huge",
					 "-m",
					 "1024",
					 "--no-pci",
					 "--no-shconf",
					 "-l",
					 "1",
					 "--log-level=lib.eal:warning",
					 "--log-level=pmd.net.pcap:warning",
					 "--vdev=net_pcap0,rx_pcap=" + cap + ",infinite_rx=1",
					 "--vdev=net_pcap1,rx_pcap=" + cap + ",infinite_rx=1",
					 prefix};
	if (eal_init(args) < 0) {
		std::fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	config::node_config cfg;
	cfg.mempool.mbufs = mbufs;
	auto padded = port::create_pktmbuf_pool(cfg);
	if (!padded) {
		std::fprintf(stderr, "%s\n", padded.error().message().c_str());
		return 1;
	}
	/* the same pool as DPDK lays it out without the pad: a 4 KiB page per mbuf */
	rte_mempool *page = rte_pktmbuf_pool_create_by_ops(
		"bench_unpadded", cfg.mempool.mbufs, cfg.mempool.cache, 0, cfg.mempool.data_room,
		static_cast<int>(rte_socket_id()), port::pktmbuf_pool_ops());
	if (!page || !start_port(0, *padded) || !start_port(1, page)) {
		std::fprintf(stderr, "pool or port setup failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	const size_t area_size = size_t{64} << 20;
	auto *area = static_cast<uint8_t *>(
		mmap(nullptr, area_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	if (area == MAP_FAILED)
		return 1;
	(void)madvise(area, area_size, MADV_HUGEPAGE);
	std::memset(area, 1, area_size);

	replay r_padded{0, 88172645463325252ull, {}}, r_page{1, 88172645463325252ull, {}};
	std::vector<double> m_padded, m_page;
	std::printf("%s: %u touched lines a frame, %zu held; cycles per frame, per round:\n",
		    cap.c_str(), touch, nb_held);
	for (int round = 0; round < 9; round++) {
		const double a = window(r_page, 0.5, area, area_size, touch, nb_held);
		const double b = window(r_padded, 0.5, area, area_size, touch, nb_held);
		if (round == 0)
			continue; /* warm-up */
		m_page.push_back(a);
		m_padded.push_back(b);
		std::printf("  page per mbuf %6.1f   padded %6.1f\n", a, b);
	}
	const double a = median(m_page), b = median(m_padded);
	std::printf("median: page per mbuf %.1f, padded %.1f, padded / page %.3f\n", a, b,
		    a > 0 ? b / a : 0);
	for (replay *r : {&r_page, &r_padded})
		rte_pktmbuf_free_bulk(r->held.data(), static_cast<unsigned>(r->held.size()));
	for (uint16_t p = 0; p < 2; p++) {
		rte_eth_dev_stop(p);
		rte_eth_dev_close(p);
	}
	rte_mempool_free(page);
	rte_mempool_free(*padded);
	munmap(area, area_size);
	dpumesh::eal_cleanup();
	return 0;
}
