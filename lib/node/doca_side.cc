// SPDX-License-Identifier: BSD-3-Clause
// The node's DPA on DOCA: backend, DPU memory, node memory and the pods' comch channel.
#include "internal/doca_side.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "dpumesh/common/log.h"
#include "dpumesh/kernels/dpa_dev.h"

namespace dpumesh::node::internal {

namespace {
/** The Arm's memory the DPA reaches through windows: rings, hbufs, bodies. */
constexpr size_t dpu_memory_bytes = size_t{16} << 20;
/** How long an unregistration or the stop waits for the DPA threads' quiescence. */
constexpr unsigned quiesce_ms = 2000;
/** The comch server's name: what libdpumesh's DOCA path connects to (docs/doca.md). */
constexpr const char *comch_name = "dpumesh";
} // namespace

result<std::unique_ptr<doca_side>> doca_side::create(const config::node_config &cfg,
						     const doca_program &prog, pod_registry &reg,
						     unsigned pairs)
{
	if (!prog.app || !prog.tx || !prog.rx || !prog.notify_rpc)
		return errorf("dpa backend doca: no DPA program (the dpacc-built dpumesh_dpa and its "
			      "entry points) was given to the node");
	if (cfg.dpa.device.empty() || cfg.dpa.host_device.empty())
		return errorf("dpa backend doca needs /dpa/device (the PF the DPA runs on) and "
			      "/dpa/host_device (the host PF its pods register from)");
	std::unique_ptr<doca_side> d(new doca_side());
	d->_reg = &reg;
	d->_pairs = pairs;
	auto b = doca::dpa_backend::create({cfg.dpa.device, pairs, {}}, prog.app, prog.tx, prog.rx,
					   prog.notify_rpc);
	if (!b)
		return b.error();
	d->_backend = std::move(*b);
	auto m = doca::dpu_memory::create(d->_backend->dev().get(), dpu_memory_bytes);
	if (!m)
		return m.error();
	d->_dpu = std::move(*m);
	/* the pods' TX doorbells, one per pair: pods ring, the sidecar lcore forwards */
	for (unsigned p = 0; p < pairs; p++) {
		auto t = doca::tx_bell::create(d->_backend->dev().get());
		if (!t)
			return t.error().with_context("DOCA node: pair " + std::to_string(p));
		d->_tx_bells.push_back(std::move(*t));
	}
	d->_tx_seen.assign(pairs, 0);
	doca::node_memory_options mo;
	mo.pairs = pairs;
	mo.tx_bells = true;
	/* an hbuf as the emulator's: the metadata, then the largest pod header or 1 KiB */
	mo.hbuf_size = DPA_HBUF_META_SIZE + std::max<uint32_t>(cfg.pools.tx_header.slot_size, 1024);
	auto nm = doca::node_memory::create(d->_backend->runtime(), *d->_dpu, mo);
	if (!nm)
		return nm.error();
	d->_nm = std::move(*nm);
	doca::pod_channel_hooks h;
	doca_side *self = d.get();
	h.admit = [self](const doca::comch_register_view &v, doca_dpa_dev_mmap_t mkey) {
		return self->admit(v, mkey);
	};
	h.gone = [self](uint32_t pod_id) { self->gone(pod_id); };
	auto c = doca::pod_channel_server::create(d->_backend->dev().get(), cfg.dpa.host_device,
						  comch_name, std::move(h), d->_backend->runtime().dpa());
	if (!c)
		return c.error().with_context("/dpa/host_device " + cfg.dpa.host_device);
	d->_chan = std::move(*c);
	return d;
}

doca_side::~doca_side()
{
	(void)stop();
	if (_kept) {
		/* a DPA thread may still run on this memory: keep it (and what it names) for good
		 * rather than free it under the DPA */
		(void)_chan.release();
		(void)_nm.release();
		(void)_dpu.release();
		(void)_backend.release();
	}
}

dpa::arm_side doca_side::side() noexcept
{
	dpa::arm_side s;
	for (unsigned p = 0; p < _pairs; p++)
		s.threads.push_back({&_nm->sidecar_tx(p), &_nm->commands(p), &_nm->notes(p)});
	s.hbuf_size = _nm->hbuf_size();
	s.ops.take_hbuf = &take_hbuf;
	s.ops.give_hbuf = &give_hbuf;
	s.ops.service = &service;
	s.ctx = this;
	return s;
}

/* An hbuf for an answer the Arm makes: its metadata (zeroed); the sidecar lcore only. */
void *doca_side::take_hbuf(void *ctx) noexcept
{
	const uint64_t h = static_cast<doca_side *>(ctx)->_nm->try_take_hbuf();
	return h ? reinterpret_cast<void *>(h - DPA_HBUF_META_SIZE) : nullptr;
}

void doca_side::give_hbuf(void *ctx, void *hbuf) noexcept
{
	static_cast<doca_side *>(ctx)->_nm->release_hbuf(reinterpret_cast<uint64_t>(hbuf));
}

/* The sidecar lcore, once per poll per pair it owns: the RX kernel woken once when commands
 * were posted (one notify RPC per poll, not per command), the kernels woken when control
 * waits for their quiescence, and what the pair gave back taken back. */
void doca_side::service(void *ctx, unsigned pair, bool posted) noexcept
{
	doca_side &d = *static_cast<doca_side *>(ctx);
	const uint32_t bit = 1u << pair;
	const bool nudge = d._nudge.load(std::memory_order_relaxed) & bit;
	if (nudge) {
		d._nudge.fetch_and(~bit, std::memory_order_relaxed);
		if (!d.runtime().notify(2 * pair))
			d._wake_errors.fetch_add(1, std::memory_order_relaxed);
	}
	if ((posted || nudge) && !d._nm->wake_rx(pair))
		d._wake_errors.fetch_add(1, std::memory_order_relaxed);
	/* the pods' TX doorbell: rung since the last poll, the pair's parked TX kernel runs */
	uint64_t v = 0;
	if (!d._tx_bells[pair]->value(&v)) {
		d._wake_errors.fetch_add(1, std::memory_order_relaxed);
	} else if (v != d._tx_seen[pair]) {
		d._tx_seen[pair] = v;
		d._tx_rings.fetch_add(1, std::memory_order_relaxed);
		if (!nudge && !d.runtime().notify(2 * pair))
			d._wake_errors.fetch_add(1, std::memory_order_relaxed);
	}
	d._nm->reclaim(pair);
}

status doca_side::start_threads()
{
	_started = true; /* from the first notify on, a kernel may run: stop() waits for it */
	status st = _nm->start_threads();
	if (st)
		_lcores_run.store(true, std::memory_order_release);
	return st;
}

unsigned doca_side::poll() noexcept
{
	if (!_chan || _stopped)
		return 0;
	return _chan->endpoint().progress();
}

/* A valid REGISTER whose memory imported: the registry decides (service, geometry, limits,
 * pod_id, generation), then the pod's block and table entry go to the DPA. */
doca::pod_admission doca_side::admit(const doca::comch_register_view &v, doca_dpa_dev_mmap_t mkey)
{
	register_request rr;
	rr.service = v.reg.service;
	rr.nb_workers = v.reg.nb_workers;
	rr.geometry = v.reg.geometry;
	uint32_t code = DPUMESH_CTRL_OK;
	auto r = _reg->register_remote(rr, mkey, v.base, &code);
	if (!r)
		return {code, 0, 0, r.error().message(), {}};
	doca::pod_placement p;
	p.pod_id = r->pod_id;
	p.generation = r->generation;
	p.nb_workers = r->nb_workers;
	p.mkey = mkey;
	p.base = v.base;
	p.doorbell = v.doorbell; /* the pod's sync event's DPA handle (0: the pod polls) */
	p.geometry = v.reg.geometry;
	status st = _nm->register_pod(p);
	if (!st) {
		(void)_reg->unregister_pod(r->pod_id);
		return {DPUMESH_CTRL_ERR_INTERNAL, 0, 0, st.message(), {}};
	}
	/* the pair's TX kernel may be parked: it runs once to take the pod in (and park it) */
	const unsigned pair = r->pod_id % _pairs;
	if (_lcores_run.load(std::memory_order_acquire))
		_nudge.fetch_or(1u << pair, std::memory_order_relaxed);
	else if (_started)
		(void)runtime().notify(2 * pair);
	return {DPUMESH_CTRL_OK, r->pod_id, r->generation, {}, _tx_bells[pair]->descriptor()};
}

/* A pod unregistered or its connection went: no new work for it on either side, then the
 * DPA threads' quiescence before the channel releases its memory's import. */
void doca_side::gone(uint32_t pod_id)
{
	auto r = _reg->registration(pod_id);
	if (!r)
		return; /* taken out already (close_pods) */
	status st = _nm->unregister_pod(pod_id, r->generation);
	if (st)
		st = _reg->unregister_pod(pod_id); /* the sidecar shards' grace period */
	if (st)
		st = wait_quiescent(_nm->membership(), true);
	if (!st) {
		_gone_errors.fetch_add(1, std::memory_order_relaxed);
		DPUMESH_LOG(ERR, podchan, "DOCA pod %u gone: %s", pod_id, st.message().c_str());
	}
}

status doca_side::wait_quiescent(uint32_t m, bool notify)
{
	for (unsigned waited_us = 0; waited_us < quiesce_ms * 1000; waited_us += 100) {
		auto q = _nm->quiescent(m);
		if (!q)
			return q.error();
		if (*q)
			return status::ok();
		if (notify && waited_us % 10000 == 0) {
			/* a parked thread reports at its next activation: wake every one (from the
			 * lcores while they run, so one thread makes the runtime's calls there) */
			if (_lcores_run.load(std::memory_order_acquire)) {
				_nudge.store((_pairs >= 32 ? 0u : 1u << _pairs) - 1u, std::memory_order_relaxed);
			} else {
				for (unsigned k = 0; k < 2 * _pairs; k++)
					(void)runtime().notify(k);
			}
		}
		usleep(100);
	}
	return errorf("DPA threads not quiescent at membership %u after %u ms", m, quiesce_ms);
}

void doca_side::close_pods() noexcept
{
	/* out of the tables and quiescent while the imports live; then the channel's teardown
	 * releases them (its gone() calls find nothing left) */
	for (uint32_t id = 0; id < DPUMESH_MAX_PODS; id++)
		if (_reg->handle(id) != 0)
			gone(id);
	_chan.reset();
}

/* Every kernel's `finished` report; kernels are notified now and then (a parked one sees
 * the stop word at its next activation). The lcores have stopped: the calls are made here. */
status doca_side::wait_finished()
{
	for (unsigned waited_us = 0; waited_us < quiesce_ms * 1000; waited_us += 100) {
		auto f = _nm->finished();
		if (!f)
			return f.error();
		if (*f)
			return status::ok();
		if (waited_us % 10000 == 0)
			for (unsigned k = 0; k < 2 * _pairs; k++)
				(void)runtime().notify(k);
		usleep(100);
	}
	return errorf("DPA threads not finished %u ms after the stop request", quiesce_ms);
}

status doca_side::stop()
{
	if (_stopped)
		return status::ok();
	_stopped = true;
	if (!_started) {
		/* never activated (start failed, or creation failed after the runtime): no kernel
		 * has run on this memory; the runtime's teardown stops its threads */
		_chan.reset();
		return status::ok();
	}
	_lcores_run.store(false, std::memory_order_release);
	close_pods();
	status st = _nm->set_drain(true);
	if (st)
		st = runtime().request_stop();
	if (st) {
		/* the stop word is seen at each thread's next activation: it finishes */
		for (unsigned k = 0; k < 2 * _pairs; k++)
			(void)runtime().notify(k);
		st = wait_finished();
	}
	if (!st) {
		_kept = true;
		DPUMESH_LOG(ERR, dpa, "DOCA stop: %s; the DPA's memory is kept", st.message().c_str());
		return st.with_context("DOCA stop");
	}
	return status::ok();
}

} // namespace dpumesh::node::internal
