// SPDX-License-Identifier: BSD-3-Clause
// Link-time FAKES of the DOCA calls the DOCA backend uses (no DOCA here): they record the
// call sequence, track what is created, started and allocated, and fail one chosen call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dpumesh::doca_fake {

struct state {
	std::vector<std::string> calls; /**< every call, in order */
	long fail_index = -1;           /**< the call (index into calls) that returns an error */
	int live_objects = 0;           /**< created and not destroyed */
	int started = 0;                /**< started and not stopped */
	int allocations = 0;            /**< DPA memory allocated and not freed */
	std::vector<std::string> misuse; /**< destroyed while started, unknown object, ... */
	/** the PCI functions doca_devinfo_create_list finds, and those without DPA (SFs, VFs) */
	std::vector<std::string> devices = {"0000:03:00.0", "0000:03:00.1", "0000:03:00.2"};
	std::vector<std::string> no_dpa = {"0000:03:00.2"};
};

/** The fakes' state; reset() before each case. */
state &fake();
void reset();

} // namespace dpumesh::doca_fake
