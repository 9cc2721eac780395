// SPDX-License-Identifier: BSD-3-Clause
// The DOCA backend's host-side runtime: creation in order, undo on failure, teardown.
#include "dpumesh/doca/dpa_runtime.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "dpa_doca.h"
#include "internal/check.h"

namespace dpumesh::doca {
namespace {

/* thread_args is the start of the device mapping's argument block */
#define DPUMESH_SAME_OFFSET(f) \
	static_assert(offsetof(thread_args, f) == offsetof(::dpa_dev, f), "thread_args." #f)
DPUMESH_SAME_OFFSET(async_ops);
DPUMESH_SAME_OFFSET(completion);
DPUMESH_SAME_OFFSET(notification);
DPUMESH_SAME_OFFSET(table);
DPUMESH_SAME_OFFSET(dpu_mmap);
DPUMESH_SAME_OFFSET(stop);
#undef DPUMESH_SAME_OFFSET
static_assert(sizeof(::dpa_dev) <= runtime_options{}.args_bytes,
	      "runtime_options::args_bytes holds the mapping's struct dpa_dev");

using internal::check;

} // namespace

status internal::check(doca_error_t e, const std::string &what)
{
	if (e == DOCA_SUCCESS)
		return status::ok();
	const char *d = doca_error_get_descr(e);
	return errorf("%s failed: %s (doca_error %d)", what.c_str(), d ? d : "?",
		      static_cast<int>(e));
}

status dpa_runtime::make_kernel(const kernel_spec &spec, const runtime_options &opt,
				kernel_thread &k)
{
	const std::string n = "DPA kernel " + spec.name + ": ";
	k.name = spec.name;
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_mem_alloc(_dpa, std::max(opt.args_bytes, sizeof(thread_args)), &k.args_ptr),
				      n + "doca_dpa_mem_alloc(args)"));
	_undo.push([d = _dpa, p = k.args_ptr] { doca_dpa_mem_free(d, p); });

	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_thread_create(_dpa, &k.thread), n + "doca_dpa_thread_create"));
	_undo.push([t = k.thread] { doca_dpa_thread_destroy(t); });
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_thread_set_func_arg(k.thread, spec.entry, k.args_ptr),
				      n + "doca_dpa_thread_set_func_arg"));
	if (spec.local_bytes) {
		DPUMESH_RETURN_IF_ERROR(check(doca_dpa_mem_alloc(_dpa, spec.local_bytes, &k.local_ptr),
					      n + "doca_dpa_mem_alloc(local storage)"));
		_undo.push([d = _dpa, p = k.local_ptr] { doca_dpa_mem_free(d, p); });
		std::vector<uint8_t> zeros(spec.local_bytes, 0);
		DPUMESH_RETURN_IF_ERROR(check(doca_dpa_h2d_memcpy(_dpa, k.local_ptr, zeros.data(), zeros.size()),
					      n + "doca_dpa_h2d_memcpy(local storage)"));
		DPUMESH_RETURN_IF_ERROR(check(doca_dpa_thread_set_local_storage(k.thread, k.local_ptr),
					      n + "doca_dpa_thread_set_local_storage"));
	}
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_thread_start(k.thread), n + "doca_dpa_thread_start"));
	/* stopped only after the kernel finished (cooperative stop, docs/doca.md) */
	_undo.push([t = k.thread] { doca_dpa_thread_stop(t); });

	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_completion_create(_dpa, opt.queue_size, &k.comp),
				      n + "doca_dpa_completion_create"));
	_undo.push([c = k.comp] { doca_dpa_completion_destroy(c); });
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_completion_set_thread(k.comp, k.thread),
				      n + "doca_dpa_completion_set_thread"));
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_completion_start(k.comp), n + "doca_dpa_completion_start"));
	_undo.push([c = k.comp] { doca_dpa_completion_stop(c); });
	doca_dpa_dev_completion_t ch = 0;
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_completion_get_dpa_handle(k.comp, &ch),
				      n + "doca_dpa_completion_get_dpa_handle"));

	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_async_ops_create(_dpa, opt.queue_size, 0, &k.ops),
				      n + "doca_dpa_async_ops_create"));
	_undo.push([o = k.ops] { doca_dpa_async_ops_destroy(o); });
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_async_ops_attach(k.ops, k.comp), n + "doca_dpa_async_ops_attach"));
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_async_ops_start(k.ops), n + "doca_dpa_async_ops_start"));
	_undo.push([o = k.ops] { doca_dpa_async_ops_stop(o); });
	doca_dpa_dev_async_ops_t oh = 0;
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_async_ops_get_dpa_handle(k.ops, &oh),
				      n + "doca_dpa_async_ops_get_dpa_handle"));

	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_notification_completion_create(_dpa, k.thread, &k.notify),
				      n + "doca_dpa_notification_completion_create"));
	_undo.push([c = k.notify] { doca_dpa_notification_completion_destroy(c); });
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_notification_completion_start(k.notify),
				      n + "doca_dpa_notification_completion_start"));
	_undo.push([c = k.notify] { doca_dpa_notification_completion_stop(c); });
	doca_dpa_dev_notification_completion_t nh = 0;
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_notification_completion_get_dpa_handle(k.notify, &nh),
				      n + "doca_dpa_notification_completion_get_dpa_handle"));

	k.args = {oh, ch, nh, _table, 0, 0};
	/* the whole block: the mapping's cookie FIFO indices start at zero */
	std::vector<uint8_t> block(std::max(opt.args_bytes, sizeof(thread_args)), 0);
	std::memcpy(block.data(), &k.args, sizeof(k.args));
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_h2d_memcpy(_dpa, k.args_ptr, block.data(), block.size()),
				      n + "doca_dpa_h2d_memcpy(args)"));
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_thread_run(k.thread), n + "doca_dpa_thread_run"));
	return status::ok();
}

