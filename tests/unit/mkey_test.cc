// SPDX-License-Identifier: BSD-3-Clause
// mkey_table: translation bounds (overflow-safe), generations, stale keys, capacity.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "dpumesh/region/mkey_table.h"
#include "dpumesh/region/region.h"

using namespace dpumesh;

namespace {

constexpr uint64_t page = 4096;

/*
 * A region as if exported by a process whose mapping starts at `base`: a real memfd,
 * exported with a hand-written header over a socketpair and imported.
 */
region region_at(uint64_t base, size_t len)
{
	auto r = region::create("mkey-test", len, /*try_hugepages=*/false);
	EXPECT_TRUE(r) << r.error().message();
	int sv[2];
	EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	region_export_header h = {};
	h.magic = region_export_magic;
	h.version = region_export_version;
	h.length = r->size();
	h.base_va = base;
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
	iovec iov = {&h, sizeof(h)};
	msghdr msg = {};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control;
	msg.msg_controllen = sizeof(control);
	cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	int fd = r->fd();
	std::memcpy(CMSG_DATA(c), &fd, sizeof(fd));
	EXPECT_EQ(sendmsg(sv[0], &msg, 0), static_cast<ssize_t>(sizeof(h)));
	auto imported = region::import_from(sv[1]);
	close(sv[0]);
	close(sv[1]);
	EXPECT_TRUE(imported) << imported.error().message();
	EXPECT_EQ(imported->remote_base(), base);
	return std::move(imported).value();
}

uint8_t *local(const mkey_table &t, uint32_t mkey)
{
	return static_cast<uint8_t *>(t.find(mkey)->data());
}

} // namespace

TEST(MkeyTable, TranslateInsideAndOutside)
{
	mkey_table t;
	const uint64_t base = 0x7f00'0000'0000ull;
	auto mkey = t.register_region(region_at(base, 4 * page));
	ASSERT_TRUE(mkey) << mkey.error().message();
	uint8_t *l = local(t, *mkey);
	const uint64_t len = 4 * page;

	EXPECT_EQ(t.translate(*mkey, base, 1), l);
	EXPECT_EQ(t.translate(*mkey, base, len), l) << "the whole region";
	EXPECT_EQ(t.translate(*mkey, base + 100, 200), l + 100);
	EXPECT_EQ(t.translate(*mkey, base + len - 1, 1), l + len - 1) << "last byte";
	EXPECT_EQ(t.translate(*mkey, base + len - 64, 64), l + len - 64) << "ends exactly at end";

	EXPECT_EQ(t.translate(*mkey, base + len - 64, 65), nullptr) << "one byte past the end";
	EXPECT_EQ(t.translate(*mkey, base + len, 1), nullptr) << "starts at the end";
	EXPECT_EQ(t.translate(*mkey, base - 1, 1), nullptr) << "before the start";
	EXPECT_EQ(t.translate(*mkey, base - 1, 2), nullptr) << "straddles the start";
	EXPECT_EQ(t.translate(*mkey, base, len + 1), nullptr);
	EXPECT_EQ(t.translate(*mkey, 0, 1), nullptr);

	/* The translated pointer reaches the mapping. */
	std::memcpy(t.translate(*mkey, base + 10, 5), "hello", 5);
	EXPECT_EQ(std::memcmp(l + 10, "hello", 5), 0);
}

TEST(MkeyTable, ZeroLengthIsRefused)
{
	mkey_table t;
	const uint64_t base = 0x1000'0000ull;
	auto mkey = t.register_region(region_at(base, page));
	ASSERT_TRUE(mkey);
	EXPECT_EQ(t.translate(*mkey, base, 0), nullptr);
	EXPECT_EQ(t.translate(*mkey, base + 10, 0), nullptr);
	EXPECT_EQ(t.translate(*mkey, base + page, 0), nullptr);
}

