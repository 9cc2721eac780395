// SPDX-License-Identifier: BSD-3-Clause
// A gtest environment that initialises a real EAL once per test program: no hugepages,
// a unique --file-prefix, two lcores, and the vdevs the program asks for.
//
//   int main(int argc, char **argv) {
//     ::testing::InitGoogleTest(&argc, argv);
//     ::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("engine", {"net_ring0"}));
//     return RUN_ALL_TESTS();
//   }
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dpumesh::test {

class eal_env : public ::testing::Environment {
public:
	/** @param lcores EAL --lcores; empty: test_lcores() */
	eal_env(std::string name, std::vector<std::string> vdevs, unsigned memory_mb = 256,
		std::string lcores = {});
	void SetUp() override;
	void TearDown() override;

private:
	std::string _name;
	std::vector<std::string> _vdevs;
	unsigned _memory_mb;
	std::string _lcores;
};

/**
 * The worker lcores the integration tests run their nodes with: DPUMESH_TEST_WORKERS, 1 when
 * unset. CTest runs the tests that start nodes a second time with 2 (the `*_w2` tests).
 */
unsigned test_workers();

/**
 * The lcores EAL should use: the main lcore and one per test worker, "0-1" for one worker;
 * workers share CPU 1 ("0@0,1@1,2@1"), or CPU 0 when the machine has one.
 */
std::string test_lcores();

/** A dpumesh node's EAL lcore argument: "--lcores=" + test_lcores(). */
std::string node_lcores_arg();

/** A dpumesh node's application argument for the test workers: "--workers=N". */
std::string node_workers_arg();

} // namespace dpumesh::test
