// SPDX-License-Identifier: BSD-3-Clause
// Pod registry: registration/unregistration (control) and the security core (data path).
#include "dpumesh/podreg/pod_registry.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <rte_cycles.h>

#include "dpumesh/common/log.h"
#include "dpumesh/common/thread_clock.h"

namespace dpumesh {

namespace {

const char *const tx_refusal_names[] = {
#define DPUMESH_TX_REFUSAL_NAME(n, s, d) #n,
	DPUMESH_FOREACH_TX_REFUSAL(DPUMESH_TX_REFUSAL_NAME)
#undef DPUMESH_TX_REFUSAL_NAME
};
const char *const refill_refusal_names[] = {
#define DPUMESH_REFILL_REFUSAL_NAME(n, d) #n,
	DPUMESH_FOREACH_REFILL_REFUSAL(DPUMESH_REFILL_REFUSAL_NAME)
#undef DPUMESH_REFILL_REFUSAL_NAME
};

bool pool_within(const dpumesh_pool_geometry &g, const config::pool_geometry &limit)
{
	return g.slots <= limit.slots && g.slot_size <= limit.slot_size;
}

} // namespace

const char *tx_refusal_name(tx_refusal r) noexcept
{
	return r < tx_refusal::count ? tx_refusal_names[static_cast<size_t>(r)] : "?";
}
uint32_t tx_refusal_status(tx_refusal r) noexcept
{
	return dpumesh_tx_refusal_status(static_cast<int>(r));
}
const char *refill_refusal_name(refill_refusal r) noexcept
{
	return r < refill_refusal::count ? refill_refusal_names[static_cast<size_t>(r)] : "?";
}

uint64_t pod_counters::tx_refused_total() const noexcept
{
	uint64_t n = 0;
	for (uint64_t v : tx_refused)
		n += v;
	return n;
}
uint64_t pod_counters::refill_refused_total() const noexcept
{
	uint64_t n = 0;
	for (uint64_t v : refill_refused)
		n += v;
	return n;
}
pod_counters pod_counters_live::read() const noexcept
{
	pod_counters c;
	c.tx_taken = tx_taken.get();
	for (size_t i = 0; i < tx_refused.size(); i++)
		c.tx_refused[i] = tx_refused[i].get();
	c.tx_done_posted = tx_done_posted.get();
	c.rx_delivered = rx_delivered.get();
	c.rx_sq_full = rx_sq_full.get();
	c.rx_no_slot = rx_no_slot.get();
	for (size_t i = 0; i < refill_refused.size(); i++)
		c.refill_refused[i] = refill_refused[i].get();
	c.dropped_on_unregister = dropped_on_unregister.get();
	c.doorbells = doorbells.get();
	c.doorbells_suppressed = doorbells_suppressed.get();
	c.doorbells_deferred = doorbells_deferred.get();
	return c;
}

void pod_counters_live::reset() noexcept
{
	tx_taken.reset();
	for (counter &c : tx_refused)
		c.reset();
	tx_done_posted.reset();
	rx_delivered.reset();
	rx_sq_full.reset();
	rx_no_slot.reset();
	for (counter &c : refill_refused)
		c.reset();
	dropped_on_unregister.reset();
	doorbells.reset();
	doorbells_suppressed.reset();
	doorbells_deferred.reset();
}

void pod_counters::add(const pod_counters &o) noexcept
{
	tx_taken += o.tx_taken;
	for (size_t i = 0; i < std::size(tx_refused); i++)
		tx_refused[i] += o.tx_refused[i];
	tx_done_posted += o.tx_done_posted;
	rx_delivered += o.rx_delivered;
	rx_sq_full += o.rx_sq_full;
	rx_no_slot += o.rx_no_slot;
	for (size_t i = 0; i < std::size(refill_refused); i++)
		refill_refused[i] += o.refill_refused[i];
	dropped_on_unregister += o.dropped_on_unregister;
	doorbells += o.doorbells;
	doorbells_suppressed += o.doorbells_suppressed;
	doorbells_deferred += o.doorbells_deferred;
}

/* DPU-side state of one pod_id. Written by control before is_active is released; read by
 * the data path after an acquire of is_active. */
struct pod_registry::pod_state {
	/* read by the data path */
	uint32_t generation = 0;
	uint32_t mkey = 0;
	uint32_t service = 0;
	uint32_t nb_workers = 0;
	uint64_t base = 0; /* the pod's address of its region's byte 0 */
	dpumesh_geometry geometry = {};
	dpumesh_pod_layout layout = {};
	int doorbell = -1;
	/* need-wakeup: the pod's epoch word (in its region; only loaded, never trusted beyond
	 * "ring or not"), the odd epoch last rung for, and "in the current batch" (all written
	 * by the pod's one producer thread) */
	const uint64_t *rx_wait = nullptr;
	uint64_t rung_epoch = 0;
	uint8_t marked = 0; /* marked_* below */
	/* the TX need-wakeup word (in its region; written by the owning DPA thread only) and
	 * the eventfd the pod rings while that word is odd */
	uint64_t *tx_wait = nullptr;
	int tx_doorbell = -1;
	dpumesh_sq tx_sq[DPUMESH_MAX_WORKERS] = {};
	dpumesh_sq rx_sq = {};
	dpumesh_sq refill_header = {};
	dpumesh_sq refill_body = {};
	/* slots taken but not delivered, handed out before the refill rings */
	std::unique_ptr<uint64_t[]> spare_header, spare_body;
	uint32_t nb_spare_header = 0, nb_spare_body = 0;
	pod_counters_live counters;
	/* descriptors taken from its TX SQs and not completed yet (the owner DPA thread):
	 * never more than its TX header slots, so a pod that posts one slot again and again
	 * holds no more of the node (hbufs, the sidecar's queues) than an honest one can */
	std::atomic<uint32_t> tx_outstanding{0}; /* one writer: relaxed load + store */
	std::atomic<uint32_t> zc_holds{0}; /* zero-copy TX bodies the NIC may still read */
	/* control only */
	bool in_use = false;
	bool retiring = false;   /* begin_unregister ran; try_retire has not finished it */
	bool grace_done = false; /* every data-path thread reported quiescence since */
	bool grace_told = false; /* a slow grace period's laggards were logged */
	uint64_t retire_token = 0;
	std::chrono::steady_clock::time_point retire_begun, grace_ended;
	bool remote = false; /* register_remote: the DPA side holds its memory and queues */
	unique_fd doorbell_fd;
	unique_fd tx_doorbell_fd;
	std::optional<region> tx_region;
};

struct pod_registry::service_state {
	std::string name;
	uint32_t max_pods = 0;
	uint32_t nb_pods = 0; /* control's count */
	/* members[0..nb_members) are pod_ids; readers check is_active and the service */
	std::atomic<uint32_t> members[DPUMESH_MAX_PODS] = {};
	std::atomic<uint32_t> nb_members{0};
	/* round robin, data path: every sidecar shard picks (relaxed: a lost step only
	 * repeats a pick) */
	std::atomic<uint32_t> cursor{0};
};

pod_registry::pod_registry(const config::pools_config &limits,
			   const std::vector<config::service_config> &services,
			   unsigned max_dp_threads, uint32_t mkey_capacity)
	: _pods(new pod_state[DPUMESH_MAX_PODS]),
	  _services(new service_state[services.size()]),
	  _nb_services(static_cast<uint32_t>(services.size())), _limits(limits),
	  _mkeys(mkey_capacity), _max_dp_threads(max_dp_threads == 0 ? 1 : max_dp_threads)
{
	for (size_t i = 0; i < services.size(); i++) {
		_services[i].name = services[i].name;
		_services[i].max_pods = services[i].max_pods;
	}
	size_t sz = rte_rcu_qsbr_get_memsize(_max_dp_threads);
	sz = (sz + 63) / 64 * 64;
	_retiring.reserve(DPUMESH_MAX_PODS); /* push_back in begin_unregister never allocates */
	_qsbr = static_cast<rte_rcu_qsbr *>(std::aligned_alloc(64, sz));
	if (_qsbr == nullptr || rte_rcu_qsbr_init(_qsbr, _max_dp_threads) != 0)
		std::abort(); /* CHECK: start-up allocation of a few hundred bytes */
}

pod_registry::~pod_registry()
{
	for (uint32_t i = 0; i < DPUMESH_MAX_PODS; i++)
		if (_pods[i].in_use)
			(void)unregister_pod(i);
	std::free(_qsbr);
}

uint32_t pod_registry::service_index(std::string_view name) const noexcept
{
	for (uint32_t i = 0; i < _nb_services; i++)
		if (_services[i].name == name)
			return i;
	return UINT32_MAX;
}

std::string_view pod_registry::pod_service(uint32_t pod_id) const noexcept
{
	if (pod_id >= DPUMESH_MAX_PODS || !_pods[pod_id].in_use)
		return {};
	return _services[_pods[pod_id].service].name;
}

uint32_t pod_registry::tx_outstanding(uint32_t pod_id) const noexcept
{
	if (pod_id >= DPUMESH_MAX_PODS || !_pods[pod_id].in_use)
		return 0;
	return _pods[pod_id].tx_outstanding.load(std::memory_order_relaxed);
}

pod_counters pod_registry::counters(uint32_t pod_id) const noexcept
{
	if (pod_id >= DPUMESH_MAX_PODS || !_pods[pod_id].in_use)
		return {};
	return _pods[pod_id].counters.read();
}

/* The checks both registrations make, and a free pod_id: the id, or UINT32_MAX with *code
 * and *why set. */
uint32_t pod_registry::admit(const register_request &req, dpumesh_pod_layout *layout,
			     uint32_t *code, status *why) const
{
	auto fail = [code, why](uint32_t c, status st) {
		*code = c;
		*why = std::move(st);
		return UINT32_MAX;
	};
	uint32_t svc = service_index(req.service);
	if (svc == UINT32_MAX)
		return fail(DPUMESH_CTRL_ERR_SERVICE,
			    errorf("unknown service \"%s\"", req.service.c_str()));
	if (req.nb_workers == 0 || req.nb_workers > DPUMESH_MAX_WORKERS)
		return fail(DPUMESH_CTRL_ERR_GEOMETRY,
			    errorf("%u workers (1..%u)", req.nb_workers, DPUMESH_MAX_WORKERS));
	int lrc = dpumesh_pod_layout_compute(&req.geometry, layout);
	if (lrc != DPUMESH_LAYOUT_OK)
		return fail(DPUMESH_CTRL_ERR_GEOMETRY, errorf("invalid geometry (layout error %d)", lrc));
	const dpumesh_geometry &g = req.geometry;
	if (!pool_within(g.tx_header, _limits.tx_header) || !pool_within(g.tx_body, _limits.tx_body) ||
	    !pool_within(g.rx_header, _limits.rx_header) || !pool_within(g.rx_body, _limits.rx_body) ||
	    g.sq_depth > _limits.sq_depth)
		return fail(DPUMESH_CTRL_ERR_LIMITS,
			    errorf("geometry over the node's pools limits (slots/slot_size per pool, "
				   "sq_depth %u)", _limits.sq_depth));
	const service_state &s = _services[svc];
	if (s.nb_pods >= s.max_pods)
		return fail(DPUMESH_CTRL_ERR_SERVICE_FULL,
			    errorf("service \"%s\" has its %u pods", s.name.c_str(), s.max_pods));
	for (uint32_t i = 0; i < DPUMESH_MAX_PODS; i++) {
		uint32_t c = (_next_pod + i) % DPUMESH_MAX_PODS;
		if (!_pods[c].in_use)
			return c;
	}
	return fail(DPUMESH_CTRL_ERR_TABLE_FULL, errorf("pod table full (%u pods)", DPUMESH_MAX_PODS));
}

/* A checked pod's state filled by the caller: its generation, table entry (is_active
 * released last) and service membership. */
result<pod_registration> pod_registry::publish(uint32_t id, const register_request &req,
					       const dpumesh_pod_layout &layout, uint32_t *code)
{
	pod_state &p = _pods[id];
	const uint32_t svc = service_index(req.service);
	service_state &s = _services[svc];
	p.generation = _next_generation;
	_next_generation = _next_generation == DPUMESH_GENERATION_MAX ? 1 : _next_generation + 1;
	p.service = svc;
	p.nb_workers = req.nb_workers;
	p.geometry = req.geometry;
	p.layout = layout;
	p.counters.reset();
	p.tx_outstanding.store(0, std::memory_order_relaxed);
	p.in_use = true;

	pod_registry_entry &e = _table[id];
	e.rx_header_mkey = p.mkey;
	e.rx_body_mkey = p.mkey;
	e.rx_sq_doorbell = id;
	e.generation = p.generation;
	__atomic_store_n(&e.is_active, 1u, __ATOMIC_RELEASE);

	uint32_t n = s.nb_members.load(std::memory_order_relaxed);
	s.members[n].store(id, std::memory_order_relaxed);
	s.nb_members.store(n + 1, std::memory_order_release);
	s.nb_pods++;
	_nb_pods.store(_nb_pods.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
	_membership.store(_membership.load(std::memory_order_relaxed) + 1, std::memory_order_release);
	_next_pod = (id + 1) % DPUMESH_MAX_PODS;
	*code = DPUMESH_CTRL_OK;
	DPUMESH_LOG(INFO, podchan, "pod %u registered%s: service %s, generation %u, mkey 0x%x, %u workers",
		    id, p.remote ? " (memory on the DPA's side)" : "", s.name.c_str(), p.generation,
		    p.mkey, p.nb_workers);
	return registration(id);
}

result<pod_registration> pod_registry::register_pod(const register_request &req,
						     region &&pod_region, uint32_t *code)
{
	region r = std::move(pod_region); /* destroyed on every error path */
	auto fail = [code](uint32_t c, status st) {
		*code = c;
		return st;
	};
	dpumesh_pod_layout layout;
	status why;
	const uint32_t id = admit(req, &layout, code, &why);
	if (id == UINT32_MAX)
		return why;
	const dpumesh_geometry &g = req.geometry;
	if (r.data() == nullptr || r.size() < layout.total_size)
		return fail(DPUMESH_CTRL_ERR_GEOMETRY,
			    errorf("region of %zu bytes is smaller than the layout's %llu", r.size(),
				   static_cast<unsigned long long>(layout.total_size)));
	if (r.remote_base() % DPUMESH_LAYOUT_ALIGN != 0)
		return fail(DPUMESH_CTRL_ERR_GEOMETRY, errorf("region base is not 4096-aligned"));

	unique_fd efd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (!efd)
		return fail(DPUMESH_CTRL_ERR_INTERNAL, errorf("eventfd: %s", std::strerror(errno)));
	unique_fd tx_efd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (!tx_efd)
		return fail(DPUMESH_CTRL_ERR_INTERNAL,
			    errorf("TX doorbell eventfd: %s", std::strerror(errno)));
	char name[48];
	std::snprintf(name, sizeof(name), "dpumesh-txsq-pod%u", id);
	auto txr = region::create(name, dpumesh_tx_region_size(g.sq_depth, req.nb_workers), false);
	if (!txr)
		return fail(DPUMESH_CTRL_ERR_INTERNAL, txr.error());
	const uint64_t base = r.remote_base();
	uint8_t *local = static_cast<uint8_t *>(r.data());
	if (_region_hook) {
		status hs = _region_hook(r, true);
		if (!hs)
			return fail(DPUMESH_CTRL_ERR_INTERNAL, hs.with_context("registering the region"));
	}
	auto mk = _mkeys.register_region(std::move(r));
	if (!mk) {
		/* the region came back to us untouched: undo the hook's registration */
		if (_region_hook) /* register_region(region &&) keeps a refused region's ownership */
			(void)_region_hook(r, false); // NOLINT(bugprone-use-after-move)
		return fail(DPUMESH_CTRL_ERR_TABLE_FULL, mk.error());
	}

	pod_state &p = _pods[id];
	p.remote = false;
	p.mkey = *mk;
	p.base = base;
	p.doorbell_fd = std::move(efd);
	p.doorbell = p.doorbell_fd.get();
	p.rx_wait = reinterpret_cast<const uint64_t *>(local + layout.ctrl_off +
						       offsetof(dpumesh_pod_ctrl, rx_wait));
	p.rung_epoch = 0;
	p.marked = 0;
	p.tx_wait = reinterpret_cast<uint64_t *>(local + layout.ctrl_off +
						 offsetof(dpumesh_pod_ctrl, tx_wait));
	__atomic_store_n(p.tx_wait, 0, __ATOMIC_RELAXED); /* watched (even) until parked */
	p.tx_doorbell_fd = std::move(tx_efd);
	p.tx_doorbell = p.tx_doorbell_fd.get();
	p.tx_region.emplace(std::move(txr).value());
	uint8_t *tx_local = static_cast<uint8_t *>(p.tx_region->data());
	for (uint32_t w = 0; w < DPUMESH_MAX_WORKERS; w++)
		p.tx_sq[w] = {};
	for (uint32_t w = 0; w < req.nb_workers; w++)
		(void)dpumesh_sq_init(&p.tx_sq[w], tx_local + dpumesh_tx_sq_offset(g.sq_depth, w),
				      g.sq_depth);
	(void)dpumesh_sq_init(&p.rx_sq, local + layout.rx_sq_off, g.sq_depth);
	(void)dpumesh_sq_init(&p.refill_header, local + layout.rx_header_refill_off, g.sq_depth);
	(void)dpumesh_sq_init(&p.refill_body, local + layout.rx_body_refill_off, g.sq_depth);
	p.spare_header.reset(new uint64_t[g.rx_header.slots]);
	p.spare_body.reset(new uint64_t[g.rx_body.slots]);
	p.nb_spare_header = p.nb_spare_body = 0;
	return publish(id, req, layout, code);
}

result<pod_registration> pod_registry::register_remote(const register_request &req, uint32_t mkey,
						       uint64_t base, uint32_t *code)
{
	dpumesh_pod_layout layout;
	status why;
	const uint32_t id = admit(req, &layout, code, &why);
	if (id == UINT32_MAX)
		return why;
	if (base % DPUMESH_LAYOUT_ALIGN != 0) {
		*code = DPUMESH_CTRL_ERR_GEOMETRY;
		return errorf("region base is not 4096-aligned");
	}
	pod_state &p = _pods[id];
	p.remote = true; /* no region, doorbells, SQs or spare slots here: all stay empty */
	p.mkey = mkey;
	p.base = base;
	for (uint32_t w = 0; w < DPUMESH_MAX_WORKERS; w++)
		p.tx_sq[w] = {};
	return publish(id, req, layout, code);
}

result<pod_registration> pod_registry::registration(uint32_t pod_id) const
{
	if (pod_id >= DPUMESH_MAX_PODS || !_pods[pod_id].in_use)
		return errorf("pod %u is not registered", pod_id);
	const pod_state &p = _pods[pod_id];
	pod_registration reg;
	reg.pod_id = pod_id;
	reg.generation = p.generation;
	reg.handle = dpumesh_pod_handle(pod_id, p.generation);
	reg.mkey = p.mkey;
	reg.nb_workers = p.nb_workers;
	reg.sq_depth = p.geometry.sq_depth;
	reg.doorbell_fd = p.doorbell_fd.get();
	reg.tx_doorbell_fd = p.tx_doorbell_fd.get();
	reg.tx_region = p.tx_region ? &*p.tx_region : nullptr; /* none: register_remote */
	return reg;
}

status pod_registry::begin_unregister(uint32_t pod_id)
{
	if (pod_id >= DPUMESH_MAX_PODS || !_pods[pod_id].in_use)
		return errorf("pod %u is not registered", pod_id);
	pod_state &p = _pods[pod_id];
	if (p.retiring)
		return status::ok(); /* already on its way out */
	pod_registry_entry &e = _table[pod_id];
	/* 1. No new work: data-path readers see is_active == 0 from now on. */
	__atomic_store_n(&e.is_active, 0u, __ATOMIC_RELEASE);
	service_state &s = _services[p.service];
	uint32_t n = s.nb_members.load(std::memory_order_relaxed);
	for (uint32_t i = 0; i < n; i++) {
		if (s.members[i].load(std::memory_order_relaxed) == pod_id) {
			s.members[i].store(s.members[n - 1].load(std::memory_order_relaxed),
					   std::memory_order_relaxed);
			s.nb_members.store(n - 1, std::memory_order_release);
			break;
		}
	}
	s.nb_pods--;
	_membership.store(_membership.load(std::memory_order_relaxed) + 1, std::memory_order_release);
	_departures.store(_departures.load(std::memory_order_relaxed) + 1, std::memory_order_release);
	/* 2. The grace period starts now: every data-path thread must report quiescence after
	 * this token (checked without waiting by try_retire). */
	_quiesce_waiters.fetch_add(1, std::memory_order_acq_rel);
	p.retiring = true;
	p.grace_done = false;
	p.grace_told = false;
	p.retire_token = rte_rcu_qsbr_start(_qsbr);
	p.retire_begun = std::chrono::steady_clock::now();
	_retiring.push_back(pod_id);
	return status::ok();
}

/* The data-path threads whose quiescence counter is behind `token` (online and not
 * reported since): what a slow grace period waits for, logged once. */
void pod_registry::note_lagging(uint32_t pod_id, uint64_t token) noexcept
{
	_retire_stats.lagging++;
	char ids[160];
	size_t at = 0;
	ids[0] = '\0';
	for (unsigned t = 0; t < _max_dp_threads && at < sizeof(ids) - 12; t++) {
		const uint64_t cnt = __atomic_load_n(&_qsbr->qsbr_cnt[t].cnt, __ATOMIC_ACQUIRE);
		if (cnt != 0 && cnt < token) /* 0: offline or not registered */
			at += static_cast<size_t>(std::snprintf(ids + at, sizeof(ids) - at, " %u", t));
	}
	DPUMESH_LOG(NOTICE, podchan, "pod %u: its grace period waits %llu ms for data-path "
		    "thread(s)%s (ids: DPA threads first, then the sidecar shards)", pod_id,
		    static_cast<unsigned long long>(retire_slow_ms), at ? ids : " (none behind now)");
}

bool pod_registry::try_retire(uint32_t pod_id) noexcept
{
	using std::chrono::milliseconds;
	pod_state &p = _pods[pod_id];
	const auto now = std::chrono::steady_clock::now();
	if (!p.grace_done) {
		if (rte_rcu_qsbr_check(_qsbr, p.retire_token, false) != 1) {
			if (!p.grace_told && now - p.retire_begun >= milliseconds(retire_slow_ms)) {
				p.grace_told = true; /* once: which threads hold it */
				note_lagging(pod_id, p.retire_token);
			}
			return false;
		}
		p.grace_done = true;
		p.grace_ended = now;
		_quiesce_waiters.fetch_sub(1, std::memory_order_acq_rel);
	}
	/* 2b. Zero-copy TX bodies still referenced by the NIC: they go back as ports send (or
	 * drop) them; wait a bounded time. A port that never gives them back (a stalled link)
	 * leaves the region mapped rather than unmapped under the NIC's feet. */
	bool keep_mapped = false;
	if (p.zc_holds.load(std::memory_order_acquire) != 0) {
		if (now - p.grace_ended < milliseconds(2000))
			return false;
		DPUMESH_LOG(ERR, podchan, "pod %u: %u zero-copy TX bodies still held by a port after "
			    "2 s; its region stays mapped", pod_id, p.zc_holds.load());
		keep_mapped = true;
	}
	/* 3. Drop queued work, counted. */
	sw_descriptor d;
	for (uint32_t w = 0; w < p.nb_workers && !p.remote; w++)
		while (dpumesh_sq_dequeue_burst(&p.tx_sq[w], &d, 1) == 1)
			p.counters.dropped_on_unregister.inc();
	/* 4. Tear down: mkey (unmaps the region), TX SQ region, doorbell, pod_id. A remote
	 * pod's memory is the DPA side's: its backend releases the import. */
	if (!p.remote) {
		auto r = _mkeys.unregister_region(p.mkey);
		if (!r) {
			DPUMESH_LOG(ERR, podchan, "pod %u: %s", pod_id, r.error().message().c_str());
		} else if (keep_mapped) {
			_lingering.push_back(std::make_unique<region>(std::move(*r)));
			p.zc_holds.store(0, std::memory_order_release);
		} else if (_region_hook) {
			status hs = _region_hook(*r, false); /* before the region is unmapped */
			if (!hs)
				DPUMESH_LOG(ERR, podchan, "pod %u: %s", pod_id, hs.message().c_str());
		}
	}
	{
		/* data-path threads still load is_active (already 0) after the grace period:
		 * every field but that one is theirs to read only while it is 1 */
		pod_registry_entry &e = _table[pod_id];
		e.rx_header_mkey = e.rx_body_mkey = 0;
		e.rx_sq_doorbell = 0;
		e.generation = 0;
		std::memset(e.padding, 0, sizeof(e.padding));
		__atomic_store_n(&e.is_active, 0u, __ATOMIC_RELAXED);
	}
	_retired.add(p.counters.read());
	const auto ms = [](auto span) {
		return static_cast<unsigned long long>(
			std::chrono::duration_cast<milliseconds>(span).count());
	};
	const unsigned long long took = ms(now - p.retire_begun);
	_retire_stats.retired++;
	_retire_stats.max_ms = std::max<uint64_t>(_retire_stats.max_ms, took);
	if (took >= retire_slow_ms) {
		_retire_stats.slow++;
		DPUMESH_LOG(NOTICE, podchan, "pod %u: unregistration took %llu ms (grace period %llu "
			    "ms, zero-copy holds %llu ms)", pod_id, took,
			    ms(p.grace_ended - p.retire_begun), ms(now - p.grace_ended));
	}
	DPUMESH_LOG(INFO, podchan, "pod %u unregistered (generation %u, %llu queued TX dropped)", pod_id,
		    p.generation, static_cast<unsigned long long>(p.counters.dropped_on_unregister.get()));
	p.tx_region.reset();
	p.doorbell_fd.reset();
	p.doorbell = -1;
	p.rx_wait = nullptr;
	p.tx_doorbell_fd.reset();
	p.tx_doorbell = -1;
	p.tx_wait = nullptr;
	p.marked = 0;
	p.spare_header.reset();
	p.spare_body.reset();
	p.nb_spare_header = p.nb_spare_body = 0;
	p.counters.reset();
	p.mkey = 0;
	p.remote = false;
	p.retiring = false;
	p.in_use = false;
	_retiring.erase(std::find(_retiring.begin(), _retiring.end(), pod_id));
	_nb_pods.store(_nb_pods.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
	return true;
}

unsigned pod_registry::poll_retiring(uint32_t *done, unsigned max) noexcept
{
	unsigned n = 0;
	for (size_t i = 0; i < _retiring.size() && n < max;) {
		const uint32_t id = _retiring[i];
		if (try_retire(id))
			done[n++] = id; /* erased from _retiring: i now names the next one */
		else
			i++;
	}
	return n;
}

status pod_registry::unregister_pod(uint32_t pod_id)
{
	DPUMESH_RETURN_IF_ERROR(begin_unregister(pod_id));
	while (!try_retire(pod_id))
		usleep(100);
	return status::ok();
}

void pod_registry::dp_synchronize() noexcept
{
	const uint64_t token = rte_rcu_qsbr_start(_qsbr);
	while (rte_rcu_qsbr_check(_qsbr, token, false) != 1)
		usleep(50);
}

status pod_registry::dp_thread_register(unsigned id)
{
	if (id >= _max_dp_threads)
		return errorf("data-path thread id %u >= %u", id, _max_dp_threads);
	if (rte_rcu_qsbr_thread_register(_qsbr, id) != 0)
		return errorf("rte_rcu_qsbr_thread_register(%u) failed", id);
	rte_rcu_qsbr_thread_online(_qsbr, id);
	return status::ok();
}

void pod_registry::dp_thread_unregister(unsigned id) noexcept
{
	if (id >= _max_dp_threads)
		return;
	rte_rcu_qsbr_thread_offline(_qsbr, id);
	(void)rte_rcu_qsbr_thread_unregister(_qsbr, id);
}

/* ---------------------------------------------------------------- data path */

pod_registry::pod_state *pod_registry::live_state(uint32_t handle) noexcept
{
	uint32_t id = DPUMESH_HANDLE_POD_ID(handle);
	const pod_registry_entry &e = _table[id];
	if (__atomic_load_n(&e.is_active, __ATOMIC_ACQUIRE) == 0 ||
	    e.generation != DPUMESH_HANDLE_GENERATION(handle))
		return nullptr;
	return &_pods[id];
}

const pod_registry::pod_state *pod_registry::live_state(uint32_t handle) const noexcept
{
	return const_cast<pod_registry *>(this)->live_state(handle);
}

uint32_t pod_registry::handle(uint32_t pod_id) const noexcept
{
	if (pod_id >= DPUMESH_MAX_PODS)
		return 0;
	const pod_registry_entry &e = _table[pod_id];
	if (__atomic_load_n(&e.is_active, __ATOMIC_ACQUIRE) == 0)
		return 0;
	return dpumesh_pod_handle(pod_id, e.generation);
}

bool pod_registry::handle_live(uint32_t h) const noexcept { return live_state(h) != nullptr; }

uint32_t pod_registry::nb_tx_sqs(uint32_t pod_id) const noexcept
{
	uint32_t h = handle(pod_id);
	return h != 0 && !_pods[pod_id].remote ? _pods[pod_id].nb_workers : 0;
}

const uint32_t *pod_registry::tx_head(uint32_t pod_id, uint32_t sq) const noexcept
{
	if (pod_id >= DPUMESH_MAX_PODS || handle(pod_id) == 0)
		return nullptr;
	const pod_state &p = _pods[pod_id];
	if (sq >= p.nb_workers)
		return nullptr;
	const dpumesh_sq &q = p.tx_sq[sq];
	return &q.slots[q.pos & q.mask].valid;
}

int pod_registry::tx_doorbell(uint32_t pod_id) const noexcept
{
	if (pod_id >= DPUMESH_MAX_PODS || handle(pod_id) == 0)
		return -1;
	return _pods[pod_id].tx_doorbell;
}

uint64_t *pod_registry::tx_wait(uint32_t pod_id) noexcept
{
	if (pod_id >= DPUMESH_MAX_PODS || handle(pod_id) == 0)
		return nullptr;
	return _pods[pod_id].tx_wait;
}

bool pod_registry::rx_room(const pod_state &p) const noexcept
{
	/* The producer owns its position: a free slot there stays free until we post. */
	const sw_descriptor &slot = p.rx_sq.slots[p.rx_sq.pos & p.rx_sq.mask];
	return __atomic_load_n(&slot.valid, __ATOMIC_ACQUIRE) == 0;
}

namespace {
/* The batch posts on this thread go to (begin_doorbells .. end_doorbells), or none. */
thread_local pod_registry::doorbell_batch *t_batch = nullptr;
/* pod_state::marked: in the current batch; one of its posts must wake the pod */
constexpr uint8_t marked_in_batch = 1;
constexpr uint8_t marked_urgent = 2;
} // namespace

/*
 * Dekker with the pod (docs/memory-model.md "Doorbells"): we store valid = 1 (the post),
 * full fence, load rx_wait; the pod stores rx_wait (asleep), full fence, loads valid. One of
 * the two loads sees the other side's store, so either the pod does not sleep or we ring.
 * The fence is the caller's (once per batch). A batch of successful TX completions only
 * rings a pod that asked for them (DPUMESH_RX_WAIT_TX_DONE).
 */
bool pod_registry::ring_if_asleep(pod_state &p, bool urgent) noexcept
{
	const uint64_t w = __atomic_load_n(p.rx_wait, __ATOMIC_RELAXED);
	if (!dpumesh_doorbell_needed(w, urgent ? 1 : 0, &p.rung_epoch)) {
		p.counters.doorbells_suppressed.inc();
		if (!urgent && (w & DPUMESH_RX_WAIT_ASLEEP) != 0 && w != p.rung_epoch)
			p.counters.doorbells_deferred.inc();
		return false;
	}
	/* The eventfd the pod's epoll waits on. On a BlueField-3 this is a DPA completion /
	 * comch event the host library turns into the same fd. EAGAIN (counter at its
	 * maximum) still leaves the fd readable, so it is ignored. */
	uint64_t one = 1;
	ssize_t rc = ::write(p.doorbell, &one, sizeof(one));
	(void)rc;
	p.counters.doorbells.inc();
	return true;
}

void pod_registry::note_post(pod_state &p, bool urgent) noexcept
{
	doorbell_batch *b = t_batch;
	if (b != nullptr && b->reg == this) [[likely]] {
		if (p.marked == 0)
			b->handles[b->nb++] = dpumesh_pod_handle(&p - _pods.get(), p.generation);
		p.marked |= marked_in_batch | (urgent ? marked_urgent : 0);
		return;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	ring_if_asleep(p, urgent);
}

bool pod_registry::post_rx(pod_state &p, const sw_descriptor &d) noexcept
{
	if (dpumesh_sq_enqueue_burst(&p.rx_sq, &d, 1) != 1) {
		p.counters.rx_sq_full.inc();
		/* whatever fills it (completions that did not ring), a sleeping pod must drain */
		note_post(p, true);
		return false;
	}
	note_post(p, dpumesh_post_urgent(d.flags) != 0);
	return true;
}

void pod_registry::begin_doorbells(doorbell_batch *b) noexcept
{
	b->reg = this;
	b->nb = 0;
	t_batch = b;
}

pod_registry::doorbell_counts pod_registry::flush_doorbells(doorbell_batch *b) noexcept
{
	doorbell_counts n;
	if (b->nb == 0)
		return n;
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* every post above before every load below */
	/* two TSC reads per batch, not per pod: a write to an eventfd with a sleeper behind it
	 * costs microseconds (the wake-up), which the benchmarks show apart; and one flush in
	 * doorbell_time_period that writes, on the thread clock too (a warm-up read first: the
	 * passes' data evicts the clock's kernel path) */
	const bool timed = b->time_in == 0;
	uint64_t c0 = 0;
	if (timed) [[unlikely]] {
		if (b->read_ns == 0)
			b->read_ns = clock_read_cost();
		(void)thread_cpu_ns();
		c0 = thread_cpu_ns();
	}
	const uint64_t t0 = rte_rdtsc();
	for (uint32_t i = 0; i < b->nb; i++) {
		/* the caller has not reported quiescence since it posted: the state and the
		 * region are still there even if the pod is being unregistered */
		pod_state &p = _pods[DPUMESH_HANDLE_POD_ID(b->handles[i])];
		const bool urgent = (p.marked & marked_urgent) != 0;
		p.marked = 0;
		if (live_state(b->handles[i]) == nullptr)
			continue;
		if (ring_if_asleep(p, urgent))
			n.rung++;
		else
			n.suppressed++;
	}
	b->nb = 0;
	if (n.rung) {
		n.cycles = rte_rdtsc() - t0;
		if (timed) {
			/* at most the wall time (a cold read's excess is not the writes') */
			const uint64_t c = thread_cpu_ns() - c0;
			const uint64_t wall = n.cycles * 1000000000ull / rte_get_tsc_hz();
			n.timed_ns = std::min(c > b->read_ns ? c - b->read_ns : 0, wall);
			n.timed_rung = n.rung;
			b->time_in = doorbell_time_period - 1;
		} else {
			b->time_in--;
		}
	}
	return n;
}

pod_registry::doorbell_counts pod_registry::end_doorbells(doorbell_batch *b) noexcept
{
	doorbell_counts n = flush_doorbells(b);
	if (t_batch == b)
		t_batch = nullptr;
	return n;
}

take_rc pod_registry::take_tx(uint32_t pod_id, uint32_t sq_index, tx_item *out) noexcept
{
	if (pod_id >= DPUMESH_MAX_PODS)
		return take_rc::gone;
	uint32_t h = handle(pod_id);
	if (h == 0)
		return take_rc::gone;
	pod_state &p = _pods[pod_id];
	if (sq_index >= p.nb_workers)
		return take_rc::gone;
	if (!rx_room(p))
		return take_rc::empty; /* no room to report a refusal: leave it queued */
	const uint32_t outstanding = p.tx_outstanding.load(std::memory_order_relaxed);
	if (outstanding >= p.geometry.tx_header.slots) [[unlikely]]
		return take_rc::empty; /* its share is in flight: left queued (docs/quota.md) */
	sw_descriptor d;
	if (dpumesh_sq_dequeue_burst(&p.tx_sq[sq_index], &d, 1) != 1)
		return take_rc::empty;

	/* the checks are pod_check.h's (shared with the DOCA device mapping); translating
	 * with the pod's own mkey is the emulator's range check, as the hardware's on DOCA */
	int why = dpumesh_tx_check_flags(&d);
	const uint8_t *hdr = nullptr, *body = nullptr;
	if (why == DPUMESH_TX_ACCEPT)
		why = dpumesh_tx_check_slot(p.base + p.layout.tx_header_off, &p.geometry.tx_header,
					    d.header_buf_addr, d.header_len, 0);
	if (why == DPUMESH_TX_ACCEPT &&
	    (hdr = static_cast<const uint8_t *>(
		     _mkeys.translate(p.mkey, d.header_buf_addr, d.header_len))) == nullptr)
		why = DPUMESH_TX_REFUSED_header_outside;
	if (why == DPUMESH_TX_ACCEPT && d.body_len != 0) {
		why = dpumesh_tx_check_slot(p.base + p.layout.tx_body_off, &p.geometry.tx_body,
					    d.body_buf_addr, d.body_len, 1);
		if (why == DPUMESH_TX_ACCEPT &&
		    (body = static_cast<const uint8_t *>(
			     _mkeys.translate(p.mkey, d.body_buf_addr, d.body_len))) == nullptr)
			why = DPUMESH_TX_REFUSED_body_outside;
	}
	if (why != DPUMESH_TX_ACCEPT) [[unlikely]] {
		p.counters.tx_refused[static_cast<size_t>(why)].inc();
		sw_descriptor e;
		dpumesh_tx_done_report(&d, dpumesh_tx_refusal_flags(why), &e);
		if (post_rx(p, e)) /* room was checked above */
			p.counters.tx_done_posted.inc();
		return take_rc::refused;
	}
	p.counters.tx_taken.inc();
	p.tx_outstanding.store(outstanding + 1, std::memory_order_relaxed);
	out->desc = d;
	out->src = h;
	out->header = hdr;
	out->body = body;
	out->mkey = p.mkey;
	return take_rc::ok;
}

const uint8_t *pod_registry::tx_body(uint32_t src_handle, uint64_t addr, uint32_t len) noexcept
{
	pod_state *p = live_state(src_handle);
	if (!p || len == 0)
		return nullptr;
	if (dpumesh_tx_check_slot(p->base + p->layout.tx_body_off, &p->geometry.tx_body, addr, len,
				  1) != DPUMESH_TX_ACCEPT)
		return nullptr;
	return static_cast<const uint8_t *>(_mkeys.translate(p->mkey, addr, len));
}

const uint8_t *pod_registry::tx_body_hold(uint32_t src_handle, uint64_t addr, uint32_t len) noexcept
{
	pod_state *p = live_state(src_handle);
	if (!p)
		return nullptr;
	/* hold first: an unregistration that has not passed quiescence yet waits for it */
	p->zc_holds.fetch_add(1, std::memory_order_acq_rel);
	const uint8_t *b = tx_body(src_handle, addr, len);
	if (!b)
		p->zc_holds.fetch_sub(1, std::memory_order_acq_rel);
	return b;
}

void pod_registry::tx_body_release(uint32_t src_handle) noexcept
{
	pod_state &p = _pods[DPUMESH_HANDLE_POD_ID(src_handle) % DPUMESH_MAX_PODS];
	if (__atomic_load_n(&p.generation, __ATOMIC_ACQUIRE) == DPUMESH_HANDLE_GENERATION(src_handle) &&
	    p.zc_holds.load(std::memory_order_acquire) > 0)
		p.zc_holds.fetch_sub(1, std::memory_order_acq_rel);
	else
		_zc_orphans.fetch_add(1, std::memory_order_relaxed);
}

uint64_t pod_registry::take_refill(pod_state &p, bool is_body) noexcept
{
	uint32_t &nb_spare = is_body ? p.nb_spare_body : p.nb_spare_header;
	if (nb_spare > 0)
		return (is_body ? p.spare_body : p.spare_header)[--nb_spare];
	dpumesh_sq &ring = is_body ? p.refill_body : p.refill_header;
	const dpumesh_pool_geometry &pool = is_body ? p.geometry.rx_body : p.geometry.rx_header;
	const uint64_t pool_base = p.base + (is_body ? p.layout.rx_body_off : p.layout.rx_header_off);
	sw_descriptor d;
	/* Bounded: at most one ring's worth of bad descriptors per call. */
	for (uint32_t tries = 0; tries <= ring.mask; tries++) {
		if (dpumesh_sq_dequeue_burst(&ring, &d, 1) != 1)
			return 0;
		uint64_t addr = 0;
		int why = dpumesh_refill_check(&d, p.generation, pool_base, &pool, is_body, &addr);
		if (why == DPUMESH_REFILL_ACCEPT &&
		    _mkeys.translate(p.mkey, addr, pool.slot_size) == nullptr)
			why = DPUMESH_REFILL_REFUSED_outside;
		if (why == DPUMESH_REFILL_ACCEPT)
			return addr;
		p.counters.refill_refused[static_cast<size_t>(why)].inc();
	}
	return 0;
}

uint32_t pod_registry::take_rx_slots(uint32_t dst_handle, uint32_t header_len, uint32_t body_len,
				     rx_slots *out) noexcept
{
	pod_state *p = live_state(dst_handle);
	if (p == nullptr)
		return DPUMESH_STATUS_DEST_GONE;
	if (!dpumesh_rx_fits(&p->geometry, header_len, body_len))
		return DPUMESH_STATUS_TOO_LARGE;
	if (!rx_room(*p)) {
		p->counters.rx_sq_full.inc();
		return DPUMESH_STATUS_DEST_FULL;
	}
	rx_slots s;
	if (header_len > 0) {
		s.header_addr = take_refill(*p, false);
		if (s.header_addr == 0) {
			p->counters.rx_no_slot.inc();
			return DPUMESH_STATUS_DEST_FULL;
		}
	}
	if (body_len > 0) {
		s.body_addr = take_refill(*p, true);
		if (s.body_addr == 0) {
			if (s.header_addr != 0)
				p->spare_header[p->nb_spare_header++] = s.header_addr;
			p->counters.rx_no_slot.inc();
			return DPUMESH_STATUS_DEST_FULL;
		}
	}
	if (s.header_addr != 0)
		s.header = static_cast<uint8_t *>(_mkeys.translate(p->mkey, s.header_addr, header_len));
	if (s.body_addr != 0)
		s.body = static_cast<uint8_t *>(_mkeys.translate(p->mkey, s.body_addr, body_len));
	s.mkey = p->mkey;
	*out = s;
	return DPUMESH_STATUS_OK;
}

void pod_registry::return_rx_slots(uint32_t dst_handle, const rx_slots &s) noexcept
{
	pod_state *p = live_state(dst_handle);
	if (p == nullptr)
		return;
	/* Spares never exceed the pool's slots: each was a distinct validated slot. */
	if (s.header_addr != 0 && p->nb_spare_header < p->geometry.rx_header.slots)
		p->spare_header[p->nb_spare_header++] = s.header_addr;
	if (s.body_addr != 0 && p->nb_spare_body < p->geometry.rx_body.slots)
		p->spare_body[p->nb_spare_body++] = s.body_addr;
}

uint32_t pod_registry::deliver(uint32_t dst_handle, const sw_descriptor &desc) noexcept
{
	pod_state *p = live_state(dst_handle);
	if (p == nullptr)
		return DPUMESH_STATUS_DEST_GONE;
	if (!post_rx(*p, desc))
		return DPUMESH_STATUS_DEST_FULL;
	p->counters.rx_delivered.inc();
	return DPUMESH_STATUS_OK;
}

uint32_t pod_registry::complete_tx(uint32_t src_handle, const sw_descriptor &desc,
				   uint32_t st) noexcept
{
	pod_state *p = live_state(src_handle);
	if (p == nullptr)
		return DPUMESH_STATUS_DEST_GONE;
	sw_descriptor e;
	dpumesh_tx_done_report(&desc, dpumesh_tx_done_flags(desc.flags, st), &e);
	if (!post_rx(*p, e))
		return DPUMESH_STATUS_DEST_FULL;
	p->counters.tx_done_posted.inc();
	if (const uint32_t n = p->tx_outstanding.load(std::memory_order_relaxed))
		p->tx_outstanding.store(n - 1, std::memory_order_relaxed);
	return DPUMESH_STATUS_OK;
}

uint32_t pod_registry::pick_pod(uint32_t service_index) noexcept
{
	if (service_index >= _nb_services)
		return 0;
	service_state &s = _services[service_index];
	uint32_t n = s.nb_members.load(std::memory_order_acquire);
	const uint32_t cur = s.cursor.load(std::memory_order_relaxed);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = s.members[(cur + i) % n].load(std::memory_order_relaxed) %
			      DPUMESH_MAX_PODS;
		uint32_t h = handle(id);
		if (h != 0 && _pods[id].service == service_index) {
			s.cursor.store((cur + i + 1) % n, std::memory_order_relaxed);
			return h;
		}
	}
	return 0;
}

uint32_t pod_registry::rx_capacity(uint32_t h) const noexcept
{
	const pod_state *p = live_state(h);
	if (p == nullptr)
		return 0;
	return std::min(p->geometry.rx_header.slots, p->geometry.rx_body.slots);
}

uint32_t pod_registry::nb_live(uint32_t service_index) const noexcept
{
	if (service_index >= _nb_services)
		return 0;
	const service_state &s = _services[service_index];
	uint32_t n = s.nb_members.load(std::memory_order_acquire), live = 0;
	for (uint32_t i = 0; i < n; i++)
		if (handle(s.members[i].load(std::memory_order_relaxed) % DPUMESH_MAX_PODS) != 0)
			live++;
	return live;
}

} // namespace dpumesh