TEST(MkeyTable, OverflowSafeNearTopOfAddressSpace)
{
	mkey_table t;
	/* base + length == 2^64 exactly: the end wraps to 0 if anyone computes it. */
	const uint64_t base = UINT64_MAX - 2 * page + 1;
	auto mkey = t.register_region(region_at(base, 2 * page));
	ASSERT_TRUE(mkey) << mkey.error().message();
	uint8_t *l = local(t, *mkey);

	EXPECT_EQ(t.translate(*mkey, base, 2 * page), l);
	EXPECT_EQ(t.translate(*mkey, UINT64_MAX, 1), l + 2 * page - 1) << "last byte of 2^64";
	EXPECT_EQ(t.translate(*mkey, UINT64_MAX - 9, 10), l + 2 * page - 10);
	EXPECT_EQ(t.translate(*mkey, UINT64_MAX, 2), nullptr) << "addr + len wraps to 1";
	EXPECT_EQ(t.translate(*mkey, base + 8, UINT64_MAX), nullptr) << "huge len wraps";
	EXPECT_EQ(t.translate(*mkey, base, UINT64_MAX), nullptr);
	EXPECT_EQ(t.translate(*mkey, 0, 1), nullptr) << "just past 2^64";

	/* And at the bottom: a region at 0 with a length that wraps addr + len. */
	auto low = t.register_region(region_at(0, page));
	ASSERT_TRUE(low);
	EXPECT_NE(t.translate(*low, 0, page), nullptr);
	EXPECT_EQ(t.translate(*low, 1, UINT64_MAX), nullptr) << "1 + (2^64-1) wraps to 0";
	EXPECT_EQ(t.translate(*low, page - 1, UINT64_MAX - page + 3), nullptr);
	EXPECT_EQ(t.translate(*low, UINT64_MAX, 1), nullptr);
}

TEST(MkeyTable, ImportRefusesRegionPast2To64)
{
	/* base + length > 2^64 cannot be registered at all. */
	auto r = region::create("mkey-test", page, false);
	ASSERT_TRUE(r);
	int sv[2];
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	region_export_header h = {};
	h.magic = region_export_magic;
	h.version = region_export_version;
	h.length = page;
	h.base_va = UINT64_MAX - page + 2;
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
	iovec iov = {&h, sizeof(h)};
	msghdr msg = {};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control;
	msg.msg_controllen = sizeof(control);
	cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	int fd = r->fd();
	std::memcpy(CMSG_DATA(c), &fd, sizeof(fd));
	ASSERT_EQ(sendmsg(sv[0], &msg, 0), static_cast<ssize_t>(sizeof(h)));
	auto imported = region::import_from(sv[1]);
	close(sv[0]);
	close(sv[1]);
	ASSERT_FALSE(imported);
	EXPECT_NE(imported.error().message().find("2^64"), std::string::npos)
		<< imported.error().message();
}

TEST(MkeyTable, MkeyLayoutAndUnknownKeys)
{
	mkey_table t(4);
	auto a = t.register_region(region_at(0x10000, page));
	ASSERT_TRUE(a);
	EXPECT_NE(*a, 0u);
	EXPECT_LT(*a & mkey_table::index_mask, 4u);
	EXPECT_GE(*a >> mkey_table::index_bits, 1u) << "generation starts at 1";
	EXPECT_EQ(t.translate(0, 0x10000, 1), nullptr) << "mkey 0 never resolves";
	EXPECT_EQ(t.translate(*a ^ (1u << mkey_table::index_bits), 0x10000, 1), nullptr)
		<< "other generation";
	EXPECT_EQ(t.translate((*a & ~mkey_table::index_mask) | 7, 0x10000, 1), nullptr)
		<< "index beyond capacity";
	EXPECT_EQ(t.find(0xffffffffu), nullptr);
	EXPECT_FALSE(t.unregister_region(0));
	EXPECT_FALSE(t.unregister_region(*a + (1u << mkey_table::index_bits)));
	EXPECT_EQ(t.size(), 1u);
}

