// SPDX-License-Identifier: BSD-3-Clause
// Link-time FAKES of the DOCA calls declared in dpumesh/doca/doca_api.h, for the call-sequence
// test of the DOCA backend. Not DOCA: they only record and check how they are called.
#include "doca_fakes.h"

#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <set>

#include "dpumesh/doca/doca_api.h"

/* Every FAKE call holds one lock: the node calls DOCA from its control thread and its
 * sidecar lcore, and a test's pods from the test's thread (the state below is shared). */
#define FAKE_LOCK std::lock_guard<std::recursive_mutex> fake_lock_(dpumesh::doca_fake::fake_mutex())

namespace dpumesh::doca_fake {

std::recursive_mutex &fake_mutex()
{
	static std::recursive_mutex m;
	return m;
}

namespace {

state g;
struct object {
	std::string kind;
	bool started = false;
	std::vector<uint8_t> desc; /* mmaps: the descriptor export_pci handed out */
	uint8_t *addr = nullptr;   /* mmaps: the memory range (an import: its exporter's) */
	size_t len = 0;
};
std::map<const void *, object> objects;
std::map<uint64_t, size_t> dpa_mem; /* address -> bytes */
std::vector<std::vector<uint8_t>> exported; /* live export descriptors */

doca_error_t enter(const char *name)
{
	g.calls.push_back(name);
	if (static_cast<long>(g.calls.size()) - 1 == g.fail_index)
		return static_cast<doca_error_t>(7);
	return DOCA_SUCCESS;
}

template <typename T> doca_error_t make(const char *call, const char *kind, T **out)
{
	doca_error_t e = enter(call);
	if (e != DOCA_SUCCESS)
		return e;
	auto *o = reinterpret_cast<T *>(new char(0));
	objects[o] = {kind, false, {}};
	g.live_objects++;
	*out = o;
	return DOCA_SUCCESS;
}

object *find(const void *p, const char *call)
{
	auto it = objects.find(p);
	if (it == objects.end()) {
		g.misuse.push_back(std::string(call) + ": unknown object");
		return nullptr;
	}
	return &it->second;
}

doca_error_t use(const char *call, const void *p)
{
	doca_error_t e = enter(call);
	if (e != DOCA_SUCCESS)
		return e;
	find(p, call);
	return DOCA_SUCCESS;
}

doca_error_t start(const char *call, const void *p)
{
	doca_error_t e = enter(call);
	if (e != DOCA_SUCCESS)
		return e;
	if (object *o = find(p, call)) {
		if (o->started)
			g.misuse.push_back(std::string(call) + ": started twice");
		o->started = true;
		g.started++;
	}
	return DOCA_SUCCESS;
}

doca_error_t stop(const char *call, const void *p)
{
	doca_error_t e = enter(call);
	if (object *o = find(p, call); o && o->started) {
		o->started = false;
		g.started--;
	} else if (o) {
		g.misuse.push_back(std::string(call) + ": not started");
	}
	return e;
}

doca_error_t destroy(const char *call, const void *p)
{
	doca_error_t e = enter(call);
	auto it = objects.find(p);
	if (it == objects.end()) {
		g.misuse.push_back(std::string(call) + ": unknown object");
		return e;
	}
	if (it->second.started)
		g.misuse.push_back(std::string(call) + ": destroyed while started");
	for (auto x = exported.begin(); x != exported.end(); ++x)
		if (!it->second.desc.empty() && *x == it->second.desc) {
			exported.erase(x);
			break;
		}
	delete reinterpret_cast<const char *>(p);
	objects.erase(it);
	g.live_objects--;
	return e;
}

} // namespace

state &fake() { return g; }

void reset_comch();

void reset()
{
	FAKE_LOCK;
	g = state{};
	reset_comch();
	for (auto &[p, o] : objects) {
		if (o.kind == "devinfo_list")
			delete[] static_cast<doca_devinfo *const *>(p);
		else if (o.kind == "rep_list")
			delete[] static_cast<doca_devinfo_rep *const *>(p);
		else
			delete reinterpret_cast<const char *>(p);
	}
	objects.clear();
	for (auto &[p, n] : dpa_mem)
		std::free(reinterpret_cast<void *>(p));
	dpa_mem.clear();
	exported.clear();
}

} // namespace dpumesh::doca_fake

using namespace dpumesh::doca_fake;

