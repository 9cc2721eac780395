// SPDX-License-Identifier: BSD-3-Clause
// The sidecar stage: builds its components, publishes rulesets, and the poll that reads as
// the flow (inputs in priority order, each handed to flow_pod.cc, flow_net.cc, flow_notes.cc).
#include "dpumesh/sidecar/sidecar.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <rte_cycles.h>
#include <rte_mempool.h>
#include <rte_prefetch.h>
#include <rte_random.h>

#include "internal/admission.h"
#include "internal/command.h"
#include "internal/egress.h"
#include "internal/network_in.h"
#include "internal/outbox.h"
#include "internal/net_sched.h"
#include "internal/owed.h"
#include "internal/quota.h"
#include "internal/request_table.h"

namespace dpumesh::sidecar {

namespace {
constexpr unsigned burst = outbox::burst;
constexpr uint32_t table_capacity = 65536;
/* the network's share (step 4): pods count as busy for 1 ms after their last message;
 * meanwhile a poll takes about 1 us of network work (port RX, this stage, port TX) */
constexpr uint64_t pods_hold_per_s = 1000;
constexpr uint64_t net_share_per_s = 1000000;
/* and without pods' messages, while the network is ahead of this stage (more than
 * net_ahead requests waiting for their turn), at most about 20 us of a poll (step 6 below),
 * so that port RX and the intake of step 6 come round often enough to see every source's
 * requests; otherwise a full burst */
constexpr uint64_t net_idle_share_per_s = 50000;
constexpr uint32_t net_ahead = 128;
/* the most the network may owe: 100 us. Its cost is TSC time, which counts the time the
 * lcore was descheduled mid-burst; unbounded, a 100 ms preemption paused the network for
 * 200 ms (net_fair_test on a box whose worker waited for a CPU 90% of the time) */
constexpr uint64_t net_max_debt_per_s = 10000;
/* a service whose flag was lowered is looked at for 1 ms more: raised again if the room
 * that let a request in is taken (admission::refresh_gate) */
constexpr uint64_t gate_watch_per_s = 1000;
/* step 6's intake: what port RX handed on, at most this many bursts a poll */
constexpr unsigned net_intake_bursts = 4;
/* the lcore's cost of a network message per cycle of this stage's: port RX + sidecar +
 * port TX over the sidecar's, 2.2-2.5 for refusals in the overload suite's profile */
constexpr uint64_t net_cost_factor = 2;
} // namespace

rte_ring *create_handoff_ring(const char *name, unsigned size) noexcept
{
	return rte_ring_create_elem(name, sizeof(handoff_item), size, SOCKET_ID_ANY, RING_F_SC_DEQ);
}

stage::stage() = default;

result<std::unique_ptr<stage>> stage::create(const config::node_config &cfg,
						 pod_registry &reg, const dpa::arm_side &dpa,
						 const network &net, const shard_info &shard)
{
	if (shard.count == 0 || shard.index >= shard.count ||
	    (shard.count > 1 && shard.handoff.size() != shard.count))
		return errorf("sidecar: shard %u of %u: bad shard description", shard.index,
			      shard.count);
	if (dpa.nb_threads() < shard.count || dpa.nb_threads() > 32)
		return errorf("sidecar: %u shards need at least as many DPA threads, and at most 32 "
			      "(have %u)", shard.count, dpa.nb_threads());
	std::unique_ptr<stage> s(new stage());
	s->_reg = &reg;
	s->_departs_seen = reg.departures();
	s->_dpa = dpa;
	s->_tsc_hz = rte_get_tsc_hz();
	s->_net_budget = s->_tsc_hz / net_share_per_s;
	s->_net_idle_budget = s->_tsc_hz / net_idle_share_per_s;
	s->_net_max_debt = static_cast<int64_t>(s->_tsc_hz / net_max_debt_per_s);
	s->_hop = cfg.node.name + "/sidecar";
	s->_trace_rng = policy::trace_rng(rte_rand());
	if (const uint32_t room = std::min<uint32_t>(dpa.hbuf_size - DPA_HBUF_META_SIZE,
						     wire::l7_max_size);
	    room >= policy::trace_both_size)
		s->_trace_both_max = room - policy::trace_both_size;
	timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	const tsc_clock clock = tsc_clock::make(s->_tsc_hz, rte_rdtsc(), wall.tv_sec);
	s->_ingress = net.ingress;
	s->_refusals = net.refusals;
	s->_shard = shard;
	s->_token_bits = request_table::shard_bits(shard.count);

	const uint32_t max_msg = dpa.hbuf_size + cfg.pools.tx_body.slot_size;
	auto eg = egress::create(cfg, net, max_msg, &reg, s->_stats);
	if (!eg)
		return eg.error();
	s->_egress = std::move(*eg);

	const uint32_t nb_services = static_cast<uint32_t>(cfg.services.size());
	std::vector<std::string> names(nb_services);
	for (const config::service_config &svc : cfg.services) {
		uint32_t idx = reg.service_index(svc.name);
		if (idx >= nb_services)
			return errorf("sidecar: service %s unknown to the pod registry", svc.name.c_str());
		names[idx] = svc.name;
	}
	s->_admission = std::make_unique<admission>(reg, std::move(names), clock, s->_stats);
	s->_budgets.resize(nb_services);
	s->_requests = std::make_unique<request_table>(table_capacity, s->_tsc_hz, shard.index,
						       shard.count);
	s->_quota = std::make_unique<quota>(cfg.pools.quota, s->_tsc_hz);
	s->_requests->set_quota(s->_quota.get());
	s->_owed = std::make_unique<owed>(s->_tsc_hz);
	/* network requests waiting here for their source's turn, all sources together: as
	 * many as port RX lets wait on the ring (config pools.network.backlog) */
	s->_net_sched = std::make_unique<net_sched>(cfg.pools.network_backlog);
	/* the first look: a pod takes its RX slots plus a queue in flight (docs/overload.md) */
	s->_admission->set_load(s->_requests->loads(), cfg.pools.admit_queue());

	/* this shard produces to its own threads' SQs; others' get its commands by hand-off */
	std::vector<dpumesh_sq *> to_dpa;
	std::vector<rte_ring *> remote;
	for (unsigned t = 0; t < dpa.nb_threads(); t++) {
		const bool mine = shard.owns_thread(t);
		to_dpa.push_back(mine ? dpa.threads[t].to_dpa : nullptr);
		remote.push_back(mine ? nullptr : shard.handoff[t % shard.count]);
	}
	s->_outbox = std::make_unique<outbox>(std::move(to_dpa), &s->_dpa, s->_tsc_hz, s->_stats,
					      std::move(remote), cfg.pools.dest_queue_entries,
					      cfg.pools.dest_queue_share);
	if (net.rx_msgs)
		s->_outbox->queues().limit_network_requests(
			std::min(cfg.pools.network_queued, net.rx_msgs) / shard.count);
	s->_net_in = std::make_unique<network_in>(dpa.hbuf_pool, dpa.hbuf_size, *s->_egress,
						  s->_stats);

	auto rules = ruleset::build(cfg, reg, 1, shard.share_limits);
	if (!rules)
		return rules.error().with_context("sidecar");
	s->_owned = std::move(*rules);
	s->_cur = s->_owned.get();
	s->_published.store(s->_cur, std::memory_order_release);

	s->_qsbr_id = dpa.nb_threads() + shard.index; /* the DPA threads use 0..n-1 */
	status qs = reg.dp_thread_register(s->_qsbr_id);
	if (!qs)
		return qs.with_context("sidecar");
	s->_registered = true;
	return s;
}

stage::~stage()
{
	if (_registered)
		_reg->dp_thread_unregister(_qsbr_id);
	/* bodies and headers of commands nobody will carry out any more */
	if (_outbox)
		_outbox->for_each_waiting([&](const dpa_command &c) { drop(c); });
	/* held requests whose delivery was reported done: nobody else frees their buffers */
	if (_requests)
		_requests->for_each([&](uint32_t, const pending::entry &, const request_ctx &c) {
			if (c.holding && !c.in_flight)
				drop(c.held);
		});
	/* what other shards handed here and nobody will take any more */
	if (_shard.count > 1 && _outbox) {
		handoff_item h;
		while (rte_ring_sc_dequeue_elem(_shard.handoff[_shard.index], &h, sizeof(h)) == 0) {
			switch (h.what) {
			case handoff_item::kind::command:
				drop(h.cmd);
				break;
			case handoff_item::kind::note:
				drop(dpa_note::decode(h.desc).cmd);
				break;
			case handoff_item::kind::pod_message:
				_dpa.give_hbuf(hbuf_meta(h.desc.header_buf_addr));
				break;
			case handoff_item::kind::network:
				port::rx_msg_free(static_cast<rx_msg *>(h.msg));
				break;
			}
		}
	}
	/* network requests that waited for their source's turn */
	if (_net_sched)
		_net_sched->drain([](rx_msg *m) { port::rx_msg_free(m); });
	/* the egress frees zero-copy hbufs the NIC released but nobody reaped */
}

const pending::table &stage::pending() const noexcept { return _requests->table(); }

result<stage::pending_listing> stage::pending_list(std::chrono::milliseconds wait) const
{
	std::lock_guard<std::mutex> lk(_list_mu);
	const uint64_t asked = _list_asked.load(std::memory_order_relaxed) + 1;
	_list_asked.store(asked, std::memory_order_release);
	const auto until = std::chrono::steady_clock::now() + wait;
	/* the lcore stores `asked` when it has written the listing, and writes it no more
	 * until the next request (below, under the lock) */
	while (_list_given.load(std::memory_order_acquire) != asked) {
		if (std::chrono::steady_clock::now() >= until)
			return errorf("sidecar shard %u: its lcore did not list its pending requests "
				      "within %lld ms (is it polling?)",
				      _shard.index, static_cast<long long>(wait.count()));
		std::this_thread::sleep_for(std::chrono::microseconds(100));
	}
	return _listing;
}

/* On the lcore, in step 8 of a poll (every 10 us): pending_list_step slots of the table,
 * the oldest entries met kept, each as the walk found it; a new request starts over. The
 * whole table is walked (65536 slots: 256 steps, ~2.6 ms; 23 ms under ThreadSanitizer), as
 * the oldest may sit in any slot (the free list is LIFO). Read back from the table at the
 * walk's end instead, the requests of a slow echo (a few ms each) had all closed by then
 * under ThreadSanitizer, and the listing showed none of the 16 always pending. */
void stage::list_pending(uint64_t asked) noexcept
{
	if (_list_for != asked) {
		_list_for = asked;
		_list_at = 0;
		_list_kept.clear();
	}
	const uint32_t cap = _requests->table().capacity();
	_requests->for_each_in(_list_at, pending_list_step,
			       [&](uint32_t token, const pending::entry &e, const request_ctx &) {
				       _list_kept.offer(token, e);
			       });
	_list_at = std::min(_list_at + pending_list_step, cap);
	if (_list_at < cap)
		return;
	_listing.n = 0;
	_list_kept.sorted([&](uint32_t token, const pending::entry &e) {
		_listing.entries[_listing.n++] = {token, e};
	});
	_listing.size = _requests->size();
	_list_given.store(asked, std::memory_order_release);
}
uint32_t stage::nb_services() const noexcept { return _admission->nb_services(); }
const std::string &stage::service_name(uint32_t svc) const noexcept
{
	return _admission->name(svc);
}
void stage::add_service_metrics(uint32_t svc, l7_metrics &to) const noexcept
{
	to.add(_admission->metrics(svc));
	/* port RX's own 503s, counted as count_refused_at_rx() counts those it hands on */
	if (const uint64_t n = _admission->gate().answered(svc)) {
		to.refused_here(503, n);
		to.refused_by[static_cast<size_t>(refusal_reason::saturated)].add(n);
	}
}
const port::service_gate &stage::gate() const noexcept { return _admission->gate(); }

uint32_t stage::waiting() const noexcept
{
	return _outbox->queues().used() + _outbox->parked() + _owed->refused.size();
}

void stage::pod_quota(uint32_t handle, quota_usage *out) const noexcept
{
	*out = _quota->pod(handle);
}

std::vector<std::pair<wire::endpoint, quota_usage>> stage::source_quotas() const
{
	std::vector<std::pair<wire::endpoint, quota_usage>> out;
	for (uint32_t b = 0; b < quota::nb_sources; b++) {
		wire::endpoint ep;
		const quota_usage u = _quota->source(b, &ep);
		if (u.in_flight || u.refused || u.peak)
			out.emplace_back(ep, u);
	}
	return out;
}

void stage::apply(std::shared_ptr<ruleset> next)
{
	std::lock_guard<std::mutex> lk(_policy_mu);
	_published.store(next.get(), std::memory_order_release);
	/* the sidecar lcore loads the pointer at the start of a poll and reports quiescence at
	 * its end: after one grace period nobody uses the old version on the data path */
	_reg->dp_synchronize();
	_owned = std::move(next);
	_stats.policy_swaps.inc();
}

std::shared_ptr<ruleset> stage::policy() const
{
	std::lock_guard<std::mutex> lk(_policy_mu);
	return _owned;
}

/* ---- shards ---- */

unsigned stage::token_shard(uint32_t token) const noexcept
{
	return request_table::shard_of(token, _token_bits);
}

/* To another shard's hand-off ring; false (counted) when it is full, or when no shard has
 * that number: an answer's token no shard made (untrusted, with a shard count that is not a
 * power of two), which matches nothing (no_match, as on its own shard). */
bool stage::hand_off(unsigned shard, const handoff_item &h) noexcept
{
	if (shard >= _shard.count) [[unlikely]] {
		_stats.no_match.inc();
		return false;
	}
	if (rte_ring_mp_enqueue_elem(_shard.handoff[shard], const_cast<handoff_item *>(&h),
				     sizeof(h)) != 0) {
		_stats.handoff_full.inc();
		return false;
	}
	_stats.handoff_out.inc();
	return true;
}

/* What other shards handed to this one: commands for its DPA threads (in their order),
 * pods' responses, notes and network answers whose pending entries are here. */
uint32_t stage::take_handoffs(uint64_t now) noexcept
{
	if (_shard.count < 2)
		return 0;
	handoff_item h[burst];
	const unsigned n = rte_ring_sc_dequeue_burst_elem(_shard.handoff[_shard.index], h, sizeof(h[0]),
							  burst, nullptr);
	for (unsigned i = 0; i < n; i++) {
		_stats.handoff_in.inc();
		switch (h[i].what) {
		case handoff_item::kind::command:
			if (h[i].cmd.delivers()) /* behind what waits for its pod */
				admit_delivery(h[i].thread, h[i].cmd);
			else
				_outbox->send(h[i].thread, h[i].cmd);
			break;
		case handoff_item::kind::pod_message:
			from_pod(h[i].desc, now);
			break;
		case handoff_item::kind::note:
			note(dpa_note::decode(h[i].desc));
			break;
		case handoff_item::kind::network:
			from_network(static_cast<rx_msg *>(h[i].msg), now);
			break;
		}
	}
	return n;
}

/* ---- commands: every one leaves through the outbox, to the thread owning its pod ---- */

void stage::deliver(const dpa_command &c) noexcept
{
	const unsigned t = _dpa.owner(c.dst);
	if (_shard.owns_thread(t))
		admit_delivery(t, c);
	else
		_outbox->send(t, c); /* the owning shard queues it if its pod is held back */
}

/* Completes the TX of whoever sent the header in this hbuf (or frees an hbuf the Arm made). */
void stage::complete(uint64_t header, uint32_t status) noexcept
{
	const uint32_t src = hbuf_meta(header)->src;
	/* an hbuf the Arm made goes back through one of this shard's own threads (thread k) */
	_outbox->send(src ? _dpa.owner(src) : _shard.index, dpa_command::complete(header, status));
}

/* A command that ends here: a network body is released, the sender completed. */
void stage::finish(const dpa_command &c, uint32_t status) noexcept
{
	if (c.network_body())
		dpa::release_local_body(c.body);
	complete(c.header, status);
}

void stage::drop(const dpa_command &c) noexcept
{
	drop_command(c, _dpa);
}

/* A note about a delivery (the RX kernel's, or one made here: turn_down()) that found the
 * hand-off ring of its request's shard full (handoff_full, never expected): that shard ends
 * the request at its deadline. A held delivery's buffers are its pending entry's, released
 * when it ends (freed here too, they were freed twice); another's sender is completed now
 * with the note's status, as its request's refusal would (dropped, its TX never completed
 * and its slot was lost to the pod). */
void stage::lost_note(const dpa_command &c, uint32_t status) noexcept
{
	if (!c.hold)
		finish(c, status);
}

/* ---- the poll ---- */

uint32_t stage::run() noexcept
{
	const uint64_t now = rte_rdtsc();
	uint32_t work = 0;
	_outbox->set_now(now);
	/* one routing and policy version for the whole poll (quiescent at its end) */
	_cur = _published.load(std::memory_order_acquire);
	/* frames of this poll take their mbufs in bulk; the rest goes back at the end */
	_egress->begin_burst();

	/* 1. commands that waited for room in the DPA threads' queues go first (per-SQ order) */
	_outbox->flush();
	/* error answers that waited for a buffer go before new input can take what came back */
	if (!_owed->empty()) [[unlikely]]
		work += pay_owed(now);
	/* 2. parked retries whose time has come; queues of pods that may take more */
	if (_outbox->parked())
		work += unpark(now);
	if (_outbox->queues().active())
		work += pump_queues(now);
	/* 3. zero-copy bodies the NIC let go of: their senders' TX completes now */
	void *done[burst];
	unsigned nd = _outbox->room() ? _egress->reap(done, burst) : 0;
	for (unsigned i = 0; i < nd; i++)
		complete(reinterpret_cast<uint64_t>(done[i]) + DPA_HBUF_META_SIZE, DPUMESH_STATUS_OK);
	work += nd;
	/* 4. per DPA thread: what its RX kernel handed back, then pods' messages */
	sw_descriptor in[burst];
	uint32_t pod_msgs = 0;
	for (unsigned t = _shard.index; t < _dpa.nb_threads(); t += _shard.count) {
		/* notifications first: they free pending entries and hbufs, and the RX kernel
		 * needs their queue drained to take more commands */
		uint32_t n = 0;
		if (_outbox->note_room()) {
			n = dpumesh_sq_dequeue_burst(_dpa.threads[t].notify, in, burst);
			for (uint32_t i = 0; i < n; i++) {
				const dpa_note nt = dpa_note::decode(in[i]);
				/* no room at its pod: it waits in the pod's queue, kept here (this
				 * shard owns the pod's thread, so every delivery to it passes here) */
				if (nt.status == DPUMESH_STATUS_DEST_FULL) {
					bounced(nt.cmd, now);
					continue;
				}
				if (nt.cmd.resume || nt.cmd.notify) { /* more of its queue may go */
					_outbox->queues().outcome(nt.cmd.dst);
					if (nt.status == DPUMESH_STATUS_OK && !nt.cmd.hold)
						continue; /* delivered: nothing more to do */
				}
				/* a request's note goes where its pending entry is */
				const unsigned sh = nt.cmd.what == dpa_command::op::deliver_request
							    ? token_shard(nt.cmd.req_id)
							    : _shard.index;
				if (sh == _shard.index) {
					note(nt);
				} else {
					handoff_item h;
					h.what = handoff_item::kind::note;
					h.desc = in[i];
					if (!hand_off(sh, h))
						lost_note(nt.cmd, nt.status);
				}
			}
			work += n;
		}
		if (!_outbox->room()) {
			_stats.backlog_stalls.inc();
			continue;
		}
		n = dpumesh_sq_dequeue_burst(_dpa.threads[t].from_dpa, in, burst);
		for (uint32_t i = 0; i < n; i++) {
			if (i + 1 < n)
				rte_prefetch0(reinterpret_cast<const void *>(in[i + 1].header_buf_addr));
			from_pod(in[i], now);
		}
		work += n;
		pod_msgs += n;
	}
	/* fairness (docs/overload.md): while pods' messages pass, the network gets about
	 * 1 us of each pass, in messages at their measured cost (port RX's frames and this
	 * poll's network messages), so a flood does not stretch the passes they wait on; a
	 * pod's next message follows within a round trip, hence the hold. While the network is
	 * ahead of this stage it gets about 20 us, so that port RX comes round often enough.
	 * A deficit: each poll adds the budget (at most one poll's worth is kept), the
	 * network's messages spend their measured cost, so a message dearer than the budget (a
	 * JWT to verify, a delivery) takes its turn every few polls instead of one each poll */
	if (pod_msgs)
		_pods_until = now + _tsc_hz / pods_hold_per_s;
	const bool pods_busy = now < _pods_until;
	const bool shared = pods_busy || _net_sched->waiting() > net_ahead;
	const uint64_t budget = pods_busy ? _net_budget : _net_idle_budget;
	const uint64_t cost = net_cost_factor * _net_cycles + 1;
	_net_credit = std::min<int64_t>(_net_credit + static_cast<int64_t>(budget),
					static_cast<int64_t>(budget));
	const unsigned net_quantum =
		!shared		 ? burst
		: _net_credit <= 0 ? 0
				   : static_cast<unsigned>(std::clamp<uint64_t>(
					     static_cast<uint64_t>(_net_credit) / cost, 1, burst));
	const unsigned rx_quantum =
		pods_busy ? static_cast<unsigned>(std::clamp<uint64_t>(_net_budget / cost, 1, burst))
			  : burst;
	_admission->rx_quantum(rx_quantum == burst ? 0 : static_cast<uint16_t>(rx_quantum));
	/* 5. what other shards handed here */
	if (_outbox->room())
		work += take_handoffs(now);
	/* port RX's refusals: answered every poll (no DPA, no outbox), not behind step 6 */
	if (_refusals) {
		rx_msg *refs[burst];
		const unsigned n = rte_ring_sc_dequeue_burst(_refusals, reinterpret_cast<void **>(refs),
							     burst, nullptr);
		for (unsigned i = 0; i < n; i++)
			refused_at_rx(refs[i]);
		if (n)
			_stats.rx_refusals.add(n);
		work += n;
	}
	/* 6. whole messages from the network (Case 2 requests, Case 1 answers), a burst
	 * through each phase (flow_net.cc), at most the network's quantum */
	if (_ingress && _outbox->room())
		work += from_network_sources(net_quantum, shared, now);
	/* 7. deadlines (1 ms ticks): a sweep once a tick has passed, a burst at a time while
	 * a burst comes back (up to 8 per poll: at the rate requests come in, a peer that never
	 * answers must not fill the table); each expiry makes one command at most */
	if (now >= _next_sweep && _outbox->room()) {
		/* its own clock (TSC, per sweep): the benchmarks split the sidecar's cost
		 * between forwarding and the timeouts a suite provokes */
		const uint64_t t0 = rte_rdtsc();
		expiry due[burst];
		uint32_t n = 0, total = 0;
		do {
			n = _requests->expire(now, due, burst);
			expired(due, n, now);
			total += n;
		} while (n == burst && total < 8 * burst && _outbox->room());
		if (n < burst)
			_next_sweep = now + _tsc_hz / 1000;
		work += total;
		_stats.expiry_cycles.add(rte_rdtsc() - t0);
	}
	/* 8. saturated services whose pods have room again: port RX lets their requests in
	 * (and those lowered lately whose room was taken again: refused at port RX again).
	 * Every 10 us, not every poll: looking at each raised service's pods took a tenth of
	 * the lcore under a network flood (perf record), and a pod's slot lasts far longer */
	if (now >= _next_gate) {
		_admission->refresh_gate(now, _tsc_hz / gate_watch_per_s);
		_next_gate = now + _tsc_hz / 100000;
		/* control asked for `show pending`'s listing (pending_list()) */
		if (const uint64_t asked = _list_asked.load(std::memory_order_acquire);
		    asked != _list_given.load(std::memory_order_relaxed)) [[unlikely]]
			list_pending(asked);
		/* pods that left: what waits in their queues here goes to other pods at once
		 * (purge_gone()); their pending requests are ended by a walk over the table
		 * (depart_step()), started depart_grace_ms after the last departure seen (a
		 * departure during a walk starts it over then) */
		if (const uint32_t d = _reg->departures(); d != _departs_seen) [[unlikely]] {
			_departs_seen = d;
			_depart_due = now + _tsc_hz / 1000 * depart_grace_ms;
			_purge_gone = _outbox->queues().active() != 0;
		}
		if (_purge_gone) [[unlikely]]
			purge_gone();
		if (_depart_due != 0 && now >= _depart_due) [[unlikely]] {
			_depart_due = 0;
			_depart_slot = 0;
		}
		if (_depart_slot != UINT32_MAX) [[unlikely]]
			depart_step(now);
	}
	_egress->end_burst();
	/* the backend's per-poll work (DOCA: wake RX kernels that got commands, take back) */
	const uint32_t posted = _outbox->take_posted();
	if (_dpa.ops.service) [[unlikely]]
		for (unsigned t = _shard.index; t < _dpa.nb_threads(); t += _shard.count)
			_dpa.ops.service(_dpa.ctx, t, posted >> t & 1u);
	_reg->dp_quiescent(_qsbr_id);
	return work;
}

/* Step 6: what port RX handed on goes into its source's FIFO (internal/net_sched.h; a
 * request whose source holds its share of a full backlog is answered 503 overloaded at
 * once), answers from the network straight through; then up to `quantum` requests, one per
 * source per turn, their cost spent from the network's credit while it is `shared`. */
uint32_t stage::from_network_sources(unsigned quantum, bool shared, uint64_t now) noexcept
{
	rx_msg *in[burst * net_intake_bursts], *batch[burst];
	unsigned n = 0, nb = 0;
	/* the intake: cheap (a link, or a refusal from the kept addresses), so that a source's
	 * request waits in its own FIFO, not behind the others' on the ring; answers from the
	 * network (bounded by the requests this node sent) go straight into this poll's batch
	 * while it has room, else into their source's FIFO as requests do */
	/* the last source address hashed and its bucket: a burst's requests come from a few
	 * sources, mostly one after the other, and a compare of the address is ~10
	 * instructions less than its hash (kept by value: a refused message is freed) */
	uint64_t last_ip[2] = {};
	uint32_t last_bucket = UINT32_MAX;
	/* the scheduler by reference: read through the member after every store to a
	 * message, it was two loads a message */
	net_sched &sched = *_net_sched;
	/* One source, nothing waiting (the common case: a peer's burst): its requests are not
	 * linked into its FIFO to be taken out again in the same order. While the scheduler
	 * holds nothing and every request so far is from one bucket, in[0, nd) are those
	 * requests in order (an answer between them moved out, the next written over it);
	 * anything else first pushes them (flush), then goes its usual way. The same
	 * messages in the same order, refused alike (nd < limit: the FIFO would take them);
	 * a push and a pop a request were ~21 instructions (relay 1210.1 -> 1189.2). */
	unsigned nd = 0;
	uint32_t direct_bucket = 0;
	/* nd's bound while requests are taken so, 0 once they are not (one test a request) */
	uint32_t direct_limit = sched.waiting() == 0 ? sched.limit() : 0;
	/* nd's bound for a request from the last address hashed (no hash, no compare of the
	 * bucket): direct_limit once that address's bucket is direct_bucket, 0 before the
	 * first hash and once requests are not taken so. Such a request (nearly every one of
	 * a peer's burst) is one compare of its kind, one of its address and one of nd: the
	 * kind, the first hash and the bound tested apart were ~10 instructions a request */
	uint32_t same_limit = 0;
	const auto flush = [&]() noexcept {
		for (unsigned j = 0; j < nd; j++)
			sched.push(in[j], direct_bucket, false);
		direct_limit = same_limit = 0;
	};
	/* anything but a request from the last address hashed while its bucket's requests are
	 * taken directly: apart, so that the loop's common case keeps its values in registers
	 * (inline, they were spilled around it: ~8 instructions a request). A lambda's own
	 * attribute goes before its parameters, which is C++23 grammar: GCC takes it in C++20
	 * silently, clang as an extension with a warning (no C++20 spelling keeps it out of line
	 * in both) */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc++2b-extensions"
#endif
	const auto other = [&] [[gnu::noinline]] (rx_msg *m, uint64_t ip0, uint64_t ip1) noexcept {
		const bool answer = m->msg.kind != wire::frame_kind::request;
		if (answer && nb < burst) {
			batch[nb++] = m;
			return;
		}
		if (last_bucket == UINT32_MAX || ((ip0 ^ last_ip[0]) | (ip1 ^ last_ip[1])) != 0) {
			last_bucket = quota::bucket_of(m->msg.src);
			last_ip[0] = ip0;
			last_ip[1] = ip1;
			/* another bucket ends the run taken so (its requests pushed) */
			if (nd == 0)
				direct_bucket = last_bucket;
			else if (last_bucket != direct_bucket && direct_limit != 0)
				flush();
		}
		if (nd < direct_limit && !answer) [[likely]] {
			m->source_bucket = static_cast<uint16_t>(last_bucket);
			in[nd++] = m;
			same_limit = direct_limit; /* last_bucket is direct_bucket */
			return;
		}
		if (direct_limit != 0)
			flush();
		if (!sched.push(m, last_bucket, answer)) [[unlikely]] {
			_stats.net_share_refused.inc();
			m->refusal = port::rx_refusal::overloaded;
			refused_at_rx(m);
		}
	};
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
	for (unsigned b = 0; b < net_intake_bursts; b++) {
		const unsigned k = rte_ring_sc_dequeue_burst(
			_ingress, reinterpret_cast<void **>(in + n), burst, nullptr);
		for (unsigned i = n; i < n + k; i++) {
			rx_msg *m = in[i];
			uint64_t ip[2];
			std::memcpy(ip, m->msg.src.ip, sizeof(ip));
			if (m->msg.kind == wire::frame_kind::request &&
			    ((ip[0] ^ last_ip[0]) | (ip[1] ^ last_ip[1])) == 0 && nd < same_limit)
				[[likely]] {
				m->source_bucket = static_cast<uint16_t>(last_bucket);
				in[nd++] = m;
				continue;
			}
			other(m, ip[0], ip[1]); /* the address in registers */
		}
		n += k;
		if (k < burst)
			break;
	}
	rx_msg **msgs = batch;
	if (direct_limit != 0) {
		/* what pop() would give: the first quantum - nb of them, the rest left in the
		 * FIFO in order; no answers: the requests are the burst where they lie */
		const unsigned take = nb < quantum ? std::min(nd, quantum - nb) : 0;
		if (nb == 0) {
			msgs = in;
		} else {
			std::copy(in, in + take, batch + nb);
		}
		nb += take;
		for (unsigned j = take; j < nd; j++)
			sched.push(in[j], direct_bucket, false);
	} else if (nb < quantum) {
		nb += sched.pop(batch + nb, quantum - nb);
	}
	if (nb == 0) /* requests waiting for their turn are work: the lcore must not sleep */
		return n + (sched.waiting() != 0 ? 1 : 0);
	const uint64_t t0 = rte_rdtsc();
	const uint32_t work = from_network_burst(msgs, nb, now);
	/* the cost of a network message here, a moving average over polls; what the network
	 * spent of its share while pods are busy */
	const uint64_t spent = rte_rdtsc() - t0;
	_net_cycles = (_net_cycles * 7 + spent / nb) / 8;
	if (shared)
		_net_credit = std::max(_net_credit - static_cast<int64_t>(net_cost_factor * spent),
				       -_net_max_debt);
	return n + work;
}

/* A request port RX refused (its service was saturated here, or port RX had no rx_msg left
 * but its reserve's): the 503 frame from the addresses port RX kept, now or owed until the
 * port takes a frame; no hbuf, no decode, no admission. */
void stage::refused_at_rx(rx_msg *m) noexcept
{
	const bool saturated = m->refusal == port::rx_refusal::saturated;
	if (saturated)
		_admission->count_refused_at_rx(m->svc);
	const bool incomplete = m->refusal == port::rx_refusal::incomplete;
	reply_net(_egress->remote_of(*m), m->msg.correlation, incomplete ? 408 : 503,
		  saturated ? "saturated" : incomplete ? "incomplete" : "overloaded", rte_rdtsc());
	port::rx_msg_free(m);
}

uint16_t stage::poll(void *arg) noexcept
{
	uint32_t w = static_cast<stage *>(arg)->run();
	return static_cast<uint16_t>(std::min<uint32_t>(w, UINT16_MAX));
}

} // namespace dpumesh::sidecar
