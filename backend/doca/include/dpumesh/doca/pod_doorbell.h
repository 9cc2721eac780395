// SPDX-License-Identifier: BSD-3-Clause
// The DPA -> pod doorbell on DOCA: a sync event the pod creates and waits on in its progress
// engine (its fd is the pod's dpumesh_fd), exported to the Arm, whose DPA handle the RX
// kernel adds 1 to when it posted to the pod while the pod's need-wakeup flag was set
// (dpa_kernels/doca/dpa_dev_doca.c ring_pod). On a portable node the same role is the pod's
// doorbell eventfd.
//
// Never run on hardware (docs/doca.md "Doorbells on a DOCA node"); tested against FAKES.
//
//   auto b = doca::pod_doorbell::create(dev, pe);   // host: send b->descriptor() in REGISTER
//   (pe's fd readable) doca_pe_progress(pe) ...;   // b->rings() counts the doorbells seen
//   auto i = doca::doorbell_import::create(arm_dev, dpa, desc);  // Arm: i->handle() to the DPA
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "dpumesh/common/status.h"
#include "dpumesh/doca/dpa_runtime.h"

namespace dpumesh::doca {

/** Host side: the pod's doorbell. Its context lives on the caller's progress engine, which
 *  must outlive it (destroy this first). */
class pod_doorbell {
public:
	/**
	 * doca_sync_event_create, add_publisher_location_remote_pci,
	 * add_subscriber_location_cpu(dev), task_wait_neq_set_conf, doca_ctx_set_user_data,
	 * doca_pe_connect_ctx(pe), doca_ctx_start, export_to_remote_pci(dev), then one
	 * wait-not-equal task on the value it holds (doca_sync_event_get, alloc_init, submit).
	 * @return the doorbell; an error naming the DOCA call (everything made before undone)
	 */
	static result<std::unique_ptr<pod_doorbell>> create(doca_dev *dev, doca_pe *pe);
	/** Stops the context (the wait in flight is flushed through the progress engine). */
	~pod_doorbell() { _undo.unwind(); }
	pod_doorbell(const pod_doorbell &) = delete;
	pod_doorbell &operator=(const pod_doorbell &) = delete;

	/** The export to send to the Arm (doca_sync_event_export_to_remote_pci). */
	std::span<const uint8_t> descriptor() const noexcept { return _desc; }
	/** Doorbells seen: wait tasks that completed (one may cover several adds). */
	uint64_t rings() const noexcept { return _rings; }
	/** A wait that could not be put back in flight (counted; the pod's other wake-ups
	 *  remain: its own eventfd, the Arm's DOORBELL, the poll timer if set). */
	uint64_t errors() const noexcept { return _errors; }

private:
	pod_doorbell() = default;
	/** One wait-not-equal task on the event's current value. */
	status wait();
	static void on_ring(doca_sync_event_task_wait_neq *task, union doca_data, union doca_data ctx_user);
	static void on_flush(doca_sync_event_task_wait_neq *task, union doca_data, union doca_data ctx_user);

	doca_sync_event *_event = nullptr;
	doca_pe *_pe = nullptr;
	std::span<const uint8_t> _desc;
	uint64_t _rings = 0, _errors = 0;
	bool _stopping = false;
	undo_stack _undo;
};

/** Arm side: a pod's doorbell imported from its export; handle() is what the DPA adds to. */
class doorbell_import {
public:
	/** doca_sync_event_create_from_export(dev), then doca_sync_event_get_dpa_handle(dpa). */
	static result<std::unique_ptr<doorbell_import>> create(doca_dev *dev, doca_dpa *dpa,
							       std::span<const uint8_t> desc);
	~doorbell_import() { _undo.unwind(); }
	doca_dpa_dev_sync_event_t handle() const noexcept { return _handle; }

private:
	doorbell_import() = default;
	doca_sync_event *_event = nullptr;
	doca_dpa_dev_sync_event_t _handle = 0;
	undo_stack _undo;
};

/**
 * Arm side: the pods' doorbell to one pair's TX kernel (pod -> DPA). A stand-alone sync
 * event (publisher: the remote PCI side, the pods; subscriber: the Arm's CPU), exported to
 * every pod of the pair; a pod adds 1 when it posted while the kernel had parked it, and
 * the sidecar lcore, once per poll, reads the value and wakes the kernel (the notify RPC)
 * when it moved. docs/doca.md "Doorbells on a DOCA node".
 */
class tx_bell {
public:
	/** doca_sync_event_create, add_publisher_location_remote_pci,
	 *  add_subscriber_location_cpu(dev), doca_sync_event_start, export_to_remote_pci(dev). */
	static result<std::unique_ptr<tx_bell>> create(doca_dev *dev);
	~tx_bell() { _undo.unwind(); }
	std::span<const uint8_t> descriptor() const noexcept { return _desc; }
	/** The rings so far (doca_sync_event_get; one thread: the pair's sidecar lcore).
	 *  @return false when the call failed (counted by the caller) */
	bool value(uint64_t *v) noexcept { return doca_sync_event_get(_event, v) == DOCA_SUCCESS; }

private:
	tx_bell() = default;
	doca_sync_event *_event = nullptr;
	std::span<const uint8_t> _desc;
	undo_stack _undo;
};

/** Host side: one TX worker's handle on its pair's TX doorbell (one per worker thread: the
 *  Sync Event API is not thread-safe). */
class tx_bell_ring {
public:
	/** doca_sync_event_create_from_export(dev). */
	static result<std::unique_ptr<tx_bell_ring>> create(doca_dev *dev, std::span<const uint8_t> desc);
	~tx_bell_ring() { _undo.unwind(); }
	/** doca_sync_event_update_add(1). @return false when the call failed */
	bool ring() noexcept
	{
		uint64_t before = 0;
		return doca_sync_event_update_add(_event, 1, &before) == DOCA_SUCCESS;
	}

private:
	tx_bell_ring() = default;
	doca_sync_event *_event = nullptr;
	undo_stack _undo;
};

} // namespace dpumesh::doca