extern "C" {

const char *doca_error_get_descr(doca_error_t e)
{
	FAKE_LOCK;
	return e == 7 ? "failure injected by the fake" : "refused by the fake";
}

/* a devinfo is a pointer to its PCI address in the fake's device list */
doca_error_t doca_devinfo_create_list(struct doca_devinfo ***list, uint32_t *nb)
{
	FAKE_LOCK;
	doca_error_t e = enter("doca_devinfo_create_list");
	if (e != DOCA_SUCCESS)
		return e;
	auto **l = new doca_devinfo *[g.devices.size() + 1];
	for (size_t i = 0; i < g.devices.size(); i++)
		l[i] = reinterpret_cast<doca_devinfo *>(&g.devices[i]);
	objects[l] = {"devinfo_list", false, {}};
	g.live_objects++;
	*list = l;
	*nb = static_cast<uint32_t>(g.devices.size());
	return DOCA_SUCCESS;
}
doca_error_t doca_devinfo_destroy_list(struct doca_devinfo **list)
{
	FAKE_LOCK;
	doca_error_t e = enter("doca_devinfo_destroy_list");
	if (objects.erase(list) == 1) {
		delete[] list;
		g.live_objects--;
	} else {
		g.misuse.push_back("doca_devinfo_destroy_list: unknown list");
	}
	return e;
}
doca_error_t doca_devinfo_is_equal_pci_addr(const struct doca_devinfo *d, const char *pci, uint8_t *eq)
{
	FAKE_LOCK;
	doca_error_t e = enter("doca_devinfo_is_equal_pci_addr");
	if (e != DOCA_SUCCESS)
		return e;
	*eq = *reinterpret_cast<const std::string *>(d) == pci;
	return DOCA_SUCCESS;
}
doca_error_t doca_dpa_cap_is_supported(const struct doca_devinfo *d)
{
	FAKE_LOCK;
	doca_error_t e = enter("doca_dpa_cap_is_supported");
	if (e != DOCA_SUCCESS)
		return e;
	const std::string &pci = *reinterpret_cast<const std::string *>(d);
	for (const std::string &x : g.no_dpa)
		if (x == pci)
			return static_cast<doca_error_t>(10); /* not supported */
	return DOCA_SUCCESS;
}
doca_error_t doca_dev_open(struct doca_devinfo *, struct doca_dev **dev)
{
	FAKE_LOCK;
	return make("doca_dev_open", "dev", dev);
}
doca_error_t doca_dev_close(struct doca_dev *dev) { FAKE_LOCK; return destroy("doca_dev_close", dev); }

doca_error_t doca_dpa_create(struct doca_dev *, struct doca_dpa **dpa)
{
	FAKE_LOCK;
	return make("doca_dpa_create", "dpa", dpa);
}
doca_error_t doca_dpa_set_app(struct doca_dpa *dpa, struct doca_dpa_app *)
{
	FAKE_LOCK;
	return use("doca_dpa_set_app", dpa);
}
doca_error_t doca_dpa_start(struct doca_dpa *dpa) { FAKE_LOCK; return start("doca_dpa_start", dpa); }
doca_error_t doca_dpa_stop(struct doca_dpa *dpa) { FAKE_LOCK; return stop("doca_dpa_stop", dpa); }
doca_error_t doca_dpa_destroy(struct doca_dpa *dpa) { FAKE_LOCK; return destroy("doca_dpa_destroy", dpa); }

/* [p, p+n) inside one DPA allocation, as a local pointer; else a misuse and nullptr */
static void *dpa_range(uint64_t p, size_t n, const char *call)
{
	auto it = dpa_mem.upper_bound(p);
	if (it == dpa_mem.begin() || p + n > std::prev(it)->first + std::prev(it)->second) {
		g.misuse.push_back(std::string(call) + ": outside DPA memory");
		return nullptr;
	}
	return reinterpret_cast<void *>(p);
}

/* DPA memory is host memory here (FAKE): its device address is its local address, so the
 * device mapping, run on the host, reads what the backend wrote */
doca_error_t doca_dpa_mem_alloc(struct doca_dpa *dpa, size_t size, doca_dpa_dev_uintptr_t *p)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_dpa_mem_alloc", dpa);
	if (e != DOCA_SUCCESS)
		return e;
	const size_t len = (size + 63) / 64 * 64;
	void *m = std::aligned_alloc(64, len);
	std::memset(m, 0xa5, len); /* DPA memory is not zeroed: the backend must write it */
	*p = reinterpret_cast<uintptr_t>(m);
	dpa_mem[*p] = len;
	g.allocations++;
	return DOCA_SUCCESS;
}
doca_error_t doca_dpa_mem_free(struct doca_dpa *dpa, doca_dpa_dev_uintptr_t p)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_dpa_mem_free", dpa);
	if (dpa_mem.erase(p) == 1) {
		std::free(reinterpret_cast<void *>(p));
		g.allocations--;
	} else {
		g.misuse.push_back("doca_dpa_mem_free: not allocated");
	}
	return e;
}
doca_error_t doca_dpa_h2d_memcpy(struct doca_dpa *dpa, doca_dpa_dev_uintptr_t dst, void *src, size_t size)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_dpa_h2d_memcpy", dpa);
	if (e != DOCA_SUCCESS)
		return e;
	void *to = dpa_range(dst, size, "doca_dpa_h2d_memcpy");
	if (!to)
		return static_cast<doca_error_t>(9);
	std::memcpy(to, src, size);
	return DOCA_SUCCESS;
}

doca_error_t doca_dpa_d2h_memcpy(struct doca_dpa *dpa, void *dst, doca_dpa_dev_uintptr_t src, size_t size)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_dpa_d2h_memcpy", dpa);
	if (e != DOCA_SUCCESS)
		return e;
	const void *from = dpa_range(src, size, "doca_dpa_d2h_memcpy");
	if (!from)
		return static_cast<doca_error_t>(9);
	std::memcpy(dst, from, size);
	return DOCA_SUCCESS;
}

/* an RPC runs here and now: the function is the device code compiled for the host */
doca_error_t doca_dpa_rpc(struct doca_dpa *dpa, doca_dpa_func_t *func, uint64_t *retval, ...)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_dpa_rpc", dpa);
	if (e != DOCA_SUCCESS)
		return e;
	va_list ap;
	va_start(ap, retval);
	const uint64_t arg = va_arg(ap, uint64_t);
	va_end(ap);
	/* back to its real type (through void (*)(void), the generic function pointer) */
	*retval = reinterpret_cast<uint64_t (*)(uint64_t)>(reinterpret_cast<void (*)(void)>(func))(arg);
	return DOCA_SUCCESS;
}

doca_error_t doca_dpa_thread_create(struct doca_dpa *, struct doca_dpa_thread **t)
{
	FAKE_LOCK;
	return make("doca_dpa_thread_create", "thread", t);
}
doca_error_t doca_dpa_thread_set_func_arg(struct doca_dpa_thread *t, doca_dpa_func_t *, uint64_t)
{
	FAKE_LOCK;
	return use("doca_dpa_thread_set_func_arg", t);
}
doca_error_t doca_dpa_thread_set_local_storage(struct doca_dpa_thread *t, doca_dpa_dev_uintptr_t p)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_dpa_thread_set_local_storage", t);
	if (!dpa_mem.count(p))
		g.misuse.push_back("doca_dpa_thread_set_local_storage: not DPA memory");
	return e;
}
doca_error_t doca_dpa_thread_start(struct doca_dpa_thread *t) { FAKE_LOCK; return start("doca_dpa_thread_start", t); }
doca_error_t doca_dpa_thread_run(struct doca_dpa_thread *t) { FAKE_LOCK; return use("doca_dpa_thread_run", t); }
doca_error_t doca_dpa_thread_stop(struct doca_dpa_thread *t) { FAKE_LOCK; return stop("doca_dpa_thread_stop", t); }
doca_error_t doca_dpa_thread_destroy(struct doca_dpa_thread *t)
{
	FAKE_LOCK;
	return destroy("doca_dpa_thread_destroy", t);
}

doca_error_t doca_dpa_completion_create(struct doca_dpa *, unsigned int, struct doca_dpa_completion **c)
{
	FAKE_LOCK;
	return make("doca_dpa_completion_create", "completion", c);
}
doca_error_t doca_dpa_completion_set_thread(struct doca_dpa_completion *c, struct doca_dpa_thread *t)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_dpa_completion_set_thread", c);
	find(t, "doca_dpa_completion_set_thread(thread)");
	return e;
}
doca_error_t doca_dpa_completion_start(struct doca_dpa_completion *c)
{
	FAKE_LOCK;
	return start("doca_dpa_completion_start", c);
}
doca_error_t doca_dpa_completion_get_dpa_handle(struct doca_dpa_completion *c, doca_dpa_dev_completion_t *h)
{
	FAKE_LOCK;
	*h = reinterpret_cast<uintptr_t>(c);
	return use("doca_dpa_completion_get_dpa_handle", c);
}
doca_error_t doca_dpa_completion_stop(struct doca_dpa_completion *c) { FAKE_LOCK; return stop("doca_dpa_completion_stop", c); }
doca_error_t doca_dpa_completion_destroy(struct doca_dpa_completion *c)
{
	FAKE_LOCK;
	return destroy("doca_dpa_completion_destroy", c);
}

