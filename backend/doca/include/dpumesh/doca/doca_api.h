/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpumesh/doca/doca_api.h - the DOCA host/Arm calls the DOCA backend uses, and only those.
 *
 * With DPUMESH_DOCA_REAL (cmake -DDPUMESH_DOCA=ON, DOCA installed) this includes NVIDIA's
 * headers. Otherwise it declares the same calls itself, written by this project from the
 * DOCA 2.10 / 3.3 API reference (never copied from NVIDIA's headers), so the backend
 * compiles here with -Werror (-DDPUMESH_DOCA_CHECK=ON) and its call sequences can be
 * tested against link-time fakes (tests/unit/doca_fakes.cc). Only DOCA_SUCCESS's value is
 * relied on; other doca_error_t values are reported through doca_error_get_descr().
 */
#ifndef DPUMESH_DOCA_API_H
#define DPUMESH_DOCA_API_H

#ifdef DPUMESH_DOCA_REAL
#ifndef DOCA_ALLOW_EXPERIMENTAL_API
#define DOCA_ALLOW_EXPERIMENTAL_API
#endif
#include <doca_dev.h>
#include <doca_dpa.h>
#include <doca_error.h>
#include <doca_mmap.h>
#else

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum doca_error {
	DOCA_SUCCESS = 0,
} doca_error_t;

const char *doca_error_get_descr(doca_error_t error);

struct doca_dev;
struct doca_devinfo;
struct doca_dpa;
struct doca_dpa_app;
struct doca_dpa_thread;
struct doca_dpa_completion;
struct doca_dpa_async_ops;
struct doca_dpa_notification_completion;
struct doca_mmap;

typedef uint64_t doca_dpa_dev_uintptr_t;
typedef uint64_t doca_dpa_dev_completion_t;
typedef uint64_t doca_dpa_dev_async_ops_t;
typedef uint64_t doca_dpa_dev_notification_completion_t;
typedef uint32_t doca_dpa_dev_mmap_t;
typedef void(doca_dpa_func_t)(uint64_t);

union doca_data {
	void *ptr;
	uint64_t u64;
};

/* the access flag pod memory is exported with (doca_mmap_set_permissions) */
#define DOCA_ACCESS_FLAG_PCI_READ_WRITE (1u << 3)

/* devices: the PCI function the DPA process runs on */
doca_error_t doca_devinfo_create_list(struct doca_devinfo ***dev_list, uint32_t *nb_devs);
doca_error_t doca_devinfo_destroy_list(struct doca_devinfo **dev_list);
doca_error_t doca_devinfo_is_equal_pci_addr(const struct doca_devinfo *devinfo,
					    const char *pci_addr_str, uint8_t *is_equal);
doca_error_t doca_dpa_cap_is_supported(const struct doca_devinfo *devinfo);
doca_error_t doca_dev_open(struct doca_devinfo *devinfo, struct doca_dev **dev);
doca_error_t doca_dev_close(struct doca_dev *dev);

/* DPA context */
doca_error_t doca_dpa_create(struct doca_dev *dev, struct doca_dpa **dpa);
doca_error_t doca_dpa_set_app(struct doca_dpa *dpa, struct doca_dpa_app *app);
doca_error_t doca_dpa_start(struct doca_dpa *dpa);
doca_error_t doca_dpa_stop(struct doca_dpa *dpa);
doca_error_t doca_dpa_destroy(struct doca_dpa *dpa);

/* DPA memory */
doca_error_t doca_dpa_mem_alloc(struct doca_dpa *dpa, size_t size, doca_dpa_dev_uintptr_t *dev_ptr);
doca_error_t doca_dpa_mem_free(struct doca_dpa *dpa, doca_dpa_dev_uintptr_t dev_ptr);
doca_error_t doca_dpa_h2d_memcpy(struct doca_dpa *dpa, doca_dpa_dev_uintptr_t dst_ptr,
				 void *src_ptr, size_t size);

/* threads */
doca_error_t doca_dpa_thread_create(struct doca_dpa *dpa, struct doca_dpa_thread **thread);
doca_error_t doca_dpa_thread_set_func_arg(struct doca_dpa_thread *thread, doca_dpa_func_t *func,
					  uint64_t arg);
doca_error_t doca_dpa_thread_start(struct doca_dpa_thread *thread);
doca_error_t doca_dpa_thread_run(struct doca_dpa_thread *thread);
doca_error_t doca_dpa_thread_stop(struct doca_dpa_thread *thread);
doca_error_t doca_dpa_thread_destroy(struct doca_dpa_thread *thread);

/* completion contexts */
doca_error_t doca_dpa_completion_create(struct doca_dpa *dpa, unsigned int queue_size,
					struct doca_dpa_completion **comp);
doca_error_t doca_dpa_completion_set_thread(struct doca_dpa_completion *comp,
					    struct doca_dpa_thread *thread);
doca_error_t doca_dpa_completion_start(struct doca_dpa_completion *comp);
doca_error_t doca_dpa_completion_get_dpa_handle(struct doca_dpa_completion *comp,
						doca_dpa_dev_completion_t *handle);
doca_error_t doca_dpa_completion_stop(struct doca_dpa_completion *comp);
doca_error_t doca_dpa_completion_destroy(struct doca_dpa_completion *comp);

/* async ops (DMA posted by a DPA thread) */
doca_error_t doca_dpa_async_ops_create(struct doca_dpa *dpa, unsigned int queue_size,
				       uint64_t user_data, struct doca_dpa_async_ops **ops);
doca_error_t doca_dpa_async_ops_attach(struct doca_dpa_async_ops *ops,
				       struct doca_dpa_completion *comp);
doca_error_t doca_dpa_async_ops_start(struct doca_dpa_async_ops *ops);
doca_error_t doca_dpa_async_ops_get_dpa_handle(struct doca_dpa_async_ops *ops,
					       doca_dpa_dev_async_ops_t *handle);
doca_error_t doca_dpa_async_ops_stop(struct doca_dpa_async_ops *ops);
doca_error_t doca_dpa_async_ops_destroy(struct doca_dpa_async_ops *ops);

/* notification completions (wake a thread) */
doca_error_t doca_dpa_notification_completion_create(struct doca_dpa *dpa,
						     struct doca_dpa_thread *thread,
						     struct doca_dpa_notification_completion **nc);
doca_error_t doca_dpa_notification_completion_start(struct doca_dpa_notification_completion *nc);
doca_error_t doca_dpa_notification_completion_get_dpa_handle(
	struct doca_dpa_notification_completion *nc, doca_dpa_dev_notification_completion_t *handle);
doca_error_t doca_dpa_notification_completion_stop(struct doca_dpa_notification_completion *nc);
doca_error_t doca_dpa_notification_completion_destroy(struct doca_dpa_notification_completion *nc);

/* memory maps: export on the host, import on the Arm */
doca_error_t doca_mmap_create(struct doca_mmap **mmap);
doca_error_t doca_mmap_set_memrange(struct doca_mmap *mmap, void *addr, size_t len);
doca_error_t doca_mmap_add_dev(struct doca_mmap *mmap, struct doca_dev *dev);
doca_error_t doca_mmap_set_permissions(struct doca_mmap *mmap, uint32_t access_mask);
doca_error_t doca_mmap_start(struct doca_mmap *mmap);
doca_error_t doca_mmap_export_pci(struct doca_mmap *mmap, const struct doca_dev *dev,
				  const void **export_desc, size_t *export_desc_len);
doca_error_t doca_mmap_create_from_export(const union doca_data *user_data, const void *export_desc,
					  size_t export_desc_len, struct doca_dev *dev,
					  struct doca_mmap **mmap);
doca_error_t doca_mmap_dev_get_dpa_handle(struct doca_mmap *mmap, struct doca_dev *dev,
					  doca_dpa_dev_mmap_t *handle);
doca_error_t doca_mmap_stop(struct doca_mmap *mmap);
doca_error_t doca_mmap_destroy(struct doca_mmap *mmap);

#ifdef __cplusplus
}
#endif

#endif /* DPUMESH_DOCA_REAL */
#endif /* DPUMESH_DOCA_API_H */
