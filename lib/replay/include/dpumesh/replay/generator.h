// SPDX-License-Identifier: BSD-3-Clause
// The traffic generator's engine: one trial = paced TX of a capture, RX and answer matching.
//
// A trial sends the capture out of a port at a target rate (frames/s, L1 Gbit/s, or the
// capture's own timing times a speed factor) for a duration or a number of passes, receives
// on the same queues, matches every answer to the message it answers by the tag
// written into the frame (dpumesh/replay/capture.h), and keeps loss and latency. Timestamps
// are TSC reads right after rte_eth_tx_burst and rte_eth_rx_burst (one per burst).
// With several queues a frame goes out of the queue its flow hashes to (its IP addresses,
// protocol and ports; a frame that is not IP, out of queue 0), as a NIC's RSS would spread
// them on the receiving side: every frame of a flow, so every fragment of a message, on one
// queue and in capture order (a peer reached by net_memif sees sender queue k as its RX
// queue k: the way to feed a node's several workers). Answers are taken from every queue.
// After the TX phase the trial keeps receiving for drain_seconds; what is still missing then
// is lost. Runs on the calling thread (an EAL lcore or any thread owning the queue); it
// polls without sleeping. Nothing is allocated while a trial runs.
//
//   auto g = replay::generator::create(port_id, pool, cap, replay::match_mode::mesh);
//   replay::trial_result r = (*g)->run({.kind = replay::rate_kind::pps, .value = 1e5,
//                                       .seconds = 10}, &stop_flag);
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dpumesh/common/status.h"
#include "dpumesh/replay/capture.h"
#include "dpumesh/replay/histogram.h"

namespace dpumesh::replay {

enum class rate_kind : uint8_t {
	pps,    /**< frames per second */
	gbps,   /**< L1 gigabits per second: frame + 24 B (preamble 8, FCS 4, gap 12) */
	timing, /**< the capture's own inter-frame times divided by a speed factor */
	unpaced, /**< as fast as the port takes frames (value unused); TX ends at `seconds` */
};

struct trial_config {
	rate_kind kind = rate_kind::pps;
	double value = 0;           /**< pps, Gbit/s or speed factor per kind */
	double seconds = 0;         /**< TX duration; 0 = until `passes` are sent */
	uint64_t passes = 0;        /**< times through the capture; 0 = no limit */
	double drain_seconds = 0.5; /**< receiving after the last TX */
	/**
	 * Before the first TX: receive and discard until nothing came for settle_quiet_seconds
	 * (at most settle_max_seconds), so that a device still answering an earlier overload
	 * trial does not spoil this one (counted in trial_result::settled).
	 */
	double settle_quiet_seconds = 0.3;
	double settle_max_seconds = 5.0;
	uint8_t trial_id = 0;       /**< in every tag: answers of earlier trials are ignored */
	uint16_t burst = 32;
	/**
	 * 0: poll without pause (timestamps to the microsecond; one CPU fully busy). N: a loop
	 * that neither sent nor received sleeps N us, leaving the CPU to what shares it (pods
	 * on a 2-CPU machine); TX pacing catches up, RX timestamps may be up to N us late.
	 */
	unsigned idle_sleep_us = 0;
	/**
	 * When set, the TSC of the TX burst of each frame sent is appended, up to the vector's
	 * capacity (reserve it first: the trial never allocates). For tests and timing checks.
	 */
	std::vector<uint64_t> *tx_tsc_log = nullptr;
	/** Called from the trial loop every progress_seconds (0 = never) with the totals so far. */
	double progress_seconds = 0;
	std::function<void(const struct trial_result &)> on_progress;
};

/** Answers by class (mesh: the L7 status; frame mode counts every answer as ok_2xx). */
struct answer_classes {
	uint64_t ok_2xx = 0, c4xx = 0, c5xx = 0, mesh_error = 0, other = 0;
};

struct trial_result {
	trial_config config;
	double tx_seconds = 0;      /**< first to last TX */
	uint64_t tx_frames = 0, tx_bytes = 0, tx_untracked = 0;
	uint64_t passes = 0;        /**< complete passes through the capture */
	uint64_t expected = 0;      /**< tracked messages whose last frame was sent (and the
				       one the trial ended inside, when it was answered all the
				       same: refused at its first frame) */
	uint64_t answered = 0;      /**< distinct messages answered */
	uint64_t duplicates = 0;    /**< answers to an already answered message */
	uint64_t stale = 0;         /**< tagged answers whose slot was reused (very late) */
	uint64_t rx_frames = 0, rx_bytes = 0;
	uint64_t rx_other = 0;      /**< received frames that answer nothing of this trial */
	uint64_t tx_full = 0;       /**< bursts the port took only partly (back-pressure) */
	uint64_t alloc_fail = 0;    /**< mbuf allocation failures */
	uint64_t settled = 0;       /**< frames received and discarded before the trial began */
	answer_classes classes;
	histogram latency;          /**< TX burst to RX burst, ns, per answered message */

