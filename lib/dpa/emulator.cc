// SPDX-License-Identifier: BSD-3-Clause
// The DPA emulator: dpa_dev.h implemented on lcores with a DMA engine and the pod registry.
#include "dpumesh/dpa/emulator.h"

#include <algorithm>
#include <cstring>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "dpumesh/common/log.h"

using namespace dpumesh;

/* One DPA thread: everything dpa_dev.h's functions reach. */
struct dpa_dev {
	static constexpr uint32_t queue_depth = 1024;  /* sidecar TX/RX SQs, notifications */
	static constexpr uint32_t dma_batch = 256;     /* copies buffered before submit */
	static constexpr uint32_t refresh_every = 128; /* passes between owned-SQ refreshes */

	dpa::emulator *emu = nullptr;
	pod_registry *reg = nullptr;
	unsigned id = 0;
	unsigned nb_threads = 1;
	std::unique_ptr<dma::engine> dma;

	void *mem_tx = nullptr, *mem_rx = nullptr, *mem_notify = nullptr;
	dpumesh_sq tx_prod{}, rx_cons{}, notify_prod{};
	dpa::arm_queues arm{};
	rte_ring *completions = nullptr; /* tx_completion elements, many producers */

	dma::copy_op pending[dma_batch];
	uint32_t nb_pending = 0;

	struct owned_sq {
		uint32_t pod_id;
		uint32_t sq;
	};
	owned_sq owned[DPUMESH_MAX_PODS * 16];
	uint32_t nb_owned = 0;
	uint32_t refresh_in = 0;
	bool draining = false;

	dpa_kernel_state ks{};
	dpa::thread_stats stats;

	~dpa_dev()
	{
		rte_free(mem_tx);
		rte_free(mem_rx);
		rte_free(mem_notify);
		rte_ring_free(completions);
	}

	void refresh_owned() noexcept
	{
		nb_owned = 0;
		for (uint32_t pid = id; pid < DPUMESH_MAX_PODS; pid += nb_threads) {
			uint32_t n = reg->nb_tx_sqs(pid);
			for (uint32_t q = 0; q < n; q++)
				owned[nb_owned++] = {pid, q};
		}
		refresh_in = refresh_every;
	}

	bool idle() const noexcept { return ks.nb_tx_inflight == 0 && ks.nb_rx_inflight == 0 && nb_pending == 0; }

	/* A thread is quiescent when no copy it started still touches pod memory. While an
	 * unregistration waits, it takes no new work so that happens promptly. */
	void quiesce() noexcept
	{
		draining = reg->quiesce_pending();
		if (idle())
			reg->dp_quiescent(emu->qsbr_id(id));
	}

	void drain_completions() noexcept
	{
		dpa::tx_completion c[16];
		unsigned n = rte_ring_dequeue_burst_elem(completions, c, sizeof(c[0]), 16, nullptr);
		for (unsigned i = 0; i < n; i++) {
			uint32_t st = reg->complete_tx(c[i].src, c[i].orig, c[i].status);
			if (st == DPUMESH_STATUS_DEST_FULL) {
				/* its RX SQ is full: keep it for later (we are the only consumer) */
				if (rte_ring_enqueue_elem(completions, &c[i], sizeof(c[i])) != 0)
					stats.completion_ring_full.inc();
			} else {
				stats.tx_completions.inc();
			}
		}
	}
};

namespace {

uint32_t sq_free_ahead(const dpumesh_sq &sq, uint32_t max) noexcept
{
	uint32_t n = 0;
	while (n < max && n <= sq.mask &&
	       __atomic_load_n(&sq.slots[(sq.pos + n) & sq.mask].valid, __ATOMIC_ACQUIRE) == 0)
		n++;
	return n;
}

} // namespace

/* ---- dpa_dev.h, implemented ---- */