doca_error_t doca_dpa_async_ops_create(struct doca_dpa *, unsigned int, uint64_t, struct doca_dpa_async_ops **o)
{
	FAKE_LOCK;
	return make("doca_dpa_async_ops_create", "async_ops", o);
}
doca_error_t doca_dpa_async_ops_attach(struct doca_dpa_async_ops *o, struct doca_dpa_completion *c)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_dpa_async_ops_attach", o);
	find(c, "doca_dpa_async_ops_attach(completion)");
	return e;
}
doca_error_t doca_dpa_async_ops_start(struct doca_dpa_async_ops *o) { FAKE_LOCK; return start("doca_dpa_async_ops_start", o); }
doca_error_t doca_dpa_async_ops_get_dpa_handle(struct doca_dpa_async_ops *o, doca_dpa_dev_async_ops_t *h)
{
	FAKE_LOCK;
	*h = reinterpret_cast<uintptr_t>(o);
	return use("doca_dpa_async_ops_get_dpa_handle", o);
}
doca_error_t doca_dpa_async_ops_stop(struct doca_dpa_async_ops *o) { FAKE_LOCK; return stop("doca_dpa_async_ops_stop", o); }
doca_error_t doca_dpa_async_ops_destroy(struct doca_dpa_async_ops *o)
{
	FAKE_LOCK;
	return destroy("doca_dpa_async_ops_destroy", o);
}

doca_error_t doca_dpa_notification_completion_create(struct doca_dpa *, struct doca_dpa_thread *t,
						     struct doca_dpa_notification_completion **n)
{
	FAKE_LOCK;
	doca_error_t e = make("doca_dpa_notification_completion_create", "notification", n);
	find(t, "doca_dpa_notification_completion_create(thread)");
	return e;
}
doca_error_t doca_dpa_notification_completion_start(struct doca_dpa_notification_completion *n)
{
	FAKE_LOCK;
	return start("doca_dpa_notification_completion_start", n);
}
doca_error_t doca_dpa_notification_completion_get_dpa_handle(struct doca_dpa_notification_completion *n,
							     doca_dpa_dev_notification_completion_t *h)
{
	FAKE_LOCK;
	*h = reinterpret_cast<uintptr_t>(n);
	return use("doca_dpa_notification_completion_get_dpa_handle", n);
}
doca_error_t doca_dpa_notification_completion_stop(struct doca_dpa_notification_completion *n)
{
	FAKE_LOCK;
	return stop("doca_dpa_notification_completion_stop", n);
}
doca_error_t doca_dpa_notification_completion_destroy(struct doca_dpa_notification_completion *n)
{
	FAKE_LOCK;
	return destroy("doca_dpa_notification_completion_destroy", n);
}

doca_error_t doca_mmap_create(struct doca_mmap **m) { FAKE_LOCK; return make("doca_mmap_create", "mmap", m); }
doca_error_t doca_mmap_set_memrange(struct doca_mmap *m, void *addr, size_t len)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_mmap_set_memrange", m);
	if (e == DOCA_SUCCESS)
		if (object *o = find(m, "doca_mmap_set_memrange"))
			o->addr = static_cast<uint8_t *>(addr), o->len = len;
	return e;
}
doca_error_t doca_mmap_add_dev(struct doca_mmap *m, struct doca_dev *) { FAKE_LOCK; return use("doca_mmap_add_dev", m); }
doca_error_t doca_mmap_set_permissions(struct doca_mmap *m, uint32_t)
{
	FAKE_LOCK;
	return use("doca_mmap_set_permissions", m);
}
doca_error_t doca_mmap_start(struct doca_mmap *m) { FAKE_LOCK; return start("doca_mmap_start", m); }
doca_error_t doca_mmap_export_pci(struct doca_mmap *m, const struct doca_dev *, const void **desc,
				  size_t *len)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_mmap_export_pci", m);
	if (e != DOCA_SUCCESS)
		return e;
	object *o = find(m, "doca_mmap_export_pci");
	if (!o || !o->started)
		return static_cast<doca_error_t>(8); /* only a started mmap exports */
	o->desc.assign(16, 0);
	std::memcpy(o->desc.data(), &m, sizeof(m));
	exported.push_back(o->desc);
	*desc = o->desc.data();
	*len = o->desc.size();
	return DOCA_SUCCESS;
}
doca_error_t doca_mmap_create_from_export(const union doca_data *, const void *desc, size_t len,
					  struct doca_dev *, struct doca_mmap **m)
{
	FAKE_LOCK;
	std::vector<uint8_t> d(static_cast<const uint8_t *>(desc), static_cast<const uint8_t *>(desc) + len);
	bool known = false;
	for (const auto &x : exported)
		known = known || x == d;
	if (!known) {
		g.calls.push_back("doca_mmap_create_from_export");
		return static_cast<doca_error_t>(9); /* never exported (or exporter gone) */
	}
	doca_error_t e = make("doca_mmap_create_from_export", "mmap", m);
	if (e == DOCA_SUCCESS) { /* the range is the exporter's (its pointer is the descriptor) */
		const void *src = nullptr;
		std::memcpy(&src, d.data(), sizeof(src));
		if (object *x = find(src, "doca_mmap_create_from_export(exporter)"))
			objects[*m].addr = x->addr, objects[*m].len = x->len;
	}
	return e;
}
doca_error_t doca_mmap_dev_get_dpa_handle(struct doca_mmap *m, struct doca_dev *, doca_dpa_dev_mmap_t *h)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_mmap_dev_get_dpa_handle", m);
	if (e != DOCA_SUCCESS)
		return e;
	static uint32_t next_handle = 0x400;
	*h = ++next_handle;
	if (object *o = find(m, "doca_mmap_dev_get_dpa_handle"); o && g.on_dpa_handle)
		g.on_dpa_handle(*h, o->addr, o->len);
	return DOCA_SUCCESS;
}
doca_error_t doca_mmap_stop(struct doca_mmap *m) { FAKE_LOCK; return stop("doca_mmap_stop", m); }
doca_error_t doca_mmap_destroy(struct doca_mmap *m) { FAKE_LOCK; return destroy("doca_mmap_destroy", m); }

} /* extern "C" */

/* ---- FAKE comch and progress engines ----
 * A progress engine is an eventfd and a queue of events (a received message, a send
 * completion, a connection change) that doca_pe_progress runs one at a time; the fd is
 * written when events wait and a notification was requested, as DOCA's notification handle
 * becomes readable. A comch client connects to the started server of its name in this
 * process; a send task submitted on one side queues the message on the peer's engine and the
 * completion on its own. Not DOCA: the real channel crosses PCIe between host and Arm. */
#include <sys/eventfd.h>
#include <unistd.h>

#include <deque>
#include <functional>
#include <memory>

