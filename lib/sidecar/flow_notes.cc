// SPDX-License-Identifier: BSD-3-Clause
// The sidecar's flow for what comes back: RX kernels' notes (refused and held deliveries),
// the queues per destination that keep order while a pod is full (docs/ordering.md),
// retries (decided by lib/policy's retry.h), parked retries and requests past deadline.
#include "dpumesh/sidecar/sidecar.h"

#include <rte_cycles.h>

#include "internal/admission.h"
#include "internal/command.h"
#include "internal/egress.h"
#include "internal/outbox.h"
#include "internal/owed.h"
#include "internal/quota.h"
#include "internal/request_table.h"

namespace dpumesh::sidecar {

namespace {

constexpr uint32_t burst_of_unpark = outbox::burst;

const char *reason_of(uint32_t status)
{
	switch (status) {
	case DPUMESH_STATUS_DEST_FULL: return "dest_full";
	case DPUMESH_STATUS_DEST_GONE: return "dest_gone";
	case DPUMESH_STATUS_TOO_LARGE: return "too_large";
	case DPUMESH_STATUS_DMA_ERROR: return "dma_error";
	default: return "delivery_failed";
	}
}

} // namespace

/* A held request whose answer came (or that ended): its sender's buffers go back. */
void stage::release_held(request_ctx &c) noexcept
{
	if (!c.holding)
		return;
	c.holding = false;
	finish(c.held, DPUMESH_STATUS_OK);
}

/* Sends a held request again, to another live pod where there is one, after the route's
 * back-off. false: no retry (not held, in flight, none left, budget, breaker, no pod). */
bool stage::retry(pending::entry &e, request_ctx &c, uint64_t now) noexcept
{
	if (!c.holding || c.in_flight || e.retries_left == 0)
		return false;
	const route_rule *r = nullptr;
	if (e.version == _cur->version())
		for (const route_rule &x : _cur->services()[e.service].routes)
			if (x.metrics == e.route)
				r = &x;
	/* the service's budget, and the origin's own: a flooding origin's failures cannot
	 * spend the retries of the others that call the same service (docs/quota.md) */
	const uint32_t percent = r ? r->retry_budget_percent : 20;
	policy::retry_budget &budget = _budgets[e.service];
	policy::retry_budget *mine = _quota->origin_budget(e, c);
	if (!budget.allows(now, _tsc_hz, percent) || (mine && !mine->allows(now, _tsc_hz, percent))) {
		_stats.retry_budget.inc();
		return false;
	}
	if (c.policy && !_cur->engine().breaker_allows(_cur->services()[e.service].policy,
						       _admission->clock().ns(now)))
		return false;
	uint32_t alt = _reg->pick_pod(e.service);
	if (alt == e.dest.pod_handle) /* round robin: the next one, if there is another */
		alt = _reg->pick_pod(e.service);
	if (alt == 0)
		return false;
	budget.spend();
	if (mine)
		mine->spend();
	e.retries_left--;
	e.attempt++;
	e.dest = pod_party(alt);
	c.in_flight = true;
	dpa_command cmd = c.held;
	cmd.dst = alt;
	cmd.hold = true;
	reset_park_state(cmd.header);
	const uint64_t delay_ms = policy::retry_backoff_ms(e.backoff_ms, e.attempt);
	const uint64_t at = now + delay_ms * _tsc_hz / 1000;
	if (delay_ms == 0 || !_outbox->park(cmd, now, e.deadline_tsc, at))
		deliver(cmd);
	_stats.retries.inc();
	_admission->metrics(e.service).retries.inc();
	if (e.version == _cur->version())
		_cur->route_metrics(e.route).retries.inc();
	return true;
}

/* The DPA reports a held delivery done: the request may end now if it was waiting for it. */
void stage::held_done(const dpa_note &n) noexcept
{
	_stats.held_done.inc();
	request_table::ref r = _requests->find(n.cmd.req_id);
	if (!r || !r.ctx().holding)
		return; /* answered meanwhile: its buffers went back with the answer */
	r.ctx().in_flight = false;
	if (r.ctx().ended) {
		release_held(r.ctx());
		_requests->close(n.cmd.req_id);
	} else if (!_reg->handle_live(n.cmd.dst)) [[unlikely]] {
		/* delivered just before its pod left, reported after a departure walk may have
		 * passed it (the walk leaves requests in flight alone): another walk, after the
		 * grace, ends it (unless the pod's answer comes first) */
		if (_depart_due == 0)
			_depart_due = rte_rdtsc() + _tsc_hz / 1000 * depart_grace_ms;
	}
}

/* A request's deadline passed (the table took care of its slot): 504 to its origin. Inline
 * in the sweep's burst of them (below), its one caller. `timeout`: the egress' 504 timeout
 * answer (egress::reply_of()), looked up at the burst's first network origin sent while no
 * answers to the network were owed (nullptr until then, and again after a reply of another
 * answer, which may have taken its place, or an answer owed: set, nothing is owed, so the
 * kept frame's path needs no test of the owed queue of its own, ~4 instructions a 504). */
[[gnu::always_inline]] inline void stage::expired(const expiry &x, uint64_t now,
						  kept_reply *&timeout) noexcept
{
	const pending::entry &e = *x.entry;
	const request_ctx &c = *x.ctx;
	/* the others than a plain timeout (nothing held, its answer not failed) behind one
	 * test (the kind and the flags tested a 504 were ~4 more) */
	if (x.what != expiry::kind::timeout) [[unlikely]] {
		if (x.what == expiry::kind::lost) { /* the DPA never reported the delivery */
			_stats.held_lost.inc();
			return;
		}
		if (c.answer_failed) { /* its answer found no room on the way out: 502 now */
			answered(e, c, 502, true, now, false);
			reply_to_origin(e, c, 502, "egress_failed", now);
			timeout = nullptr; /* a 502 may be kept in the 504's place now */
			return;
		}
	}
	/* answered(e, c, 504, true, now, true), its counters tallied with the sweep's others of
	 * the same service, route and latency bucket (one add each per run of them instead of
	 * ten counter updates per 504: answered() was 2.7% of the forward path's worker) */
	const uint64_t us = _admission->clock().ns(now - e.start_tsc) / 1000;
	/* another run: the last one's counted (nothing when it is empty), this one's kept. A
	 * run is one service, route and routing version (whether that is the poll's, and so
	 * whether the route is counted, is the same for all of it: timeouts_flush()) and one
	 * bucket's range of latencies: three compares and two, where the poll's version
	 * compared, the route only when it was, and the bucket made a 504 were ~12 more */
	timeout_tally &t = _tally;
	if (e.service != t.service || e.route != t.route || e.version != t.version || us < t.lo ||
	    us >= t.hi) [[unlikely]] {
		timeouts_flush();
		const unsigned bucket = latency_histogram::bucket_of(us);
		t.service = e.service;
		t.route = e.route;
		t.version = e.version;
		t.bucket = bucket;
		/* latency_histogram: bucket 0 is < 1 us, k is [2^(k-1), 2^k), the last all
		 * above */
		t.lo = bucket == 0 ? 0 : uint64_t(1) << (bucket - 1);
		t.hi = bucket == latency_histogram::nb_buckets - 1 ? UINT64_MAX
								   : uint64_t(1) << bucket;
		t.current = e.version == _cur->version();
		const service_rules &s = _cur->services()[e.service];
		t.breaker = t.current && s.breaker;
		t.policy = t.breaker ? s.policy : 0;
	}
	t.n++;
	t.sum_us += us;
	/* its service's policy and whether the version is the poll's and the policy has a
	 * breaker, the run's (the version compared and the policy looked up a 504 were ~5,
	 * the engine's test that there is a breaker ~5 more); the run's flag first: most
	 * services have no breaker, and a policy-admitted request's flag is then not read */
	if (t.breaker && c.policy)
		_cur->engine().on_response(t.policy, 504, _admission->clock().ns(now));
	/* reply_to_origin(e, c, 504, "timeout", now), with reply_net()'s steps here for a
	 * network origin (two calls a 504, ~50 instructions, for what is a test and a send) */
	const kept_reply::frame *k;
	if (e.origin.type == pending::party::kind::pod) {
		reply_error(e.origin.pod_handle, e.origin_req_id, e.step_id, 504, "timeout");
	} else if (timeout && (k = _egress->kept_for(c.reply_to, *timeout)) != nullptr) [[likely]] {
		/* a frame kept for its address and port: the port can send (kept_for()), and
		 * nothing is owed (`timeout` set) */
		const uint64_t correlation = e.origin_correlation;
		if (!_egress->reply_kept(c.reply_to, correlation, *k)) {
			owe_net(c.reply_to, correlation, 504, "timeout", now);
			timeout = nullptr; /* owed now */
		}
	} else if (!_egress->can_send(c.reply_to.port)) {
		_stats.no_egress.inc(); /* nothing to wait for: it can never be sent */
	} else if (!_owed->net.empty()) {
		owe_net(c.reply_to, e.origin_correlation, 504, "timeout", now);
	} else {
		if (!timeout) [[unlikely]]
			timeout = &_egress->reply_of(504, "timeout", _hop);
		/* read once: the entry is not held across the send for the owed one */
		const uint64_t correlation = e.origin_correlation;
		if (!_egress->reply(c.reply_to, correlation, *timeout)) {
			owe_net(c.reply_to, correlation, 504, "timeout", now);
			timeout = nullptr; /* owed now */
		}
	}
	if (x.what == expiry::kind::timeout_held && c.holding)
		finish(c.held, DPUMESH_STATUS_OK);
}

/* A sweep's burst of expiries (request_table::expire()), answered, then their tallied
 * counters: one call a burst (a call a 504 was ~17 instructions of saved registers). The
 * forward suite's instruction count reads the 504s' cost here (perf/lib/instructions.py:
 * stage::expired). */
void stage::expired(const expiry *due, uint32_t n, uint64_t now) noexcept
{
	kept_reply *timeout = nullptr;
	/* no run yet: the last burst's may be of another poll, whose routing version (and so
	 * its `current` and `policy`) was another */
	_tally.hi = 0;
	for (uint32_t i = 0; i < n; i++)
		expired(due[i], now, timeout);
	timeouts_flush();
}

/* The tallied timeouts into the counters answered() and expired() keep: the stage's, the
 * service's and (admitted under the current version) the route's. */
void stage::timeouts_flush() noexcept
{
	timeout_tally &t = _tally;
	if (t.n == 0)
		return;
	_stats.timeouts.add(t.n);
	const auto count = [&](l7_metrics &m) {
		m.timeouts.add(t.n);
		m.answer(504, true, t.n);
		m.latency.record(t.bucket, t.n, t.sum_us);
	};
	count(_admission->metrics(t.service));
	if (t.current) /* the poll's version: the one its 504s were answered in */
		count(_cur->route_metrics(t.route));
	t.n = 0;
	t.sum_us = 0;
}

/* A delivery that cannot be made: a request is answered 503, a response is lost. */
void stage::give_up(const dpa_command &c, uint32_t status) noexcept
{
	if (c.what == dpa_command::op::deliver_response) {
		/* the request is no longer pending: unless the requester is what failed, it
		 * hears a 502 made here instead of the answer that cannot be delivered */
		if (status == DPUMESH_STATUS_SRC_GONE || status == DPUMESH_STATUS_DMA_ERROR ||
		    status == DPUMESH_STATUS_TOO_LARGE) {
			_stats.responses_failed.inc();
			reply_error(c.dst, c.req_id, c.step_id, 502,
				    status == DPUMESH_STATUS_SRC_GONE ? "responder_gone"
								      : reason_of(status));
		} else if (status == DPUMESH_STATUS_DEST_FULL) {
			/* its requester's RX had no room in time, or too many answers wait for
			 * it: refused, counted against the requester (quota), and the responder's
			 * buffers go back (its TX completion says DEST_FULL). The requester is owed
			 * one 504 answer_refused, sent once it takes deliveries again; an error
			 * answer made here (no responder, no body) refused again is owed again,
			 * tried later (internal/owed.h) */
			const bool again = hbuf_meta(c.header)->src == 0 && c.body_len == 0 &&
					   c.flow == DPUMESH_CASE_LOCAL;
			if (!again) {
				_stats.answers_refused.inc();
				_quota->answer_refused(c.dst);
			}
			if (!_owed->refused.push(c.dst, c.req_id, c.step_id, rte_rdtsc(), again))
				_stats.answers_unsent.inc();
			else if (!again)
				_stats.answers_owed.inc();
		} else if (status == DPUMESH_STATUS_DEST_GONE) {
			_stats.answers_orphaned.inc(); /* the requester is gone: nobody to answer */
		} else {
			_stats.responses_lost.inc();
		}
		return finish(c, status);
	}
	request_table::ref r = _requests->find(c.req_id);
	if (!r) /* answered or timed out meanwhile: its origin has its answer (see note()) */
		return finish(c, DPUMESH_STATUS_OK);
	if (!r.ctx().ended)
		refuse(r.entry(), r.ctx(), c.dst, status, rte_rdtsc());
	_requests->close(c.req_id); /* c is the held command itself, if any */
	finish(c, DPUMESH_STATUS_OK);
}

/* A pending request its destination `dst` refused or left (status DEST_FULL, DEST_GONE):
 * answered 503, counted for its service and route, and for the pod that had no room
 * (docs/overload.md, "Counted"). The caller ends it. */
void stage::refuse(const pending::entry &e, const request_ctx &c, uint32_t dst, uint32_t status,
		   uint64_t now) noexcept
{
	answered(e, c, 503, true, now, false);
	const refusal_reason why = status == DPUMESH_STATUS_DEST_FULL ? refusal_reason::dest_full
				   : status == DPUMESH_STATUS_DEST_GONE ? refusal_reason::dest_gone
									 : refusal_reason::count;
	if (why != refusal_reason::count) {
		_admission->metrics(e.service).refused_by[size_t(why)].inc();
		if (e.version == _cur->version())
			_cur->route_metrics(e.route).refused_by[size_t(why)].inc();
		if (why == refusal_reason::dest_full)
			_quota->dest_refused(dst);
	}
	reply_to_origin(e, c, 503, reason_of(status), now);
}

/* ---- pods that left ---- */

/* A step of the walk over the table that ends the pending requests of pods no longer live
 * (docs/overload.md, "Pods that leave"): a request whose requester left is closed (nobody
 * to answer; its quota and its destination's load go back now, not at its deadline); one
 * whose destination left before answering is retried on another pod where its route
 * allows, else answered 503 dest_gone. A request in flight or ended is left to the DPA's
 * report, as before. pending_list_step slots a step, a chunk of outbox::burst at a time
 * while the outbox has room for a burst of answers (each makes one command at most);
 * without room the walk waits for the next step. */
void stage::depart_step(uint64_t now) noexcept
{
	const uint32_t cap = _requests->table().capacity();
	uint32_t scanned = 0;
	while (_depart_slot < cap && scanned < pending_list_step && _outbox->room()) {
		if (_requests->size() == 0) { /* nothing to end: the walk is done */
			_depart_slot = cap;
			break;
		}
		uint32_t found[outbox::burst], n = 0;
		_requests->for_each_in(_depart_slot, outbox::burst,
				       [&](uint32_t token, const pending::entry &e, const request_ctx &c) {
					       if (!c.in_flight && !c.ended &&
						   (left(e.origin) || left(e.dest)))
						       found[n++] = token;
				       });
		_depart_slot += outbox::burst;
		scanned += outbox::burst;
		for (uint32_t i = 0; i < n; i++)
			departed(found[i], now);
	}
	if (_depart_slot >= cap)
		_depart_slot = UINT32_MAX;
}

/* Whether a request's party is a pod that is no longer live (a peer never is). */
bool stage::left(const pending::party &p) const noexcept
{
	return p.type == pending::party::kind::pod && !_reg->handle_live(p.pod_handle);
}

/* A request the walk found with a party that left (depart_step()). */
void stage::departed(uint32_t token, uint64_t now) noexcept
{
	request_table::ref r = _requests->find(token);
	if (!r)
		return;
	pending::entry &e = r.entry();
	request_ctx &c = r.ctx();
	if (left(e.origin)) {
		/* an answer that comes later matches nothing (no_match) */
		_stats.origin_left.inc();
	} else {
		_stats.dest_left.inc();
		if (retry(e, c, now))
			return;
		refuse(e, c, e.dest.pod_handle, DPUMESH_STATUS_DEST_GONE, now);
	}
	release_held(c);
	_requests->close(token);
}

/* Parked deliveries whose retry time has come: sent again, to another pod where theirs
 * left meanwhile, or given up. */
uint32_t stage::unpark(uint64_t now) noexcept
{
	outbox::due due[burst_of_unpark];
	uint32_t total = 0, n;
	_outbox->begin_unpark();
	while (_outbox->room() && (n = _outbox->unpark(now, due, burst_of_unpark)) != 0) {
		for (uint32_t i = 0; i < n; i++) {
			const dpa_command &c = due[i].cmd;
			if (due[i].expired) {
				_stats.park_expired.inc();
				give_up(c, DPUMESH_STATUS_DEST_FULL);
			} else if (!_reg->handle_live(c.dst)) {
				/* its pod left while it waited (a retry's back-off) */
				turn_down(c, DPUMESH_STATUS_DEST_GONE);
			} else {
				deliver(c);
			}
		}
		total += n;
	}
	return total;
}

/* ---- per-destination queues: run by the shard that owns the destination's DPA thread ---- */

/* How long a delivery may wait for room: its request's deadline (stamped by deliver_new),
 * else (a response: its request is no longer pending) the quota's answer_wait_ms: an answer
 * holds its responder's TX buffers while it waits, so a requester that does not drain its RX
 * gets its answers refused after that rather than holding the responder (docs/quota.md) */
static uint64_t give_up_of(const dpa_command &c, uint64_t now, const quota &q) noexcept
{
	const uint64_t g = scratch_of(c.header).park_give_up;
	return g ? g : q.answer_give_up(now);
}

/* Whether one more answer may wait for its requester's RX room: not beyond answers_per_pod,
 * nor once the requester has taken nothing for rx_stall_ms (it does not drain its RX: its
 * answers are refused at once, the responder's buffers go back). quota.h. */
static bool answer_may_wait(const dpa_command &c, const dest_queues &q, const quota &qt,
			    uint64_t now) noexcept
{
	return c.what != dpa_command::op::deliver_response ||
	       (q.answers(DPUMESH_HANDLE_POD_ID(c.dst)) < qt.limits().answers_per_pod &&
		!qt.stalled(q.stalled_for(c.dst, now)));
}

/* A request's first delivery: it may wait for room until a little before its deadline, so
 * the origin hears "dest_full" rather than a bare timeout. */
void stage::deliver_new(const dpa_command &c, const pending::entry &e) noexcept
{
	const uint64_t margin = _tsc_hz / 200; /* 5 ms */
	hbuf_scratch &s = scratch_of(c.header);
	s.park_give_up = e.deadline_tsc > e.start_tsc + margin ? e.deadline_tsc - margin
							       : e.start_tsc + 1;
	s.park_bounces = 0;
	s.deliver_by = e.deadline_tsc;
	deliver(c);
}

/* A delivery for one of this shard's threads: at once, or behind what waits for its pod. */
void stage::admit_delivery(unsigned thread, const dpa_command &c) noexcept
{
	dest_queues &q = _outbox->queues();
	const bool waits = q.waits(c.dst);
	const uint64_t now = waits ? rte_rdtsc() : 0;
	if (waits && !answer_may_wait(c, q, *_quota, now)) {
		_stats.park_refused.inc();
		return turn_down(c, DPUMESH_STATUS_DEST_FULL);
	}
	const uint64_t give_up = waits ? give_up_of(c, now, *_quota) : 0;
	switch (q.admit(c, give_up)) {
	case dest_queues::verdict::send:
		if (q.probe(c.dst)) [[unlikely]] { /* a pod that took nothing lately */
			/* marked RESUME too: the RX kernel still holds the pod back since the
			 * delivery it gave back last (its queue was given up since, nothing was
			 * resumed), and only a RESUME clears that; without it every later
			 * delivery to the pod came back, and a pod whose answers were all given
			 * up never got another one */
			dpa_command p = c;
			p.notify = true;
			p.resume = true;
			_outbox->send(thread, p);
			return;
		}
		_outbox->send(thread, c);
		return;
	case dest_queues::verdict::queued:
		_stats.parked.inc();
		return;
	case dest_queues::verdict::refused_network:
		_stats.park_refused_network.inc();
		[[fallthrough]];
	case dest_queues::verdict::refused:
		_stats.park_refused.inc();
		return turn_down(c, DPUMESH_STATUS_DEST_FULL);
	}
}

/* The RX kernel gave a delivery back for want of room (or because an earlier one to the
 * same pod waits): it waits in the pod's queue, in order; never re-routed. */
void stage::bounced(const dpa_command &c, uint64_t now) noexcept
{
	_stats.dest_full.inc();
	/* a network request's body holds packet mbufs the port needs to keep receiving: it
	 * waits only while a quarter of the pool is free, else its sender hears 503 dest_full
	 * at once (load shedding rather than a port that stops receiving); the queue still
	 * hears of it (a resume or a window may end with it). */
	const bool shed = (c.network_body() && c.what == dpa_command::op::deliver_request &&
			   !_egress->pkts_plenty()) ||
			  !answer_may_wait(c, _outbox->queues(), *_quota, now);
	const bool net_full = !shed && _outbox->queues().network_full(c);
	if (_outbox->queues().bounced(c, give_up_of(c, now, *_quota), now, !shed)) {
		_stats.parked.inc();
		return;
	}
	if (net_full)
		_stats.park_refused_network.inc();
	_stats.park_refused.inc();
	turn_down(c, DPUMESH_STATUS_DEST_FULL);
}

/* What leaves the queues now: the first of a held-back pod marked RESUME, the queue of a
 * pod that has room again in order, and what waited past its give-up time (answered). */
uint32_t stage::pump_queues(uint64_t now) noexcept
{
	dest_queues::out out[burst_of_unpark];
	uint32_t total = 0, n;
	while (_outbox->room() &&
	       (n = _outbox->queues().next(now, out, burst_of_unpark, _quota->rx_stall_tsc())) != 0) {
		for (uint32_t i = 0; i < n; i++) {
			const dpa_command &c = out[i].cmd;
			if (out[i].expired) {
				_stats.park_expired.inc();
				turn_down(c, DPUMESH_STATUS_DEST_FULL);
				continue;
			}
			if (c.resume)
				_stats.resumes.inc();
			_outbox->send(_dpa.owner(c.dst), c);
		}
		total += n;
		if (n < burst_of_unpark)
			break;
	}
	return total;
}

/* After a departure: the deliveries queued here for pods that left (their queues held back
 * while they were full) are taken out and turned down DEST_GONE at once, a burst at a time
 * while the outbox has room; the rest at the next step. Sent to the RX kernel instead they
 * would come back DEST_GONE one window a DPA round trip after the queue's back-off (up to
 * 1.28 ms), and a request still queued when the departure walk came (depart_grace_ms) was
 * answered 503 dest_gone rather than re-routed (docs/overload.md, "Pods that leave"). */
void stage::purge_gone() noexcept
{
	dest_queues::out out[burst_of_unpark];
	while (_outbox->room()) {
		const uint32_t n = _outbox->queues().purge(
			[this](uint32_t dst) { return !_reg->handle_live(dst); }, out,
			burst_of_unpark);
		for (uint32_t i = 0; i < n; i++)
			turn_down(out[i].cmd, DPUMESH_STATUS_DEST_GONE);
		if (n < burst_of_unpark) {
			_purge_gone = false;
			return;
		}
	}
}

/* A delivery that will not be made, taken where its pending entry is, as the RX kernel's
 * note of that status would be: DEST_FULL (no room in time) is answered; DEST_GONE (its pod
 * left while it waited here: a departure's purge, a retry's back-off) goes through note(),
 * where a request goes to another live pod of its service if it may (else 503 dest_gone),
 * an answer is orphaned, and either is counted dest_gone. DEST_FULL goes straight to
 * give_up(), what note() would do with it, without note()'s second lookup of the request. */
void stage::turn_down(const dpa_command &c, uint32_t status) noexcept
{
	const auto as_note = [&] {
		dpa_note n;
		n.cmd = c;
		n.cmd.resume = n.cmd.notify = false;
		n.status = status;
		return n;
	};
	if (c.what == dpa_command::op::deliver_request && _shard.count > 1) {
		const unsigned sh = token_shard(c.req_id);
		if (sh != _shard.index) {
			handoff_item h;
			h.what = handoff_item::kind::note;
			h.desc = as_note().encode();
			if (!hand_off(sh, h))
				lost_note(c, status);
			return;
		}
	}
	if (status == DPUMESH_STATUS_DEST_GONE)
		return note(as_note());
	give_up(c, status);
}

void stage::note(const dpa_note &n) noexcept
{
	const uint32_t status = n.status;
	if (n.held_done())
		return held_done(n);
	if (status == DPUMESH_STATUS_DEST_GONE)
		_stats.dest_gone.inc();
	else if (status == DPUMESH_STATUS_SRC_GONE)
		_stats.src_gone.inc();
	/* DEST_FULL here is final: the owning shard's queue refused it or it waited too long */
	if (n.cmd.what == dpa_command::op::deliver_response)
		return give_up(n.cmd, status);
	/* a request. Once its origin has had an answer (the response, or a 504/503 made here),
	 * the sender's TX completion says OK: a refusal status there is an answer of its own
	 * (docs/host-api.md), and the request would have two */
	request_table::ref r = _requests->find(n.cmd.req_id);
	if (!r)
		return finish(n.cmd, DPUMESH_STATUS_OK); /* answered or timed out meanwhile */
	if (status == DPUMESH_STATUS_SRC_GONE || r.ctx().ended) {
		/* its sender left, or it was answered 504 already: only its buffers are left */
		const uint32_t tx_status = r.ctx().ended ? uint32_t(DPUMESH_STATUS_OK) : status;
		_requests->close(n.cmd.req_id);
		return finish(n.cmd, tx_status);
	}
	pending::entry &e = r.entry();
	if (status == DPUMESH_STATUS_DEST_GONE) {
		/* the pod is gone (nothing of it to keep order with): another live pod of the
		 * service takes it at once, ordered from now on with what that pod gets */
		uint32_t alt = _reg->pick_pod(e.service);
		if (alt && alt != e.dest.pod_handle && e.attempt < 2) {
			e.attempt++;
			e.dest = pod_party(alt);
			dpa_command cmd = n.cmd;
			cmd.dst = alt;
			cmd.resume = cmd.notify = false;
			deliver(cmd);
			_stats.retries.inc();
			return;
		}
	}
	give_up(n.cmd, status);
}

} // namespace dpumesh::sidecar
