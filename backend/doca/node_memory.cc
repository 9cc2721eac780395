// SPDX-License-Identifier: BSD-3-Clause
// The Arm's side of the DOCA device mapping's memory: DPU mmap, node/pod/inbox blocks, rings.
#include "dpumesh/doca/node_memory.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "dpa_doca.h"
#include "internal/check.h"

namespace dpumesh::doca {
namespace {

using internal::check;

/* the thread fields the Arm writes: node .. back, one contiguous run of struct dpa_dev */
constexpr size_t thread_fields_off = offsetof(::dpa_dev, node);
constexpr size_t thread_fields_len = offsetof(::dpa_dev, membership) - thread_fields_off;

} // namespace

result<std::unique_ptr<dpu_memory>> dpu_memory::create(doca_dev *dev, size_t len)
{
	std::unique_ptr<dpu_memory> m(new dpu_memory());
	m->_len = (len + 4095) / 4096 * 4096;
	/* on the Arm: hugepage memory in production (the DPU mmap is the node's); any memory
	 * the device can map works for the calls */
	m->_base = static_cast<uint8_t *>(std::aligned_alloc(4096, m->_len));
	if (!m->_base)
		return errorf("DPU memory: cannot allocate %zu bytes", m->_len);
	std::memset(m->_base, 0, m->_len);
	m->_undo.push([p = m->_base] { std::free(p); });
	const std::string n = "DPU memory: ";
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_create(&m->_mmap), n + "doca_mmap_create"));
	m->_undo.push([x = m->_mmap] { doca_mmap_destroy(x); });
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_set_memrange(m->_mmap, m->_base, m->_len), n + "doca_mmap_set_memrange"));
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_add_dev(m->_mmap, dev), n + "doca_mmap_add_dev"));
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_set_permissions(m->_mmap, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE),
				      n + "doca_mmap_set_permissions"));
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_start(m->_mmap), n + "doca_mmap_start"));
	m->_undo.push([x = m->_mmap] { doca_mmap_stop(x); });
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_dev_get_dpa_handle(m->_mmap, dev, &m->_handle),
				      n + "doca_mmap_dev_get_dpa_handle"));
	if (m->_handle == 0)
		return errorf("DPU memory: doca_mmap_dev_get_dpa_handle gave handle 0");
	return m;
}

dpu_memory::~dpu_memory() { _undo.unwind(); }

uint8_t *dpu_memory::carve(size_t n) noexcept
{
	const size_t len = (n + 63) / 64 * 64;
	if (len > _len - _used)
		return nullptr;
	uint8_t *p = _base + _used;
	_used += len;
	return p;
}

