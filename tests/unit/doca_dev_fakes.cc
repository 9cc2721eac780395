// SPDX-License-Identifier: BSD-3-Clause
// FAKES of the DOCA DPA device calls the mapping uses (see doca_dev_fakes.h).
#include "doca_dev_fakes.h"

#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>

extern "C" {
#include "doca_dev_api.h"
}

namespace dpumesh::doca_dev_fake {

/* every device call and every scheduled activation holds it (notify RPCs come from the
 * node's threads while the scheduler runs kernels) */
std::recursive_mutex &dev_mutex()
{
	static std::recursive_mutex m;
	return m;
}

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
/* completion types, oldest first, by kernel (its local storage: one completion context each) */
std::map<void *, std::deque<int>> g_completions;
bool g_run_err = false;         /* an unreported copy failed since the last report */
std::map<uint64_t, uint64_t> g_notify_count; /* notification handle -> times notified */
void *g_local = nullptr;
record g_rec;
std::set<uint64_t> g_rung;                              /* sync events added to this activation */
std::vector<std::pair<uint64_t, uint64_t>> g_adds;      /* for the hook, after the activation */
std::function<void(uint64_t, uint64_t)> g_hook;

#define DEV_LOCK std::lock_guard<std::recursive_mutex> dev_lock_(dpumesh::doca_dev_fake::dev_mutex())

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
	DEV_LOCK;
	g_mmaps[handle] = {base, static_cast<uint8_t *>(local), len};
}

void reset()
{
	DEV_LOCK;
	g_mmaps.clear();
	g_posts.clear();
	g_completions.clear();
	g_notify_count.clear();
	g_run_err = false;
	g_local = nullptr;
	g_rec = {};
	g_rung.clear();
	g_adds.clear();
	g_hook = nullptr;
}

void set_sync_event_hook(std::function<void(uint64_t, uint64_t)> hook)
{
	DEV_LOCK;
	g_hook = std::move(hook);
}

void set_local_storage(void *p)
{
	DEV_LOCK;
	g_local = p;
}
record &rec()
{
	DEV_LOCK;
	g_rec.unflushed = g_posts.size();
	return g_rec;
}
record rec_copy()
{
	DEV_LOCK;
	return rec();
}

scheduler::scheduler(std::vector<kernel> kernels)
	: _kernels(std::move(kernels)), _done(_kernels.size(), false), _seen(_kernels.size(), 0),
	  _thread([this] { run(); })
{
}

void scheduler::stop()
{
	_stop.store(true);
	if (_thread.joinable())
		_thread.join();
}

/* the activation's sync event adds reach the host FAKES outside the device lock (their calls
 * take the host lock, which the Arm's threads hold while they call into the device) */
void scheduler::deliver_adds()
{
	std::vector<std::pair<uint64_t, uint64_t>> adds;
	std::function<void(uint64_t, uint64_t)> hook;
	{
		DEV_LOCK;
		adds.swap(g_adds);
		hook = g_hook;
	}
	if (hook)
		for (const auto &[h, v] : adds)
			hook(h, v);
}

void scheduler::run()
{
	while (!_stop.load() && !all_finished()) {
		for (size_t k = 0; k < _kernels.size(); k++) {
			if (_done[k])
				continue;
			{
				DEV_LOCK;
				if (const uint64_t h = _kernels[k].notification) {
					const uint64_t n = g_notify_count[h];
					const auto c = g_completions.find(_kernels[k].local);
					if (n == _seen[k] && (c == g_completions.end() || c->second.empty()))
						continue; /* parked: nothing woke it */
					_seen[k] = n; /* notifications during this activation wake the next */
				}
				const uint64_t before = g_rec.finishes;
				g_local = _kernels[k].local;
				_kernels[k].entry(_kernels[k].arg);
				_activations.fetch_add(1);
				if (g_rec.finishes != before) {
					_done[k] = true;
					_finished.fetch_add(1);
				}
			}
			deliver_adds();
		}
		/* a 2-vCPU box shared with pods and lcores: a short pause between rounds */
		std::this_thread::sleep_for(std::chrono::microseconds(20));
	}
}

} // namespace dpumesh::doca_dev_fake

namespace fk = dpumesh::doca_dev_fake;

extern "C" {

void doca_dpa_dev_post_memcpy(doca_dpa_dev_async_ops_t, doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr,
			      doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length, uint32_t flags)
{
	DEV_LOCK;
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
			fk::g_completions[fk::g_local].push_back(fk::g_run_err ? 1 : DPUMESH_DOCA_COMP_OK);
			fk::g_run_err = false;
		}
	}
	fk::g_posts.clear();
}

int doca_dpa_dev_get_completion(doca_dpa_dev_completion_t, doca_dpa_dev_completion_element_t *elem)
{
	DEV_LOCK;
	std::deque<int> &q = fk::g_completions[fk::g_local];
	if (q.empty())
		return 0;
	*elem = static_cast<doca_dpa_dev_completion_element_t>(q.front());
	q.pop_front();
	return 1;
}

doca_dpa_dev_completion_type_t doca_dpa_dev_get_completion_type(doca_dpa_dev_completion_element_t elem)
{
	return static_cast<doca_dpa_dev_completion_type_t>(elem);
}

void doca_dpa_dev_completion_ack(doca_dpa_dev_completion_t, uint64_t) {}
void doca_dpa_dev_completion_request_notification(doca_dpa_dev_completion_t) {}
void doca_dpa_dev_thread_notify(doca_dpa_dev_notification_completion_t nc)
{
	DEV_LOCK;
	fk::g_rec.notified.push_back(nc);
	fk::g_notify_count[nc]++;
}
void doca_dpa_dev_thread_reschedule(void)
{
	DEV_LOCK;
	fk::g_rec.reschedules++;
	fk::g_rung.clear(); /* the activation ends: its doorbell batch was rung before */
}
void doca_dpa_dev_thread_finish(void)
{
	DEV_LOCK;
	fk::g_rec.finishes++;
	fk::g_rung.clear();
}
doca_dpa_dev_uintptr_t doca_dpa_dev_thread_get_local_storage(void)
{
	return reinterpret_cast<doca_dpa_dev_uintptr_t>(fk::g_local);
}

int doca_dpa_dev_mmap_get_external_ptr(doca_dpa_dev_mmap_t mmap, uint64_t addr, uint64_t *ptr)
{
	DEV_LOCK;
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
	DEV_LOCK;
	fk::g_rec.sync_events[event] += value;
	if (!fk::g_rung.insert(event).second)
		fk::g_rec.double_rings++;
	fk::g_adds.emplace_back(event, value);
}

} // extern "C"
