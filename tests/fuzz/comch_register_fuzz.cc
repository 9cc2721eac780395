// SPDX-License-Identifier: BSD-3-Clause
// Fuzz target: the REGISTER a pod sends over DOCA comch (backend/doca pod_msg.h), checked on
// the Arm: never crashes; what it accepts is exactly what make_register would build.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "dpumesh/doca/pod_msg.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	auto v = dpumesh::doca::parse_register(std::span<const uint8_t>(data, size));
	if (!v) {
		if (v.error().message().empty())
			std::abort(); /* a refusal always says why */
		return 0;
	}
	if (v->desc.empty() || v->desc.size() > dpumesh::doca::comch_max_desc ||
	    v->desc.data() != data + sizeof(dpumesh::doca::comch_register_msg) ||
	    v->bell.size() > dpumesh::doca::comch_max_desc || v->bell.data() != v->desc.data() + v->desc.size())
		std::abort();
	const std::vector<uint8_t> again = dpumesh::doca::make_register(v->reg, v->base, v->len, v->desc, v->bell);
	if (again.size() != size || std::memcmp(again.data(), data, size) != 0)
		std::abort(); /* accepted bytes are exactly one well-formed REGISTER */
	return 0;
}
