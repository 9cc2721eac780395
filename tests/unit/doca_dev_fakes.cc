// SPDX-License-Identifier: BSD-3-Clause
// FAKES of the DOCA DPA device calls the mapping uses (see doca_dev_fakes.h).
#include "doca_dev_fakes.h"

#include <cstring>
#include <deque>

extern "C" {
#include "doca_dev_api.h"
}

namespace dpumesh::doca_dev_fake {
namespace {

struct mmap_entry {
	uint64_t base;
	uint8_t *local;
	size_t len;
};
struct post {
	uint32_t dst_mmap, src_mmap;
	uint64_t dst, src;
	size_t len;
	bool reported;
};

std::map<uint32_t, mmap_entry> g_mmaps;
std::deque<post> g_posts;       /* posted, not flushed */
std::deque<int> g_completions;  /* completion types, oldest first */
bool g_run_err = false;         /* an unreported copy failed since the last report */
void *g_local = nullptr;
record g_rec;

uint8_t *resolve(uint32_t mmap, uint64_t addr, size_t len)
{
	auto it = g_mmaps.find(mmap);
	if (it == g_mmaps.end() || addr < it->second.base || addr - it->second.base > it->second.len ||
	    len > it->second.len - (addr - it->second.base))
		return nullptr;
	return it->second.local + (addr - it->second.base);
}

} // namespace

void add_mmap(uint32_t handle, uint64_t base, void *local, size_t len)
{
	g_mmaps[handle] = {base, static_cast<uint8_t *>(local), len};
}

void reset()
{
	g_mmaps.clear();
	g_posts.clear();
	g_completions.clear();
	g_run_err = false;
	g_local = nullptr;
	g_rec = {};
}

void set_local_storage(void *p) { g_local = p; }
record &rec()
{
	g_rec.unflushed = g_posts.size();
	return g_rec;
}

} // namespace dpumesh::doca_dev_fake

namespace fk = dpumesh::doca_dev_fake;

extern "C" {

void doca_dpa_dev_post_memcpy(doca_dpa_dev_async_ops_t, doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr,
			      doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length, uint32_t flags)
{
	fk::g_posts.push_back({dst_mmap, src_mmap, dst_addr, src_addr, length,
			       (flags & DOCA_DPA_DEV_SUBMIT_FLAG_OPTIMIZE_REPORTS) == 0});
	if (!(flags & DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH))
		return;
	/* the doorbell: every post so far runs, in order */
	for (const fk::post &p : fk::g_posts) {
		uint8_t *d = fk::resolve(p.dst_mmap, p.dst, p.len);
		uint8_t *s = fk::resolve(p.src_mmap, p.src, p.len);
		if (d && s && p.len > 0)
			std::memmove(d, s, p.len);
		else {
			fk::g_run_err = true;
			fk::g_rec.bad_copies++;
		}
		if (p.reported) {
			fk::g_completions.push_back(fk::g_run_err ? 1 : DPUMESH_DOCA_COMP_OK);
			fk::g_run_err = false;
		}
	}
	fk::g_posts.clear();
}

int doca_dpa_dev_get_completion(doca_dpa_dev_completion_t, doca_dpa_dev_completion_element_t *elem)
{
	if (fk::g_completions.empty())
		return 0;
	*elem = static_cast<doca_dpa_dev_completion_element_t>(fk::g_completions.front());
	fk::g_completions.pop_front();
	return 1;
}

doca_dpa_dev_completion_type_t doca_dpa_dev_get_completion_type(doca_dpa_dev_completion_element_t elem)
{
	return static_cast<doca_dpa_dev_completion_type_t>(elem);
}

void doca_dpa_dev_completion_ack(doca_dpa_dev_completion_t, uint64_t) {}
void doca_dpa_dev_completion_request_notification(doca_dpa_dev_completion_t) {}
void doca_dpa_dev_thread_notify(doca_dpa_dev_notification_completion_t nc) { fk::g_rec.notified.push_back(nc); }
void doca_dpa_dev_thread_reschedule(void) { fk::g_rec.reschedules++; }
void doca_dpa_dev_thread_finish(void) { fk::g_rec.finishes++; }
doca_dpa_dev_uintptr_t doca_dpa_dev_thread_get_local_storage(void)
{
	return reinterpret_cast<doca_dpa_dev_uintptr_t>(fk::g_local);
}

int doca_dpa_dev_mmap_get_external_ptr(doca_dpa_dev_mmap_t mmap, uint64_t addr, uint64_t *ptr)
{
	uint8_t *p = fk::resolve(mmap, addr, 1);
	if (!p) {
		fk::g_rec.bad_windows++;
		return -1;
	}
	*ptr = reinterpret_cast<uint64_t>(p);
	return 0;
}

void __dpa_thread_window_writeback(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }

void doca_dpa_dev_sync_event_update_add(doca_dpa_dev_sync_event_t event, uint64_t value)
{
	fk::g_rec.sync_events[event] += value;
}

} // extern "C"