	uint64_t lost() const noexcept { return expected > answered ? expected - answered : 0; }
	double loss_ratio() const noexcept
	{
		return expected ? double(lost()) / double(expected) : 0.0;
	}
	double tx_pps() const noexcept { return tx_seconds > 0 ? double(tx_frames) / tx_seconds : 0; }
	double tx_gbps() const noexcept
	{
		return tx_seconds > 0 ? double(tx_bytes + 24 * tx_frames) * 8 / tx_seconds / 1e9 : 0;
	}
	double answers_per_s() const noexcept
	{
		return tx_seconds > 0 ? double(answered) / tx_seconds : 0;
	}
};

/** The most queues a generator spreads its flows over. */
inline constexpr uint16_t max_queues = 16;

/**
 * Configures and starts a port for the generator: `queues` RX and as many TX queues (1 to
 * max_queues), promiscuous. A start that fails is retried for retry_s seconds (a memif
 * client whose server is not listening yet).
 * @return an error naming the port and the ethdev call that failed, or the queues the port
 *         has when it has fewer than asked
 */
status start_port(uint16_t port_id, rte_mempool *pool, uint16_t nb_desc = 1024,
		  double retry_s = 0, uint16_t queues = 1);

/**
 * The queue (0 to queues - 1) a frame goes out of: a hash of its flow (IP addresses,
 * protocol, and the first 4 bytes of L4: ports for UDP and TCP), 0 for a frame that is not
 * IP (or an IP fragment). The same for both directions of a flow.
 */
uint16_t flow_queue(const uint8_t *frame, uint32_t len, uint16_t queues) noexcept;

class generator {
public:
	/**
	 * A generator on queues 0 to queues - 1 of a port started with at least that many
	 * (start_port()). cap must outlive it.
	 * @return an error when the capture has nothing to send, or queues is not 1 to
	 *         max_queues
	 */
	static result<std::unique_ptr<generator>> create(uint16_t port_id, rte_mempool *pool,
							 const capture &cap, match_mode match,
							 uint16_t queues = 1);

	/** Frames of the capture that go out of each queue (a pass). */
	const std::vector<uint32_t> &frames_per_queue() const noexcept { return _per_queue; }

	/** Runs one trial; stop (optional) ends the TX phase early when set. */
	trial_result run(const trial_config &c, const std::atomic<bool> *stop = nullptr);

	/** Slots of the tag table: answers later than this many messages count as stale. */
	static constexpr uint32_t nb_slots = 1u << 19;

private:
	struct slot {
		uint64_t seq;
		uint64_t tx_tsc;
		uint32_t rx_bytes;
		uint8_t state; /* 0 free, 1 sent, 2 answered */
		uint8_t cls;
	};
	/** A queue's frames of the burst being sent: m[at..n) still to go. */
	struct tx_batch {
		rte_mbuf *m[64];
		uint64_t seq[64]; /* UINT64_MAX: untracked */
		uint16_t len[64];
		uint8_t last[64];
		uint16_t n, at;
		uint64_t partial; /* a message this queue began and did not send whole, or UINT64_MAX */
	};
	generator(uint16_t port_id, rte_mempool *pool, const capture &cap, match_mode match,
		  uint16_t queues);
	void on_rx(rte_mbuf *m, uint64_t tsc, uint8_t trial_id, trial_result &r) noexcept;
	void answered(slot &s, uint64_t tsc, trial_result &r) noexcept;
	/** The slot an answer's tag names in this trial, or nullptr (counted: other, stale). */
	slot *slot_of(uint64_t tag, uint8_t trial_id, trial_result &r) noexcept;

	uint16_t _port;
	rte_mempool *_pool;
	const capture &_cap;
	match_mode _match;
	uint16_t _queues;
	std::vector<uint8_t> _queue_of;    /* per capture frame */
	std::vector<uint32_t> _per_queue;
	std::vector<tx_batch> _tx;         /* per queue */
	std::vector<slot> _slots;
	double _ns_per_tsc;
};

} // namespace dpumesh::replay
