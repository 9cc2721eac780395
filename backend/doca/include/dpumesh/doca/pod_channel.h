// SPDX-License-Identifier: BSD-3-Clause
// The pod control channel on DOCA comch: REGISTER with the pod memory's export descriptor
// (host -> Arm), REGISTERED (Arm -> host), and DOORBELL, the Arm's wake-up of a pod whose fd
// is its progress engine's notification handle. The Arm's server imports each pod's memory
// (doca::pod_import: its DPA handle is the pod's mkey) and asks the node to admit it.
//
// On a portable node the same roles are the Unix control socket with SCM_RIGHTS (lib/podchan)
// and an eventfd. Never run on hardware (docs/doca.md); tested against FAKES.
//
//   doca::pod_channel_server srv = ...create(arm_dev, "0000:3b:00.0", "dpumesh", hooks);
//   (event loop) srv->progress();  srv->ring(pod_id);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dpumesh/common/status.h"
#include "dpumesh/doca/comch.h"
#include "dpumesh/doca/dpa_runtime.h"
#include "dpumesh/doca/pod_doorbell.h"
#include "dpumesh/doca/pod_msg.h"
#include "dpumesh/podchan/proto.h"

namespace dpumesh::doca {

/** What the node says about a pod that asked to register. */
struct pod_admission {
	uint32_t result = DPUMESH_CTRL_OK; /**< enum dpumesh_ctrl_result */
	uint32_t pod_id = 0;
	uint32_t generation = 0;
	std::string error; /**< why, when refused */
	/** admitted: the export of the TX doorbell the pod rings (sent in TX_BELL before
	 *  REGISTERED; must outlive the call); empty: none (the pod's TX SQs are polled) */
	std::span<const uint8_t> tx_bell;
};

struct pod_channel_hooks {
	/** A valid REGISTER whose memory imported (mkey: its DPA handle): the node decides. */
	std::function<pod_admission(const comch_register_view &, doca_dpa_dev_mmap_t mkey)> admit;
	/** An admitted pod unregistered or its connection went away: called while its memory
	 *  is still imported (the node waits for the DPA's quiescence here); released after. */
	std::function<void(uint32_t pod_id)> gone;
};

/** The Arm's end of the pod control channel. */
class pod_channel_server {
public:
	/**
	 * comch_server::create with this channel's handlers. With `dpa`, a pod's doorbell export
	 * (REGISTER's bell) is imported (doorbell_import) before admission and its DPA handle is
	 * the view's `doorbell`; a doorbell that does not import refuses the pod. Without, the
	 * doorbell is 0 (the DPA rings nothing).
	 */
	static result<std::unique_ptr<pod_channel_server>> create(doca_dev *dev, const std::string &host_pci,
								  const std::string &name,
								  pod_channel_hooks hooks,
								  doca_dpa *dpa = nullptr);
	/** The endpoint: fd(), progress(), arm(), clear(). */
	comch_server &endpoint() noexcept { return *_server; }
	/** An admitted pod's doorbell DPA handle (0: none, or no such pod). */
	uint64_t doorbell(uint32_t pod_id) const noexcept;
	/** DOORBELL to an admitted pod. */
	status ring(uint32_t pod_id);
	size_t nb_pods() const noexcept { return _pods.size(); }
	/** Messages answered with an error (malformed, unknown descriptor, refused). */
	uint64_t refused() const noexcept { return _refused; }

private:
	struct pod {
		doca_comch_connection *conn = nullptr;
		uint32_t pod_id = 0;
		std::unique_ptr<pod_import> mem;
		std::unique_ptr<doorbell_import> bell; /* released before the memory's import */
	};
	pod_channel_server() = default;
	void on_message(doca_comch_connection *conn, std::span<const uint8_t> msg);
	void on_register(doca_comch_connection *conn, std::span<const uint8_t> msg);
	void reply(doca_comch_connection *conn, const dpumesh_ctrl_registered &r);
	void refuse(doca_comch_connection *conn, uint32_t result, const std::string &why);
	void drop(doca_comch_connection *conn);

	doca_dev *_dev = nullptr;
	doca_dpa *_dpa = nullptr;
	pod_channel_hooks _hooks;
	uint64_t _refused = 0;
	std::vector<pod> _pods; /* imports: released after the server (its stop may report
				   disconnections that drop() handles) */
	std::unique_ptr<comch_server> _server; /* last member: destroyed first */
};

} // namespace dpumesh::doca
