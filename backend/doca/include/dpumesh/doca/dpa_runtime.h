// SPDX-License-Identifier: BSD-3-Clause
// The DOCA backend's host-side runtime: the DPA context, one thread + completion context +
// async-ops queue + notification per kernel, DPA memory for pod_lookup_table and the
// threads' arguments, and pod memory as doca_mmap export (host) / import (Arm).
//
// Every object is created in a fixed order and pushed on an undo stack; a failed call
// unwinds what was made, in reverse, and returns an error naming the call. Teardown is the
// same unwind. Never run on a BlueField-3 (docs/doca.md): compiled here against the
// project's own declarations (doca_api.h) and tested against link-time fakes.
//
//   std::vector<doca::kernel_spec> k = {{"tx", &dpa_tx_entry}, {"rx", &dpa_rx_entry}};
//   auto rt = doca::dpa_runtime::create(dev, dpumesh_dpa_app, k, {});
//   auto desc = doca::pod_export::create(host_dev, addr, len);   // host, in libdpumesh
//   auto m = doca::pod_import::create(arm_dev, desc->descriptor()); // Arm: m->handle() = mkey
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dpumesh/common/status.h"
#include "dpumesh/doca/doca_api.h"

namespace dpumesh::doca {

/** Calls made in reverse on teardown or failure. */
class undo_stack {
public:
	undo_stack() = default;
	undo_stack(const undo_stack &) = delete;
	undo_stack &operator=(const undo_stack &) = delete;
	~undo_stack() { unwind(); }
	void push(std::function<void()> f) { _steps.push_back(std::move(f)); }
	void unwind() noexcept
	{
		while (!_steps.empty()) {
			_steps.back()();
			_steps.pop_back();
		}
	}

private:
	std::vector<std::function<void()>> _steps;
};

/** A kernel entry point as dpacc exports it, and its name for errors. */
struct kernel_spec {
	std::string name;
	doca_dpa_func_t *entry = nullptr;
	/** The kernel's own state (dpa_tx_state / dpa_rx_state): DPA memory, zeroed, given as
	 *  the thread's local storage (doca_dpa_dev_thread_get_local_storage). 0: none. */
	size_t local_bytes = 0;
};

struct runtime_options {
	unsigned queue_size = 1024; /**< async-ops queue and completion context entries */
	size_t table_bytes = 256 * 64; /**< pod_lookup_table: DPUMESH_MAX_PODS entries */
	/** A thread's argument block: thread_args, then the rest of the device mapping's
	 *  struct dpa_dev (dpa_kernels/doca/dpa_doca.h, about 43 KiB; checked at build time) */
	size_t args_bytes = 65536;
	/** The DPA program's notify RPC (dpumesh_dpa_notify_rpc): what notify() runs. */
	doca_dpa_func_t *notify_rpc = nullptr;
};

/**
 * What a kernel thread finds at its argument address in DPA memory: the start of the device
 * mapping's struct dpa_dev (dpa_kernels/doca/dpa_doca.h; dpa_runtime.cc checks the offsets),
 * its handles and the node's, and the stop word the host sets.
 */
struct thread_args {
	uint64_t async_ops;    /**< doca_dpa_dev_async_ops_t */
	uint64_t completion;   /**< doca_dpa_dev_completion_t */
	uint64_t notification; /**< its own doca_dpa_dev_notification_completion_t */
	uint64_t table;        /**< pod_lookup_table, DPA memory */
	uint32_t dpu_mmap;     /**< DPU-memory mmap handle (0 until set_dpu_mmap) */
	uint32_t stop;         /**< 1: finish once drained */
};

class dpa_runtime {
public:
	/**
	 * doca_dpa_create/set_app/start; the table (mem_alloc + h2d zeros); then per kernel, in
	 * order: its argument block (mem_alloc), thread create/set_func_arg, its local storage
	 * when it has one (mem_alloc + h2d zeros + doca_dpa_thread_set_local_storage), start, completion create/set_thread/start/handle,
	 * async ops create/attach/start/handle, notification create/start/handle, its
	 * arguments (mem_alloc + h2d), thread_run.
	 * @return the runtime, or an error naming the kernel and the DOCA call that failed
	 *         (everything made before it destroyed)
	 */
	static result<std::unique_ptr<dpa_runtime>> create(doca_dev *dev, doca_dpa_app *app,
							   const std::vector<kernel_spec> &kernels,
							   const runtime_options &opt);
	~dpa_runtime();

	/** Writes pod_lookup_table entry `pod_id` (64 bytes) to DPA memory. */
	status write_table_entry(uint32_t pod_id, const void *entry64);
	/**
	 * Wakes kernel k (its notification completion) through the notify RPC (doca_dpa_rpc):
	 * a thread's first activation, or the RX kernel after commands were posted while it was
	 * parked. Control path: one RPC is a round trip to the DPA.
	 * @return an error when the runtime has no notify RPC, or naming doca_dpa_rpc
	 */
	status notify(unsigned k);
	/** Sets every thread's stop word (cooperative stop; the kernels finish once drained). */
	status request_stop();
	/** Tears everything down in reverse order of creation (also done by the destructor). */
	void destroy() noexcept { _undo.unwind(); }