result<std::unique_ptr<node_memory>> node_memory::create(dpa_runtime &rt, dpu_memory &dpu,
							 const node_memory_options &opt)
{
	if (opt.pairs == 0 || opt.pairs > DPA_DOCA_MAX_PAIRS || rt.nb_kernels() != 2 * opt.pairs)
		return errorf("DOCA node memory: %u pairs for %u kernels (1..%u pairs, a TX and an RX "
			      "kernel each)", opt.pairs, rt.nb_kernels(), DPA_DOCA_MAX_PAIRS);
	if (opt.ring_slots < 16 || (opt.ring_slots & (opt.ring_slots - 1)) != 0)
		return errorf("DOCA node memory: ring_slots %u is not a power of two >= 16", opt.ring_slots);
	if (opt.hbuf_size <= DPA_HBUF_META_SIZE || opt.hbuf_size % 64 != 0 || opt.hbufs == 0 ||
	    opt.hbufs >= opt.ring_slots)
		return errorf("DOCA node memory: hbufs %u of %u bytes (64-byte multiples over the %u-byte "
			      "meta, fewer than ring_slots)", opt.hbufs, opt.hbuf_size, DPA_HBUF_META_SIZE);
	std::unique_ptr<node_memory> m(new node_memory());
	m->_rt = &rt;
	m->_dpu = &dpu;
	m->_nb_pairs = opt.pairs;
	m->_tx_bells = opt.tx_bells;
	doca_dpa *dpa = rt.dpa();
	const std::string n = "DOCA node memory: ";

	/* the pod blocks, all inactive (zero) */
	const size_t pods_len = sizeof(dpa_doca_pod) * DPUMESH_MAX_PODS;
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_mem_alloc(dpa, pods_len, &m->_pods_ptr), n + "doca_dpa_mem_alloc(pods)"));
	m->_undo.push([dpa, p = m->_pods_ptr] { doca_dpa_mem_free(dpa, p); });
	{
		std::vector<uint8_t> zeros(pods_len, 0);
		DPUMESH_RETURN_IF_ERROR(check(doca_dpa_h2d_memcpy(dpa, m->_pods_ptr, zeros.data(), zeros.size()),
					      n + "doca_dpa_h2d_memcpy(pods)"));
	}
	/* the inboxes: every slot's sequence number is its index (its first turn) */
	const size_t inbox_len = sizeof(dpa_doca_inbox) * opt.pairs;
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_mem_alloc(dpa, inbox_len, &m->_inbox_ptr), n + "doca_dpa_mem_alloc(inboxes)"));
	m->_undo.push([dpa, p = m->_inbox_ptr] { doca_dpa_mem_free(dpa, p); });
	{
		std::unique_ptr<dpa_doca_inbox[]> img(new dpa_doca_inbox[opt.pairs]());
		for (unsigned p = 0; p < opt.pairs; p++)
			for (uint32_t i = 0; i < DPA_DOCA_INBOX; i++)
				img[p].mail[i].seq = i;
		DPUMESH_RETURN_IF_ERROR(check(doca_dpa_h2d_memcpy(dpa, m->_inbox_ptr, img.get(), inbox_len),
					      n + "doca_dpa_h2d_memcpy(inboxes)"));
	}
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_mem_alloc(dpa, sizeof(dpa_doca_node), &m->_node_ptr),
				      n + "doca_dpa_mem_alloc(node)"));
	m->_undo.push([dpa, p = m->_node_ptr] { doca_dpa_mem_free(dpa, p); });
	DPUMESH_RETURN_IF_ERROR(m->write_node());
	DPUMESH_RETURN_IF_ERROR(m->write_threads(opt));
	m->_bodies = dpu.carve(sizeof(dpa_doca_body) * opt.bodies);
	if (!m->_bodies && opt.bodies)
		return errorf("DOCA node memory: DPU memory full (%u network bodies)", opt.bodies);
	m->_body_cookie.assign(opt.bodies, 0);
	m->_hbuf_size = opt.hbuf_size;
	if (opt.arm_hbufs) {
		uint8_t *a = dpu.carve(static_cast<size_t>(opt.hbuf_size) * opt.arm_hbufs);
		if (!a)
			return errorf("DOCA node memory: DPU memory full (%u Arm hbufs)", opt.arm_hbufs);
		m->_arm_hbuf_lo = reinterpret_cast<uint64_t>(a);
		m->_arm_hbuf_hi = m->_arm_hbuf_lo + static_cast<uint64_t>(opt.hbuf_size) * opt.arm_hbufs;
		for (uint64_t h = m->_arm_hbuf_hi; h > m->_arm_hbuf_lo;)
			m->_arm_hbufs.push_back(h -= opt.hbuf_size);
	}
	for (uint32_t i = opt.bodies; i-- > 0;)
		m->_free_bodies.push_back(i);
	return m;
}

status node_memory::write_node()
{
	dpa_doca_node nb{};
	nb.nb_pairs = _nb_pairs;
	nb.membership = _membership;
	nb.tx_bells = _tx_bells ? 1 : 0;
	nb.pods = _pods_ptr;
	for (unsigned p = 0; p < _nb_pairs; p++) {
		nb.rx_notify[p] = _rt->args(2 * p + 1).notification;
		nb.inbox[p] = _inbox_ptr + p * sizeof(dpa_doca_inbox);
	}
	return check(doca_dpa_h2d_memcpy(_rt->dpa(), _node_ptr, &nb, sizeof(nb)),
		     "DOCA node memory: doca_dpa_h2d_memcpy(node)");
}

