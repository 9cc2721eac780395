/* SPDX-License-Identifier: BSD-3-Clause */
/* A DPA-style poll loop over dpumesh/ring/sq.h, built freestanding for RISC-V by CTest. */
#include "dpumesh/ring/sq.h"

uint32_t dpa_forward(struct dpumesh_sq *in, struct dpumesh_sq *out);

/* Moves one burst from one ring to another, as a DPA kernel would. */
uint32_t dpa_forward(struct dpumesh_sq *in, struct dpumesh_sq *out)
{
	struct sw_descriptor burst[32];
	uint32_t n = dpumesh_sq_dequeue_burst(in, burst, 32);
	uint32_t done = 0;

	while (done < n)
		done += dpumesh_sq_enqueue_burst(out, &burst[done], n - done);
	return n + (uint32_t)dpumesh_sq_size(out);
}