TEST(MkeyTable, StaleMkeyNeverResolvesEvenWhenSlotIsReused)
{
	mkey_table t(2);
	const uint64_t base = 0x5000'0000ull;
	auto a = t.register_region(region_at(base, page));
	auto b = t.register_region(region_at(base, page));
	ASSERT_TRUE(a && b);
	ASSERT_NE(t.translate(*a, base, 8), nullptr);

	auto ra = t.unregister_region(*a);
	ASSERT_TRUE(ra) << ra.error().message();
	EXPECT_EQ(ra->remote_base(), base) << "the region is handed back";
	EXPECT_EQ(t.translate(*a, base, 8), nullptr) << "freed";
	EXPECT_FALSE(t.unregister_region(*a)) << "double unregister";

	/* The table has one free slot: the new region must land in a's old slot. */
	auto c = t.register_region(region_at(base, page));
	ASSERT_TRUE(c);
	EXPECT_EQ(*c & mkey_table::index_mask, *a & mkey_table::index_mask) << "slot reused";
	EXPECT_NE(*c, *a) << "with a new generation";
	EXPECT_EQ(t.translate(*a, base, 8), nullptr) << "stale mkey, same slot, same address";
	EXPECT_EQ(t.find(*a), nullptr);
	EXPECT_NE(t.translate(*c, base, 8), nullptr);
	EXPECT_NE(t.translate(*b, base, 8), nullptr) << "others unaffected";

	/* Many rounds on the same slot: every earlier key stays dead. */
	std::vector<uint32_t> old = {*a};
	uint32_t cur = *c;
	for (int i = 0; i < 50; i++) {
		ASSERT_TRUE(t.unregister_region(cur));
		old.push_back(cur);
		auto n = t.register_region(region_at(base, page));
		ASSERT_TRUE(n);
		cur = *n;
		for (uint32_t k : old)
			ASSERT_EQ(t.translate(k, base, 8), nullptr) << "stale key 0x" << std::hex << k;
	}
	EXPECT_NE(t.translate(cur, base, 8), nullptr);
}

TEST(MkeyTable, FullTableRefusesAndKeepsTheRegion)
{
	mkey_table t(8);
	EXPECT_EQ(t.capacity(), 8u);
	std::vector<uint32_t> keys;
	for (int i = 0; i < 8; i++) {
		auto k = t.register_region(region_at(0x100000ull * (i + 1), page));
		ASSERT_TRUE(k) << k.error().message();
		keys.push_back(*k);
	}
	EXPECT_EQ(t.size(), 8u);
	region extra = region_at(0x900000, page);
	void *extra_data = extra.data();
	auto full = t.register_region(std::move(extra));
	ASSERT_FALSE(full);
	EXPECT_NE(full.error().message().find("full"), std::string::npos);
	EXPECT_EQ(extra.data(), extra_data) << "caller still owns the refused region";

	/* Every key is distinct and translates to its own region. */
	for (int i = 0; i < 8; i++) {
		for (int j = 0; j < i; j++)
			EXPECT_NE(keys[i], keys[j]);
		EXPECT_EQ(t.translate(keys[i], 0x100000ull * (i + 1), page),
			  t.find(keys[i])->data());
		EXPECT_EQ(t.translate(keys[i], 0x100000ull * (i + 2), 1), nullptr);
	}
	ASSERT_TRUE(t.unregister_region(keys[3]));
	EXPECT_TRUE(t.register_region(std::move(extra)));
	EXPECT_EQ(t.size(), 8u);

	/* An empty (moved-from) region is refused. */
	region empty;
	EXPECT_FALSE(t.register_region(std::move(empty)));
}

TEST(MkeyTable, CapacityIsClampedToTheMkeyLayout)
{
	EXPECT_EQ(mkey_table(0).capacity(), 1u);
	EXPECT_EQ(mkey_table(5000).capacity(), mkey_table::max_capacity);
	EXPECT_EQ(mkey_table().capacity(), 1024u);
}
