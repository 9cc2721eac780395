// SPDX-License-Identifier: BSD-3-Clause
// libdpumesh's DOCA path (DOCA builds only; the portable path is the Unix socket): the pod's
// memory exported with doca::pod_export, its descriptor sent over comch in a REGISTER, and
// the doorbell as the comch progress engine's notification fd in the pod's event loop.
//
// Never run on hardware (docs/doca.md); tested against FAKES (doca_comch_test, doca_node_run_test).
//
//   auto l = host::doca_link::open({"0000:3b:00.0"}, mem, len, reg);  // REGISTERED or error
//   poll((*l)->fd()) ... ; (*l)->progress();  // counts the doorbells; then prepare_wait()
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>
#include <string>

#include "dpumesh/common/status.h"
#include "dpumesh/doca/comch.h"
#include "dpumesh/doca/dpa_runtime.h"
#include "dpumesh/doca/pod_doorbell.h"
#include "dpumesh/podchan/proto.h"

namespace dpumesh::host {

struct doca_link_options {
	std::string pci;               /**< the BlueField PF as the host sees it */
	std::string server = "dpumesh"; /**< the node's comch server name */
	int timeout_ms = 5000;         /**< connect, and wait for REGISTERED */
};

/** Why open() failed, for a caller that maps it (libdpumesh's errno). */
struct doca_link_outcome {
	uint32_t refused = DPUMESH_CTRL_OK; /**< the node's REGISTERED result when it refused */
	bool timed_out = false;             /**< no REGISTERED within timeout_ms */
};

/** One pod's registration with a DOCA node. Teardown: comch, the export, the device. */
class doca_link {
public:
	/**
	 * doca::device::open(pci, no DPA needed); doca::pod_export::create over [mem, mem+len);
	 * doca::comch_client::create (connected); doca::pod_doorbell::create on the client's
	 * progress engine (the DPA's doorbell); send REGISTER (reg, the memory's descriptor and
	 * the doorbell's export). The
	 * answer comes through registered() (for an event loop that also runs other work).
	 * @return the link waiting for REGISTERED; an error naming the step and DOCA call
	 */
	static result<std::unique_ptr<doca_link>> start(const doca_link_options &opt, void *mem,
							size_t len, const dpumesh_ctrl_register &reg);
	/**
	 * start(), then progress until REGISTERED (at most timeout_ms), sleeping on fd().
	 * @param why optional: set to why it failed (a refusal, a timeout)
	 */
	static result<std::unique_ptr<doca_link>> open(const doca_link_options &opt, void *mem,
						       size_t len, const dpumesh_ctrl_register &reg,
						       doca_link_outcome *why = nullptr);
	/**
	 * Runs the channel's events and says whether the node answered.
	 * @return true once registered; false while waiting; an error when the node refused
	 *         (its result name and reason) or answered something that does not match
	 */
	result<bool> registered();
	/**
	 * UNREGISTER, then progress until UNREGISTERED (at most timeout_ms): the node has taken
	 * the pod out of the DPA's tables and waited for the DPA threads, so the pod's memory
	 * may go after this. Without a registration, nothing to do.
	 * @return ok; an error when no answer came in time
	 */
	status unregister(int timeout_ms);
	/** Sends UNREGISTER (without waiting) unless unregister() ran. */
	~doca_link();

	/** The doorbell fd: readable after prepare_wait() once the DPA or the node rings, or the
	 *  node answers. */
	int fd() const noexcept { return _client->fd(); }
	/** Before sleeping on fd() (doca_pe_request_notification). */
	status prepare_wait() { return _client->arm(); }
	/** After waking: doca_pe_clear_notification, then every event. @return doorbells seen */
	unsigned progress();

	uint32_t pod_id() const noexcept { return _reply.pod_id; }
	uint32_t generation() const noexcept { return _reply.generation; }
	uint32_t mkey() const noexcept { return _reply.mkey; }
	/** The Arm's DOORBELL messages seen. */
	uint64_t doorbells() const noexcept { return _doorbells; }
	/** The DPA's doorbells seen (the sync event's wait completions). */
	uint64_t dpa_rings() const noexcept { return _bell ? _bell->rings() : 0; }
	/** Whether the node gave a TX doorbell (TX_BELL): it may park our TX SQs, and a post
	 *  it parked must ring (ring_tx). */
	bool has_tx_bell() const noexcept { return !_tx_rings.empty(); }
	/**
	 * Worker `w`'s ring of the TX doorbell (doca_sync_event_update_add): after a post that
	 * found tx_wait odd, once per parked epoch (libdpumesh's ring_tx_if_parked). Any worker
	 * thread, each its own. @return false: no bell, or the call failed (counted)
	 */
	bool ring_tx(uint32_t w) noexcept
	{
		if (w >= _tx_rings.size())
			return false;
		if (!_tx_rings[w]->ring()) {
			_tx_ring_errors.fetch_add(1, std::memory_order_relaxed);
			return false;
		}
		return true;
	}
	uint64_t tx_ring_errors() const noexcept { return _tx_ring_errors.load(std::memory_order_relaxed); }
	/** Messages from the node that were neither a doorbell nor an expected reply. */
	uint64_t bad_messages() const noexcept { return _bad; }

private:
	doca_link() = default;
	void on_message(std::span<const uint8_t> msg);

	dpumesh_ctrl_registered _reply{};
	bool _replied = false, _unregistered = false;
	uint32_t _nb_workers = 0, _sq_depth = 0; /* asked for: the answer must match */
	uint64_t _doorbells = 0, _bad = 0;
	std::unique_ptr<doca::device> _dev;        /* closed last */
	std::unique_ptr<doca::pod_export> _export; /* withdrawn after the channel is down */
	std::unique_ptr<doca::comch_client> _client;
	std::unique_ptr<doca::pod_doorbell> _bell; /* on the client's engine: goes first */
	std::vector<uint8_t> _tx_bell_desc;        /* TX_BELL's export, until imported */
	std::vector<std::unique_ptr<doca::tx_bell_ring>> _tx_rings; /* one per TX worker */
	std::atomic<uint64_t> _tx_ring_errors{0};
};

} // namespace dpumesh::host
