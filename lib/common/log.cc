// SPDX-License-Identifier: BSD-3-Clause
// Registration of dpumesh's rte_log types.
#include "dpumesh/common/log.h"

namespace dpumesh {

log_types logtype;

void log_register_types() noexcept
{
#define DPUMESH_LOGTYPE_REGISTER(n)                                                      \
	{                                                                                \
		int id = rte_log_register_type_and_pick_level("dpumesh." #n, RTE_LOG_INFO); \
		if (id >= 0)                                                             \
			logtype.n = id;                                                  \
	}
	DPUMESH_FOREACH_LOGTYPE(DPUMESH_LOGTYPE_REGISTER)
#undef DPUMESH_LOGTYPE_REGISTER
}

} // namespace dpumesh
