// SPDX-License-Identifier: BSD-3-Clause
// Link-time FAKES of the DOCA calls declared in dpumesh/doca/doca_api.h, for the call-sequence
// test of the DOCA backend. Not DOCA: they only record and check how they are called.
#include "doca_fakes.h"

#include <cstring>
#include <map>
#include <set>

#include "dpumesh/doca/doca_api.h"

namespace dpumesh::doca_fake {
namespace {

state g;
struct object {
	std::string kind;
	bool started = false;
	std::vector<uint8_t> desc; /* mmaps: the descriptor export_pci handed out */
};
std::map<const void *, object> objects;
std::set<uint64_t> dpa_mem;
uint64_t next_mem = 0x1000;
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

void reset()
{
	g = state{};
	for (auto &[p, o] : objects) {
		if (o.kind == "devinfo_list")
			delete[] static_cast<doca_devinfo *const *>(p);
		else
			delete reinterpret_cast<const char *>(p);
	}
	objects.clear();
	dpa_mem.clear();
	exported.clear();
}

} // namespace dpumesh::doca_fake

using namespace dpumesh::doca_fake;

extern "C" {

const char *doca_error_get_descr(doca_error_t) { return "failure injected by the fake"; }

/* a devinfo is a pointer to its PCI address in the fake's device list */
doca_error_t doca_devinfo_create_list(struct doca_devinfo ***list, uint32_t *nb)
{
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
	doca_error_t e = enter("doca_devinfo_is_equal_pci_addr");
	if (e != DOCA_SUCCESS)
		return e;
	*eq = *reinterpret_cast<const std::string *>(d) == pci;
	return DOCA_SUCCESS;
}
doca_error_t doca_dpa_cap_is_supported(const struct doca_devinfo *d)
{
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
	return make("doca_dev_open", "dev", dev);
}
doca_error_t doca_dev_close(struct doca_dev *dev) { return destroy("doca_dev_close", dev); }

doca_error_t doca_dpa_create(struct doca_dev *, struct doca_dpa **dpa)
{
	return make("doca_dpa_create", "dpa", dpa);
}
doca_error_t doca_dpa_set_app(struct doca_dpa *dpa, struct doca_dpa_app *)
{
	return use("doca_dpa_set_app", dpa);
}
doca_error_t doca_dpa_start(struct doca_dpa *dpa) { return start("doca_dpa_start", dpa); }
doca_error_t doca_dpa_stop(struct doca_dpa *dpa) { return stop("doca_dpa_stop", dpa); }
doca_error_t doca_dpa_destroy(struct doca_dpa *dpa) { return destroy("doca_dpa_destroy", dpa); }

doca_error_t doca_dpa_mem_alloc(struct doca_dpa *dpa, size_t size, doca_dpa_dev_uintptr_t *p)
{
	doca_error_t e = use("doca_dpa_mem_alloc", dpa);
	if (e != DOCA_SUCCESS)
		return e;
	*p = next_mem;
	next_mem += (size + 63) / 64 * 64;
	dpa_mem.insert(*p);
	g.allocations++;
	return DOCA_SUCCESS;
}
doca_error_t doca_dpa_mem_free(struct doca_dpa *dpa, doca_dpa_dev_uintptr_t p)
{
	doca_error_t e = use("doca_dpa_mem_free", dpa);
	if (dpa_mem.erase(p) == 1)
		g.allocations--;
	else
		g.misuse.push_back("doca_dpa_mem_free: not allocated");
	return e;
}
doca_error_t doca_dpa_h2d_memcpy(struct doca_dpa *dpa, doca_dpa_dev_uintptr_t, void *, size_t)
{
	return use("doca_dpa_h2d_memcpy", dpa);
}

doca_error_t doca_dpa_thread_create(struct doca_dpa *, struct doca_dpa_thread **t)
{
	return make("doca_dpa_thread_create", "thread", t);
}
doca_error_t doca_dpa_thread_set_func_arg(struct doca_dpa_thread *t, doca_dpa_func_t *, uint64_t)
{
	return use("doca_dpa_thread_set_func_arg", t);
}
doca_error_t doca_dpa_thread_start(struct doca_dpa_thread *t) { return start("doca_dpa_thread_start", t); }
doca_error_t doca_dpa_thread_run(struct doca_dpa_thread *t) { return use("doca_dpa_thread_run", t); }
doca_error_t doca_dpa_thread_stop(struct doca_dpa_thread *t) { return stop("doca_dpa_thread_stop", t); }
doca_error_t doca_dpa_thread_destroy(struct doca_dpa_thread *t)
{
	return destroy("doca_dpa_thread_destroy", t);
}

doca_error_t doca_dpa_completion_create(struct doca_dpa *, unsigned int, struct doca_dpa_completion **c)
{
	return make("doca_dpa_completion_create", "completion", c);
}
doca_error_t doca_dpa_completion_set_thread(struct doca_dpa_completion *c, struct doca_dpa_thread *t)
{
	doca_error_t e = use("doca_dpa_completion_set_thread", c);
	find(t, "doca_dpa_completion_set_thread(thread)");
	return e;
}
doca_error_t doca_dpa_completion_start(struct doca_dpa_completion *c)
{
	return start("doca_dpa_completion_start", c);
}
doca_error_t doca_dpa_completion_get_dpa_handle(struct doca_dpa_completion *c, doca_dpa_dev_completion_t *h)
{
	*h = reinterpret_cast<uintptr_t>(c);
	return use("doca_dpa_completion_get_dpa_handle", c);
}
doca_error_t doca_dpa_completion_stop(struct doca_dpa_completion *c) { return stop("doca_dpa_completion_stop", c); }
doca_error_t doca_dpa_completion_destroy(struct doca_dpa_completion *c)
{
	return destroy("doca_dpa_completion_destroy", c);
}

doca_error_t doca_dpa_async_ops_create(struct doca_dpa *, unsigned int, uint64_t, struct doca_dpa_async_ops **o)
{
	return make("doca_dpa_async_ops_create", "async_ops", o);
}
doca_error_t doca_dpa_async_ops_attach(struct doca_dpa_async_ops *o, struct doca_dpa_completion *c)
{
	doca_error_t e = use("doca_dpa_async_ops_attach", o);
	find(c, "doca_dpa_async_ops_attach(completion)");
	return e;
}
doca_error_t doca_dpa_async_ops_start(struct doca_dpa_async_ops *o) { return start("doca_dpa_async_ops_start", o); }
doca_error_t doca_dpa_async_ops_get_dpa_handle(struct doca_dpa_async_ops *o, doca_dpa_dev_async_ops_t *h)
{
	*h = reinterpret_cast<uintptr_t>(o);
	return use("doca_dpa_async_ops_get_dpa_handle", o);
}
doca_error_t doca_dpa_async_ops_stop(struct doca_dpa_async_ops *o) { return stop("doca_dpa_async_ops_stop", o); }
doca_error_t doca_dpa_async_ops_destroy(struct doca_dpa_async_ops *o)
{
	return destroy("doca_dpa_async_ops_destroy", o);
}

doca_error_t doca_dpa_notification_completion_create(struct doca_dpa *, struct doca_dpa_thread *t,
						     struct doca_dpa_notification_completion **n)
{
	doca_error_t e = make("doca_dpa_notification_completion_create", "notification", n);
	find(t, "doca_dpa_notification_completion_create(thread)");
	return e;
}
doca_error_t doca_dpa_notification_completion_start(struct doca_dpa_notification_completion *n)
{
	return start("doca_dpa_notification_completion_start", n);
}
doca_error_t doca_dpa_notification_completion_get_dpa_handle(struct doca_dpa_notification_completion *n,
							     doca_dpa_dev_notification_completion_t *h)
{
	*h = reinterpret_cast<uintptr_t>(n);
	return use("doca_dpa_notification_completion_get_dpa_handle", n);
}
doca_error_t doca_dpa_notification_completion_stop(struct doca_dpa_notification_completion *n)
{
	return stop("doca_dpa_notification_completion_stop", n);
}
doca_error_t doca_dpa_notification_completion_destroy(struct doca_dpa_notification_completion *n)
{
	return destroy("doca_dpa_notification_completion_destroy", n);
}

doca_error_t doca_mmap_create(struct doca_mmap **m) { return make("doca_mmap_create", "mmap", m); }
doca_error_t doca_mmap_set_memrange(struct doca_mmap *m, void *, size_t)
{
	return use("doca_mmap_set_memrange", m);
}
doca_error_t doca_mmap_add_dev(struct doca_mmap *m, struct doca_dev *) { return use("doca_mmap_add_dev", m); }
doca_error_t doca_mmap_set_permissions(struct doca_mmap *m, uint32_t)
{
	return use("doca_mmap_set_permissions", m);
}
doca_error_t doca_mmap_start(struct doca_mmap *m) { return start("doca_mmap_start", m); }
doca_error_t doca_mmap_export_pci(struct doca_mmap *m, const struct doca_dev *, const void **desc,
				  size_t *len)
{
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
	std::vector<uint8_t> d(static_cast<const uint8_t *>(desc), static_cast<const uint8_t *>(desc) + len);
	bool known = false;
	for (const auto &x : exported)
		known = known || x == d;
	if (!known) {
		g.calls.push_back("doca_mmap_create_from_export");
		return static_cast<doca_error_t>(9); /* never exported (or exporter gone) */
	}
	return make("doca_mmap_create_from_export", "mmap", m);
}
doca_error_t doca_mmap_dev_get_dpa_handle(struct doca_mmap *m, struct doca_dev *, doca_dpa_dev_mmap_t *h)
{
	*h = 0x400 | 1;
	return use("doca_mmap_dev_get_dpa_handle", m);
}
doca_error_t doca_mmap_stop(struct doca_mmap *m) { return stop("doca_mmap_stop", m); }
doca_error_t doca_mmap_destroy(struct doca_mmap *m) { return destroy("doca_mmap_destroy", m); }

} /* extern "C" */
