// SPDX-License-Identifier: BSD-3-Clause
// ThreadSanitizer's view of the hand-offs that happen inside DPDK's libraries, which are not
// instrumented: an mbuf a PMD takes on one thread and gives out on another (net_ring,
// memif), and an object a mempool driver takes back on one thread and gives out on another.
// In a build without the sanitizer the call sites' macros (below) expand to nothing and
// annotate_mempools() returns at once.
// docs/memory-model.md, "ThreadSanitizer".
#pragma once

#include <rte_mbuf.h>

#if defined(__SANITIZE_THREAD__)
#define DPUMESH_TSAN_ANNOTATE 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DPUMESH_TSAN_ANNOTATE 1
#endif
#endif

#ifdef DPUMESH_TSAN_ANNOTATE
extern "C" void __tsan_acquire(void *addr);
extern "C" void __tsan_release(void *addr);
#endif

namespace dpumesh::tsan {

/** Before rte_eth_tx_burst(): what this thread wrote into each frame (every segment) is
 *  ordered before whatever thread the PMD hands it to, which calls pmd_took() on it. Frames
 *  the PMD does not take stay the caller's; releasing them too is harmless. */
inline void pmd_gives(rte_mbuf *const *frames, unsigned n) noexcept
{
#ifdef DPUMESH_TSAN_ANNOTATE
	for (unsigned i = 0; i < n; i++)
		for (rte_mbuf *s = frames[i]; s != nullptr;) {
			rte_mbuf *next = s->next; /* read before the release: ours until then */
			__tsan_release(s);
			s = next;
		}
#else
	(void)frames;
	(void)n;
#endif
}

/** After rte_eth_rx_burst(): the frames it gave are ordered after their last pmd_gives()
 *  (the thread that sent them through net_ring or memif) and their last trip through a
 *  mempool (the thread that freed them). */
inline void pmd_took(rte_mbuf *const *frames, unsigned n) noexcept
{
#ifdef DPUMESH_TSAN_ANNOTATE
	for (unsigned i = 0; i < n; i++)
		for (rte_mbuf *s = frames[i]; s != nullptr; s = s->next)
			__tsan_acquire(s);
#else
	(void)frames;
	(void)n;
#endif
}

/**
 * Right after rte_eal_init() (dpumesh::eal_init() calls it, the tests' EAL too): every registered
 * mempool driver's enqueue releases each object it takes and its dequeue acquires each
 * object it gives, so that an object freed on one thread and allocated on another (through
 * a driver's ring or stack, which the sanitizer cannot see) is ordered. It patches the
 * process's own copy of DPDK's ops table, once; without the sanitizer it does nothing.
 */
void annotate_mempools() noexcept;

} // namespace dpumesh::tsan

/* The call sites use these: without the sanitizer they are nothing at all, where even an
 * empty inline call moved GCC's register allocation in rx_poll (8600 -> 8603 instructions in
 * rx.cc.o, Release). */
#ifdef DPUMESH_TSAN_ANNOTATE
#define DPUMESH_TSAN_PMD_GIVES(frames, n) ::dpumesh::tsan::pmd_gives((frames), (n))
#define DPUMESH_TSAN_PMD_TOOK(frames, n) ::dpumesh::tsan::pmd_took((frames), (n))
#else
#define DPUMESH_TSAN_PMD_GIVES(frames, n) ((void)0)
#define DPUMESH_TSAN_PMD_TOOK(frames, n) ((void)0)
#endif
