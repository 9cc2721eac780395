/* SPDX-License-Identifier: BSD-3-Clause */
/* Copy posting and completion taking shared by the TX and RX kernels (each its own thread,
 * async-ops queue and completion context). */
#include "kernel_util.h"

uint32_t dpa_post_range(struct dpa_dev *d, const struct dpa_range *r, uint32_t *done,
			uint64_t cookie)
{
	uint32_t reported = 0;
	uint32_t room = dpa_async_room(d);
	while (*done < r->len && room > 0) {
		uint32_t left = r->len - *done;
		uint32_t len = left < DPA_MAX_COPY ? left : DPA_MAX_COPY;
		room--;
		uint32_t flags = DPA_SUBMIT_OPTIMIZE_REPORTS;
		if (len == left || room == 0) {
			flags = DPA_SUBMIT_FLUSH;
			reported++;
		}
		dpa_post_memcpy(d, r->dst_mmap, r->dst + *done, r->src_mmap, r->src + *done, len,
				flags, cookie);
		*done += len;
	}
	return reported;
}

uint32_t dpa_take_completions(struct dpa_dev *d, void (*done)(void *, uint64_t, int32_t),
			      void *ctx)
{
	uint32_t n = 0;
	struct dpa_completion c;
	while (n < DPA_BATCH && dpa_get_completion(d, &c)) {
		uint64_t cookie = 0;
		int last = 0;
		while (!last && dpa_cookie_take(d, &cookie, &last) == DPA_OK)
			if (last)
				done(ctx, cookie, c.status);
		dpa_completion_ack(d, 1);
		n++;
	}
	return n;
}