namespace dpumesh::doca_fake {
namespace {

struct fake_pe {
	int efd = -1;
	bool armed = false;
	int contexts = 0;
	std::deque<std::function<void()>> events;
};
std::map<const void *, fake_pe> pes;

struct fake_comch;
struct fake_conn {
	fake_comch *owner = nullptr;
	fake_conn *peer = nullptr;
};
std::vector<std::unique_ptr<fake_conn>> conns;

struct fake_comch {
	bool server = false;
	std::string name;
	doca_pe *pe = nullptr;
	union doca_data user = {};
	doca_ctx_states state = DOCA_CTX_STATE_IDLE;
	doca_comch_task_send_completion_cb_t sent = nullptr, failed = nullptr;
	doca_comch_event_msg_recv_cb_t recv = nullptr;
	doca_comch_event_connection_status_changed_cb_t connected = nullptr, disconnected = nullptr;
	fake_conn *conn = nullptr; /* client: its connection */
};
std::map<const void *, fake_comch> comchs;

struct fake_task {
	fake_comch *from = nullptr;
	fake_conn *conn = nullptr;
	std::vector<uint8_t> bytes;
};
std::map<const void *, fake_task> tasks;

/* A sync event: the pod's (created, configured, a context on its engine, exported) or the
 * Arm's import of it (origin: the exported one, whose value it shares). The DPA's adds come
 * through dpa_sync_event_add with a handle get_dpa_handle gave out. */
struct fake_se {
	bool publisher_remote = false, subscriber_cpu = false;
	doca_pe *pe = nullptr;
	union doca_data user = {};
	doca_ctx_states state = DOCA_CTX_STATE_IDLE;
	doca_sync_event_task_wait_neq_completion_cb_t done = nullptr, flushed = nullptr;
	uint64_t value = 0;
	std::vector<uint8_t> desc;
	const void *origin = nullptr;
};
std::map<const void *, fake_se> ses;
void queue(doca_pe *pe, std::function<void()> ev);
struct fake_wait {
	const void *se = nullptr;
	uint64_t wait_val = 0, mask = 0;
	union doca_data user = {};
	bool in_flight = false;
};
std::map<const void *, fake_wait> waits;
struct se_handle {
	const void *origin, *from;
};
std::map<uint64_t, se_handle> se_handles;
uint64_t next_se_handle = 0x5e000001;

fake_se *se_of(const void *p)
{
	auto it = ses.find(p);
	return it == ses.end() ? nullptr : &it->second;
}

/* a wait task's callback, run by the engine unlocked (as DOCA runs them) */
void run_wait(const void *se, const void *task, bool ok)
{
	doca_sync_event_task_wait_neq_completion_cb_t cb;
	union doca_data user, ctx_user;
	{
		FAKE_LOCK;
		fake_se *s = se_of(se);
		auto w = waits.find(task);
		if (!s || w == waits.end()) {
			g.misuse.push_back("sync event wait completion: event or task gone");
			return;
		}
		cb = ok ? s->done : s->flushed;
		user = w->second.user;
		ctx_user = s->user;
	}
	if (cb)
		cb(reinterpret_cast<doca_sync_event_task_wait_neq *>(const_cast<void *>(task)), user, ctx_user);
}

/* every wait in flight on the event `origin` (or an event on it) whose value now differs */
void check_waits(const void *origin)
{
	fake_se *o = se_of(origin);
	if (!o)
		return;
	for (auto &[t, w] : waits) {
		if (!w.in_flight || w.se != origin || (o->value & w.mask) == w.wait_val)
			continue;
		w.in_flight = false;
		const void *task = t;
		queue(o->pe, [origin, task] { run_wait(origin, task, true); });
	}
}

void wake(fake_pe &p)
{
	if (p.armed && !p.events.empty()) {
		uint64_t one = 1;
		ssize_t rc = ::write(p.efd, &one, sizeof(one));
		(void)rc;
		p.armed = false;
		g.pe_wakeups++;
	}
}

void queue(doca_pe *pe, std::function<void()> ev)
{
	auto it = pes.find(pe);
	if (it == pes.end()) {
		g.misuse.push_back("event for a context with no progress engine");
		return;
	}
	it->second.events.push_back(std::move(ev));
	wake(it->second);
}

fake_comch *comch_of(const void *p, const char *call)
{
	auto it = comchs.find(p);
	if (it == comchs.end()) {
		g.misuse.push_back(std::string(call) + ": not a comch context");
		return nullptr;
	}
	return &it->second;
}

/* the other side loses the connection */
void disconnect(fake_comch &c)
{
	for (auto &x : conns) {
		if (x->owner != &c || !x->peer)
			continue;
		fake_conn *peer = x->peer;
		peer->peer = nullptr;
		x->peer = nullptr;
		fake_comch *other = peer->owner;
		if (other->server && other->disconnected && other->pe)
			queue(other->pe, [other, peer] { other->disconnected(nullptr, reinterpret_cast<doca_comch_connection *>(peer), 1); });
		else if (!other->server)
			other->state = DOCA_CTX_STATE_IDLE;
	}
}

} // namespace

void reset_comch()
{
	for (auto &[p, x] : pes)
		::close(x.efd);
	pes.clear();
	comchs.clear();
	conns.clear();
	tasks.clear();
	ses.clear();
	waits.clear();
	se_handles.clear();
}

void dpa_sync_event_add(uint64_t handle, uint64_t value)
{
	FAKE_LOCK;
	auto h = se_handles.find(handle);
	if (h == se_handles.end()) {
		g.misuse.push_back("doca_dpa_dev_sync_event_update_add: unknown sync event handle");
		return;
	}
	if (fake_se *o = se_of(h->second.origin)) {
		o->value += value;
		check_waits(h->second.origin);
	}
}

} // namespace dpumesh::doca_fake

