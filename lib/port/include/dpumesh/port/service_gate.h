// SPDX-License-Identifier: BSD-3-Clause
// The service gate: services by name, and a saturation flag per service that a sidecar shard
// publishes and its port RX reads, to refuse a saturated service's requests at the first frame.
//
// One gate per sidecar shard (each shard counts its own requests in flight, so saturation is
// a shard's view); worker k's port RX hands its messages to shard k and reads shard k's
// gate. The shard is the only writer of its flags and its port RX the only reader, on the
// same lcore or on another: relaxed atomic bytes suffice, since a flag is a hint either way
// (a stale "saturated" refuses a request a pod just got room for, with the same 503 the
// sidecar gives; a stale "room" sends a request on to the sidecar, which refuses it there).
//
//   port::service_gate g({"echo", "quiet"});
//   uint32_t svc = g.find("echo");            // UINT32_MAX: not a service here
//   g.set_saturated(svc, true);               // the sidecar, when no pod has room
//   if (g.saturated(svc)) refuse_at_rx();     // port RX
//
// It also carries the network's share of the lcore (docs/overload.md "Fairness"): while
// pods' messages pass through the shard, the shard sets how many frames port RX may take
// per poll (about a microsecond of the lcore's work, from the measured cost of a network
// message), so a network flood cannot stretch every pass of the lcore those messages wait on.
//
//   g.set_rx_quantum(8);                      // the sidecar, while pods' messages pass; 0: none
//   rte_eth_rx_burst(port, q, pkts, g.rx_quantum(32));   // port RX: 8 then
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dpumesh/common/counter.h"

namespace dpumesh::port {

class service_gate {
public:
	explicit service_gate(std::vector<std::string> names);
	service_gate(const service_gate &) = delete;
	service_gate &operator=(const service_gate &) = delete;

	uint32_t nb_services() const noexcept { return static_cast<uint32_t>(_names.size()); }
	const std::string &name(uint32_t svc) const noexcept { return _names[svc]; }
	/** The index of a service name (a hash built once), or UINT32_MAX. */
	uint32_t find(std::string_view name) const noexcept;

	/** Port RX: whether the owning shard has said no pod of `svc` has room. */
	bool saturated(uint32_t svc) const noexcept
	{
		return svc < _names.size() && _flags[svc].load(std::memory_order_relaxed) != 0;
	}
	/** Port RX, before it reads a request's service: whether any flag is up (one load per
	 *  burst while none is, instead of the peek and the lookup a frame). */
	bool any_saturated() const noexcept
	{
		return _nb_raised.load(std::memory_order_relaxed) != 0;
	}
	/** The owning shard only (the one writer of the flags and of their count). */
	void set_saturated(uint32_t svc, bool on) noexcept
	{
		const uint8_t v = on ? 1 : 0;
		if (_flags[svc].load(std::memory_order_relaxed) == v)
			return;
		_flags[svc].store(v, std::memory_order_relaxed);
		const uint32_t n = _nb_raised.load(std::memory_order_relaxed);
		_nb_raised.store(on ? n + 1 : n - 1, std::memory_order_relaxed);
	}

	/** Port RX: a request of `svc` it answered 503 `saturated` itself (docs/overload.md,
	 *  "Port RX answers what it refuses"). The one thing port RX writes here; single writer
	 *  (the gate's one port RX), read by the shard when it reports the service's metrics. */
	void count_answered(uint32_t svc) const noexcept { _answered[svc].inc(); }
	uint64_t answered(uint32_t svc) const noexcept
	{
		return svc < _names.size() ? _answered[svc].get() : 0;
	}

	/** Port RX: how many frames to take now, at most `burst`. */
	uint16_t rx_quantum(uint16_t burst) const noexcept
	{
		const uint16_t q = _rx_quantum.load(std::memory_order_relaxed);
		return q != 0 && q < burst ? q : burst;
	}
	/** The owning shard only: port RX's frames per poll, 0 for no cap (written on change). */
	void set_rx_quantum(uint16_t q) noexcept
	{
		if (_rx_quantum.load(std::memory_order_relaxed) != q)
			_rx_quantum.store(q, std::memory_order_relaxed);
	}

private:
	/* find() of a name longer than a key (its bytes compared too), out of line */
	[[gnu::noinline]] uint32_t find_long(std::string_view name) const noexcept;

	/* A name's place in the index: its key (up to 8 bytes: the bytes themselves, key_of()),
	 * its length, its index + 1 (0: an empty place) */
	struct slot {
		uint64_t key = 0;
		uint32_t len = 0;
		uint32_t id = 0;
	};
	std::vector<std::string> _names;
	std::vector<slot> _index; /* open addressing */
	uint32_t _mask = 0;       /* _index.size() - 1, kept (find() made it from the vector's
				     ends: 5 instructions a lookup) */
	std::unique_ptr<std::atomic<uint8_t>[]> _flags;
	std::unique_ptr<counter[]> _answered; /* by port RX: apart from the flags' line */
	std::atomic<uint32_t> _nb_raised{0}; /* flags up */
	std::atomic<uint16_t> _rx_quantum{0}; /* port RX's frames per poll; 0: a full burst */
};

} // namespace dpumesh::port
