// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-dma-bench: GB/s and ns/op of the DMA engines against a plain memcpy baseline.
//
//   build/bin/dpumesh-dma-bench [EAL args]
// Defaults: --no-huge -m 512 --lcores=0-1 --vdev=dma_skeleton,lcore=1 (the skeleton's copy
// thread on lcore 1's CPU, the submitting thread on lcore 0). Each cell keeps the engine's
// ring full (bursts of 32) until `ops` copies of `size` bytes completed.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "dpumesh/common/eal.h"
#include "dpumesh/dma/dma.h"

using namespace dpumesh;

namespace {

using clock_type = std::chrono::steady_clock;

struct cell {
	double seconds;
	uint64_t ops;
	uint64_t bytes;
};

void clobber() { asm volatile("" ::: "memory"); }

cell run_memcpy(uint8_t *dst, const uint8_t *src, size_t size, size_t slots, uint64_t ops)
{
	auto t0 = clock_type::now();
	for (uint64_t i = 0; i < ops; i++) {
		size_t k = i % slots;
		std::memcpy(dst + k * size, src + k * size, size);
		clobber();
	}
	std::chrono::duration<double> d = clock_type::now() - t0;
	return {d.count(), ops, ops * size};
}

cell run_engine(dma::engine &eng, uint8_t *dst, const uint8_t *src, size_t size, size_t slots,
		uint64_t ops)
{
	dma::copy_op burst[32];
	dma::completion done[64];
	uint64_t submitted = 0, completed = 0, errors = 0;
	auto t0 = clock_type::now();
	while (completed < ops) {
		uint16_t n = 0;
		for (; n < 32 && submitted + n < ops; n++) {
			size_t k = (submitted + n) % slots;
			burst[n] = {dst + k * size, src + k * size, static_cast<uint32_t>(size),
				    submitted + n};
		}
		submitted += eng.submit(burst, n);
		uint16_t c = eng.poll(done, 64);
		for (uint16_t j = 0; j < c; j++)
			errors += done[j].status != 0;
		completed += c;
	}
	std::chrono::duration<double> d = clock_type::now() - t0;
	if (errors)
		std::fprintf(stderr, "%s: %lu copies failed\n", eng.name().c_str(),
			     static_cast<unsigned long>(errors));
	return {d.count(), ops, ops * size};
}

void print(const char *what, size_t size, const cell &c)
{
	std::printf("%-24s %9zu %10.2f %12.1f\n", what, size, c.bytes / c.seconds / 1e9,
		    c.seconds * 1e9 / static_cast<double>(c.ops));
}

} // namespace

int main(int argc, char **argv)
{
	std::string prefix = "--file-prefix=dpumesh-dma-bench-" + std::to_string(getpid());
	std::vector<std::string> args = {argv[0]};
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			args.push_back(argv[i]);
	} else {
		args.insert(args.end(), {"--no-huge", "-m", "512", "--no-pci", "--no-shconf",
					 "--lcores=0-1", "--log-level=lib.eal:warning",
					 "--log-level=dpumesh.dma:warning",
					 "--log-level=pmd.dma.skeleton:warning",
					 "--vdev=dma_skeleton,lcore=1", prefix});
	}
	if (eal_init(args) < 0) {
		std::fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}

	const size_t sizes[] = {64, 4096, 64 << 10, 1 << 20};
	const size_t area = 32u << 20;
	auto *src = static_cast<uint8_t *>(rte_malloc("bench_src", area, 64));
	auto *dst = static_cast<uint8_t *>(rte_malloc("bench_dst", area, 64));
	if (!src || !dst) {
		std::fprintf(stderr, "rte_malloc of 2 x %zu bytes failed\n", area);
		return 1;
	}
	std::memset(src, 0x3c, area);
	std::memset(dst, 0, area);

	config::dma_config cpu_cfg;
	config::dma_config dev_cfg;
	dev_cfg.backend = config::dma_backend::dmadev;
	dev_cfg.device = "dma_skeleton";
	auto cpu = dma::create(cpu_cfg, 0);
	auto dev = dma::create(dev_cfg, 0);
	if (!cpu || !dev) {
		std::fprintf(stderr, "%s\n",
			     (!cpu ? cpu.error() : dev.error()).message().c_str());
		return 1;
	}
	std::printf("segments of %u B, %u in flight\n", (*cpu)->max_copy_size(),
		    (*cpu)->max_inflight());
	std::printf("%-24s %9s %10s %12s\n", "engine", "size (B)", "GB/s", "ns/op");
	for (size_t size : sizes) {
		size_t slots = std::min<size_t>(64, area / size);
		uint64_t ops = std::max<uint64_t>(256, std::min<uint64_t>(1u << 20, (256u << 20) / size));
		/* warm up each once, then measure */
		run_memcpy(dst, src, size, slots, ops / 8);
		print("memcpy", size, run_memcpy(dst, src, size, slots, ops));
		run_engine(**cpu, dst, src, size, slots, ops / 8);
		print("cpu", size, run_engine(**cpu, dst, src, size, slots, ops));
		run_engine(**dev, dst, src, size, slots, ops / 8);
		print("dmadev(dma_skeleton)", size, run_engine(**dev, dst, src, size, slots, ops));
	}
	cpu.value().reset();
	dev.value().reset();
	rte_free(src);
	rte_free(dst);
	dpumesh::eal_cleanup();
	return 0;
}