status node_memory::write_threads(const node_memory_options &opt)
{
	const size_t ring_bytes = static_cast<size_t>(opt.ring_slots) * sizeof(sw_descriptor);
	_pairs.resize(_nb_pairs);
	auto ring = [&](dpumesh_sq &arm_end, dpa_doca_ring &dev_end) -> status {
		uint8_t *mem = _dpu->carve(ring_bytes);
		if (!mem || dpumesh_sq_init(&arm_end, mem, opt.ring_slots) != 0)
			return errorf("DOCA node memory: DPU memory full (a ring of %zu bytes)", ring_bytes);
		dev_end = {reinterpret_cast<uint64_t>(mem), _dpu->handle(), opt.ring_slots - 1, 0, 0};
		return status::ok();
	};
	for (unsigned p = 0; p < _nb_pairs; p++) {
		pair_rings &r = _pairs[p];
		for (uint32_t role : {uint32_t{DPA_DOCA_TX}, uint32_t{DPA_DOCA_RX}}) {
			::dpa_dev f{}; /* only [node, membership) is written */
			f.node = _node_ptr;
			f.pair = p;
			f.role = role;
			f.hbuf_size = opt.hbuf_size;
			if (role == DPA_DOCA_TX) {
				DPUMESH_RETURN_IF_ERROR(ring(r.sidecar_tx, f.sidecar));
				DPUMESH_RETURN_IF_ERROR(ring(r.hbuf_free, f.hbuf_free));
				DPUMESH_RETURN_IF_ERROR(ring(r.back_tx, f.back));
			} else {
				DPUMESH_RETURN_IF_ERROR(ring(r.commands, f.sidecar));
				DPUMESH_RETURN_IF_ERROR(ring(r.notes, f.notify));
				DPUMESH_RETURN_IF_ERROR(ring(r.back_rx, f.back));
			}
			const unsigned k = 2 * p + role;
			const std::string n = "DOCA node memory: kernel " + std::to_string(k) + ": ";
			DPUMESH_RETURN_IF_ERROR(check(doca_dpa_h2d_memcpy(_rt->dpa(), _rt->args_ptr(k) + thread_fields_off,
									  reinterpret_cast<uint8_t *>(&f) + thread_fields_off,
									  thread_fields_len),
						      n + "doca_dpa_h2d_memcpy(node fields)"));
			uint32_t h = _dpu->handle();
			DPUMESH_RETURN_IF_ERROR(check(doca_dpa_h2d_memcpy(_rt->dpa(), _rt->args_ptr(k) + offsetof(::dpa_dev, dpu_mmap),
									  &h, sizeof(h)),
						      n + "doca_dpa_h2d_memcpy(dpu_mmap)"));
		}
		uint8_t *hb = _dpu->carve(static_cast<size_t>(opt.hbuf_size) * opt.hbufs);
		if (!hb)
			return errorf("DOCA node memory: DPU memory full (%u hbufs of pair %u)", opt.hbufs, p);
		r.hbuf_lo = reinterpret_cast<uint64_t>(hb);
		r.hbuf_hi = r.hbuf_lo + static_cast<uint64_t>(opt.hbuf_size) * opt.hbufs;
		for (uint64_t a = r.hbuf_lo; a < r.hbuf_hi; a += opt.hbuf_size) {
			sw_descriptor d{};
			d.header_buf_addr = a;
			(void)dpumesh_sq_enqueue_burst(&r.hbuf_free, &d, 1); /* room: hbufs < ring_slots */
		}
	}
	return status::ok();
}