result<std::unique_ptr<dpa_runtime>> dpa_runtime::create(doca_dev *dev, doca_dpa_app *app,
							 const std::vector<kernel_spec> &kernels,
							 const runtime_options &opt)
{
	if (kernels.empty())
		return errorf("DOCA DPA runtime: no kernels");
	for (const kernel_spec &k : kernels)
		if (!k.entry)
			return errorf("DOCA DPA runtime: kernel %s has no entry point", k.name.c_str());
	std::unique_ptr<dpa_runtime> rt(new dpa_runtime());
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_create(dev, &rt->_dpa), "doca_dpa_create"));
	rt->_undo.push([d = rt->_dpa] { doca_dpa_destroy(d); });
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_set_app(rt->_dpa, app), "doca_dpa_set_app"));
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_start(rt->_dpa), "doca_dpa_start"));
	rt->_undo.push([d = rt->_dpa] { doca_dpa_stop(d); });

	rt->_notify_rpc = opt.notify_rpc;
	rt->_table_bytes = opt.table_bytes;
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_mem_alloc(rt->_dpa, opt.table_bytes, &rt->_table),
				      "doca_dpa_mem_alloc(pod_lookup_table)"));
	rt->_undo.push([d = rt->_dpa, p = rt->_table] { doca_dpa_mem_free(d, p); });
	std::vector<uint8_t> zeros(opt.table_bytes, 0);
	DPUMESH_RETURN_IF_ERROR(check(doca_dpa_h2d_memcpy(rt->_dpa, rt->_table, zeros.data(), zeros.size()),
				      "doca_dpa_h2d_memcpy(pod_lookup_table)"));

	rt->_threads.resize(kernels.size());
	for (size_t i = 0; i < kernels.size(); i++)
		DPUMESH_RETURN_IF_ERROR(rt->make_kernel(kernels[i], opt, rt->_threads[i]));
	return rt;
}

dpa_runtime::~dpa_runtime() { destroy(); }

status dpa_runtime::write_table_entry(uint32_t pod_id, const void *entry64)
{
	if ((static_cast<size_t>(pod_id) + 1) * 64 > _table_bytes)
		return errorf("pod_lookup_table: pod_id %u outside the table", pod_id);
	return check(doca_dpa_h2d_memcpy(_dpa, _table + pod_id * 64ull, const_cast<void *>(entry64), 64),
		     "doca_dpa_h2d_memcpy(pod_lookup_table entry)");
}

status dpa_runtime::notify(unsigned k)
{
	if (k >= _threads.size())
		return errorf("DPA runtime: no kernel %u to notify", k);
	if (!_notify_rpc)
		return errorf("DPA kernel %s: no notify RPC (runtime_options::notify_rpc)", _threads[k].name.c_str());
	uint64_t ret = 0;
	return check(doca_dpa_rpc(_dpa, _notify_rpc, &ret, static_cast<uint64_t>(_threads[k].args.notification)),
		     "DPA kernel " + _threads[k].name + ": doca_dpa_rpc(notify)");
}

status dpa_runtime::request_stop()
{
	for (kernel_thread &k : _threads) {
		uint32_t one = 1;
		DPUMESH_RETURN_IF_ERROR(check(
			doca_dpa_h2d_memcpy(_dpa, k.args_ptr + offsetof(thread_args, stop), &one, sizeof(one)),
			"DPA kernel " + k.name + ": doca_dpa_h2d_memcpy(stop)"));
	}
	return status::ok();
}

