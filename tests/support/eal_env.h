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

/** The lcores EAL should use: "0-1" (or "0,0" style when the machine has 1 CPU). */
std::string test_lcores();

} // namespace dpumesh::test