	unsigned nb_kernels() const noexcept { return static_cast<unsigned>(_threads.size()); }
	const thread_args &args(unsigned k) const noexcept { return _threads[k].args; }
	/** Kernel k's argument block in DPA memory (the device mapping's struct dpa_dev). */
	doca_dpa_dev_uintptr_t args_ptr(unsigned k) const noexcept { return _threads[k].args_ptr; }
	/** Kernel k's local storage in DPA memory (0: none). */
	doca_dpa_dev_uintptr_t local_ptr(unsigned k) const noexcept { return _threads[k].local_ptr; }
	doca_dpa *dpa() const noexcept { return _dpa; }

private:
	struct kernel_thread {
		std::string name;
		doca_dpa_thread *thread = nullptr;
		doca_dpa_completion *comp = nullptr;
		doca_dpa_async_ops *ops = nullptr;
		doca_dpa_notification_completion *notify = nullptr;
		doca_dpa_dev_uintptr_t args_ptr = 0;
		doca_dpa_dev_uintptr_t local_ptr = 0;
		thread_args args{};
	};
	dpa_runtime() = default;
	status make_kernel(const kernel_spec &spec, const runtime_options &opt, kernel_thread &k);

	doca_dpa *_dpa = nullptr;
	doca_dpa_func_t *_notify_rpc = nullptr;
	doca_dpa_dev_uintptr_t _table = 0;
	size_t _table_bytes = 0;
	std::vector<kernel_thread> _threads;
	undo_stack _undo; /* last member: unwound first */
};

/** The PCI function a DPA process runs on, opened by its address (the PF: SFs and VFs
 *  cannot host a DPA process). Closed on destruction. */
class device {
public:
	/**
	 * doca_devinfo_create_list; the entry whose address is `pci`
	 * (doca_devinfo_is_equal_pci_addr); doca_dpa_cap_is_supported (only with `need_dpa`:
	 * the host's view of the PF, which libdpumesh opens for export and comch, needs none);
	 * doca_dev_open; doca_devinfo_destroy_list (on every path once the list exists).
	 * @return the device; an error naming the address when no device has it, when it
	 *         cannot run a DPA process, or naming the DOCA call that failed
	 */
	static result<std::unique_ptr<device>> open(const std::string &pci, bool need_dpa = true);
	doca_dev *get() const noexcept { return _dev; }
	const std::string &pci() const noexcept { return _pci; }

private:
	device() = default;
	doca_dev *_dev = nullptr;
	std::string _pci;
	undo_stack _undo;
};

/** What --dpa-backend doca starts: the device and one TX + one RX kernel per DPA pair. */
struct backend_options {
	std::string pci;    /**< --dpa-device / /dpa/device */
	unsigned pairs = 1; /**< /dpa/threads: DPA thread pairs */
	runtime_options runtime;
};

/** The DPA on DOCA as the node selects it: device by PCI address, then the runtime. */
class dpa_backend {
public:
	/**
	 * @param app the DPA program dpacc built (dpumesh_dpa)
	 * @param tx, rx the kernels' entry points (dpumesh_dpa_tx_entry / rx_entry)
	 * @param notify_rpc the program's notify RPC (dpumesh_dpa_notify_rpc), for notify()
	 * @return the backend; an error when no device is named, or from device::open or
	 *         dpa_runtime::create (everything made before it undone)
	 */
	static result<std::unique_ptr<dpa_backend>> create(const backend_options &opt,
							   doca_dpa_app *app, doca_dpa_func_t *tx,
							   doca_dpa_func_t *rx,
							   doca_dpa_func_t *notify_rpc = nullptr);
	device &dev() noexcept { return *_dev; }
	dpa_runtime &runtime() noexcept { return *_rt; }

private:
	dpa_backend() = default;
	std::unique_ptr<device> _dev;   /* closed last */
	std::unique_ptr<dpa_runtime> _rt;
};

/** Host side (libdpumesh): a pod's memory exported to the DPU (doca_mmap_export_pci). */
class pod_export {
public:
	/** mmap create/set_memrange/add_dev/set_permissions(PCI read-write)/start/export_pci. */
	static result<std::unique_ptr<pod_export>> create(doca_dev *dev, void *addr, size_t len);
	/** The opaque descriptor to send over the control channel. */
	std::span<const uint8_t> descriptor() const noexcept { return _desc; }

private:
	pod_export() = default;
	doca_mmap *_mmap = nullptr;
	std::span<const uint8_t> _desc;
	undo_stack _undo;
};

/** Arm side: a pod's memory imported from its descriptor; handle() is its mkey. */
class pod_import {
public:
	/** doca_mmap_create_from_export, then doca_mmap_dev_get_dpa_handle. */
	static result<std::unique_ptr<pod_import>> create(doca_dev *dev,
							  std::span<const uint8_t> desc);
	doca_dpa_dev_mmap_t handle() const noexcept { return _handle; }

private:
	pod_import() = default;
	doca_mmap *_mmap = nullptr;
	doca_dpa_dev_mmap_t _handle = 0;
	undo_stack _undo;
};

} // namespace dpumesh::doca
