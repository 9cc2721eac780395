// SPDX-License-Identifier: BSD-3-Clause
// libdpumesh internals: the send path with lengths (string views, not NUL-terminated
// strings), used by the coroutine layer; not installed.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "dpumesh/host/dpumesh.h"

namespace dpumesh::host {
struct field;
namespace detail {

/** As dpumesh_send_request, from views. */
int send_request(dpumesh_t *h, uint32_t worker, std::string_view service, std::string_view method,
		 std::string_view path, std::span<const field> fields, const void *body,
		 uint32_t body_len, uint32_t req_id, uint32_t step_id, uint32_t deadline_ms);
/** As dpumesh_send_response, from views. */
int send_response(dpumesh_t *h, uint32_t worker, const dpumesh_msg *to, uint16_t status,
		  std::span<const field> fields, const void *body, uint32_t body_len);

} // namespace detail
} // namespace dpumesh::host
