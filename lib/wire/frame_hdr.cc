// SPDX-License-Identifier: BSD-3-Clause
// The fragment header's drop reasons' names (its encoding and checks are inline).
#include "dpumesh/wire/frame_hdr.h"

namespace dpumesh::wire {

const char *wire_drop_name(wire_drop d) noexcept
{
	switch (d) {
#define DPUMESH_WIRE_DROP_NAME(n, h)                                                     \
	case wire_drop::n: return #n;
		DPUMESH_FOREACH_WIRE_DROP(DPUMESH_WIRE_DROP_NAME)
#undef DPUMESH_WIRE_DROP_NAME
	case wire_drop::count: break;
	}
	return "?";
}

const char *wire_drop_help(wire_drop d) noexcept
{
	switch (d) {
#define DPUMESH_WIRE_DROP_HELP(n, h)                                                     \
	case wire_drop::n: return h;
		DPUMESH_FOREACH_WIRE_DROP(DPUMESH_WIRE_DROP_HELP)
#undef DPUMESH_WIRE_DROP_HELP
	case wire_drop::count: break;
	}
	return "?";
}

} // namespace dpumesh::wire
