// SPDX-License-Identifier: BSD-3-Clause
// The service gate: a service name index and the per-service saturation flags (service_gate.h).
#include "dpumesh/port/service_gate.h"

#include <cstring>

#include "dpumesh/common/copy.h"

namespace dpumesh::port {

namespace {
/* A name's key: up to 8 bytes, short_word() of it (every byte of the word is one of the
 * name's and every byte of the name is in it), so that two names of the same length are
 * the same exactly when their keys are; longer names, two overlapping words mixed (a hash: the bytes are compared as well). Read in place, at
 * any alignment (port RX looks names up in a frame), inside the name only. */
inline uint64_t key_of(const char *p, size_t n) noexcept
{
	if (n > 8)
		return load64(p) ^ (load64(p + n - 8) * 0x9e3779b97f4a7c15ull);
	return n ? short_word(p, n) : 0;
}

/* The place a key of length n starts its probe at (the top bits of a multiply) */
inline uint32_t place_of(uint64_t key, size_t n) noexcept
{
	return static_cast<uint32_t>(((key + n) * 0xc2b2ae3d27d4eb4full) >> 32);
}
} // namespace

service_gate::service_gate(std::vector<std::string> names)
	: _names(std::move(names)), _flags(std::make_unique<std::atomic<uint8_t>[]>(_names.size())),
	  _answered(std::make_unique<counter[]>(_names.size()))
{
	size_t cap = 4;
	while (cap < 2 * _names.size())
		cap <<= 1;
	_index.assign(cap, slot{});
	_mask = static_cast<uint32_t>(cap - 1);
	for (uint32_t i = 0; i < _names.size(); i++) {
		const std::string &n = _names[i];
		const uint64_t key = key_of(n.data(), n.size());
		uint32_t h = place_of(key, n.size()) & (cap - 1);
		while (_index[h].id != 0)
			h = (h + 1) & (cap - 1);
		_index[h] = slot{key, static_cast<uint32_t>(n.size()), i + 1};
		_flags[i].store(0, std::memory_order_relaxed);
	}
}

/* A name of up to 8 bytes is found by its key and length alone (its key is its bytes); a
 * longer one is compared as well, in find_long() (96 instructions a lookup of a 4-byte name
 * before: a CRC call, then a byte compare set up for any length; inline, that set-up was
 * hoisted out of the probe loop for short names too) */
uint32_t service_gate::find(std::string_view name) const noexcept
{
	const size_t n = name.size();
	if (n > 8)
		return find_long(name);
	const uint64_t key = key_of(name.data(), n);
	const uint32_t mask = _mask;
	for (uint32_t h = place_of(key, n) & mask;; h = (h + 1) & mask) {
		const slot &s = _index[h];
		/* the name's own place first: a found name's probe tests no id. An empty place
		 * (key 0, length 0, id 0) matches only the empty name, and gives id - 1 =
		 * UINT32_MAX, not found, as the id test would (2 instructions a lookup) */
		if (s.key == key && s.len == n)
			return s.id - 1;
		if (s.id == 0)
			return UINT32_MAX;
	}
}

uint32_t service_gate::find_long(std::string_view name) const noexcept
{
	const size_t n = name.size();
	const uint64_t key = key_of(name.data(), n);
	const uint32_t mask = _mask;
	for (uint32_t h = place_of(key, n) & mask;; h = (h + 1) & mask) {
		const slot &s = _index[h];
		if (s.id == 0)
			return UINT32_MAX;
		if (s.key == key && s.len == n && same_bytes(_names[s.id - 1].data(), name.data(), n))
			return s.id - 1;
	}
}

} // namespace dpumesh::port