extern "C" {

struct doca_devinfo *doca_dev_as_devinfo(const struct doca_dev *dev)
{
	FAKE_LOCK;
	return reinterpret_cast<doca_devinfo *>(const_cast<doca_dev *>(dev));
}
doca_error_t doca_comch_cap_get_max_msg_size(const struct doca_devinfo *, uint32_t *size)
{
	FAKE_LOCK;
	doca_error_t e = enter("doca_comch_cap_get_max_msg_size");
	if (e == DOCA_SUCCESS)
		*size = g.max_msg;
	return e;
}

/* representors: like devinfos, a pointer to the PCI address in the fake's list */
doca_error_t doca_devinfo_rep_create_list(struct doca_dev *dev, int, struct doca_devinfo_rep ***list,
					  uint32_t *nb)
{
	FAKE_LOCK;
	doca_error_t e = enter("doca_devinfo_rep_create_list");
	if (e != DOCA_SUCCESS)
		return e;
	find(dev, "doca_devinfo_rep_create_list(dev)");
	auto **l = new doca_devinfo_rep *[g.reps.size() + 1];
	for (size_t i = 0; i < g.reps.size(); i++)
		l[i] = reinterpret_cast<doca_devinfo_rep *>(&g.reps[i]);
	objects[l] = {"rep_list", false, {}};
	g.live_objects++;
	*list = l;
	*nb = static_cast<uint32_t>(g.reps.size());
	return DOCA_SUCCESS;
}
doca_error_t doca_devinfo_rep_destroy_list(struct doca_devinfo_rep **list)
{
	FAKE_LOCK;
	doca_error_t e = enter("doca_devinfo_rep_destroy_list");
	if (objects.erase(list) == 1) {
		delete[] list;
		g.live_objects--;
	} else {
		g.misuse.push_back("doca_devinfo_rep_destroy_list: unknown list");
	}
	return e;
}
doca_error_t doca_devinfo_rep_is_equal_pci_addr(const struct doca_devinfo_rep *d, const char *pci, uint8_t *eq)
{
	FAKE_LOCK;
	doca_error_t e = enter("doca_devinfo_rep_is_equal_pci_addr");
	if (e == DOCA_SUCCESS)
		*eq = *reinterpret_cast<const std::string *>(d) == pci;
	return e;
}
doca_error_t doca_dev_rep_open(struct doca_devinfo_rep *, struct doca_dev_rep **rep)
{
	FAKE_LOCK;
	return make("doca_dev_rep_open", "dev_rep", rep);
}
doca_error_t doca_dev_rep_close(struct doca_dev_rep *rep) { FAKE_LOCK; return destroy("doca_dev_rep_close", rep); }

doca_error_t doca_pe_create(struct doca_pe **pe)
{
	FAKE_LOCK;
	doca_error_t e = make("doca_pe_create", "pe", pe);
	if (e == DOCA_SUCCESS)
		pes[*pe].efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return e;
}
doca_error_t doca_pe_destroy(struct doca_pe *pe)
{
	FAKE_LOCK;
	auto it = pes.find(pe);
	if (it != pes.end()) {
		if (it->second.contexts != 0)
			g.misuse.push_back("doca_pe_destroy: a context is still connected");
		::close(it->second.efd);
		pes.erase(it);
	}
	return destroy("doca_pe_destroy", pe);
}
uint8_t doca_pe_progress(struct doca_pe *pe)
{
	std::unique_lock<std::recursive_mutex> lk(dpumesh::doca_fake::fake_mutex());
	auto it = pes.find(pe);
	if (it == pes.end()) {
		g.misuse.push_back("doca_pe_progress: unknown engine");
		return 0;
	}
	/* a connecting client of this engine comes up on its first progress */
	for (auto &[p, c] : comchs)
		if (c.pe == pe && !c.server && c.state == DOCA_CTX_STATE_STARTING && c.conn) {
			c.state = DOCA_CTX_STATE_RUNNING;
			return 1;
		}
	if (it->second.events.empty()) {
		for (auto &[p, c] : comchs)
			if (c.pe == pe && c.state == DOCA_CTX_STATE_STOPPING) {
				c.state = DOCA_CTX_STATE_IDLE;
				return 1;
			}
		for (auto &[p, x] : ses)
			if (x.pe == pe && x.state == DOCA_CTX_STATE_STOPPING) {
				x.state = DOCA_CTX_STATE_IDLE;
				return 1;
			}
		return 0;
	}
	auto ev = std::move(it->second.events.front());
	it->second.events.pop_front();
	g.pe_events++;
	/* the event's callback runs unlocked, as DOCA's do: a callback that waits for another
	 * thread's DOCA call (the node's gone hook waits for the lcore's notify RPCs) must not
	 * hold that thread off; the FAKE calls it makes lock for themselves */
	lk.unlock();
	ev();
	return 1;
}
doca_error_t doca_pe_connect_ctx(struct doca_pe *pe, struct doca_ctx *ctx)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_pe_connect_ctx", pe);
	if (e != DOCA_SUCCESS)
		return e;
	if (fake_se *x = se_of(ctx)) {
		x->pe = pe;
		pes[pe].contexts++;
	} else if (fake_comch *c = comch_of(ctx, "doca_pe_connect_ctx")) {
		c->pe = pe;
		pes[pe].contexts++;
	}
	return DOCA_SUCCESS;
}
doca_error_t doca_pe_get_notification_handle(struct doca_pe *pe, doca_notification_handle_t *h)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_pe_get_notification_handle", pe);
	if (e == DOCA_SUCCESS)
		*h = pes[pe].efd;
	return e;
}
doca_error_t doca_pe_request_notification(struct doca_pe *pe)
{
	FAKE_LOCK;
	auto it = pes.find(pe);
	if (it == pes.end())
		return static_cast<doca_error_t>(9);
	it->second.armed = true;
	wake(it->second);
	return DOCA_SUCCESS;
}
doca_error_t doca_pe_clear_notification(struct doca_pe *pe, doca_notification_handle_t)
{
	FAKE_LOCK;
	auto it = pes.find(pe);
	if (it == pes.end())
		return static_cast<doca_error_t>(9);
	uint64_t v;
	while (::read(it->second.efd, &v, sizeof(v)) == static_cast<ssize_t>(sizeof(v))) {
	}
	return DOCA_SUCCESS;
}

