// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: validation of control-channel messages (a pod's REGISTER, UNREGISTER,
// and the node's replies) on arbitrary bytes. Whatever a pod sends, check() answers with ok
// or an error, never a crash, and never accepts a message shorter than its type's size.
#include <cstdlib>
#include <cstring>

#include "dpumesh/podchan/channel.h"
#include "dpumesh/podchan/proto.h"

using namespace dpumesh;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	/* the first byte picks how many fds the datagram claims to carry (none are real) */
	size_t fds = data[0] % 4;
	podchan::message m;
	m.len = std::min(size - 1, sizeof(m.bytes));
	m.truncated = size - 1 > sizeof(m.bytes);
	std::memcpy(m.bytes, data + 1, m.len);
	status st = podchan::check(m, fds);
	if (st.is_ok()) {
		if (m.truncated || m.len < sizeof(dpumesh_ctrl_hdr))
			std::abort();
		if (podchan::expected_fds(m) != fds)
			std::abort();
	} else if (st.message().empty()) {
		std::abort(); /* every refusal says why */
	}
	return 0;
}