status node_memory::register_pod(const pod_placement &p)
{
	if (p.pod_id >= DPUMESH_MAX_PODS || p.generation == 0 || p.nb_workers == 0 ||
	    p.nb_workers > DPUMESH_MAX_WORKERS || p.mkey == 0)
		return errorf("DOCA node memory: pod %u generation %u workers %u mkey %u: invalid",
			      p.pod_id, p.generation, p.nb_workers, p.mkey);
	if (_active[p.pod_id])
		return errorf("DOCA node memory: pod %u is registered (its block is the DPA's now)", p.pod_id);
	dpumesh_pod_layout l;
	if (int rc = dpumesh_pod_layout_compute(&p.geometry, &l); rc != DPUMESH_LAYOUT_OK)
		return errorf("DOCA node memory: pod %u: invalid geometry (layout error %d)", p.pod_id, rc);
	const uint32_t mask = p.geometry.sq_depth - 1;
	dpa_doca_pod b{};
	b.generation = p.generation;
	b.nb_workers = p.nb_workers;
	b.mmap = p.mkey;
	b.base = p.base;
	b.doorbell = p.doorbell;
	b.geometry = p.geometry;
	b.layout = l;
	const uint64_t tx_region = p.base + (l.total_size + 4095) / 4096 * 4096;
	for (uint32_t w = 0; w < p.nb_workers; w++) {
		const uint32_t mm = p.tx_sq_mmap[w] ? p.tx_sq_mmap[w] : p.mkey;
		const uint64_t at = p.tx_sq_addr[w] ? p.tx_sq_addr[w]
						    : tx_region + dpumesh_tx_sq_offset(p.geometry.sq_depth, w);
		b.tx_sq[w] = {at, mm, mask, 0, 0};
	}
	b.rx_sq = {p.base + l.rx_sq_off, p.mkey, mask, 0, 0};
	b.refill_header = {p.base + l.rx_header_refill_off, p.mkey, mask, 0, 0};
	b.refill_body = {p.base + l.rx_body_refill_off, p.mkey, mask, 0, 0};
	const std::string n = "DOCA node memory: pod " + std::to_string(p.pod_id) + ": ";
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_h2d_memcpy(_rt->dpa(), _pods_ptr + p.pod_id * sizeof(dpa_doca_pod), &b, sizeof(b)),
				      n + "doca_dpa_h2d_memcpy(pod block)"));
	pod_registry_entry e{};
	e.rx_header_mkey = e.rx_body_mkey = p.mkey;
	e.rx_sq_doorbell = p.doorbell;
	e.is_active = 1;
	e.generation = p.generation;
	DPUMESH_RETURN_IF_ERROR(_rt->write_table_entry(p.pod_id, &e).with_context(n));
	_active[p.pod_id] = true;
	_membership++;
	return check(doca_dpa_h2d_memcpy(_rt->dpa(), _node_ptr + offsetof(dpa_doca_node, membership), &_membership,
					 sizeof(_membership)),
		     n + "doca_dpa_h2d_memcpy(membership)");
}

status node_memory::unregister_pod(uint32_t pod_id, uint32_t generation)
{
	if (pod_id >= DPUMESH_MAX_PODS)
		return errorf("DOCA node memory: pod %u outside the table", pod_id);
	pod_registry_entry e{};
	e.generation = generation;
	const std::string n = "DOCA node memory: pod " + std::to_string(pod_id) + ": ";
	DPUMESH_RETURN_IF_ERROR(_rt->write_table_entry(pod_id, &e).with_context(n));
	_active[pod_id] = false;
	_membership++;
	return check(doca_dpa_h2d_memcpy(_rt->dpa(), _node_ptr + offsetof(dpa_doca_node, membership), &_membership,
					 sizeof(_membership)),
		     n + "doca_dpa_h2d_memcpy(membership)");
}

status node_memory::start_threads()
{
	for (unsigned k = 0; k < 2 * _nb_pairs; k++)
		DPUMESH_RETURN_IF_ERROR(_rt->notify(k));
	return status::ok();
}

status node_memory::set_drain(bool on)
{
	uint32_t v = on ? 1 : 0;
	return check(doca_dpa_h2d_memcpy(_rt->dpa(), _node_ptr + offsetof(dpa_doca_node, drain), &v, sizeof(v)),
		     "DOCA node memory: doca_dpa_h2d_memcpy(drain)");
}

unsigned node_memory::reclaim(unsigned p) noexcept
{
	pair_rings &r = _pairs[p];
	unsigned n = 0;
	sw_descriptor d;
	for (dpumesh_sq *back : {&r.back_tx, &r.back_rx}) {
		while (dpumesh_sq_dequeue_burst(back, &d, 1) == 1) {
			n++;
			if (d.flags == DPA_DOCA_BACK_HBUF) {
				give_back_hbuf(d.header_buf_addr);
				continue;
			}
			const uint64_t base = reinterpret_cast<uint64_t>(_bodies);
			const uint64_t off = d.body_buf_addr - base;
			if (d.flags != DPA_DOCA_BACK_BODY || !_bodies || d.body_buf_addr < base ||
			    off % sizeof(dpa_doca_body) != 0 || off / sizeof(dpa_doca_body) >= _body_cookie.size()) {
				_bad_back++;
				continue;
			}
			const uint32_t i = static_cast<uint32_t>(off / sizeof(dpa_doca_body));
			_bodies_back++;
			_free_bodies.push_back(i);
			if (_body_release)
				_body_release(_body_cookie[i]);
		}
	}
	return n;
}

