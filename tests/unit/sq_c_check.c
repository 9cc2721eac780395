/* SPDX-License-Identifier: BSD-3-Clause */
/* Builds dpumesh/ring/sq.h as C11 and exposes a C-compiled enqueue/dequeue to sq_test. */
#include <stdint.h>

#include "dpumesh/ring/sq.h"

int dpumesh_c_sq_init(struct dpumesh_sq *sq, void *mem, uint32_t nb_slots);
uint32_t dpumesh_c_sq_enqueue(struct dpumesh_sq *sq, const struct sw_descriptor *src, uint32_t n);
uint32_t dpumesh_c_sq_dequeue(struct dpumesh_sq *sq, struct sw_descriptor *dst, uint32_t n);

int dpumesh_c_sq_init(struct dpumesh_sq *sq, void *mem, uint32_t nb_slots)
{
	return dpumesh_sq_init(sq, mem, nb_slots);
}

uint32_t dpumesh_c_sq_enqueue(struct dpumesh_sq *sq, const struct sw_descriptor *src, uint32_t n)
{
	return dpumesh_sq_enqueue_burst(sq, src, n);
}

uint32_t dpumesh_c_sq_dequeue(struct dpumesh_sq *sq, struct sw_descriptor *dst, uint32_t n)
{
	return dpumesh_sq_dequeue_burst(sq, dst, n);
}
