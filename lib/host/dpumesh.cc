// SPDX-License-Identifier: BSD-3-Clause
// libdpumesh: registration, TX pools and SQs, RX SQ draining, refill rings (pod side).
//
// Threads without locks: worker w owns TX SQ w and its share of each TX pool (slots i with
// i % nb_workers == w, on a free stack only that worker touches). The progress thread owns
// the RX side (message objects, pending refills) and hands completed TX slots back to their
// worker through a single-producer/single-consumer return ring per worker and pool; a slot's
// atomic state (free -> inflight -> returning -> free) makes a duplicate completion harmless.
//
// A node is reached over its Unix socket, or, in a DOCA build of the library
// (DPUMESH_HOST_DOCA), over DOCA comch when socket_path is "doca:<PCI address>" (open_doca:
// docs/host-api.md "Pods on a DOCA node").
#include "dpumesh/host/dpumesh.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "dpumesh/podchan/channel.h"
#include "dpumesh/wire/l7.h"
#include "dpumesh/region/region.h"
#include "dpumesh/ring/sq.h"
#include "dpumesh/common/unique_fd.h"
#include "dpumesh/host/coro.h"
#include "send.h"
#if DPUMESH_HOST_DOCA
#include "dpumesh/doca/pod_msg.h"
#include "dpumesh/host/doca_link.h"
#endif

using namespace dpumesh;

namespace {

enum slot_state : uint8_t { slot_free = 0, slot_app = 1, slot_inflight = 2, slot_returning = 3 };

/* A fixed-slot pool in the pod region (pod-private bookkeeping). `free` is the initial list
 * of every slot; TX pools deal it out to the workers at open. */
struct pool {
	uint8_t *local = nullptr;
	uint64_t addr = 0; /* == local: the pod's own address */
	uint32_t slots = 0, slot_size = 0;
	std::vector<uint32_t> free;
	std::unique_ptr<std::atomic<uint8_t>[]> state;

