// SPDX-License-Identifier: BSD-3-Clause
// The DOCA backend's one way of turning a doca_error_t into a status naming the call.
#pragma once

#include <string>

#include "dpumesh/common/status.h"
#include "dpumesh/doca/doca_api.h"

namespace dpumesh::doca::internal {

/** ok, or "<what> failed: <DOCA's description> (doca_error N)". */
status check(doca_error_t e, const std::string &what);

} // namespace dpumesh::doca::internal
