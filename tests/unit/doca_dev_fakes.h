// SPDX-License-Identifier: BSD-3-Clause
// FAKES of the DOCA DPA device calls (doca_dpa_dev_*; no DOCA here) for running the DOCA
// device mapping (dpa_kernels/doca/dpa_dev_doca.c) and the kernels on the host: windows onto
// registered mmaps with a range check, copies done at the flush that rings them, one
// completion per reported post (per kernel: its local storage names it), a record of
// notifications, sync events and thread ends, and a FAKE DPA scheduler that runs kernels'
// activations on a thread of its own, as the emulator runs them on lcores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <thread>
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
	uint64_t double_rings = 0;                 /**< one handle added to twice in one activation */
	uint64_t reschedules = 0, finishes = 0;
	uint64_t bad_windows = 0;                  /**< get_external_ptr outside every mmap */
	uint64_t bad_copies = 0;                   /**< a post outside its mmaps */
	uint64_t unflushed = 0;                    /**< posts waiting for a flush (now) */
};
record &rec();
/** A copy of rec() taken under the FAKES' lock (while a scheduler runs). */
record rec_copy();
/** What a sync event add does beyond the record (the host FAKES' event: its waits complete);
 *  the scheduler calls it after each activation, outside the device lock. */
void set_sync_event_hook(std::function<void(uint64_t handle, uint64_t value)> hook);

/** A kernel as the FAKE scheduler activates it: entry, argument block, local storage, and
 *  its notification handle (0: activated on every round, polled). */
struct kernel {
	void (*entry)(uint64_t arg) = nullptr;
	uint64_t arg = 0;
	void *local = nullptr;
	uint64_t notification = 0;
};

/**
 * FAKE DPA threads: one host thread activates the kernels in turn until each calls
 * doca_dpa_dev_thread_finish. A kernel with a notification handle runs as DOCA runs a
 * thread: only when it was notified since its last activation (doca_dpa_dev_thread_notify
 * of its handle, by itself, another kernel or the Arm's notify RPC) or a completion waits
 * for it; one without is activated every round (polled, as the emulator's lcores run
 * kernels). Each activation runs under the FAKES' lock, so notify RPCs from other threads
 * see whole activations.
 */
class scheduler {
public:
	explicit scheduler(std::vector<kernel> kernels);
	~scheduler() { stop(); }
	/** Whether every kernel has finished (cooperative stop). */
	bool all_finished() const noexcept { return _finished.load() == _kernels.size(); }
	uint64_t activations() const noexcept { return _activations.load(); }
	/** Stops activating (joins the thread); kernels that did not finish stay unfinished. */
	void stop();

private:
	void run();
	void deliver_adds();
	std::vector<kernel> _kernels;
	std::vector<bool> _done;
	std::vector<uint64_t> _seen; /* notifications of each kernel's handle seen so far */
	std::atomic<bool> _stop{false};
	std::atomic<size_t> _finished{0};
	std::atomic<uint64_t> _activations{0};
	std::thread _thread;
};

} // namespace dpumesh::doca_dev_fake
