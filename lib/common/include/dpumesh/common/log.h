// SPDX-License-Identifier: BSD-3-Clause
// dpumesh's rte_log types. Registered once at start-up; levels are set with EAL's
// --log-level=dpumesh.<type>:<level> (e.g. --log-level=dpumesh.config:debug) or the console.
#pragma once

#include <rte_log.h>

namespace dpumesh {

/** Log types, registered as "dpumesh.<name>". */
#define DPUMESH_FOREACH_LOGTYPE(_)                                                       \
	_(main)                                                                            \
	_(config)                                                                          \
	_(port)                                                                            \
	_(lcore)                                                                           \
	_(region)                                                                          \
	_(podchan)                                                                         \
	_(dpa)                                                                             \
	_(dma)                                                                             \
	_(pending)                                                                         \
	_(wire)                                                                            \
	_(policy)                                                                          \
	_(console)

struct log_types {
#define DPUMESH_LOGTYPE_FIELD(n) int n = RTE_LOGTYPE_USER1;
	DPUMESH_FOREACH_LOGTYPE(DPUMESH_LOGTYPE_FIELD)
#undef DPUMESH_LOGTYPE_FIELD
};
extern log_types logtype;

/** Registers every dpumesh log type (idempotent; safe before rte_eal_init). */
void log_register_types() noexcept;

} // namespace dpumesh

#define DPUMESH_LOG(level, type, fmt, ...)                                               \
	rte_log(RTE_LOG_##level, ::dpumesh::logtype.type, "dpumesh.%s: " fmt "\n", #type,  \
		##__VA_ARGS__)