result<std::unique_ptr<device>> device::open(const std::string &pci, bool need_dpa)
{
	std::unique_ptr<device> d(new device());
	d->_pci = pci;
	doca_devinfo **list = nullptr;
	uint32_t nb = 0;
	DPUMESH_RETURN_IF_ERROR(check(doca_devinfo_create_list(&list, &nb), "doca_devinfo_create_list"));
	undo_stack list_guard; /* the list goes on every path from here */
	list_guard.push([list] { doca_devinfo_destroy_list(list); });
	doca_devinfo *found = nullptr;
	for (uint32_t i = 0; i < nb && !found; i++) {
		uint8_t eq = 0;
		DPUMESH_RETURN_IF_ERROR(check(doca_devinfo_is_equal_pci_addr(list[i], pci.c_str(), &eq),
					      "doca_devinfo_is_equal_pci_addr(" + pci + ")"));
		if (eq)
			found = list[i];
	}
	if (!found)
		return errorf("DOCA device %s: no such PCI function (%u DOCA devices found)", pci.c_str(), nb);
	if (need_dpa && doca_dpa_cap_is_supported(found) != DOCA_SUCCESS)
		return errorf("DOCA device %s cannot run a DPA process (doca_dpa_cap_is_supported: "
			      "needs the PF, not an SF or VF)", pci.c_str());
	DPUMESH_RETURN_IF_ERROR(check(doca_dev_open(found, &d->_dev), "doca_dev_open(" + pci + ")"));
	d->_undo.push([dev = d->_dev] { doca_dev_close(dev); });
	return d;
}

result<std::unique_ptr<dpa_backend>> dpa_backend::create(const backend_options &opt,
							 doca_dpa_app *app, doca_dpa_func_t *tx,
							 doca_dpa_func_t *rx, doca_dpa_func_t *notify_rpc)
{
	if (opt.pci.empty())
		return errorf("dpa backend doca: no device (--dpa-device PCI or /dpa/device)");
	if (opt.pairs == 0)
		return errorf("dpa backend doca: no DPA threads");
	std::unique_ptr<dpa_backend> b(new dpa_backend());
	auto dev = device::open(opt.pci);
	if (!dev)
		return dev.error().with_context("dpa backend doca");
	b->_dev = std::move(*dev);
	std::vector<kernel_spec> kernels;
	for (unsigned p = 0; p < opt.pairs; p++) {
		kernels.push_back({"tx" + std::to_string(p), tx, sizeof(dpa_tx_state)});
		kernels.push_back({"rx" + std::to_string(p), rx, sizeof(dpa_rx_state)});
	}
	runtime_options ro = opt.runtime;
	if (notify_rpc)
		ro.notify_rpc = notify_rpc;
	auto rt = dpa_runtime::create(b->_dev->get(), app, kernels, ro);
	if (!rt)
		return rt.error().with_context("dpa backend doca on " + opt.pci);
	b->_rt = std::move(*rt);
	return b;
}

result<std::unique_ptr<pod_export>> pod_export::create(doca_dev *dev, void *addr, size_t len)
{
	std::unique_ptr<pod_export> x(new pod_export());
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_create(&x->_mmap), "doca_mmap_create"));
	x->_undo.push([m = x->_mmap] { doca_mmap_destroy(m); });
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_set_memrange(x->_mmap, addr, len), "doca_mmap_set_memrange"));
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_add_dev(x->_mmap, dev), "doca_mmap_add_dev"));
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_set_permissions(x->_mmap, DOCA_ACCESS_FLAG_PCI_READ_WRITE),
				      "doca_mmap_set_permissions"));
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_start(x->_mmap), "doca_mmap_start"));
	x->_undo.push([m = x->_mmap] { doca_mmap_stop(m); });
	const void *desc = nullptr;
	size_t desc_len = 0;
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_export_pci(x->_mmap, dev, &desc, &desc_len),
				      "doca_mmap_export_pci"));
	if (!desc || desc_len == 0)
		return errorf("doca_mmap_export_pci: empty descriptor");
	x->_desc = std::span<const uint8_t>(static_cast<const uint8_t *>(desc), desc_len);
	return x;
}

result<std::unique_ptr<pod_import>> pod_import::create(doca_dev *dev, std::span<const uint8_t> desc)
{
	if (desc.empty())
		return errorf("importing pod memory: empty descriptor");
	std::unique_ptr<pod_import> m(new pod_import());
	union doca_data user = {};
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_create_from_export(&user, desc.data(), desc.size(), dev, &m->_mmap),
				      "doca_mmap_create_from_export"));
	m->_undo.push([p = m->_mmap] { doca_mmap_destroy(p); });
	DPUMESH_RETURN_IF_ERROR(check(doca_mmap_dev_get_dpa_handle(m->_mmap, dev, &m->_handle),
				      "doca_mmap_dev_get_dpa_handle"));
	if (m->_handle == 0)
		return errorf("doca_mmap_dev_get_dpa_handle: handle 0 (would name no pod)");
	return m;
}

} // namespace dpumesh::doca