	void init(uint8_t *base, const dpumesh_pool_geometry &g)
	{
		local = base;
		addr = reinterpret_cast<uintptr_t>(base);
		slots = g.slots;
		slot_size = g.slot_size;
		state = std::make_unique<std::atomic<uint8_t>[]>(slots);
		for (uint32_t i = 0; i < slots; i++)
			state[i].store(slot_free, std::memory_order_relaxed);
		free.reserve(slots);
		for (uint32_t i = slots; i-- > 0;)
			free.push_back(i);
	}
	/* slot_app -> slot_inflight etc.: false when the slot was not in `from` */
	bool move(uint32_t i, uint8_t from, uint8_t to)
	{
		return state[i].compare_exchange_strong(from, to, std::memory_order_acq_rel);
	}
	int64_t index_of(uint64_t a) const
	{
		int64_t s = dpumesh_pool_slot(addr, reinterpret_cast<const dpumesh_pool_geometry *>(&slots),
					      a, 0);
		return s;
	}
	uint8_t *at(uint32_t i) const { return local + static_cast<uint64_t>(i) * slot_size; }
};
static_assert(offsetof(pool, slot_size) == offsetof(pool, slots) + 4);

/* Slot indices handed back from the progress thread to one worker (one producer, one
 * consumer). Its capacity covers the whole pool, so a push never finds it full: a slot is
 * pushed once per inflight -> returning transition and popped before it can be sent again. */
class return_ring {
public:
	void init(uint32_t slots)
	{
		uint32_t n = 1;
		while (n < slots)
			n <<= 1;
		_mask = n - 1;
		_buf.assign(n, 0);
	}
	void push(uint32_t v) /* progress thread */
	{
		uint32_t h = _head.load(std::memory_order_relaxed);
		_buf[h & _mask] = v;
		_head.store(h + 1, std::memory_order_release);
	}
	template <typename F> void drain(F &&f) /* owning worker */
	{
		uint32_t t = _tail.load(std::memory_order_relaxed);
		const uint32_t h = _head.load(std::memory_order_acquire);
		for (; t != h; t++)
			f(_buf[t & _mask]);
		_tail.store(t, std::memory_order_release);
	}

private:
	std::vector<uint32_t> _buf;
	uint32_t _mask = 0;
	alignas(64) std::atomic<uint32_t> _head{0};
	alignas(64) std::atomic<uint32_t> _tail{0};
};

/* A counter with one writer (its own thread) read by dpumesh_get_stats from any thread. */
struct counter1 {
	std::atomic<uint64_t> v{0};
	void inc(uint64_t n = 1) { v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
	uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

/* What worker w owns: its share of the TX pools and its counters. */
struct alignas(64) tx_worker {
	std::vector<uint32_t> free_header, free_body;
	return_ring back_header, back_body;
	counter1 sent, try_again;
	uint64_t tx_rung = 0; /* the odd tx_wait epoch this worker last rang the DPU for */
};

int set_err(char *err, size_t len, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int set_err(char *err, size_t len, int rc, const char *fmt, ...)
{
	if (err && len) {
		va_list ap;
		va_start(ap, fmt);
		std::vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return rc;
}

} // namespace

struct dpumesh_pod {
	dpumesh_options opts = {};
	std::string service;
	unique_fd sock;
	unique_fd doorbell;
	unique_fd tx_doorbell; /* rung while the DPU has parked our TX SQs (tx_wait odd) */
	const uint64_t *tx_wait = nullptr;
	std::optional<region> pod_region;
	std::optional<region> tx_region;
	dpumesh_pod_layout layout = {};
	uint32_t pod_id = 0, generation = 0;
	dpumesh_sq tx_sq[DPUMESH_MAX_WORKERS] = {};
	dpumesh_sq rx_sq = {};
	dpumesh_sq refill_header = {}, refill_body = {};
	pool tx_header, tx_body, rx_header, rx_body;
	std::unique_ptr<tx_worker[]> workers; /* nb_workers: TX state, one thread each */
	/* progress thread only: */
	std::vector<uint32_t> pending_header, pending_body; /* RX slots to post */
	std::vector<dpumesh_msg> msgs;
	std::vector<uint32_t> free_msgs;
	/* need-wakeup: our word in the region (epoch and ASLEEP: the progress thread's, by
	 * atomic adds; TX_DONE: set by any sender that finds no TX room, cleared by the
	 * progress thread after completions), whether we are armed (ASLEEP set), and whether
	 * the application arms it itself (dpumesh_prepare_wait) */
	uint64_t *rx_wait = nullptr;
	bool armed = false;
	bool explicit_wait = false;
	bool node_lost = false; /* the node closed our channel (dpumesh_node_check) */
	counter1 tx_done, tx_errors, received, bad_rx, sleeps, self_rings;
#if DPUMESH_HOST_DOCA
	/* On a DOCA node: the registration over comch (closed before the region goes), and
	 * dpumesh_fd(): an epoll set of `doorbell` (our own rings) and the link's notification
	 * fd (the node's doorbells). */
	std::unique_ptr<host::doca_link> link;
	unique_fd wait_fd;
	unique_fd poll_timer; /* DPUMESH_DOCA_POLL_US: a poll besides the doorbells (open_doca) */
#endif
};

namespace {

/*
 * A sender found no TX room (a TX pool or its TX SQ full): from now on the DPU rings us for
 * successful TX completions too (DPUMESH_RX_WAIT_TX_DONE), until the progress thread has
 * taken some. Any thread; once per shortage (the bit stays set until then). Completions
 * posted before the DPU could see the bit did not ring: if the progress thread is armed,
 * our own doorbell makes its wait return, so it takes them (the RMW is a full barrier, the
 * Dekker pair with the DPU's post, fence, load of the word; docs/memory-model.md
 * "Doorbells").
 */
void want_tx_done(dpumesh_t *h)
{
	const uint64_t old = __atomic_fetch_or(h->rx_wait, uint64_t(DPUMESH_RX_WAIT_TX_DONE),
					       __ATOMIC_SEQ_CST);
	if ((old & DPUMESH_RX_WAIT_TX_DONE) != 0 || (old & DPUMESH_RX_WAIT_ASLEEP) == 0)
		return;
	uint64_t one = 1;
	ssize_t rc = ::write(h->doorbell.get(), &one, sizeof(one));
	(void)rc;
}

void post_refills(dpumesh_t *h)
{
	auto post = [h](std::vector<uint32_t> &pending, dpumesh_sq &ring, pool &p, bool body) {
		while (!pending.empty()) {
			sw_descriptor d = {};
			uint64_t a = p.addr + static_cast<uint64_t>(pending.back()) * p.slot_size;
			if (body) {
				d.body_buf_addr = a;
				d.body_len = p.slot_size;
			} else {
				d.header_buf_addr = a;
				d.header_len = p.slot_size;
			}
			d.step_id = h->generation;
			if (dpumesh_sq_enqueue_burst(&ring, &d, 1) != 1)
				break;
			pending.pop_back();
		}
	};
	post(h->pending_header, h->refill_header, h->rx_header, false);
	post(h->pending_body, h->refill_body, h->rx_body, true);
}

/* Deals the TX slots out to the workers: slot i belongs to worker i % nb_workers. */
void deal_tx_slots(dpumesh_t *h)
{
	const uint32_t nw = h->opts.nb_workers;
	h->workers = std::make_unique<tx_worker[]>(nw);
	for (uint32_t w = 0; w < nw; w++) {
		tx_worker &t = h->workers[w];
		t.back_header.init(h->tx_header.slots);
		t.back_body.init(h->tx_body.slots);
		t.free_header.reserve(h->tx_header.slots / nw + 1);
		t.free_body.reserve(h->tx_body.slots / nw + 1);
	}
	for (uint32_t i = h->tx_header.slots; i-- > 0;)
		h->workers[i % nw].free_header.push_back(i);
	for (uint32_t i = h->tx_body.slots; i-- > 0;)
		h->workers[i % nw].free_body.push_back(i);
}

/* Takes back, on worker w's thread, the slots the progress thread returned to it. */
void reclaim(dpumesh_t *h, tx_worker &t)
{
	t.back_header.drain([&](uint32_t i) {
		h->tx_header.state[i].store(slot_free, std::memory_order_relaxed);
		t.free_header.push_back(i);
	});
	t.back_body.drain([&](uint32_t i) {
		h->tx_body.state[i].store(slot_free, std::memory_order_relaxed);
		t.free_body.push_back(i);
	});
}

/* The C API's errno for a node's refusal (REGISTERED's result). */
int refusal_errno(uint32_t result)
{
	switch (result) {
	case DPUMESH_CTRL_ERR_SERVICE:
		return -ESRCH;
	case DPUMESH_CTRL_ERR_LIMITS:
		return -E2BIG;
	case DPUMESH_CTRL_ERR_SERVICE_FULL:
	case DPUMESH_CTRL_ERR_TABLE_FULL:
		return -ENOSPC;
	case DPUMESH_CTRL_ERR_GEOMETRY:
		return -EINVAL;
	default:
		return -EPROTO;
	}
}

/* What REGISTER asks for, on either channel. */
dpumesh_ctrl_register make_register(const dpumesh_options *o)
{
	dpumesh_ctrl_register reg = {};
	reg.hdr = podchan::make_hdr(DPUMESH_CTRL_REGISTER, sizeof(reg));
	std::snprintf(reg.service, sizeof(reg.service), "%s", o->service);
	reg.nb_workers = o->nb_workers;
	reg.geometry = o->geometry;
	return reg;
}

/* A new handle for these options (the service name kept, no socket path). */
std::unique_ptr<dpumesh_t> new_handle(const dpumesh_options *o, const dpumesh_pod_layout &layout)
{
	std::unique_ptr<dpumesh_t> h;
	try {
		h = std::make_unique<dpumesh_t>();
		h->service = o->service;
	} catch (...) {
		return nullptr;
	}
	h->opts = *o;
	h->opts.service = h->service.c_str();
	h->opts.socket_path = nullptr;
	h->layout = layout;
	return h;
}

/* Born armed (asleep), before the DPU can post: a pod that blocks on dpumesh_fd() before its
 * first progress is rung for the first delivery. */
void born_armed(dpumesh_t *h)
{
	h->rx_wait = reinterpret_cast<uint64_t *>(static_cast<uint8_t *>(h->pod_region->data()) +
						  h->layout.ctrl_off + offsetof(dpumesh_pod_ctrl, rx_wait));
	h->armed = true;
	__atomic_store_n(h->rx_wait,
			 (uint64_t(1) << DPUMESH_RX_WAIT_EPOCH_SHIFT) | DPUMESH_RX_WAIT_ASLEEP,
			 __ATOMIC_RELAXED);
}

int finish_open(std::unique_ptr<dpumesh_t> h, uint8_t *txb, dpumesh_t **out, char *err, size_t errlen);

/* socket_path "doca:<PCI address>": the node is a DOCA node (docs/host-api.md). */
constexpr char doca_prefix[] = "doca:";

#if DPUMESH_HOST_DOCA
/*
 * Registration with a DOCA node (docs/doca.md): the pod's memory is one region holding the
 * pod layout and, from the next 4 KiB boundary, its TX SQs (doca::comch_pod_memory_size);
 * doca_link exports it and registers over comch. dpumesh_fd() is an epoll set of our own
 * doorbell eventfd (a sender short of TX room, a self-ring) and the link's progress engine
 * fd: the DPA's doorbell (the link's sync event, whose wait task completes on that engine
 * when the RX kernel rings us asleep) and the Arm's DOORBELL message. The TX doorbell: the
 * DPA parks our TX SQs (odd tx_wait) as the emulator does, and ring_tx_if_parked rings the
 * node's TX doorbell through the link (a sync event add per worker) in place of the eventfd
 * write (docs/doca.md "Doorbells on a DOCA node").
 *
 * DPUMESH_DOCA_POLL_US > 0 adds a periodic timerfd to the same epoll set (a pod that wants
 * a poll besides the doorbells; default 0: off).
 */
int doca_poll_us()
{
	const char *v = std::getenv("DPUMESH_DOCA_POLL_US");
	if (v == nullptr || *v == 0)
		return 0;
	char *end = nullptr;
	const long us = std::strtol(v, &end, 10);
	return (*end != 0 || us < 0 || us > 1000000) ? -1 : static_cast<int>(us);
}

int open_doca(const dpumesh_options *o, const dpumesh_pod_layout &layout, const char *pci,
	      dpumesh_t **out, char *err, size_t errlen)
{
	if (*pci == 0)
		return set_err(err, errlen, -EINVAL,
			       "\"doca:\" names no device (doca:<PCI address of the BlueField PF>)");
	const int poll_us = doca_poll_us();
	if (poll_us < 0)
		return set_err(err, errlen, -EINVAL, "DPUMESH_DOCA_POLL_US: 0 .. 1000000 microseconds");
	std::unique_ptr<dpumesh_t> h = new_handle(o, layout);
	if (!h)
		return set_err(err, errlen, -ENOMEM, "out of memory");
	const dpumesh_ctrl_register reg = make_register(o);
	const uint64_t len = doca::comch_pod_memory_size(reg);
	char name[64];
	std::snprintf(name, sizeof(name), "dpumesh-pod-%s", o->service);
	auto r = region::create(name, len, false);
	if (!r)
		return set_err(err, errlen, -ENOMEM, "%s", r.error().message().c_str());
	h->pod_region.emplace(std::move(r).value());
	born_armed(h.get());
	h->doorbell.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
	if (!h->doorbell)
		return set_err(err, errlen, -errno, "eventfd: %s", std::strerror(errno));
	host::doca_link_options lo;
	lo.pci = pci;
	host::doca_link_outcome why;
	auto l = host::doca_link::open(lo, h->pod_region->data(), len, reg, &why);
	if (!l)
		return set_err(err, errlen,
			       why.refused != DPUMESH_CTRL_OK ? refusal_errno(why.refused)
			       : why.timed_out		      ? -ETIMEDOUT
							      : -EIO,
			       "%s", l.error().message().c_str());
	h->link = std::move(*l);
	h->pod_id = h->link->pod_id();
	h->generation = h->link->generation();
	uint8_t *base = static_cast<uint8_t *>(h->pod_region->data());
	h->tx_wait = reinterpret_cast<const uint64_t *>(base + layout.ctrl_off +
							offsetof(dpumesh_pod_ctrl, tx_wait));
	h->wait_fd.reset(::epoll_create1(EPOLL_CLOEXEC));
	if (!h->wait_fd)
		return set_err(err, errlen, -errno, "epoll_create1: %s", std::strerror(errno));
	if (poll_us > 0) {
		h->poll_timer.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
		itimerspec every = {};
		every.it_interval.tv_sec = poll_us / 1000000;
		every.it_interval.tv_nsec = static_cast<long>(poll_us % 1000000) * 1000;
		every.it_value = every.it_interval;
		if (!h->poll_timer || ::timerfd_settime(h->poll_timer.get(), 0, &every, nullptr) != 0)
			return set_err(err, errlen, -errno, "timerfd: %s", std::strerror(errno));
	}
	for (int fd : {h->doorbell.get(), h->link->fd(), h->poll_timer.get()}) {
		if (fd < 0)
			continue;
		epoll_event ev = {};
		ev.events = EPOLLIN;
		ev.data.fd = fd;
		if (::epoll_ctl(h->wait_fd.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
			return set_err(err, errlen, -errno, "epoll_ctl: %s", std::strerror(errno));
	}
	return finish_open(std::move(h), base + (layout.total_size + 4095) / 4096 * 4096, out, err,
			   errlen);
}
#else
int open_doca(const dpumesh_options *, const dpumesh_pod_layout &, const char *pci, dpumesh_t **,
	      char *err, size_t errlen)
{
	return set_err(err, errlen, -ENOTSUP,
		       "\"doca:%s\": this libdpumesh was built without DOCA (a DOCA node needs "
		       "libdpumesh built with -DDPUMESH_DOCA=ON, docs/host-api.md)",
		       pci);
}
#endif

} // namespace

struct dpumesh_geometry dpumesh_default_geometry(void)
{
	return dpumesh_geometry{{256, 1024}, {256, 65536}, {256, 1024}, {256, 65536}, 256, 0};
}

int dpumesh_open(const struct dpumesh_options *o, dpumesh_t **out, char *err, size_t errlen)
{
	if (o == nullptr || out == nullptr || o->socket_path == nullptr || o->service == nullptr)
		return set_err(err, errlen, -EINVAL, "missing options");
	*out = nullptr;
	if (!podchan::valid_service_name(o->service))
		return set_err(err, errlen, -EINVAL, "invalid service name");
	if (o->nb_workers == 0 || o->nb_workers > DPUMESH_MAX_WORKERS)
		return set_err(err, errlen, -EINVAL, "nb_workers must be 1..%u", DPUMESH_MAX_WORKERS);
	dpumesh_pod_layout layout;
	int lrc = dpumesh_pod_layout_compute(&o->geometry, &layout);
	if (lrc != DPUMESH_LAYOUT_OK)
		return set_err(err, errlen, -EINVAL, "invalid geometry (layout error %d)", lrc);
	if (std::strncmp(o->socket_path, doca_prefix, sizeof(doca_prefix) - 1) == 0)
		return open_doca(o, layout, o->socket_path + sizeof(doca_prefix) - 1, out, err, errlen);
	sockaddr_un addr = {};
	addr.sun_family = AF_UNIX;
	if (std::strlen(o->socket_path) >= sizeof(addr.sun_path))
		return set_err(err, errlen, -EINVAL, "socket path too long");
	std::strcpy(addr.sun_path, o->socket_path);

	std::unique_ptr<dpumesh_t> h = new_handle(o, layout);
	if (!h)
		return set_err(err, errlen, -ENOMEM, "out of memory");
	h->sock.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
	if (!h->sock)
		return set_err(err, errlen, -errno, "socket: %s", std::strerror(errno));
	if (::connect(h->sock.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0)
		return set_err(err, errlen, -errno, "connect %s: %s", o->socket_path,
			       std::strerror(errno));
	timeval tv = {5, 0};
	::setsockopt(h->sock.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	char name[64];
	std::snprintf(name, sizeof(name), "dpumesh-pod-%s", o->service);
	auto r = region::create(name, layout.total_size, false);
	if (!r)
		return set_err(err, errlen, -ENOMEM, "%s", r.error().message().c_str());
	h->pod_region.emplace(std::move(r).value());
	born_armed(h.get());
	if (auto st = h->pod_region->export_to(h->sock.get(), DPUMESH_REGION_TAG_POD); !st)
		return set_err(err, errlen, -EPROTO, "%s", st.message().c_str());
	const dpumesh_ctrl_register reg = make_register(o);
	if (auto st = podchan::send(h->sock.get(), &reg, sizeof(reg)); !st)
		return set_err(err, errlen, -EPROTO, "%s", st.message().c_str());
	podchan::message m;
	int e = 0;
	auto rc = podchan::receive(h->sock.get(), m, false, &e);
	if (rc != podchan::receive_rc::message)
		return set_err(err, errlen, e == EAGAIN ? -ETIMEDOUT : -EPROTO,
			       "no REGISTERED reply (%s)", e ? std::strerror(e) : "closed");
	if (auto st = podchan::check(m, podchan::expected_fds(m)); !st)
		return set_err(err, errlen, -EPROTO, "%s", st.message().c_str());
	if (m.hdr().type != DPUMESH_CTRL_REGISTERED)
		return set_err(err, errlen, -EPROTO, "unexpected reply type %u", m.hdr().type);
	const auto &rep = m.as<dpumesh_ctrl_registered>();
	if (rep.result != DPUMESH_CTRL_OK)
		return set_err(err, errlen, refusal_errno(rep.result), "registration refused (%s): %s",
			       podchan::result_name(rep.result), rep.error);
	if (rep.nb_workers != o->nb_workers || rep.sq_depth != o->geometry.sq_depth)
		return set_err(err, errlen, -EPROTO, "reply does not match the request");
	h->pod_id = rep.pod_id;
	h->generation = rep.generation;
	h->doorbell = std::move(m.fds[0]);
	h->tx_doorbell = std::move(m.fds[1]);
	h->tx_wait = reinterpret_cast<const uint64_t *>(
		static_cast<uint8_t *>(h->pod_region->data()) + layout.ctrl_off +
		offsetof(dpumesh_pod_ctrl, tx_wait));
	auto txr = region::import_from(h->sock.get());
	if (!txr)
		return set_err(err, errlen, -EPROTO, "%s", txr.error().message().c_str());
	if (txr->tag() != DPUMESH_REGION_TAG_TX_SQ ||
	    txr->size() < dpumesh_tx_region_size(rep.sq_depth, rep.nb_workers))
		return set_err(err, errlen, -EPROTO, "TX SQ region: wrong tag or too small");
	h->tx_region.emplace(std::move(txr).value());

	/* read before the call: its arguments are evaluated in no set order, and GCC for arm64
	 * moved h into the parameter before it read h->tx_region (a null dereference) */
	auto *txb = static_cast<uint8_t *>(h->tx_region->data());
	return finish_open(std::move(h), txb, out, err, errlen);
}

namespace {

/* Both ways of opening end here: the rings over the pod's memory (its TX SQs at txb), the
 * pools, the message objects and every RX slot posted to the refill rings. */
int finish_open(std::unique_ptr<dpumesh_t> h, uint8_t *txb, dpumesh_t **out, char *err, size_t errlen)
{
	const dpumesh_options *o = &h->opts;
	const dpumesh_pod_layout &layout = h->layout;
	uint8_t *base = static_cast<uint8_t *>(h->pod_region->data());
	const uint32_t depth = o->geometry.sq_depth;
	for (uint32_t w = 0; w < o->nb_workers; w++)
		(void)dpumesh_sq_init(&h->tx_sq[w], txb + dpumesh_tx_sq_offset(depth, w), depth);
	(void)dpumesh_sq_init(&h->rx_sq, base + layout.rx_sq_off, depth);
	(void)dpumesh_sq_init(&h->refill_header, base + layout.rx_header_refill_off, depth);
	(void)dpumesh_sq_init(&h->refill_body, base + layout.rx_body_refill_off, depth);
	try {
		h->tx_header.init(base + layout.tx_header_off, o->geometry.tx_header);
		h->tx_body.init(base + layout.tx_body_off, o->geometry.tx_body);
		h->rx_header.init(base + layout.rx_header_off, o->geometry.rx_header);
		h->rx_body.init(base + layout.rx_body_off, o->geometry.rx_body);
		h->pending_header = h->rx_header.free;
		h->pending_body = h->rx_body.free;
		deal_tx_slots(h.get());
		/* A message object per RX SQ slot plus per RX header slot: enough for every
		 * delivery the DPU can make while the app holds messages. */
		size_t nb_msgs = depth + o->geometry.rx_header.slots;
		h->msgs.assign(nb_msgs, dpumesh_msg{});
		for (size_t i = nb_msgs; i-- > 0;)
			h->free_msgs.push_back(static_cast<uint32_t>(i));
	} catch (...) {
		return set_err(err, errlen, -ENOMEM, "out of memory");
	}
	post_refills(h.get());
	*out = h.release();
	return 0;
}

} // namespace

void dpumesh_close(dpumesh_t *h)
{
	if (h == nullptr)
		return;
#if DPUMESH_HOST_DOCA
	if (h->link) {
		/* the node takes us out of the DPA's tables before it answers: only then may our
		 * memory go (the channel, then the export, then the memory) */
		(void)h->link->unregister(5000);
		h->link.reset();
		delete h;
		return;
	}
#endif
	dpumesh_ctrl_unregister u = {};
	u.hdr = podchan::make_hdr(DPUMESH_CTRL_UNREGISTER, sizeof(u));
	if (podchan::send(h->sock.get(), &u, sizeof(u))) {
		podchan::message m;
		(void)podchan::receive(h->sock.get(), m, false);
	}
	delete h;
}

int dpumesh_fd(const dpumesh_t *h)
{
#if DPUMESH_HOST_DOCA
	if (h->wait_fd)
		return h->wait_fd.get();
#endif
	return h->doorbell.get();
}
uint32_t dpumesh_pod_id(const dpumesh_t *h) { return h->pod_id; }
uint32_t dpumesh_generation(const dpumesh_t *h) { return h->generation; }

void dpumesh_get_stats(const dpumesh_t *h, struct dpumesh_stats *out)
{
	*out = dpumesh_stats{};
	for (uint32_t w = 0; w < h->opts.nb_workers; w++) {
		out->sent += h->workers[w].sent.get();
		out->try_again += h->workers[w].try_again.get();
	}
	out->tx_done = h->tx_done.get();
	out->tx_errors = h->tx_errors.get();
	out->received = h->received.get();
	out->bad_rx = h->bad_rx.get();
	out->sleeps = h->sleeps.get();
	out->self_rings = h->self_rings.get();
}

int dpumesh_pool_range(const dpumesh_t *h, int which, uint64_t *base, uint64_t *len)
{
	const pool *p = which == DPUMESH_POOL_TX_HEADER ? &h->tx_header
			: which == DPUMESH_POOL_TX_BODY ? &h->tx_body
			: which == DPUMESH_POOL_RX_HEADER ? &h->rx_header
			: which == DPUMESH_POOL_RX_BODY ? &h->rx_body
							: nullptr;
	if (p == nullptr)
		return -EINVAL;
	*base = p->addr;
	*len = static_cast<uint64_t>(p->slots) * p->slot_size;
	return 0;
}

int dpumesh_tx_buf(dpumesh_t *h, int kind, void **buf, uint32_t *cap)
{
	if (kind != DPUMESH_BUF_HEADER && kind != DPUMESH_BUF_BODY)
		return -EINVAL;
	tx_worker &t = h->workers[0];
	pool &p = kind == DPUMESH_BUF_HEADER ? h->tx_header : h->tx_body;
	std::vector<uint32_t> &free = kind == DPUMESH_BUF_HEADER ? t.free_header : t.free_body;
	if (free.empty())
		reclaim(h, t);
	if (free.empty()) {
		want_tx_done(h);
		return -ENOBUFS;
	}
	uint32_t i = free.back();
	free.pop_back();
	p.state[i].store(slot_app, std::memory_order_relaxed);
	*buf = p.at(i);
	*cap = p.slot_size;
	return 0;
}

void dpumesh_tx_buf_put(dpumesh_t *h, void *buf)
{
	uint64_t a = reinterpret_cast<uintptr_t>(buf);
	tx_worker &t = h->workers[0];
	for (pool *p : {&h->tx_header, &h->tx_body}) {
		int64_t i = p->index_of(a);
		if (i >= 0 && p->move(static_cast<uint32_t>(i), slot_app, slot_free))
			(p == &h->tx_header ? t.free_header : t.free_body)
				.push_back(static_cast<uint32_t>(i));
	}
}

namespace {

/* Progress thread: hands in-flight TX slots named by a completion back to the worker that
 * owns them (anything else, or a second completion for the same slot, is ignored). */
void free_tx(dpumesh_t *h, uint64_t header_addr, uint64_t body_addr)
{
	const uint32_t nw = h->opts.nb_workers;
	int64_t i = header_addr ? h->tx_header.index_of(header_addr) : -1;
	if (i >= 0 && h->tx_header.move(static_cast<uint32_t>(i), slot_inflight, slot_returning))
		h->workers[static_cast<uint32_t>(i) % nw].back_header.push(static_cast<uint32_t>(i));
	i = body_addr ? h->tx_body.index_of(body_addr) : -1;
	if (i >= 0 && h->tx_body.move(static_cast<uint32_t>(i), slot_inflight, slot_returning))
		h->workers[static_cast<uint32_t>(i) % nw].back_body.push(static_cast<uint32_t>(i));
}

/*
 * After a post: ring the DPU's TX doorbell if it has parked our SQs (tx_wait odd) and this
 * worker has not rung for that epoch yet. The Dekker pair with the DPU's parking
 * (docs/memory-model.md "Doorbells, pod to DPU"): the DPU stores an odd tx_wait, full fence,
 * loads our SQ heads; we store the descriptor (release, in the enqueue), full fence, load
 * tx_wait. One of the two sees the other's store, so a post is never left unseen.
 */
void ring_tx_if_parked(dpumesh_t *h, tx_worker &t)
{
	std::atomic_thread_fence(std::memory_order_seq_cst);
	const uint64_t e = __atomic_load_n(h->tx_wait, __ATOMIC_RELAXED);
	if ((e & 1) == 0 || e == t.tx_rung)
		return;
	t.tx_rung = e;
#if DPUMESH_HOST_DOCA
	if (h->link) { /* the node's TX doorbell on DOCA (docs/doca.md): this worker's handle */
		(void)h->link->ring_tx(static_cast<uint32_t>(&t - h->workers.get()));
		return;
	}
#endif
	const uint64_t one = 1;
	/* EAGAIN only when the counter is saturated: the DPU has a wake-up pending anyway */
	(void)!::write(h->tx_doorbell.get(), &one, sizeof(one));
}

/* Common send path, on worker `worker`'s thread and without locks: header written by
 * `write_header` into a slot from the worker's own free stack; body copied into another, or
 * used in place (a dpumesh_tx_buf() buffer). */
template <typename WriteHeader>
int send_common(dpumesh_t *h, uint32_t worker, uint32_t flags, uint32_t req_id, uint32_t step_id,
		const void *body, uint32_t body_len, WriteHeader &&write_header)
{
	if (worker >= h->opts.nb_workers || (body_len > 0 && body == nullptr))
		return -EINVAL;
	if (body_len > h->tx_body.slot_size)
		return -EMSGSIZE;
	tx_worker &t = h->workers[worker];
	int64_t bi = -1;
	bool body_in_place = false;
	if (body_len > 0) {
		int64_t i = h->tx_body.index_of(reinterpret_cast<uintptr_t>(body));
		if (i >= 0 && h->tx_body.state[static_cast<size_t>(i)].load(std::memory_order_relaxed) ==
				      slot_app) {
			bi = i;
			body_in_place = true;
		}
	}
	const bool need_body = body_len > 0 && bi < 0;
	if (t.free_header.empty() || (need_body && t.free_body.empty()))
		reclaim(h, t);
	if (t.free_header.empty() || (need_body && t.free_body.empty())) {
		t.try_again.inc();
		want_tx_done(h);
		return -ENOBUFS;
	}
	const uint32_t hi = t.free_header.back();
	t.free_header.pop_back();
	h->tx_header.state[hi].store(slot_inflight, std::memory_order_relaxed);
	if (need_body) {
		bi = t.free_body.back();
		t.free_body.pop_back();
	}
	if (bi >= 0)
		h->tx_body.state[static_cast<size_t>(bi)].store(slot_inflight, std::memory_order_relaxed);
	auto undo = [&]() {
		h->tx_header.state[hi].store(slot_free, std::memory_order_relaxed);
		t.free_header.push_back(hi);
		if (bi >= 0) {
			auto &st = h->tx_body.state[static_cast<size_t>(bi)];
			if (body_in_place) {
				st.store(slot_app, std::memory_order_relaxed); /* still the app's */
			} else {
				st.store(slot_free, std::memory_order_relaxed);
				t.free_body.push_back(static_cast<uint32_t>(bi));
			}
		}
	};
	uint8_t *hdr = h->tx_header.at(hi);
	size_t hlen = write_header(hdr, h->tx_header.slot_size);
	if (hlen == 0) {
		undo();
		return -EMSGSIZE;
	}
	sw_descriptor d = {};
	d.header_buf_addr = reinterpret_cast<uintptr_t>(hdr);
	d.header_len = static_cast<uint32_t>(hlen);
	if (bi >= 0) {
		uint8_t *b = h->tx_body.at(static_cast<uint32_t>(bi));
		if (!body_in_place)
			std::memcpy(b, body, body_len);
		d.body_buf_addr = reinterpret_cast<uintptr_t>(b);
		d.body_len = body_len;
	}
	d.req_id = req_id;
	d.step_id = step_id;
	d.flags = flags;
	/* the enqueue's release store publishes the slot states above to the progress thread
	 * (through the DPU's completion) */
	if (dpumesh_sq_enqueue_burst(&h->tx_sq[worker], &d, 1) != 1) {
		undo();
		t.try_again.inc();
		want_tx_done(h);
		return -EAGAIN;
	}
	t.sent.inc();
	ring_tx_if_parked(h, t);
	return 0;
}

} // namespace

int dpumesh_send_request(dpumesh_t *h, uint32_t worker, const struct dpumesh_request *r)
{
	if (r == nullptr || r->service == nullptr || r->method == nullptr || r->path == nullptr ||
	    (r->nb_fields > 0 && r->fields == nullptr))
		return -EINVAL;
	return send_common(h, worker, DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL, r->req_id, r->step_id,
			   r->body, r->body_len, [r](uint8_t *buf, size_t cap) {
				   wire::l7_writer w(buf, cap);
				   w.request(r->service, r->method, r->path, r->deadline_ms);
				   for (uint32_t i = 0; i < r->nb_fields; i++)
					   w.field(r->fields[i].name, r->fields[i].value);
				   return w.finish();
			   });
}

int dpumesh_send_response(dpumesh_t *h, uint32_t worker, const struct dpumesh_msg *to,
			  uint16_t st, const struct dpumesh_field *fields, uint32_t nb_fields,
			  const void *body, uint32_t body_len)
{
	if (to == nullptr || (nb_fields > 0 && fields == nullptr))
		return -EINVAL;
	return send_common(h, worker, DPUMESH_OP_RESPONSE | DPUMESH_CASE_LOCAL, to->req_id,
			   to->step_id, body, body_len, [=](uint8_t *buf, size_t cap) {
				   wire::l7_writer w(buf, cap);
				   w.response(st);
				   for (uint32_t i = 0; i < nb_fields; i++)
					   w.field(fields[i].name, fields[i].value);
				   return w.finish();
			   });
}

int dpumesh::host::detail::send_request(dpumesh_t *h, uint32_t worker, std::string_view service,
					std::string_view method, std::string_view path,
					std::span<const field> fields, const void *body,
					uint32_t body_len, uint32_t req_id, uint32_t step_id,
					uint32_t deadline_ms)
{
	return send_common(h, worker, DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL, req_id, step_id, body,
			   body_len, [&](uint8_t *buf, size_t cap) {
				   wire::l7_writer w(buf, cap);
				   w.request(service, method, path, deadline_ms);
				   for (const field &f : fields)
					   w.field(f.name, f.value);
				   return w.finish();
			   });
}

int dpumesh::host::detail::send_response(dpumesh_t *h, uint32_t worker, const dpumesh_msg *to,
					 uint16_t st, std::span<const field> fields,
					 const void *body, uint32_t body_len)
{
	return send_common(h, worker, DPUMESH_OP_RESPONSE | DPUMESH_CASE_LOCAL, to->req_id,
			   to->step_id, body, body_len, [&](uint8_t *buf, size_t cap) {
				   wire::l7_writer w(buf, cap);
				   w.response(st);
				   for (const field &f : fields)
					   w.field(f.name, f.value);
				   return w.finish();
			   });
}

int dpumesh_post_raw(dpumesh_t *h, uint32_t worker, const struct sw_descriptor *d)
{
	if (worker >= h->opts.nb_workers || d == nullptr)
		return -EINVAL;
	if (dpumesh_sq_enqueue_burst(&h->tx_sq[worker], d, 1) != 1) {
		want_tx_done(h);
		return -EAGAIN;
	}
	ring_tx_if_parked(h, h->workers[worker]);
	return 0;
}

void dpumesh_msg_release(dpumesh_t *h, struct dpumesh_msg *m)
{
	if (h == nullptr || m == nullptr)
		return;
	{
		uint32_t idx = m->priv_;
		if (idx >= h->msgs.size() || &h->msgs[idx] != m)
			return;
		if (m->header) {
			int64_t i = h->rx_header.index_of(reinterpret_cast<uintptr_t>(m->header));
			if (i >= 0)
				h->pending_header.push_back(static_cast<uint32_t>(i));
		}
		if (m->body) {
			int64_t i = h->rx_body.index_of(reinterpret_cast<uintptr_t>(m->body));
			if (i >= 0)
				h->pending_body.push_back(static_cast<uint32_t>(i));
		}
		*m = dpumesh_msg{};
		m->priv_ = UINT32_MAX;
		h->free_msgs.push_back(idx);
	}
	post_refills(h);
}

namespace {

/* A message's L7 header, decoded into *v: false when it has none or it does not decode. */
bool decode_header(const dpumesh_msg *m, wire::l7_view *v) noexcept
{
	return m->header != nullptr && wire::l7_decode(m->header, m->header_len, v) == wire::l7_error::ok;
}

} // namespace

uint32_t dpumesh_msg_deadline_ms(const struct dpumesh_msg *m)
{
	wire::l7_view v;
	if (m == nullptr || !decode_header(m, &v) || v.kind != wire::l7_kind::request)
		return 0;
	return v.deadline_ms;
}

int dpumesh_msg_field(const struct dpumesh_msg *m, const char *name, const char **value,
		      size_t *len)
{
	wire::l7_view v;
	if (!decode_header(m, &v))
		return -ENOENT;
	std::string_view s;
	if (!v.find(name, &s))
		return -ENOENT;
	*value = s.data();
	*len = s.size();
	return 0;
}

namespace {

/* One epoch in the need-wakeup word (below it: ASLEEP and TX_DONE). */
constexpr uint64_t epoch_step = uint64_t(1) << DPUMESH_RX_WAIT_EPOCH_SHIFT;

/* Whether the RX SQ has a descriptor for progress to take (and a message object for it). */
bool rx_ready(const dpumesh_t *h)
{
	const sw_descriptor &head = h->rx_sq.slots[h->rx_sq.pos & h->rx_sq.mask];
	return !h->free_msgs.empty() && __atomic_load_n(&head.valid, __ATOMIC_ACQUIRE) != 0;
}

/*
 * Need-wakeup, the pod's half of the Dekker pair (docs/memory-model.md "Doorbells"): a new
 * odd epoch, a full fence, then the RX SQ head. The DPU posts, fences, then loads the
 * epoch: either we see its post here, or it sees our odd epoch and rings.
 */
bool arm(dpumesh_t *h)
{
	if (!h->armed) {
		/* a new epoch, ASLEEP set (it was clear: no carry); TX_DONE kept (atomic: senders
		 * may set it meanwhile) */
		__atomic_fetch_add(h->rx_wait, epoch_step + DPUMESH_RX_WAIT_ASLEEP, __ATOMIC_RELAXED);
		h->armed = true;
		h->sleeps.inc();
	}
#if DPUMESH_HOST_DOCA
	/* the node's doorbells make the link's fd readable only once asked (one-shot) */
	if (h->link)
		(void)h->link->prepare_wait();
#endif
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return rx_ready(h);
}

/* Awake: the DPU need not ring; take what it rang (a ring for an epoch that has ended only
 * makes a later wait return early). */
void disarm(dpumesh_t *h)
{
	if (!h->armed)
		return;
	/* a new epoch, ASLEEP cleared (it was set: no borrow), TX_DONE kept */
	__atomic_fetch_add(h->rx_wait, epoch_step - DPUMESH_RX_WAIT_ASLEEP, __ATOMIC_RELAXED);
	h->armed = false;
	/* one read resets the counter (not EFD_SEMAPHORE): the loop's second read only failed
	 * with EAGAIN, a syscall per wake-up for nothing (0.15 us of a 2.7 us wake-up cycle) */
	uint64_t cnt;
	(void)!::read(h->doorbell.get(), &cnt, sizeof(cnt));
#if DPUMESH_HOST_DOCA
	if (h->link)
		(void)h->link->progress(); /* clear the notification, take the node's doorbells */
	if (h->poll_timer)
		(void)!::read(h->poll_timer.get(), &cnt, sizeof(cnt));
#endif
}

} // namespace

int dpumesh_prepare_wait(dpumesh_t *h)
{
	h->explicit_wait = true;
	return arm(h) ? 1 : 0;
}

int dpumesh_progress(dpumesh_t *h)
{
	disarm(h);
	int handled = 0;
	bool took_tx_done = false;
	const dpumesh_callbacks &cb = h->opts.callbacks;
	for (;;) {
		if (h->free_msgs.empty()) {
			if (handled == 0)
				return -EBUSY;
			break;
		}
		const uint32_t idx = h->free_msgs.back();
		sw_descriptor d;
		if (dpumesh_sq_dequeue_burst(&h->rx_sq, &d, 1) != 1)
			break;
		handled++;
		const uint32_t op = d.flags & DPUMESH_OP_MASK;
		const uint32_t st = dpumesh_flags_status(d.flags);
		if (op & DPUMESH_OP_TX_DONE) {
			free_tx(h, d.header_buf_addr, d.body_buf_addr);
			took_tx_done = true;
			h->tx_done.inc();
			if (op & DPUMESH_OP_ERROR)
				h->tx_errors.inc();
			if (cb.on_tx_done)
				cb.on_tx_done(h, d.req_id, d.step_id, st, h->opts.user);
			continue;
		}
		if (!(op & (DPUMESH_OP_REQUEST | DPUMESH_OP_RESPONSE))) {
			h->bad_rx.inc();
			continue;
		}
		/* The DPU is trusted, but a message must name our own RX slots. */
		int64_t hs = d.header_len ? h->rx_header.index_of(d.header_buf_addr) : -2;
		int64_t bs = d.body_len ? h->rx_body.index_of(d.body_buf_addr) : -2;
		if (hs == -1 || bs == -1 || (hs >= 0 && d.header_len > h->rx_header.slot_size) ||
		    (bs >= 0 && d.body_len > h->rx_body.slot_size)) {
			h->bad_rx.inc();
			continue;
		}
		h->free_msgs.pop_back();
		dpumesh_msg *m = &h->msgs[idx];
		*m = dpumesh_msg{};
		m->priv_ = idx;
		m->header = hs >= 0 ? h->rx_header.at(static_cast<uint32_t>(hs)) : nullptr;
		m->header_len = hs >= 0 ? d.header_len : 0;
		m->body = bs >= 0 ? h->rx_body.at(static_cast<uint32_t>(bs)) : nullptr;
		m->body_len = bs >= 0 ? d.body_len : 0;
		m->req_id = d.req_id;
		m->step_id = d.step_id;
		m->flags = d.flags & DPUMESH_OP_MASK;
		m->status = st;
		wire::l7_view v;
		if (decode_header(m, &v)) {
			m->header_ok = 1;
			m->http_status = v.status;
			m->service = v.service.data();
			m->service_len = static_cast<uint16_t>(v.service.size());
			m->method = v.method.data();
			m->method_len = static_cast<uint16_t>(v.method.size());
			m->path = v.path.data();
			m->path_len = static_cast<uint16_t>(v.path.size());
			m->reason = v.reason.data();
			m->reason_len = static_cast<uint16_t>(v.reason.size());
			m->hop = v.hop.data();
			m->hop_len = static_cast<uint16_t>(v.hop.size());
		}
		h->received.inc();
		auto handler = (op & DPUMESH_OP_REQUEST) ? cb.on_request : cb.on_response;
		if (handler)
			handler(h, m, h->opts.user);
		else
			dpumesh_msg_release(h, m);
	}
	post_refills(h);
	/* TX room came back: senders short of it try again, and ask again if still short */
	if (took_tx_done && (__atomic_load_n(h->rx_wait, __ATOMIC_RELAXED) & DPUMESH_RX_WAIT_TX_DONE))
		__atomic_fetch_and(h->rx_wait, ~uint64_t(DPUMESH_RX_WAIT_TX_DONE), __ATOMIC_RELAXED);
	/* An application that never calls dpumesh_prepare_wait() blocks on dpumesh_fd() right
	 * after this: leave the pod armed, and the fd readable if work came in meanwhile. */
	if (!h->explicit_wait && arm(h)) {
		uint64_t one = 1;
		ssize_t rc = ::write(h->doorbell.get(), &one, sizeof(one));
		(void)rc;
		h->self_rings.inc();
	}
	return handled;
}

int dpumesh_node_fd(const dpumesh_t *h)
{
#if DPUMESH_HOST_DOCA
	if (h->link)
		return -1;
#endif
	return h->sock.get();
}

int dpumesh_node_check(dpumesh_t *h)
{
	if (h->node_lost)
		return -ENOTCONN;
	const int fd = dpumesh_node_fd(h);
	if (fd < 0)
		return 0;
	/* after REGISTERED the node says nothing on the channel unless asked (UNREGISTER):
	 * end of file, or an error, is the node closing it; a byte is left where it is */
	char c;
	const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
		h->node_lost = true;
		return -ENOTCONN;
	}
	return 0;
}

int dpumesh_wait(dpumesh_t *h, int timeout_ms)
{
	if (h->node_lost) {
		const int handled = dpumesh_progress(h); /* what was queued before it went */
		return handled > 0 ? handled : -ENOTCONN;
	}
	if (dpumesh_prepare_wait(h) == 0) {
		/* the node's channel beside the doorbell: the same one poll */
		pollfd p[2] = {{dpumesh_fd(h), POLLIN, 0}, {dpumesh_node_fd(h), POLLIN, 0}};
		if (::poll(p, p[1].fd >= 0 ? 2 : 1, timeout_ms) > 0 && p[1].fd >= 0 && p[1].revents != 0)
			(void)dpumesh_node_check(h);
	}
	const int handled = dpumesh_progress(h);
	return handled == 0 && h->node_lost ? -ENOTCONN : handled;
}
