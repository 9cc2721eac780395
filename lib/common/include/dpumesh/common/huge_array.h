// SPDX-License-Identifier: BSD-3-Clause
// Large arrays of the data path on transparent huge pages, where the kernel offers them.
//
// The pending table's slots and contexts are ~14 MiB walked at random by the deadline sweep:
// on 4 KiB pages each cold slot, context and mbuf was a page walk of its own (the sweep's
// prefetches stalled on them: `request_table::expire` 27% on one `prefetcht0`). An array of
// at least one huge page is mapped aligned to a huge page and madvise(MADV_HUGEPAGE)d before
// it is first touched; a kernel without THP, or with it off, gives 4 KiB pages as before (the
// advice is a hint: nothing fails). Smaller arrays come from the heap. The huge page's size
// is the kernel's (hpage_pmd_size): 2 MiB on x86-64 and on an arm64 kernel of 4 KiB pages,
// 512 MiB on one of 64 KiB pages, where these arrays stay on the heap (64 KiB pages already
// reach 16 times as far as 4 KiB ones) rather than each round up to half a gigabyte.
//
//   huge_array<slot> slots = make_huge_array<slot>(n);    // value-initialised, as new T[n]()
//   slots[i].next = ...;
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

#include <sys/mman.h>

namespace dpumesh {

/** The size of a transparent huge page (PMD) as text, e.g. "2097152\n", or 0 when it is
 *  not a power of two of at least 64 KiB (a value this code would not align to). */
inline size_t parse_huge_page_size(const char *text) noexcept
{
	char *end = nullptr;
	const unsigned long long v = std::strtoull(text, &end, 10);
	if (end == text || (*end != '\0' && *end != '\n'))
		return 0;
	if (v < (size_t(64) << 10) || (v & (v - 1)) != 0 || v > (size_t(1) << 40))
		return 0;
	return static_cast<size_t>(v);
}

/** The kernel's transparent huge page size, read once (2 MiB where it does not say). */
inline size_t huge_page_size() noexcept
{
	static const size_t size = [] {
		size_t v = 0;
		if (FILE *f = std::fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "re")) {
			char buf[32] = {};
			if (std::fgets(buf, sizeof(buf), f))
				v = parse_huge_page_size(buf);
			std::fclose(f);
		}
		return v ? v : size_t(2) << 20;
	}();
	return size;
}

/** Frees what make_huge_array() made: the mapping, or the heap block. */
struct huge_array_free {
	size_t mapped = 0; /**< bytes mapped (0: from the heap) */
	void operator()(void *p) const noexcept
	{
		if (!p)
			return;
		if (mapped)
			munmap(p, mapped);
		else
			std::free(p);
	}
};

template <typename T> class huge_array {
public:
	huge_array() = default;
	huge_array(T *p, huge_array_free f) noexcept : _p(p, f) {}
	T &operator[](size_t i) const noexcept { return _p.get()[i]; }
	T *get() const noexcept { return _p.get(); }
	/** Whether it was mapped for huge pages (at least one huge page's size). */
	bool mapped() const noexcept { return _p.get_deleter().mapped != 0; }

private:
	std::unique_ptr<T, huge_array_free> _p;
};

/**
 * n value-initialised T (as `new T[n]()`; `touch` false: left as they are, untouched, as
 * `new T[n]` of a trivial T, so that pages never used are never faulted in). Throws
 * std::bad_alloc when there is no memory, as new does (control path only).
 */
template <typename T> huge_array<T> make_huge_array(size_t n, bool touch = true)
{
	static_assert(std::is_trivially_destructible_v<T>, "freed without destructors");
	static_assert(alignof(T) <= 64, "aligned for the heap's 64 bytes");
	const size_t bytes = n * sizeof(T);
	void *p = nullptr;
	size_t mapped = 0;
	const size_t hp = huge_page_size();
	if (bytes >= hp) {
		/* huge-page aligned: a huge page backs an aligned stretch of a mapping only */
		const size_t len = (bytes + hp - 1) & ~(hp - 1);
		void *raw = mmap(nullptr, len + hp, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw != MAP_FAILED) {
			const uintptr_t a = reinterpret_cast<uintptr_t>(raw);
			const uintptr_t at = (a + hp - 1) & ~(hp - 1);
			if (at > a)
				munmap(raw, at - a);
			if (const size_t tail = a + len + hp - (at + len))
				munmap(reinterpret_cast<void *>(at + len), tail);
			p = reinterpret_cast<void *>(at);
			mapped = len;
			(void)madvise(p, len, MADV_HUGEPAGE); /* a hint: 4 KiB pages without THP */
		}
	}
	if (!p && posix_memalign(&p, 64, bytes ? bytes : 1) != 0)
		throw std::bad_alloc();
	T *t = static_cast<T *>(p);
	if (touch)
		std::uninitialized_value_construct_n(t, n);
	else
		std::uninitialized_default_construct_n(t, n);
	return huge_array<T>(t, huge_array_free{mapped});
}

} // namespace dpumesh
