// SPDX-License-Identifier: BSD-3-Clause
// The DPU's table of imported regions: mkeys, and bounds-checked address translation.
//
// Control path registers a region and gets a 32-bit mkey; the data path (DPA kernels,
// lcores) translates (mkey, exporter address, length) into a local pointer, which succeeds
// only when the whole range lies inside the region. Emulates the mkey a BlueField-3 assigns
// to a doca_mmap created from an export. See docs/memory-model.md.
//
//   dpumesh::mkey_table table;
//   DPUMESH_ASSIGN_OR_RETURN(uint32_t mkey, table.register_region(std::move(r)));
//   ...
//   void *p = table.translate(mkey, desc.body_buf_addr, desc.body_len);  // hot path
//   if (!p) { count BAD_ADDRESS; drop; }
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "dpumesh/region/region.h"
#include "dpumesh/common/status.h"

namespace dpumesh {

/**
 * mkey layout: bits 0-9 slot index, bits 10-31 generation (1 .. 2^22-1). Generation 0 is
 * never issued, so mkey 0 never resolves (a zeroed pod_registry_entry names nothing).
 * A slot's generation grows on every registration; a slot whose generation space is used
 * up is retired, never reused, so a stale mkey can never name a later region.
 *
 * Lifetime: translate() on an unregistered or stale mkey returns nullptr, but a pointer
 * obtained before unregister_region() stays dangerous until the mapping is gone. The
 * caller guarantees that no data-path thread is inside translate() or still using a
 * pointer from it for that mkey when it unregisters (registration protocol: deactivate
 * the pod in pod_lookup_table, then quiesce the lcores/DPA threads, then unregister).
 *
 * Not thread-safe for control operations (one control thread); translate() may run on any
 * number of threads concurrently with register/unregister of other slots.
 */
class mkey_table {
public:
	static constexpr uint32_t index_bits = 10;
	static constexpr uint32_t max_capacity = 1u << index_bits;
	static constexpr uint32_t index_mask = max_capacity - 1;
	static constexpr uint32_t max_generation = (1u << (32 - index_bits)) - 1;
	/** Never issued (slot 1023 retires before reaching it): the DPA emulator's handle of
	 *  the DPU's own memory mmap, so it can never alias a pod's mkey. */
	static constexpr uint32_t reserved_mkey = 0xffffffffu;

	/** @param capacity number of slots, clamped to 1 .. max_capacity (fixed for life) */
	explicit mkey_table(uint32_t capacity = max_capacity);
	~mkey_table();
	mkey_table(const mkey_table &) = delete;
	mkey_table &operator=(const mkey_table &) = delete;

	/**
	 * Takes ownership of a region and returns its mkey.
	 *
	 * @return the mkey; an error if the table is full or the region is empty (r is then
	 *         left untouched, still owned by the caller)
	 */
	result<uint32_t> register_region(region &&r);

	/**
	 * Removes an mkey: translate() fails for it from now on; the region is handed back
	 * (to undo DPDK registration, then destroy it, which unmaps it).
	 *
	 * @return the region, or an error if mkey is not registered (unknown or stale)
	 */
	result<region> unregister_region(uint32_t mkey);

	/** Control path: the region behind a live mkey, or nullptr. */
	const region *find(uint32_t mkey) const noexcept;

	uint32_t capacity() const noexcept { return _capacity; }
	/** Number of live mkeys. */
	uint32_t size() const noexcept { return _nb_live; }

	/**
	 * Hot path: the local address of [addr, addr + len) of the region named by mkey, where
	 * addr is an address in the exporter's space (as in descriptors). Succeeds only if
	 * mkey is live and the range lies entirely inside [remote_base, remote_base + size).
	 * len 0 is refused: an empty buffer needs no translation, and refusing it means no
	 * (addr, 0) can yield a pointer at or past the end. No overflow: base + size may be
	 * 2^64 and addr + len may wrap; neither sum is computed.
	 *
	 * @return the local pointer, or nullptr (unknown/stale mkey, out of bounds, len 0)
	 */
	void *translate(uint32_t mkey, uint64_t addr, uint64_t len) const noexcept
	{
		const uint32_t index = mkey & index_mask;
		if (index >= _capacity || mkey == 0)
			return nullptr;
		const entry &e = _entries[index];
		if (e.mkey.load(std::memory_order_acquire) != mkey)
			return nullptr;
		if (len == 0 || addr < e.base)
			return nullptr;
		const uint64_t off = addr - e.base;
		if (off >= e.length || len > e.length - off)
			return nullptr;
		return e.local + off;
	}

private:
	/* What the data path reads; 32 bytes, two per cache line. */
	struct alignas(32) entry {
		std::atomic<uint32_t> mkey{0}; /* 0 while free; release-stored last on register */
		uint64_t base = 0;             /* exporter's address of byte 0 */
		uint64_t length = 0;
		uint8_t *local = nullptr;
	};

	uint32_t _capacity;
	uint32_t _nb_live = 0;
	uint32_t _next = 0; /* where the search for a free slot starts (round robin) */
	std::unique_ptr<entry[]> _entries;
	std::unique_ptr<std::optional<region>[]> _regions;
	std::unique_ptr<uint32_t[]> _generations; /* last generation issued per slot */
};

} // namespace dpumesh