doca_error_t doca_ctx_set_user_data(struct doca_ctx *ctx, union doca_data user)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_ctx_set_user_data", ctx);
	if (e == DOCA_SUCCESS && se_of(ctx))
		se_of(ctx)->user = user;
	else if (e == DOCA_SUCCESS)
		if (fake_comch *c = comch_of(ctx, "doca_ctx_set_user_data"))
			c->user = user;
	return e;
}
doca_error_t doca_ctx_get_user_data(const struct doca_ctx *ctx, union doca_data *user)
{
	FAKE_LOCK;
	if (fake_se *x = se_of(ctx)) {
		*user = x->user;
		return DOCA_SUCCESS;
	}
	fake_comch *c = comch_of(ctx, "doca_ctx_get_user_data");
	if (!c)
		return static_cast<doca_error_t>(9);
	*user = c->user;
	return DOCA_SUCCESS;
}
doca_error_t doca_ctx_get_state(const struct doca_ctx *ctx, enum doca_ctx_states *st)
{
	FAKE_LOCK;
	if (fake_se *x = se_of(ctx)) {
		*st = x->state;
		return DOCA_SUCCESS;
	}
	fake_comch *c = comch_of(ctx, "doca_ctx_get_state");
	if (!c)
		return static_cast<doca_error_t>(9);
	*st = c->state;
	return DOCA_SUCCESS;
}
doca_error_t doca_ctx_start(struct doca_ctx *ctx)
{
	FAKE_LOCK;
	if (fake_se *x = se_of(ctx)) {
		if (!x->pe || !x->done || !x->flushed) {
			g.calls.push_back("doca_ctx_start");
			g.misuse.push_back("doca_ctx_start: sync event without engine or task configuration");
			return static_cast<doca_error_t>(9);
		}
		doca_error_t e = start("doca_ctx_start", ctx);
		if (e == DOCA_SUCCESS)
			x->state = DOCA_CTX_STATE_RUNNING;
		return e;
	}
	fake_comch *c = comch_of(ctx, "doca_ctx_start");
	if (c && !c->pe) {
		g.calls.push_back("doca_ctx_start");
		g.misuse.push_back("doca_ctx_start: no progress engine");
		return static_cast<doca_error_t>(9);
	}
	if (c && !c->server) { /* the server of its name must be running */
		fake_comch *srv = nullptr;
		for (auto &[p, x] : comchs)
			if (x.server && x.name == c->name && x.state == DOCA_CTX_STATE_RUNNING)
				srv = &x;
		if (!srv) {
			g.calls.push_back("doca_ctx_start");
			return static_cast<doca_error_t>(11); /* nobody to connect to */
		}
		doca_error_t e = start("doca_ctx_start", ctx);
		if (e != DOCA_SUCCESS)
			return e;
		conns.push_back(std::make_unique<fake_conn>());
		fake_conn *mine = conns.back().get();
		conns.push_back(std::make_unique<fake_conn>());
		fake_conn *theirs = conns.back().get();
		*mine = {c, theirs};
		*theirs = {srv, mine};
		c->conn = mine;
		if (srv->connected)
			queue(srv->pe, [srv, theirs] { srv->connected(nullptr, reinterpret_cast<doca_comch_connection *>(theirs), 1); });
		if (g.async_connect) {
			c->state = DOCA_CTX_STATE_STARTING;
			return static_cast<doca_error_t>(12); /* in progress */
		}
		c->state = DOCA_CTX_STATE_RUNNING;
		return DOCA_SUCCESS;
	}
	doca_error_t e = start("doca_ctx_start", ctx);
	if (e == DOCA_SUCCESS && c)
		c->state = DOCA_CTX_STATE_RUNNING;
	return e;
}
doca_error_t doca_ctx_stop(struct doca_ctx *ctx)
{
	FAKE_LOCK;
	if (fake_se *x = se_of(ctx)) {
		doca_error_t e = stop("doca_ctx_stop", ctx);
		/* waits in flight are flushed through the engine before the context is idle */
		bool flushed = false;
		for (auto &[t, w] : waits)
			if (w.in_flight && w.se == ctx) {
				w.in_flight = false;
				flushed = true;
				const void *task = t;
				queue(x->pe, [ctx, task] { run_wait(ctx, task, false); });
			}
		x->state = flushed ? DOCA_CTX_STATE_STOPPING : DOCA_CTX_STATE_IDLE;
		return e;
	}
	doca_error_t e = stop("doca_ctx_stop", ctx);
	if (fake_comch *c = comch_of(ctx, "doca_ctx_stop")) {
		disconnect(*c);
		/* as DOCA's: tasks in flight complete (flushed) through the progress engine
		 * before the context is idle and may be destroyed */
		auto pe = pes.find(c->pe);
		c->state = pe != pes.end() && !pe->second.events.empty() ? DOCA_CTX_STATE_STOPPING
									   : DOCA_CTX_STATE_IDLE;
	}
	return e;
}

static doca_error_t comch_create(const char *call, bool server, const char *name, void **out)
{
	doca_error_t e = enter(call);
	if (e != DOCA_SUCCESS)
		return e;
	void *o = new char(0);
	objects[o] = {server ? "comch_server" : "comch_client", false, {}};
	g.live_objects++;
	comchs[o].server = server;
	comchs[o].name = name;
	*out = o;
	return DOCA_SUCCESS;
}
static doca_error_t comch_destroy(const char *call, void *o)
{
	auto it = comchs.find(o);
	if (it != comchs.end()) {
		if (it->second.state != DOCA_CTX_STATE_IDLE)
			g.misuse.push_back(std::string(call) + ": destroyed before its context was idle");
		if (it->second.pe && pes.count(it->second.pe))
			pes[it->second.pe].contexts--;
		else if (it->second.pe)
			g.misuse.push_back(std::string(call) + ": its progress engine was destroyed first");
		disconnect(it->second);
		for (auto &x : conns)
			if (x->owner == &it->second)
				x->owner = nullptr;
		comchs.erase(it);
	}
	return destroy(call, o);
}
static doca_error_t task_alloc(const char *call, void *comch, struct doca_comch_connection *conn,
			       const void *msg, uint32_t len, struct doca_comch_task_send **task)
{
	doca_error_t e = make(call, "send_task", task);
	if (e != DOCA_SUCCESS)
		return e;
	fake_task &t = tasks[*task];
	t.from = comch_of(comch, call);
	t.conn = reinterpret_cast<fake_conn *>(conn);
	t.bytes.assign(static_cast<const uint8_t *>(msg), static_cast<const uint8_t *>(msg) + len);
	if (t.from && len > g.max_msg)
		g.misuse.push_back(std::string(call) + ": message over the maximum size");
	return DOCA_SUCCESS;
}

doca_error_t doca_comch_server_create(struct doca_dev *dev, struct doca_dev_rep *rep, const char *name,
				      struct doca_comch_server **s)
{
	FAKE_LOCK;
	find(dev, "doca_comch_server_create(dev)");
	find(rep, "doca_comch_server_create(rep)");
	return comch_create("doca_comch_server_create", true, name, reinterpret_cast<void **>(s));
}
doca_error_t doca_comch_server_destroy(struct doca_comch_server *s)
{
	FAKE_LOCK;
	return comch_destroy("doca_comch_server_destroy", s);
}
struct doca_ctx *doca_comch_server_as_ctx(struct doca_comch_server *s) { FAKE_LOCK; return reinterpret_cast<doca_ctx *>(s); }
doca_error_t doca_comch_server_task_send_set_conf(struct doca_comch_server *s,
						  doca_comch_task_send_completion_cb_t ok,
						  doca_comch_task_send_completion_cb_t err, uint32_t)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_comch_server_task_send_set_conf", s);
	if (e == DOCA_SUCCESS)
		if (fake_comch *c = comch_of(s, "set_conf"))
			c->sent = ok, c->failed = err;
	return e;
}
doca_error_t doca_comch_server_event_msg_recv_register(struct doca_comch_server *s,
						       doca_comch_event_msg_recv_cb_t cb)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_comch_server_event_msg_recv_register", s);
	if (e == DOCA_SUCCESS)
		if (fake_comch *c = comch_of(s, "msg_recv_register"))
			c->recv = cb;
	return e;
}
doca_error_t doca_comch_server_event_connection_status_changed_register(
	struct doca_comch_server *s, doca_comch_event_connection_status_changed_cb_t up,
	doca_comch_event_connection_status_changed_cb_t down)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_comch_server_event_connection_status_changed_register", s);
	if (e == DOCA_SUCCESS)
		if (fake_comch *c = comch_of(s, "connection_status_changed_register"))
			c->connected = up, c->disconnected = down;
	return e;
}
doca_error_t doca_comch_server_task_send_alloc_init(struct doca_comch_server *s, struct doca_comch_connection *conn,
						    const void *msg, uint32_t len, struct doca_comch_task_send **t)
{
	FAKE_LOCK;
	return task_alloc("doca_comch_server_task_send_alloc_init", s, conn, msg, len, t);
}
struct doca_comch_server *doca_comch_server_get_server_ctx(const struct doca_comch_connection *conn)
{
	FAKE_LOCK;
	auto *c = reinterpret_cast<const fake_conn *>(conn);
	for (auto &[p, x] : comchs)
		if (&x == c->owner && x.server)
			return static_cast<doca_comch_server *>(const_cast<void *>(p));
	return nullptr;
}

