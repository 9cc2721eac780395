// SPDX-License-Identifier: BSD-3-Clause
// The mempool drivers' enqueue and dequeue, wrapped for ThreadSanitizer (tsan.h).
#include "dpumesh/common/tsan.h"

#include <rte_mempool.h>

namespace dpumesh::tsan {

#ifdef DPUMESH_TSAN_ANNOTATE

namespace {

/* the drivers' own calls, by ops index (the index a pool keeps in ops_index) */
rte_mempool_enqueue_t driver_enqueue[RTE_MEMPOOL_MAX_OPS_IDX];
rte_mempool_dequeue_t driver_dequeue[RTE_MEMPOOL_MAX_OPS_IDX];

int enqueue(rte_mempool *mp, void *const *objs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		__tsan_release(objs[i]);
	return driver_enqueue[mp->ops_index](mp, objs, n);
}

int dequeue(rte_mempool *mp, void **objs, unsigned n)
{
	const int rc = driver_dequeue[mp->ops_index](mp, objs, n);
	if (rc == 0)
		for (unsigned i = 0; i < n; i++)
			__tsan_acquire(objs[i]);
	return rc;
}

} // namespace

void annotate_mempools() noexcept
{
	/* EAL loads the mempool drivers (plugins) in rte_eal_init(), so this runs after it;
	 * nothing else writes the table then */
	struct rte_mempool_ops_table &t = rte_mempool_ops_table;
	for (uint32_t i = 0; i < t.num_ops && i < RTE_MEMPOOL_MAX_OPS_IDX; i++) {
		rte_mempool_ops &o = t.ops[i];
		if (o.enqueue != nullptr && o.enqueue != enqueue) {
			driver_enqueue[i] = o.enqueue;
			o.enqueue = enqueue;
		}
		if (o.dequeue != nullptr && o.dequeue != dequeue) {
			driver_dequeue[i] = o.dequeue;
			o.dequeue = dequeue;
		}
	}
}

#else

void annotate_mempools() noexcept {}

#endif

} // namespace dpumesh::tsan