extern "C" {

uint32_t dpa_tx_sq_count(struct dpa_dev *d)
{
	if (d->draining)
		return 0;
	if (d->refresh_in-- == 0)
		d->refresh_owned();
	return d->nb_owned;
}

int dpa_tx_take(struct dpa_dev *d, uint32_t i, struct dpa_tx_item *out)
{
	if (i >= d->nb_owned)
		return DPA_GONE;
	tx_item it;
	switch (d->reg->take_tx(d->owned[i].pod_id, d->owned[i].sq, &it)) {
	case take_rc::ok: break;
	case take_rc::empty: return DPA_EMPTY;
	case take_rc::refused: return DPA_REFUSED;
	case take_rc::gone: d->refresh_in = 0; return DPA_GONE;
	}
	out->desc = it.desc;
	out->src = it.src;
	out->header = reinterpret_cast<uint64_t>(it.header);
	d->stats.tx_taken.inc();
	return DPA_OK;
}

uint32_t dpa_hbuf_size(struct dpa_dev *d) { return d->emu->hbuf_size(); }

int dpa_hbuf_alloc(struct dpa_dev *d, uint64_t *local)
{
	void *obj;
	if (rte_mempool_get(d->emu->hbufs(), &obj) != 0)
		return DPA_FULL;
	*local = reinterpret_cast<uint64_t>(obj);
	return DPA_OK;
}

void dpa_hbuf_free(struct dpa_dev *d, uint64_t local)
{
	rte_mempool_put(d->emu->hbufs(), reinterpret_cast<void *>(local));
}

int dpa_dma_copy(struct dpa_dev *d, uint64_t dst, uint64_t src, uint32_t len, uint64_t cookie)
{
	if (d->nb_pending == dpa_dev::dma_batch)
		return DPA_FULL;
	d->pending[d->nb_pending++] = {reinterpret_cast<void *>(dst),
				       reinterpret_cast<const void *>(src), len, cookie};
	return DPA_OK;
}

uint32_t dpa_dma_room(struct dpa_dev *d) { return dpa_dev::dma_batch - d->nb_pending; }

void dpa_dma_kick(struct dpa_dev *d)
{
	if (!d->nb_pending)
		return;
	uint16_t n = d->dma->submit(d->pending, static_cast<uint16_t>(d->nb_pending));
	/* what the engine could not take yet stays queued, in order, for the next kick */
	if (n)
		std::memmove(d->pending, d->pending + n, (d->nb_pending - n) * sizeof(d->pending[0]));
	d->nb_pending -= n;
}

uint32_t dpa_dma_poll(struct dpa_dev *d, struct dpa_dma_done *out, uint32_t max)
{
	dpa_dma_kick(d); /* copies left over from a full engine go first */
	dma::completion c[32];
	uint16_t n = d->dma->poll(c, static_cast<uint16_t>(std::min<uint32_t>(max, 32)));
	for (uint16_t i = 0; i < n; i++)
		out[i] = {c[i].cookie, c[i].status, 0};
	return n;
}

int dpa_sidecar_tx_post(struct dpa_dev *d, const struct sw_descriptor *desc)
{
	if (dpumesh_sq_enqueue_burst(&d->tx_prod, desc, 1) != 1)
		return DPA_FULL;
	d->stats.tx_posted.inc();
	return DPA_OK;
}

uint32_t dpa_sidecar_rx_take(struct dpa_dev *d, struct sw_descriptor *out, uint32_t max)
{
	if (d->draining)
		return 0;
	return dpumesh_sq_dequeue_burst(&d->rx_cons, out, max);
}

int dpa_notify_arm(struct dpa_dev *d, const struct sw_descriptor *note)
{
	if (dpumesh_sq_enqueue_burst(&d->notify_prod, note, 1) != 1)
		return DPA_FULL;
	d->stats.rx_handed_back.inc();
	return DPA_OK;
}

uint32_t dpa_notify_room(struct dpa_dev *d) { return sq_free_ahead(d->notify_prod, 64); }

uint32_t dpa_rx_slots_take(struct dpa_dev *d, uint32_t dst, uint32_t header_len,
			   uint32_t body_len, struct dpa_rx_slots *out)
{
	rx_slots s;
	uint32_t st = d->reg->take_rx_slots(dst, header_len, body_len, &s);
	if (st != DPUMESH_STATUS_OK)
		return st;
	out->header_local = reinterpret_cast<uint64_t>(s.header);
	out->header_addr = s.header_addr;
	out->body_local = reinterpret_cast<uint64_t>(s.body);
	out->body_addr = s.body_addr;
	return DPUMESH_STATUS_OK;
}

void dpa_rx_slots_return(struct dpa_dev *d, uint32_t dst, const struct dpa_rx_slots *slots)
{
	rx_slots s;
	s.header = reinterpret_cast<uint8_t *>(slots->header_local);
	s.header_addr = slots->header_addr;
	s.body = reinterpret_cast<uint8_t *>(slots->body_local);
	s.body_addr = slots->body_addr;
	d->reg->return_rx_slots(dst, s);
}

uint64_t dpa_src_body(struct dpa_dev *d, uint32_t src, uint64_t addr, uint32_t len)
{
	return reinterpret_cast<uint64_t>(d->reg->tx_body(src, addr, len));
}

uint32_t dpa_deliver(struct dpa_dev *d, uint32_t dst, const struct sw_descriptor *desc)
{
	uint32_t st = d->reg->deliver(dst, *desc);
	if (st == DPUMESH_STATUS_OK)
		d->stats.rx_delivered.inc();
	return st;
}

uint32_t dpa_tx_complete(struct dpa_dev *d, uint32_t src, const struct sw_descriptor *orig,
			 uint32_t status)
{
	dpa::tx_completion c{*orig, src, status};
	unsigned owner = d->emu->owner(src);
	if (owner == d->id) {
		uint32_t st = d->reg->complete_tx(src, *orig, status);
		if (st != DPUMESH_STATUS_DEST_FULL) {
			d->stats.tx_completions.inc();
			return st;
		}
	} else {
		d->stats.remote_completions.inc();
	}
	/* to the owner's completion ring (ours when the sender's RX SQ was full) */
	dpa_dev *o = d->emu->_threads[owner].get();
	if (rte_ring_enqueue_elem(o->completions, &c, sizeof(c)) != 0) {
		d->stats.completion_ring_full.inc();
		return DPUMESH_STATUS_DEST_FULL;
	}
	return DPUMESH_STATUS_OK;
}

void dpa_quiescent(struct dpa_dev *d) { d->quiesce(); }

uint32_t dpa_local_body_next(struct dpa_dev *, uint64_t body, uint64_t *cursor, uint64_t *local)
{
	if (*cursor == UINT64_MAX)
		return 0;
	const auto *b = reinterpret_cast<const dpa::local_body *>(body);
	rte_mbuf *seg = *cursor ? reinterpret_cast<rte_mbuf *>(*cursor) : b->first;
	uint32_t off = *cursor ? 0 : b->first_off;
	while (seg && seg->data_len <= off) { /* skip empty pieces */
		off = 0;
		seg = seg->next;
	}
	if (!seg) {
		*cursor = UINT64_MAX;
		return 0;
	}
	*local = rte_pktmbuf_mtod_offset(seg, uint64_t, off);
	*cursor = seg->next ? reinterpret_cast<uint64_t>(seg->next) : UINT64_MAX;
	return seg->data_len - off;
}

void dpa_local_body_release(struct dpa_dev *, uint64_t body) { dpa::release_local_body(body); }

} /* extern "C" */