doca_error_t doca_comch_client_create(struct doca_dev *dev, const char *name, struct doca_comch_client **c)
{
	FAKE_LOCK;
	find(dev, "doca_comch_client_create(dev)");
	return comch_create("doca_comch_client_create", false, name, reinterpret_cast<void **>(c));
}
doca_error_t doca_comch_client_destroy(struct doca_comch_client *c)
{
	FAKE_LOCK;
	return comch_destroy("doca_comch_client_destroy", c);
}
struct doca_ctx *doca_comch_client_as_ctx(struct doca_comch_client *c) { FAKE_LOCK; return reinterpret_cast<doca_ctx *>(c); }
doca_error_t doca_comch_client_task_send_set_conf(struct doca_comch_client *c,
						  doca_comch_task_send_completion_cb_t ok,
						  doca_comch_task_send_completion_cb_t err, uint32_t)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_comch_client_task_send_set_conf", c);
	if (e == DOCA_SUCCESS)
		if (fake_comch *x = comch_of(c, "set_conf"))
			x->sent = ok, x->failed = err;
	return e;
}
doca_error_t doca_comch_client_event_msg_recv_register(struct doca_comch_client *c,
						       doca_comch_event_msg_recv_cb_t cb)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_comch_client_event_msg_recv_register", c);
	if (e == DOCA_SUCCESS)
		if (fake_comch *x = comch_of(c, "msg_recv_register"))
			x->recv = cb;
	return e;
}
doca_error_t doca_comch_client_get_connection(const struct doca_comch_client *c, struct doca_comch_connection **conn)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_comch_client_get_connection", c);
	if (e != DOCA_SUCCESS)
		return e;
	fake_comch *x = comch_of(c, "doca_comch_client_get_connection");
	if (!x || !x->conn || x->state != DOCA_CTX_STATE_RUNNING)
		return static_cast<doca_error_t>(9);
	*conn = reinterpret_cast<doca_comch_connection *>(x->conn);
	return DOCA_SUCCESS;
}
doca_error_t doca_comch_client_task_send_alloc_init(struct doca_comch_client *c, struct doca_comch_connection *conn,
						    const void *msg, uint32_t len, struct doca_comch_task_send **t)
{
	FAKE_LOCK;
	return task_alloc("doca_comch_client_task_send_alloc_init", c, conn, msg, len, t);
}
struct doca_comch_client *doca_comch_client_get_client_ctx(const struct doca_comch_connection *conn)
{
	FAKE_LOCK;
	auto *c = reinterpret_cast<const fake_conn *>(conn);
	for (auto &[p, x] : comchs)
		if (&x == c->owner && !x.server)
			return static_cast<doca_comch_client *>(const_cast<void *>(p));
	return nullptr;
}
struct doca_task *doca_comch_task_send_as_task(struct doca_comch_task_send *t)
{
	FAKE_LOCK;
	return reinterpret_cast<doca_task *>(t);
}

doca_error_t doca_task_submit(struct doca_task *task)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_task_submit", task);
	if (e != DOCA_SUCCESS)
		return e;
	if (auto w = waits.find(task); w != waits.end()) {
		fake_se *x = se_of(w->second.se);
		if (!x || x->state != DOCA_CTX_STATE_RUNNING || w->second.in_flight)
			return static_cast<doca_error_t>(9);
		w->second.in_flight = true;
		check_waits(w->second.se);
		return DOCA_SUCCESS;
	}
	auto it = tasks.find(task);
	if (it == tasks.end())
		return static_cast<doca_error_t>(9);
	fake_task &t = it->second;
	fake_comch *from = t.from;
	auto *st = reinterpret_cast<doca_comch_task_send *>(task);
	if (!from || !from->pe)
		return static_cast<doca_error_t>(9);
	fake_conn *peer = t.conn ? t.conn->peer : nullptr;
	if (peer && peer->owner && peer->owner->pe && peer->owner->recv) {
		fake_comch *to = peer->owner;
		std::vector<uint8_t> bytes = t.bytes;
		queue(to->pe, [to, peer, bytes]() mutable {
			to->recv(nullptr, bytes.data(), static_cast<uint32_t>(bytes.size()),
				 reinterpret_cast<doca_comch_connection *>(peer));
		});
		if (from->sent)
			queue(from->pe, [from, st] { from->sent(st, {}, from->user); });
	} else if (from->failed) {
		queue(from->pe, [from, st] { from->failed(st, {}, from->user); });
	}
	return DOCA_SUCCESS;
}
void doca_task_free(struct doca_task *task)
{
	FAKE_LOCK;
	/* void in DOCA: cannot fail, not counted in the sequences */
	tasks.erase(task);
	if (auto w = waits.find(task); w != waits.end()) {
		if (w->second.in_flight)
			g.misuse.push_back("doca_task_free: a wait task still in flight");
		waits.erase(w);
	}
	if (objects.erase(task) == 1) {
		delete reinterpret_cast<char *>(task);
		g.live_objects--;
	} else {
		g.misuse.push_back("doca_task_free: unknown task");
	}
}


/* ---- FAKE sync events (the pod's doorbell): a value, wait-not-equal tasks completed on the
 * event's progress engine, an export the Arm imports by its bytes, DPA handles whose adds
 * arrive through dpa_sync_event_add (the device FAKES' doca_dpa_dev_sync_event_update_add).
 * Not DOCA: the real event's value lives in memory the hardware writes across PCIe. ---- */
