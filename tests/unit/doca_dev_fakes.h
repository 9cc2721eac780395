// SPDX-License-Identifier: BSD-3-Clause
// FAKES of the DOCA DPA device calls (doca_dpa_dev_*; no DOCA here) for running the DOCA
// device mapping (dpa_kernels/doca/dpa_dev_doca.c) and the kernels on the host: windows onto
// registered mmaps with a range check, copies done at the flush that rings them, one
// completion per reported post, and a record of notifications, sync events and thread ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace dpumesh::doca_dev_fake {

/** An mmap: [base, base+len) in its owner's addresses, backed by local memory. */
void add_mmap(uint32_t handle, uint64_t base, void *local, size_t len);
/** Forgets every mmap, post, completion and record. */
void reset();
/** The kernel state doca_dpa_dev_thread_get_local_storage returns from now on. */
void set_local_storage(void *p);

struct record {
	std::vector<uint64_t> notified;            /**< doca_dpa_dev_thread_notify handles */
	std::map<uint64_t, uint64_t> sync_events;  /**< sync event handle -> sum added */
	uint64_t reschedules = 0, finishes = 0;
	uint64_t bad_windows = 0;                  /**< get_external_ptr outside every mmap */
	uint64_t bad_copies = 0;                   /**< a post outside its mmaps */
	uint64_t unflushed = 0;                    /**< posts waiting for a flush (now) */
};
record &rec();

} // namespace dpumesh::doca_dev_fake
