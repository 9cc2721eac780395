// SPDX-License-Identifier: BSD-3-Clause
// Real EAL for integration tests, without hugepages or hardware.
#include "eal_env.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <rte_eal.h>
#include <rte_errno.h>

#include "dpumesh/common/eal.h"

namespace dpumesh::test {

unsigned test_workers()
{
	const char *w = getenv("DPUMESH_TEST_WORKERS");
	if (w == nullptr || *w == '\0')
		return 1;
	char *end = nullptr;
	const unsigned long n = strtoul(w, &end, 10);
	if (*end != '\0' || n < 1 || n > 16) {
		std::fprintf(stderr, "DPUMESH_TEST_WORKERS=%s: want 1 to 16\n", w);
		std::abort();
	}
	return static_cast<unsigned>(n);
}

std::string test_lcores()
{
	/* lcore 0 main, lcores 1..N workers; on a 1-CPU machine every lcore maps onto CPU 0 */
	const unsigned workers = test_workers();
	const bool two_cpus = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
	if (workers == 1 && two_cpus)
		return "0-1";
	std::string l = "0@0";
	for (unsigned w = 1; w <= workers; w++)
		l += "," + std::to_string(w) + (two_cpus ? "@1" : "@0");
	return l;
}

std::string node_lcores_arg() { return "--lcores=" + test_lcores(); }

std::string node_workers_arg() { return "--workers=" + std::to_string(test_workers()); }

eal_env::eal_env(std::string name, std::vector<std::string> vdevs, unsigned memory_mb,
		 std::string lcores)
	: _name(std::move(name)), _vdevs(std::move(vdevs)), _memory_mb(memory_mb),
	  _lcores(std::move(lcores))
{
}

void eal_env::SetUp()
{
	std::vector<std::string> args = {
		"dpumesh-test",
		"--lcores=" + (_lcores.empty() ? test_lcores() : _lcores),
		"--no-huge",
		"-m",
		std::to_string(_memory_mb),
		"--no-pci",
		"--no-shconf",
		"--file-prefix=dpumesh-" + _name + "-" + std::to_string(getpid()),
		"--log-level=lib.eal:warning",
	};
	for (const std::string &v : _vdevs)
		args.push_back("--vdev=" + v);
	/* log types, rte_eal_init() and the ThreadSanitizer build's mempool annotations */
	const int rc = dpumesh::eal_init(args);
	ASSERT_GE(rc, 0) << "rte_eal_init: " << rte_strerror(rte_errno);
}

void eal_env::TearDown() { dpumesh::eal_cleanup(); }

} // namespace dpumesh::test
