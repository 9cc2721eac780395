// SPDX-License-Identifier: BSD-3-Clause
// The service gate: a service name index and the per-service saturation flags (service_gate.h).
#include "dpumesh/port/service_gate.h"

#include <cstring>

#include <rte_hash_crc.h>

#include "dpumesh/common/copy.h"

namespace dpumesh::port {

namespace {
/* CRC32-C of the name, four bytes at a time through memcpy: port RX hashes names in place
 * in a frame, at any alignment (rte_hash_crc loads them as uint32_t, which UBSan refuses) */
uint32_t name_hash(std::string_view n) noexcept
{
	const char *p = n.data();
	uint32_t h = 0x5eed;
	size_t i = 0;
	for (; i + 4 <= n.size(); i += 4) {
		uint32_t w;
		std::memcpy(&w, p + i, 4);
		h = rte_hash_crc_4byte(w, h);
	}
	for (; i < n.size(); i++)
		h = rte_hash_crc_1byte(static_cast<uint8_t>(p[i]), h);
	return h;
}

/* Whether two names are the same bytes, compared inline (libc's memcmp, called for a
 * four-byte name, was 1.4% of the forward path's samples) */
bool same_name(const std::string &known, std::string_view n) noexcept
{
	return known.size() == n.size() && same_bytes(known.data(), n.data(), n.size());
}
} // namespace

service_gate::service_gate(std::vector<std::string> names)
	: _names(std::move(names)), _flags(std::make_unique<std::atomic<uint8_t>[]>(_names.size())),
	  _answered(std::make_unique<counter[]>(_names.size()))
{
	size_t cap = 4;
	while (cap < 2 * _names.size())
		cap <<= 1;
	_index.assign(cap, 0);
	for (uint32_t i = 0; i < _names.size(); i++) {
		uint32_t h = name_hash(_names[i]) & (cap - 1);
		while (_index[h] != 0)
			h = (h + 1) & (cap - 1);
		_index[h] = i + 1;
		_flags[i].store(0, std::memory_order_relaxed);
	}
}

uint32_t service_gate::find(std::string_view name) const noexcept
{
	const uint32_t mask = static_cast<uint32_t>(_index.size() - 1);
	for (uint32_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
		const uint32_t v = _index[h];
		if (v == 0)
			return UINT32_MAX;
		if (same_name(_names[v - 1], name))
			return v - 1;
	}
}

} // namespace dpumesh::port
