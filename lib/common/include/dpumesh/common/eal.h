// SPDX-License-Identifier: BSD-3-Clause
// Entering EAL from an argument list a program made, and leaving it without leaving its
// runtime directory behind.
#pragma once

#include <string>
#include <vector>

namespace dpumesh {

/**
 * dpumesh's log types registered, then rte_eal_init() on @p args (args[0] the program's
 * name), for the tools that make their EAL command line themselves. Returns
 * rte_eal_init()'s result (rte_errno set on failure).
 */
int eal_init(std::vector<std::string> &args);

/**
 * rte_eal_cleanup(), then, in the primary process, what EAL left in its runtime directory
 * (/var/run/dpdk/<file-prefix> as root): DPDK 22.11 keeps the directory after exit, and
 * without --no-shconf also the shared config and the memseg lists' fbarray files (about
 * 6 MB with --no-huge). A unique --file-prefix per run, as the tests and perf/ use, left one
 * per run. The config and fbarray files are removed (a secondary still attached keeps what
 * it mapped; a later one finds no primary, as it should), and the telemetry sockets (the
 * telemetry thread outlives rte_eal_cleanup(): its own unlink runs at exit, too late for the
 * directory), then the directory if empty: a secondary's own files keep it. Its hugepage
 * files too (`<file-prefix>map_<n>` in every hugetlbfs mount): EAL keeps them for a restart
 * with the same prefix, and each held its 2 MiB page until someone removed it (a run of the
 * capture test left 128, and the next found none free). A secondary still attached keeps
 * what it mapped until it exits. Call it last, right before the process exits. Returns
 * rte_eal_cleanup()'s result.
 */
int eal_cleanup() noexcept;

} // namespace dpumesh
