// SPDX-License-Identifier: BSD-3-Clause
// Link-time FAKES of the DOCA calls the DOCA backend uses (no DOCA here): they record the
// call sequence, track what is created, started and allocated, and fail one chosen call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
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
	/** the representors doca_devinfo_rep_create_list finds (the host PF seen from the Arm) */
	std::vector<std::string> reps = {"0000:3b:00.0"};
	uint32_t max_msg = 4080; /**< doca_comch_cap_get_max_msg_size */
	/** comch clients connect as DOCA's do: doca_ctx_start says "in progress", the context
	 *  runs after the client's next doca_pe_progress */
	bool async_connect = true;
	/** events run by doca_pe_progress, and notification fds written (FAKE progress engines) */
	uint64_t pe_events = 0, pe_wakeups = 0;
	/** doca_sync_event_update_add and doca_sync_event_get calls (data-path calls: not in
	 *  `calls`) */
	uint64_t se_adds = 0, se_gets = 0;
	/** called with each DPA handle doca_mmap_dev_get_dpa_handle gives out and the mmap's
	 *  memory (an import: its exporter's), so a test can hand it to the device FAKES */
	std::function<void(uint32_t handle, void *addr, size_t len)> on_dpa_handle;
};

/** Held by every FAKE call; a test that reads state() while other threads call DOCA holds it. */
std::recursive_mutex &fake_mutex();

/** The DPA's add to a sync event by its DPA handle (what the device FAKES' update_add does
 *  to the event the handle names): its waits whose value now differs complete. */
void dpa_sync_event_add(uint64_t handle, uint64_t value);

/** The fakes' state; reset() before each case (nothing may be left open across it). */
state &fake();
void reset();

} // namespace dpumesh::doca_fake
