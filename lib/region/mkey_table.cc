// SPDX-License-Identifier: BSD-3-Clause
// mkey_table control path: registration with generations, unregistration, lookup.
#include "dpumesh/region/mkey_table.h"

#include <algorithm>

namespace dpumesh {

mkey_table::mkey_table(uint32_t capacity)
	: _capacity(std::clamp<uint32_t>(capacity, 1, max_capacity)),
	  _entries(new entry[_capacity]), _regions(new std::optional<region>[_capacity]),
	  _generations(new uint32_t[_capacity]())
{
}

mkey_table::~mkey_table() = default;

result<uint32_t> mkey_table::register_region(region &&r)
{
	if (r.data() == nullptr || r.size() == 0)
		return errorf("registering region: empty region");
	for (uint32_t k = 0; k < _capacity; k++) {
		uint32_t index = (_next + k) % _capacity;
		if (_regions[index].has_value() || _generations[index] >= max_generation)
			continue; /* in use, or retired: its generations are used up */
		uint32_t generation = ++_generations[index];
		uint32_t mkey = generation << index_bits | index;
		if (mkey == reserved_mkey) {
			_generations[index] = max_generation; /* retired one generation early */
			continue;
		}
		entry &e = _entries[index];
		e.base = r.remote_base();
		e.length = r.size();
		e.local = static_cast<uint8_t *>(r.data());
		_regions[index].emplace(std::move(r));
		e.mkey.store(mkey, std::memory_order_release);
		_nb_live++;
		/* Round robin: a freed slot is reused as late as possible. */
		_next = (index + 1) % _capacity;
		return mkey;
	}
	return errorf("registering region: mkey table full (%u regions)", _capacity);
}

result<region> mkey_table::unregister_region(uint32_t mkey)
{
	uint32_t index = mkey & index_mask;
	if (find(mkey) == nullptr)
		return errorf("unregistering mkey 0x%08x: not registered (unknown or stale)", mkey);
	entry &e = _entries[index];
	e.mkey.store(0, std::memory_order_release);
	e.base = 0;
	e.length = 0;
	e.local = nullptr;
	region r = std::move(*_regions[index]);
	_regions[index].reset();
	_nb_live--;
	return r;
}

const region *mkey_table::find(uint32_t mkey) const noexcept
{
	uint32_t index = mkey & index_mask;
	if (mkey == 0 || index >= _capacity)
		return nullptr;
	if (_entries[index].mkey.load(std::memory_order_relaxed) != mkey || !_regions[index])
		return nullptr;
	return &*_regions[index];
}

} // namespace dpumesh