void node_memory::give_back_hbuf(uint64_t hbuf) noexcept
{
	for (pair_rings &q : _pairs) {
		if (hbuf < q.hbuf_lo || hbuf >= q.hbuf_hi || (hbuf - q.hbuf_lo) % _hbuf_size != 0)
			continue;
		sw_descriptor h{};
		h.header_buf_addr = hbuf;
		/* never fuller than it was made: each hbuf is on it at most once */
		(void)dpumesh_sq_enqueue_burst(&q.hbuf_free, &h, 1);
		return;
	}
	if (hbuf >= _arm_hbuf_lo && hbuf < _arm_hbuf_hi && (hbuf - _arm_hbuf_lo) % _hbuf_size == 0) {
		_arm_hbufs.push_back(hbuf);
		return;
	}
	_bad_back++; /* names no hbuf of this node: dropped, never put on a free list */
}

uint64_t node_memory::try_take_hbuf() noexcept
{
	if (_arm_hbufs.empty())
		return 0;
	const uint64_t h = _arm_hbufs.back();
	_arm_hbufs.pop_back();
	std::memset(reinterpret_cast<void *>(h), 0, DPA_HBUF_META_SIZE); /* src 0: nobody to complete */
	return h;
}

result<uint64_t> node_memory::take_hbuf()
{
	const uint64_t h = try_take_hbuf();
	if (h == 0)
		return errorf("Arm hbufs: all %llu in flight",
			      static_cast<unsigned long long>((_arm_hbuf_hi - _arm_hbuf_lo) / (_hbuf_size ? _hbuf_size : 1)));
	return h + DPA_HBUF_META_SIZE;
}

result<uint64_t> node_memory::make_body(std::span<const body_piece> pieces, uint64_t cookie)
{
	if (pieces.empty() || pieces.size() > DPA_DOCA_BODY_PIECES)
		return errorf("network body: %zu pieces (1..%u)", pieces.size(), DPA_DOCA_BODY_PIECES);
	const uint64_t lo = reinterpret_cast<uint64_t>(_dpu->base()), hi = lo + _dpu->size();
	for (const body_piece &pc : pieces)
		if (pc.len == 0 || pc.addr < lo || pc.addr >= hi || pc.len > hi - pc.addr)
			return errorf("network body: a piece of %u bytes at 0x%llx outside the DPU memory",
				      pc.len, static_cast<unsigned long long>(pc.addr));
	if (_free_bodies.empty())
		return errorf("network body: all %zu in flight", _body_cookie.size());
	const uint32_t i = _free_bodies.back();
	_free_bodies.pop_back();
	auto *b = reinterpret_cast<dpa_doca_body *>(_bodies) + i;
	std::memset(b, 0, sizeof(*b));
	for (size_t k = 0; k < pieces.size(); k++) {
		b->piece[k].addr = pieces[k].addr;
		b->piece[k].len = pieces[k].len;
	}
	/* the count last: the DPA reads the body only once the command naming it is posted */
	__atomic_store_n(&b->nb_pieces, static_cast<uint32_t>(pieces.size()), __ATOMIC_RELEASE);
	_body_cookie[i] = cookie;
	return reinterpret_cast<uint64_t>(b);
}

result<bool> node_memory::quiescent(uint32_t m)
{
	for (unsigned k = 0; k < 2 * _nb_pairs; k++) {
		uint32_t q = 0;
		DPUMESH_RETURN_IF_ERROR(check(doca_dpa_d2h_memcpy(_rt->dpa(), &q, _rt->args_ptr(k) + offsetof(::dpa_dev, quiescent),
								  sizeof(q)),
					      "DOCA node memory: kernel " + std::to_string(k) + ": doca_dpa_d2h_memcpy(quiescent)"));
		/* q = membership at the start of its last completed activation + 1 (0: none) */
		if (q == 0 || static_cast<int32_t>(q - 1u - m) < 0)
			return false;
	}
	return true;
}

result<bool> node_memory::finished()
{
	for (unsigned k = 0; k < 2 * _nb_pairs; k++) {
		uint32_t f = 0;
		DPUMESH_RETURN_IF_ERROR(check(doca_dpa_d2h_memcpy(_rt->dpa(), &f, _rt->args_ptr(k) + offsetof(::dpa_dev, finished),
								  sizeof(f)),
					      "DOCA node memory: kernel " + std::to_string(k) + ": doca_dpa_d2h_memcpy(finished)"));
		if (f == 0)
			return false;
	}
	return true;
}

} // namespace dpumesh::doca
