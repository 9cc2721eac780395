// SPDX-License-Identifier: BSD-3-Clause
// The descriptor ABI: layout agrees between C and C++, flag fields do not overlap.
#include <gtest/gtest.h>

#include <cstddef>
#include <type_traits>

#include "dpumesh/abi/abi.h"

extern "C" {
size_t dpumesh_c_sizeof_descriptor(void);
size_t dpumesh_c_offsetof_valid(void);
size_t dpumesh_c_offsetof_port(void);
size_t dpumesh_c_sizeof_registry_entry(void);
}

TEST(Abi, LayoutSameInCAndCxx)
{
	EXPECT_EQ(dpumesh_c_sizeof_descriptor(), sizeof(sw_descriptor));
	EXPECT_EQ(dpumesh_c_offsetof_valid(), offsetof(sw_descriptor, valid));
	EXPECT_EQ(dpumesh_c_offsetof_port(), offsetof(sw_descriptor, dst.external.port));
	EXPECT_EQ(dpumesh_c_sizeof_registry_entry(), sizeof(pod_registry_entry));
	EXPECT_EQ(alignof(sw_descriptor), 8u);
	EXPECT_TRUE(std::is_trivially_copyable_v<sw_descriptor>);
	EXPECT_TRUE(std::is_standard_layout_v<sw_descriptor>);
}

TEST(Abi, FlagFieldsAreDisjoint)
{
	const uint32_t ops = DPUMESH_OP_REQUEST | DPUMESH_OP_RESPONSE | DPUMESH_OP_TX_DONE |
			     DPUMESH_OP_ERROR;
	EXPECT_EQ(ops & ~DPUMESH_OP_MASK, 0u);
	EXPECT_EQ(DPUMESH_OP_MASK & DPUMESH_CASE_MASK, 0u);
	EXPECT_EQ(DPUMESH_CASE_MASK & DPUMESH_STATUS_MASK, 0u);
	EXPECT_EQ(DPUMESH_FLAGS_RESERVED_MASK & (DPUMESH_OP_MASK | DPUMESH_CASE_MASK |
						 DPUMESH_STATUS_MASK),
		  0u);
	EXPECT_EQ(DPUMESH_OP_MASK | DPUMESH_CASE_MASK | DPUMESH_STATUS_MASK |
			  DPUMESH_FLAGS_RESERVED_MASK,
		  0xffffffffu);
	for (uint32_t c : {DPUMESH_CASE_EXTERNAL, DPUMESH_CASE_INGRESS, DPUMESH_CASE_LOCAL})
		EXPECT_EQ(c & ~DPUMESH_CASE_MASK, 0u);
	EXPECT_EQ(DPUMESH_CASE_EXTERNAL >> DPUMESH_CASE_SHIFT, 1u);
	EXPECT_EQ(DPUMESH_CASE_INGRESS >> DPUMESH_CASE_SHIFT, 2u);
	EXPECT_EQ(DPUMESH_CASE_LOCAL >> DPUMESH_CASE_SHIFT, 3u);
}

TEST(Abi, StatusRoundTrips)
{
	uint32_t f = DPUMESH_OP_TX_DONE | DPUMESH_OP_ERROR | DPUMESH_CASE_LOCAL |
		     (DPUMESH_STATUS_DEST_FULL << DPUMESH_STATUS_SHIFT);
	EXPECT_EQ(dpumesh_flags_status(f), static_cast<uint32_t>(DPUMESH_STATUS_DEST_FULL));
	EXPECT_EQ(f & DPUMESH_CASE_MASK, static_cast<uint32_t>(DPUMESH_CASE_LOCAL));
}

TEST(Abi, UnionOverlaysPodIdOnIp)
{
	sw_descriptor d{};
	d.dst.pod_id = 0x04030201u;
	EXPECT_EQ(d.dst.external.ip[0], 1);
	EXPECT_EQ(d.dst.external.ip[3], 4);
}
