// SPDX-License-Identifier: BSD-3-Clause
// The doorbells on DOCA: DPA -> pod (the pod's sync event, the Arm's import of it) and pod ->
// DPA (a pair's TX doorbell on the Arm, the pods' imports of it).
#include "dpumesh/doca/pod_doorbell.h"

#include "dpumesh/doca/pod_msg.h"
#include "internal/check.h"

namespace dpumesh::doca {
namespace {

using internal::check;

/* wait tasks in flight: one, and one being put back from its own completion */
constexpr uint32_t wait_tasks = 2;
/* the whole 64-bit value (masks are 0, 1, 2, 4 or 8 bytes of ones) */
constexpr uint64_t all_bits = ~uint64_t{0};

/* Both doorbells' events: created (destroyed by `undo`), published from the remote PCI side
 * (the DPA or the pods), subscribed by this CPU (dev): the pair the header documents for
 * export_to_remote_pci. Errors named with `what` before the call. */
status published_remotely(doca_dev *dev, doca_sync_event **e, undo_stack &undo, const std::string &what)
{
	DPUMESH_RETURN_IF_ERROR(check(doca_sync_event_create(e), what + "doca_sync_event_create"));
	undo.push([x = *e] { doca_sync_event_destroy(x); });
	DPUMESH_RETURN_IF_ERROR(check(doca_sync_event_add_publisher_location_remote_pci(*e),
				      what + "doca_sync_event_add_publisher_location_remote_pci"));
	return check(doca_sync_event_add_subscriber_location_cpu(*e, dev),
		     what + "doca_sync_event_add_subscriber_location_cpu");
}

/* The export the other side imports (`desc`: the event's, valid while it lives); errors
 * named with `what` before the call. */
status exported(doca_sync_event *e, doca_dev *dev, std::span<const uint8_t> *desc,
		const std::string &what)
{
	const uint8_t *d = nullptr;
	size_t len = 0;
	DPUMESH_RETURN_IF_ERROR(check(doca_sync_event_export_to_remote_pci(e, dev, &d, &len),
				      what + "doca_sync_event_export_to_remote_pci"));
	if (!d || len == 0 || len > comch_max_desc)
		return errorf("%sdoca_sync_event_export_to_remote_pci: an export of %zu bytes",
			      what.c_str(), len);
	*desc = std::span<const uint8_t>(d, len);
	return status::ok();
}

/* The other side's handle on an event from its export (destroyed by `undo`). */
status imported(doca_dev *dev, std::span<const uint8_t> desc, doca_sync_event **e, undo_stack &undo,
		const std::string &what)
{
	if (desc.empty())
		return errorf("%sempty export", what.c_str());
	DPUMESH_RETURN_IF_ERROR(check(doca_sync_event_create_from_export(dev, desc.data(), desc.size(), e),
				      what + "doca_sync_event_create_from_export"));
	undo.push([x = *e] { doca_sync_event_destroy(x); });
	return status::ok();
}

} // namespace

result<std::unique_ptr<pod_doorbell>> pod_doorbell::create(doca_dev *dev, doca_pe *pe)
{
	std::unique_ptr<pod_doorbell> b(new pod_doorbell());
	b->_pe = pe;
	DPUMESH_RETURN_IF_ERROR(published_remotely(dev, &b->_event, b->_undo, ""));
	DPUMESH_RETURN_IF_ERROR(check(doca_sync_event_task_wait_neq_set_conf(b->_event, &on_ring, &on_flush,
									     wait_tasks),
				      "doca_sync_event_task_wait_neq_set_conf"));
	doca_ctx *ctx = doca_sync_event_as_ctx(b->_event);
	if (ctx == nullptr)
		return errorf("doca_sync_event_as_ctx: no context");
	union doca_data self = {};
	self.ptr = b.get();
	DPUMESH_RETURN_IF_ERROR(check(doca_ctx_set_user_data(ctx, self), "pod doorbell: doca_ctx_set_user_data"));
	DPUMESH_RETURN_IF_ERROR(check(doca_pe_connect_ctx(pe, ctx), "pod doorbell: doca_pe_connect_ctx"));
	DPUMESH_RETURN_IF_ERROR(check(doca_ctx_start(ctx), "pod doorbell: doca_ctx_start"));
	b->_undo.push([p = b.get(), ctx] {
		p->_stopping = true;
		(void)doca_ctx_stop(ctx);
		/* the wait in flight is flushed (on_flush) through the progress engine (bounded) */
		for (int i = 0; i < 1000; i++) {
			enum doca_ctx_states st = DOCA_CTX_STATE_IDLE;
			if (doca_ctx_get_state(ctx, &st) != DOCA_SUCCESS || st == DOCA_CTX_STATE_IDLE)
				break;
			(void)doca_pe_progress(p->_pe);
		}
	});
	DPUMESH_RETURN_IF_ERROR(exported(b->_event, dev, &b->_desc, ""));
	DPUMESH_RETURN_IF_ERROR(b->wait());
	return b;
}

/* A ring between the get and the submit leaves the value unequal to the one waited on: the
 * task completes at once, so no ring is lost. */
status pod_doorbell::wait()
{
	uint64_t v = 0;
	DPUMESH_RETURN_IF_ERROR(check(doca_sync_event_get(_event, &v), "doca_sync_event_get"));
	doca_sync_event_task_wait_neq *t = nullptr;
	union doca_data none = {};
	DPUMESH_RETURN_IF_ERROR(check(doca_sync_event_task_wait_neq_alloc_init(_event, v, all_bits, none, &t),
				      "doca_sync_event_task_wait_neq_alloc_init"));
	doca_task *task = doca_sync_event_task_wait_neq_as_doca_task(t);
	if (status st = check(doca_task_submit(task), "pod doorbell: doca_task_submit"); !st) {
		doca_task_free(task);
		return st;
	}
	return status::ok();
}

void pod_doorbell::on_ring(doca_sync_event_task_wait_neq *task, union doca_data, union doca_data ctx_user)
{
	auto *b = static_cast<pod_doorbell *>(ctx_user.ptr);
	doca_task_free(doca_sync_event_task_wait_neq_as_doca_task(task));
	b->_rings++;
	if (!b->_stopping && !b->wait())
		b->_errors++;
}

void pod_doorbell::on_flush(doca_sync_event_task_wait_neq *task, union doca_data, union doca_data ctx_user)
{
	auto *b = static_cast<pod_doorbell *>(ctx_user.ptr);
	doca_task_free(doca_sync_event_task_wait_neq_as_doca_task(task));
	if (!b->_stopping)
		b->_errors++;
}

result<std::unique_ptr<doorbell_import>> doorbell_import::create(doca_dev *dev, doca_dpa *dpa,
								 std::span<const uint8_t> desc)
{
	std::unique_ptr<doorbell_import> d(new doorbell_import());
	DPUMESH_RETURN_IF_ERROR(imported(dev, desc, &d->_event, d->_undo, ""));
	DPUMESH_RETURN_IF_ERROR(check(doca_sync_event_get_dpa_handle(d->_event, dpa, &d->_handle),
				      "doca_sync_event_get_dpa_handle"));
	if (d->_handle == 0)
		return errorf("doca_sync_event_get_dpa_handle: handle 0 (would ring no pod)");
	return d;
}

result<std::unique_ptr<tx_bell>> tx_bell::create(doca_dev *dev)
{
	std::unique_ptr<tx_bell> b(new tx_bell());
	DPUMESH_RETURN_IF_ERROR(published_remotely(dev, &b->_event, b->_undo, "TX doorbell: "));
	DPUMESH_RETURN_IF_ERROR(check(doca_sync_event_start(b->_event), "TX doorbell: doca_sync_event_start"));
	b->_undo.push([e = b->_event] { doca_sync_event_stop(e); });
	DPUMESH_RETURN_IF_ERROR(exported(b->_event, dev, &b->_desc, "TX doorbell: "));
	return b;
}

result<std::unique_ptr<tx_bell_ring>> tx_bell_ring::create(doca_dev *dev, std::span<const uint8_t> desc)
{
	std::unique_ptr<tx_bell_ring> r(new tx_bell_ring());
	DPUMESH_RETURN_IF_ERROR(imported(dev, desc, &r->_event, r->_undo, "the TX doorbell: "));
	return r;
}

} // namespace dpumesh::doca
