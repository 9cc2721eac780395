// SPDX-License-Identifier: BSD-3-Clause
// EAL's memory on huge pages without hugetlbfs; leaving EAL without leaving its runtime
// directory behind.
#pragma once

#include <cstddef>

namespace dpumesh {

/**
 * With --no-huge, EAL's memory is an anonymous mapping of 4 KiB pages, each mbuf on a page
 * or two of its own: the data path's walks over cold mbufs (a 504's fresh frame, a relayed
 * frame) were page walks as much as cache misses (the forward profile's `prefetch_next`,
 * 84% on one `prefetcht0`). Call right after rte_eal_init(), before any pool is made (EAL
 * does not touch that memory; a pool's creation does): the main process's memseg lists of
 * pages under 2 MiB are madvise(MADV_HUGEPAGE)d, so that the kernel backs them with
 * transparent huge pages where it can. A hint: nothing changes without THP, with hugetlbfs
 * (its pages are huge already), in a secondary process, or for memory already touched.
 * Addresses do not change; with --no-huge EAL has no physical addresses to keep. Returns
 * the bytes advised.
 */
size_t eal_advise_huge_pages() noexcept;

/**
 * rte_eal_cleanup(), then, in the primary process, what EAL left in its runtime directory
 * (/var/run/dpdk/<file-prefix> as root): DPDK 22.11 keeps the directory after exit, and
 * without --no-shconf also the shared config and the memseg lists' fbarray files (about
 * 6 MB with --no-huge). A unique --file-prefix per run, as the tests and perf/ use, left one
 * per run. The config and fbarray files are removed (a secondary still attached keeps what
 * it mapped; a later one finds no primary, as it should), and the telemetry sockets (the
 * telemetry thread outlives rte_eal_cleanup(): its own unlink runs at exit, too late for the
 * directory), then the directory if empty: a secondary's own files keep it. Call it last,
 * right before the process exits. Returns rte_eal_cleanup()'s result.
 */
int eal_cleanup() noexcept;

} // namespace dpumesh