namespace dpumesh::dpa {

void release_local_body(uint64_t handle) noexcept
{
	auto *b = reinterpret_cast<local_body *>(handle);
	rte_pktmbuf_free(b->chain);
	b->chain = nullptr;
	rte_mempool_put(rte_mempool_from_obj(b), b);
}

namespace {

uint16_t tx_poll(void *arg) noexcept
{
	auto *d = static_cast<dpa_dev *>(arg);
	uint32_t w = dpa_tx_kernel(d, &d->ks);
	d->quiesce();
	return static_cast<uint16_t>(std::min<uint32_t>(w, UINT16_MAX));
}

uint16_t rx_poll(void *arg) noexcept
{
	auto *d = static_cast<dpa_dev *>(arg);
	d->drain_completions();
	uint32_t w = dpa_rx_kernel(d, &d->ks);
	d->quiesce();
	return static_cast<uint16_t>(std::min<uint32_t>(w, UINT16_MAX));
}

result<void *> zalloc_ring(const char *what, unsigned t, uint32_t depth)
{
	void *m = rte_zmalloc_socket(what, depth * sizeof(sw_descriptor), 64, SOCKET_ID_ANY);
	if (!m)
		return errorf("DPA thread %u: allocating its %s queue (%u entries) failed", t, what,
			      depth);
	return m;
}

} // namespace

result<std::unique_ptr<emulator>> emulator::create(const config::node_config &cfg,
						  pod_registry &reg, unsigned nb_threads)
{
	if (nb_threads == 0 || nb_threads > 16)
		return errorf("DPA emulator: %u threads (1 to 16)", nb_threads);
	std::unique_ptr<emulator> e(new emulator());
	/* an hbuf holds the largest header a pod may post, after its metadata */
	e->_hbuf_size = DPA_HBUF_META_SIZE + std::max<uint32_t>(cfg.pools.tx_header.slot_size, 1024);
	e->_hbufs = rte_mempool_create("dpumesh_hbufs", 8191, e->_hbuf_size, 64, 0, nullptr,
				       nullptr, nullptr, nullptr, SOCKET_ID_ANY, 0);
	if (!e->_hbufs)
		return errorf("DPA emulator: header buffer pool (8191 x %u B): %s (raise -m)",
			      e->_hbuf_size, rte_strerror(rte_errno));
	for (unsigned t = 0; t < nb_threads; t++) {
		auto d = std::make_unique<dpa_dev>();
		d->emu = e.get();
		d->reg = &reg;
		d->id = t;
		d->nb_threads = nb_threads;
		auto eng = dma::create(cfg.dma, t);
		if (!eng)
			return eng.error().with_context("DPA thread " + std::to_string(t));
		d->dma = std::move(*eng);
		DPUMESH_ASSIGN_OR_RETURN(d->mem_tx, zalloc_ring("sidecar TX", t, dpa_dev::queue_depth));
		DPUMESH_ASSIGN_OR_RETURN(d->mem_rx, zalloc_ring("sidecar RX", t, dpa_dev::queue_depth));
		DPUMESH_ASSIGN_OR_RETURN(d->mem_notify, zalloc_ring("notify", t, dpa_dev::queue_depth));
		dpumesh_sq_init(&d->tx_prod, d->mem_tx, dpa_dev::queue_depth);
		dpumesh_sq_init(&d->arm.from_dpa, d->mem_tx, dpa_dev::queue_depth);
		dpumesh_sq_init(&d->rx_cons, d->mem_rx, dpa_dev::queue_depth);
		dpumesh_sq_init(&d->arm.to_dpa, d->mem_rx, dpa_dev::queue_depth);
		dpumesh_sq_init(&d->notify_prod, d->mem_notify, dpa_dev::queue_depth);
		dpumesh_sq_init(&d->arm.notify, d->mem_notify, dpa_dev::queue_depth);
		std::string rname = "dpa_compl" + std::to_string(t);
		d->completions = rte_ring_create_elem(rname.c_str(), sizeof(tx_completion), 16384,
						      SOCKET_ID_ANY, RING_F_SC_DEQ);
		if (!d->completions)
			return errorf("DPA thread %u: completion ring: %s", t, rte_strerror(rte_errno));
		status st = reg.dp_thread_register(e->qsbr_id(t));
		if (!st)
			return st;
		d->refresh_owned();
		e->_threads.push_back(std::move(d));
	}
	return e;
}

emulator::~emulator()
{
	for (auto &d : _threads)
		d->reg->dp_thread_unregister(qsbr_id(d->id));
	_threads.clear();
	rte_mempool_free(_hbufs);
}

lcore::stage_def emulator::tx_stage(unsigned t) noexcept
{
	return {"dpa_tx", &tx_poll, _threads[t].get(), false};
}
lcore::stage_def emulator::rx_stage(unsigned t) noexcept
{
	return {"dpa_rx", &rx_poll, _threads[t].get(), false};
}
arm_queues &emulator::arm(unsigned t) noexcept { return _threads[t]->arm; }
const thread_stats &emulator::stats(unsigned t) const noexcept { return _threads[t]->stats; }
const dpa_kernel_state &emulator::kernel_state(unsigned t) const noexcept { return _threads[t]->ks; }
const dma::engine &emulator::dma(unsigned t) const noexcept { return *_threads[t]->dma; }

} // namespace dpumesh::dpa
