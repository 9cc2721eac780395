// SPDX-License-Identifier: BSD-3-Clause
// Real EAL for integration tests, without hugepages or hardware.
#include "eal_env.h"

#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "dpumesh/common/log.h"

namespace dpumesh::test {

std::string test_lcores()
{
	/* Two lcores even on a 1-CPU machine: lcore 1 is then mapped onto CPU 0. */
	return sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? "0-1" : "0@0,1@0";
}

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
	std::vector<char *> argv;
	for (auto &a : args)
		argv.push_back(a.data());
	log_register_types();
	int rc = rte_eal_init(static_cast<int>(argv.size()), argv.data());
	ASSERT_GE(rc, 0) << "rte_eal_init: " << rte_strerror(rte_errno);
}

void eal_env::TearDown() { rte_eal_cleanup(); }

} // namespace dpumesh::test
