// SPDX-License-Identifier: BSD-3-Clause
// Pod region layout: offsets, alignment, no overlap, geometry validation, slot lookup.
#include <gtest/gtest.h>

#include "dpumesh/podlayout/pod_layout.h"

namespace {

dpumesh_geometry geom(uint32_t hs = 256, uint32_t hsz = 1024, uint32_t bs = 256,
		      uint32_t bsz = 65536, uint32_t depth = 256)
{
	return dpumesh_geometry{{hs, hsz}, {bs, bsz}, {hs, hsz}, {bs, bsz}, depth, 0};
}

TEST(pod_layout, sections_aligned_in_order_without_overlap)
{
	dpumesh_geometry g = geom(3, 192, 5, 4160, 16);
	dpumesh_pod_layout l;
	ASSERT_EQ(dpumesh_pod_layout_compute(&g, &l), DPUMESH_LAYOUT_OK);
	const uint64_t offs[] = {l.tx_header_off, l.tx_body_off, l.rx_header_off, l.rx_body_off,
				 l.rx_sq_off, l.rx_header_refill_off, l.rx_body_refill_off,
				 l.ctrl_off, l.total_size};
	const uint64_t sizes[] = {3 * 192, 5 * 4160, 3 * 192, 5 * 4160, 16 * 64, 16 * 64, 16 * 64,
				  sizeof(dpumesh_pod_ctrl)};
	EXPECT_EQ(l.tx_header_off, 0u);
	for (size_t i = 0; i < 8; i++) {
		EXPECT_EQ(offs[i] % 4096, 0u) << i;
		EXPECT_GE(offs[i + 1], offs[i] + sizes[i]) << i;          /* no overlap */
		EXPECT_LT(offs[i + 1], offs[i] + sizes[i] + 4096) << i;   /* no waste */
	}
	EXPECT_EQ(l.total_size, 4096u * (1 + 6 + 1 + 6 + 1 + 1 + 1 + 1));
	dpumesh_pod_layout l2;
	ASSERT_EQ(dpumesh_pod_layout_compute(&g, &l2), DPUMESH_LAYOUT_OK);
	EXPECT_EQ(l.rx_body_refill_off, l2.rx_body_refill_off); /* pure */
}

TEST(pod_layout, default_geometry_fits_limit)
{
	dpumesh_geometry g = geom();
	dpumesh_pod_layout l;
	ASSERT_EQ(dpumesh_pod_layout_compute(&g, &l), DPUMESH_LAYOUT_OK);
	EXPECT_EQ(l.total_size, 2u * (256 * 1024 + 256 * 65536) + 3 * 16384 + 4096);
}

TEST(pod_layout, refuses_bad_geometry)
{
	dpumesh_pod_layout l;
	struct {
		dpumesh_geometry g;
		int rc;
	} cases[] = {
		{geom(0), DPUMESH_LAYOUT_ERR_SLOTS},
		{geom(65537), DPUMESH_LAYOUT_ERR_SLOTS},
		{geom(1, 0), DPUMESH_LAYOUT_ERR_SLOT_SIZE},
		{geom(1, 32), DPUMESH_LAYOUT_ERR_SLOT_SIZE},
		{geom(1, 100), DPUMESH_LAYOUT_ERR_SLOT_SIZE},
		{geom(1, 64, 1, 64, 8), DPUMESH_LAYOUT_ERR_SQ_DEPTH},
		{geom(1, 64, 1, 64, 48), DPUMESH_LAYOUT_ERR_SQ_DEPTH},
		{geom(1, 64, 1, 64, 131072), DPUMESH_LAYOUT_ERR_SQ_DEPTH},
		{geom(65536, 65536, 65536, 0xffffffc0u), DPUMESH_LAYOUT_ERR_TOO_LARGE},
		{geom(65536, 16384, 1, 64), DPUMESH_LAYOUT_ERR_TOO_LARGE}, /* 2 x 1 GiB + 2 x 1 GiB... */
	};
	cases[9].g.tx_body = {65536, 65536}; /* 4 GiB in one pool + the rest: over */
	for (auto &c : cases) {
		EXPECT_EQ(dpumesh_pod_layout_compute(&c.g, &l), c.rc);
		EXPECT_EQ(l.total_size, 0u);
	}
	dpumesh_geometry g = geom();
	g.reserved = 1;
	EXPECT_EQ(dpumesh_pod_layout_compute(&g, &l), DPUMESH_LAYOUT_ERR_RESERVED);
	/* Exactly at the limit is fine: 4 pools of 1 GiB minus the rings' pages. */
	g = geom(65536, 16384 - 64, 65536, 16384 - 64, 16);
	EXPECT_EQ(dpumesh_pod_layout_compute(&g, &l), DPUMESH_LAYOUT_OK);
	EXPECT_LE(l.total_size, DPUMESH_LAYOUT_MAX_SIZE);
}

TEST(pod_layout, pool_slot_lookup)
{
	dpumesh_pool_geometry p = {4, 192};
	const uint64_t base = 0x10000;
	EXPECT_EQ(dpumesh_pool_slot(base, &p, base, 1), 0);
	EXPECT_EQ(dpumesh_pool_slot(base, &p, base + 3 * 192, 192), 3);
	EXPECT_EQ(dpumesh_pool_slot(base, &p, base + 4 * 192, 1), DPUMESH_SLOT_OUTSIDE);
	EXPECT_EQ(dpumesh_pool_slot(base, &p, base - 192, 1), DPUMESH_SLOT_OUTSIDE);
	EXPECT_EQ(dpumesh_pool_slot(base, &p, base + 64, 1), DPUMESH_SLOT_UNALIGNED);
	EXPECT_EQ(dpumesh_pool_slot(base, &p, base, 193), DPUMESH_SLOT_TOO_LONG);
	EXPECT_EQ(dpumesh_pool_slot(base, &p, UINT64_MAX - 10, 0xfffffff0u), DPUMESH_SLOT_OUTSIDE);
	EXPECT_EQ(dpumesh_pool_slot(base, &p, base, 0xffffffffu), DPUMESH_SLOT_TOO_LONG);
}

TEST(pod_layout, tx_sq_region)
{
	EXPECT_EQ(dpumesh_tx_sq_stride(16), 4096u);
	EXPECT_EQ(dpumesh_tx_sq_stride(256), 16384u);
	EXPECT_EQ(dpumesh_tx_sq_offset(256, 3), 3u * 16384);
	EXPECT_EQ(dpumesh_tx_region_size(256, 4), 4u * 16384);
}

TEST(pod_handle, packs_id_and_generation)
{
	uint32_t h = dpumesh_pod_handle(255, 0xabcdefu);
	EXPECT_EQ(DPUMESH_HANDLE_POD_ID(h), 255u);
	EXPECT_EQ(DPUMESH_HANDLE_GENERATION(h), 0xabcdefu);
	EXPECT_EQ(DPUMESH_GENERATION_MAX, 0xffffffu);
	EXPECT_NE(dpumesh_pod_handle(0, 1), 0u);
}

} // namespace