doca_error_t doca_sync_event_create(struct doca_sync_event **event)
{
	FAKE_LOCK;
	doca_error_t e = make("doca_sync_event_create", "sync_event", event);
	if (e == DOCA_SUCCESS)
		ses[*event] = {};
	return e;
}
doca_error_t doca_sync_event_destroy(struct doca_sync_event *event)
{
	FAKE_LOCK;
	if (fake_se *x = se_of(event)) {
		if (x->state != DOCA_CTX_STATE_IDLE)
			g.misuse.push_back("doca_sync_event_destroy: destroyed before its context was idle");
		if (x->pe && pes.count(x->pe))
			pes[x->pe].contexts--;
		for (auto &[t, w] : waits)
			if (w.se == event)
				g.misuse.push_back("doca_sync_event_destroy: a wait task not freed");
		for (auto it = se_handles.begin(); it != se_handles.end();)
			it = it->second.origin == event || it->second.from == event ? se_handles.erase(it) : std::next(it);
		ses.erase(event);
	}
	return destroy("doca_sync_event_destroy", event);
}
doca_error_t doca_sync_event_add_publisher_location_remote_pci(struct doca_sync_event *event)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_sync_event_add_publisher_location_remote_pci", event);
	if (e == DOCA_SUCCESS && se_of(event))
		se_of(event)->publisher_remote = true;
	return e;
}
doca_error_t doca_sync_event_add_subscriber_location_cpu(struct doca_sync_event *event, struct doca_dev *dev)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_sync_event_add_subscriber_location_cpu", event);
	find(dev, "doca_sync_event_add_subscriber_location_cpu(dev)");
	if (e == DOCA_SUCCESS && se_of(event))
		se_of(event)->subscriber_cpu = true;
	return e;
}
struct doca_ctx *doca_sync_event_as_ctx(struct doca_sync_event *event)
{
	FAKE_LOCK;
	return reinterpret_cast<doca_ctx *>(event);
}
doca_error_t doca_sync_event_task_wait_neq_set_conf(struct doca_sync_event *event,
						    doca_sync_event_task_wait_neq_completion_cb_t done,
						    doca_sync_event_task_wait_neq_completion_cb_t flushed, uint32_t)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_sync_event_task_wait_neq_set_conf", event);
	if (e == DOCA_SUCCESS && se_of(event))
		se_of(event)->done = done, se_of(event)->flushed = flushed;
	return e;
}
doca_error_t doca_sync_event_export_to_remote_pci(struct doca_sync_event *event, struct doca_dev *dev,
						  const uint8_t **data, size_t *sz)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_sync_event_export_to_remote_pci", event);
	if (e != DOCA_SUCCESS)
		return e;
	find(dev, "doca_sync_event_export_to_remote_pci(dev)");
	fake_se *x = se_of(event);
	if (!x || x->origin || !x->publisher_remote || !x->subscriber_cpu) {
		g.misuse.push_back("doca_sync_event_export_to_remote_pci: not a CPU-subscribed, remote-published event");
		return static_cast<doca_error_t>(9);
	}
	/* an opaque blob: a tag and the event's identity */
	const uint64_t id = reinterpret_cast<uintptr_t>(event);
	x->desc.assign({'S', 'E', 'X', 'P'});
	for (int i = 0; i < 8; i++)
		x->desc.push_back(static_cast<uint8_t>(id >> (8 * i)));
	*data = x->desc.data();
	*sz = x->desc.size();
	return DOCA_SUCCESS;
}
doca_error_t doca_sync_event_create_from_export(struct doca_dev *dev, const uint8_t *data, size_t sz,
						struct doca_sync_event **event)
{
	FAKE_LOCK;
	doca_error_t e = enter("doca_sync_event_create_from_export");
	if (e != DOCA_SUCCESS)
		return e;
	find(dev, "doca_sync_event_create_from_export(dev)");
	const void *origin = nullptr;
	for (auto &[p, x] : ses)
		if (!x.origin && !x.desc.empty() && x.desc.size() == sz && std::memcmp(x.desc.data(), data, sz) == 0)
			origin = p;
	if (!origin)
		return static_cast<doca_error_t>(9); /* nobody exported it */
	g.calls.pop_back(); /* make() records the call again */
	e = make("doca_sync_event_create_from_export", "sync_event_import", event);
	if (e == DOCA_SUCCESS)
		ses[*event].origin = origin;
	return e;
}
doca_error_t doca_sync_event_get_dpa_handle(struct doca_sync_event *event, struct doca_dpa *dpa,
					    doca_dpa_dev_sync_event_t *handle)
{
	FAKE_LOCK;
	doca_error_t e = use("doca_sync_event_get_dpa_handle", event);
	if (e != DOCA_SUCCESS)
		return e;
	find(dpa, "doca_sync_event_get_dpa_handle(dpa)");
	fake_se *x = se_of(event);
	if (!x)
		return static_cast<doca_error_t>(9);
	*handle = next_se_handle++;
	se_handles[*handle] = {x->origin ? x->origin : event, event};
	return DOCA_SUCCESS;
}
doca_error_t doca_sync_event_get(struct doca_sync_event *event, uint64_t *value)
{
	FAKE_LOCK;
	/* a data-path read (the Arm's lcore reads the TX doorbells every poll): counted apart,
	 * not in `calls`, never failed on purpose */
	g.se_gets++;
	fake_se *x = se_of(event);
	if (x && x->origin)
		x = se_of(x->origin);
	if (!x)
		return static_cast<doca_error_t>(9);
	*value = x->value;
	return DOCA_SUCCESS;
}
doca_error_t doca_sync_event_task_wait_neq_alloc_init(struct doca_sync_event *event, uint64_t wait_val,
						      uint64_t mask, union doca_data user,
						      struct doca_sync_event_task_wait_neq **task)
{
	FAKE_LOCK;
	doca_error_t e = make("doca_sync_event_task_wait_neq_alloc_init", "wait_task", task);
	if (e == DOCA_SUCCESS) {
		if (!se_of(event))
			g.misuse.push_back("doca_sync_event_task_wait_neq_alloc_init: unknown event");
		waits[*task] = {event, wait_val, mask, user, false};
	}
	return e;
}
struct doca_task *doca_sync_event_task_wait_neq_as_doca_task(struct doca_sync_event_task_wait_neq *task)
{
	FAKE_LOCK;
	return reinterpret_cast<doca_task *>(task);
}
doca_error_t doca_sync_event_start(struct doca_sync_event *event)
{
	FAKE_LOCK;
	fake_se *x = se_of(event);
	if (x && (!x->publisher_remote || !x->subscriber_cpu))
		g.misuse.push_back("doca_sync_event_start: publisher or subscriber not declared");
	return start("doca_sync_event_start", event);
}
doca_error_t doca_sync_event_stop(struct doca_sync_event *event)
{
	FAKE_LOCK;
	return stop("doca_sync_event_stop", event);
}
doca_error_t doca_sync_event_update_add(struct doca_sync_event *event, uint64_t value, uint64_t *fetched)
{
	FAKE_LOCK;
	/* the data path of a pod's TX worker: counted apart, never failed on purpose */
	g.se_adds++;
	fake_se *x = se_of(event);
	const void *origin = x && x->origin ? x->origin : event;
	fake_se *o = se_of(origin);
	if (!o) {
		g.misuse.push_back("doca_sync_event_update_add: unknown event");
		return static_cast<doca_error_t>(9);
	}
	*fetched = o->value;
	o->value += value;
	check_waits(origin);
	return DOCA_SUCCESS;
}
} /* extern "C" */
