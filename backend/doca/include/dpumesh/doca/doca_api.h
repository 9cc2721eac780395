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
#include <doca_pe.h>
#include <doca_ctx.h>
#include <doca_comch.h>
#include <doca_sync_event.h>
#else

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum doca_error {
	DOCA_SUCCESS = 0,
	/* not the SDK's: a bound that gives the type an int's range, so that every nonzero
	 * code a call returns (and the fakes' injected failure) is a value of it; with
	 * DOCA_SUCCESS alone its values would be 0 and 1 in C++, and clang calls a compare
	 * with any other constant always false */
	DPUMESH_DOCA_ERROR_RANGE_ = 0x7fffffff,
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

/* access flags (doca_mmap_set_permissions): pod memory is exported PCI read-write; the
 * Arm's memory the DPA reaches is local read-write */
#define DOCA_ACCESS_FLAG_LOCAL_READ_WRITE (1u << 0)
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
doca_error_t doca_dpa_d2h_memcpy(struct doca_dpa *dpa, void *dst_ptr,
				 doca_dpa_dev_uintptr_t src_ptr, size_t size);

/* remote procedure calls: run a __dpa_rpc__ function on the DPA, wait for its result */
doca_error_t doca_dpa_rpc(struct doca_dpa *dpa, doca_dpa_func_t *func, uint64_t *retval, ...);

/* threads */
doca_error_t doca_dpa_thread_create(struct doca_dpa *dpa, struct doca_dpa_thread **thread);
doca_error_t doca_dpa_thread_set_func_arg(struct doca_dpa_thread *thread, doca_dpa_func_t *func,
					  uint64_t arg);
doca_error_t doca_dpa_thread_set_local_storage(struct doca_dpa_thread *thread,
					       doca_dpa_dev_uintptr_t dev_ptr);
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

/* ---- the comch control channel (host client, Arm server) and the progress engine whose
 * notification handle is a pod's doorbell fd (backend/doca comch.h). Written from the DOCA
 * Core (doca_pe.h, doca_ctx.h, doca_dev.h) and DOCA Comch (doca_comch.h) API references.
 * ---- */
struct doca_pe;
struct doca_ctx;
struct doca_task;
struct doca_dev_rep;
struct doca_devinfo_rep;
struct doca_comch_server;
struct doca_comch_client;
struct doca_comch_connection;
struct doca_comch_task_send;
struct doca_comch_event_msg_recv;
struct doca_comch_event_connection_status_changed;

/** On Linux a notification handle is a file descriptor the caller may poll. */
typedef int doca_notification_handle_t;

/** Representor filter: the network functions (the host PF/VFs seen from the Arm). */
enum doca_devinfo_rep_filter {
	DOCA_DEVINFO_REP_FILTER_ALL = 0,
	DOCA_DEVINFO_REP_FILTER_NET = 1 << 1,
};

/** A context's states (doca_ctx_get_state); only the names are relied on. */
enum doca_ctx_states {
	DOCA_CTX_STATE_IDLE = 0,
	DOCA_CTX_STATE_STARTING = 1,
	DOCA_CTX_STATE_RUNNING = 2,
	DOCA_CTX_STATE_STOPPING = 3,
};

typedef void (*doca_comch_task_send_completion_cb_t)(struct doca_comch_task_send *task,
						     union doca_data task_user_data,
						     union doca_data ctx_user_data);
typedef void (*doca_comch_event_msg_recv_cb_t)(struct doca_comch_event_msg_recv *event,
					       uint8_t *recv_buffer, uint32_t msg_len,
					       struct doca_comch_connection *comch_connection);
typedef void (*doca_comch_event_connection_status_changed_cb_t)(
	struct doca_comch_event_connection_status_changed *event,
	struct doca_comch_connection *comch_connection, uint8_t change_successful);

/* representors: the Arm names the host PF its comch server serves */
doca_error_t doca_devinfo_rep_create_list(struct doca_dev *dev, int filter,
					  struct doca_devinfo_rep ***dev_list_rep,
					  uint32_t *nb_devs_rep);
doca_error_t doca_devinfo_rep_destroy_list(struct doca_devinfo_rep **dev_list_rep);
doca_error_t doca_devinfo_rep_is_equal_pci_addr(const struct doca_devinfo_rep *devinfo_rep,
						const char *pci_addr_str, uint8_t *is_equal);
doca_error_t doca_dev_rep_open(struct doca_devinfo_rep *devinfo, struct doca_dev_rep **dev_rep);
doca_error_t doca_dev_rep_close(struct doca_dev_rep *dev);
struct doca_devinfo *doca_dev_as_devinfo(const struct doca_dev *dev);

/* progress engine */
doca_error_t doca_pe_create(struct doca_pe **pe);
doca_error_t doca_pe_destroy(struct doca_pe *pe);
uint8_t doca_pe_progress(struct doca_pe *pe);
doca_error_t doca_pe_connect_ctx(struct doca_pe *pe, struct doca_ctx *ctx);
doca_error_t doca_pe_get_notification_handle(struct doca_pe *pe, doca_notification_handle_t *handle);
doca_error_t doca_pe_request_notification(struct doca_pe *pe);
doca_error_t doca_pe_clear_notification(struct doca_pe *pe, doca_notification_handle_t handle);

/* contexts and tasks */
doca_error_t doca_ctx_start(struct doca_ctx *ctx);
doca_error_t doca_ctx_stop(struct doca_ctx *ctx);
doca_error_t doca_ctx_get_state(const struct doca_ctx *ctx, enum doca_ctx_states *state);
doca_error_t doca_ctx_set_user_data(struct doca_ctx *ctx, union doca_data user_data);
doca_error_t doca_ctx_get_user_data(const struct doca_ctx *ctx, union doca_data *user_data);
doca_error_t doca_task_submit(struct doca_task *task);
void doca_task_free(struct doca_task *task);

/* comch: capabilities */
doca_error_t doca_comch_cap_get_max_msg_size(const struct doca_devinfo *devinfo, uint32_t *size);

/* comch server (Arm) */
doca_error_t doca_comch_server_create(struct doca_dev *dev, struct doca_dev_rep *repr,
				      const char *name, struct doca_comch_server **comch_server);
doca_error_t doca_comch_server_destroy(struct doca_comch_server *comch_server);
struct doca_ctx *doca_comch_server_as_ctx(struct doca_comch_server *comch_server);
doca_error_t doca_comch_server_task_send_set_conf(struct doca_comch_server *comch_server,
						  doca_comch_task_send_completion_cb_t task_completion_cb,
						  doca_comch_task_send_completion_cb_t task_error_cb,
						  uint32_t num_send_tasks);
doca_error_t doca_comch_server_event_msg_recv_register(struct doca_comch_server *comch_server,
						       doca_comch_event_msg_recv_cb_t recv_event_cb);
doca_error_t doca_comch_server_event_connection_status_changed_register(
	struct doca_comch_server *comch_server,
	doca_comch_event_connection_status_changed_cb_t connect_event_cb,
	doca_comch_event_connection_status_changed_cb_t disconnect_event_cb);
doca_error_t doca_comch_server_task_send_alloc_init(struct doca_comch_server *comch_server,
						    struct doca_comch_connection *peer,
						    const void *msg, uint32_t len,
						    struct doca_comch_task_send **task);
struct doca_comch_server *doca_comch_server_get_server_ctx(const struct doca_comch_connection *connection);

/* comch client (host) */
doca_error_t doca_comch_client_create(struct doca_dev *dev, const char *name,
				      struct doca_comch_client **comch_client);
doca_error_t doca_comch_client_destroy(struct doca_comch_client *comch_client);
struct doca_ctx *doca_comch_client_as_ctx(struct doca_comch_client *comch_client);
doca_error_t doca_comch_client_task_send_set_conf(struct doca_comch_client *comch_client,
						  doca_comch_task_send_completion_cb_t task_completion_cb,
						  doca_comch_task_send_completion_cb_t task_error_cb,
						  uint32_t num_send_tasks);
doca_error_t doca_comch_client_event_msg_recv_register(struct doca_comch_client *comch_client,
						       doca_comch_event_msg_recv_cb_t recv_event_cb);
doca_error_t doca_comch_client_get_connection(const struct doca_comch_client *comch_client,
					      struct doca_comch_connection **connection);
doca_error_t doca_comch_client_task_send_alloc_init(struct doca_comch_client *comch_client,
						    struct doca_comch_connection *peer,
						    const void *msg, uint32_t len,
						    struct doca_comch_task_send **task);
struct doca_comch_client *doca_comch_client_get_client_ctx(const struct doca_comch_connection *connection);
struct doca_task *doca_comch_task_send_as_task(struct doca_comch_task_send *task);

/* ---- the pod's doorbell: a sync event the pod creates (subscriber: its CPU; publisher: the
 * remote PCI side), exported to the Arm, whose DPA handle the RX kernel adds to; the pod
 * waits on it with wait-not-equal tasks on its progress engine (backend/doca
 * pod_doorbell.h). Written from the DOCA Core Sync Event API reference (doca_sync_event.h):
 * names and parameters as read there; that the Arm may take a DPA handle of an event it
 * imported from a remote-PCI export is UNVERIFIED (docs/doca.md "Doorbells on a DOCA node").
 * ---- */
struct doca_sync_event;
struct doca_sync_event_task_wait_neq;

typedef uint64_t doca_dpa_dev_sync_event_t;
typedef void (*doca_sync_event_task_wait_neq_completion_cb_t)(struct doca_sync_event_task_wait_neq *task,
							      union doca_data task_user_data,
							      union doca_data ctx_user_data);

doca_error_t doca_sync_event_create(struct doca_sync_event **event);
doca_error_t doca_sync_event_destroy(struct doca_sync_event *event);
doca_error_t doca_sync_event_add_publisher_location_remote_pci(struct doca_sync_event *event);
doca_error_t doca_sync_event_add_subscriber_location_cpu(struct doca_sync_event *event, struct doca_dev *dev);
struct doca_ctx *doca_sync_event_as_ctx(struct doca_sync_event *event);
doca_error_t doca_sync_event_export_to_remote_pci(struct doca_sync_event *event, struct doca_dev *dev,
						  const uint8_t **data, size_t *sz);
doca_error_t doca_sync_event_create_from_export(struct doca_dev *dev, const uint8_t *data, size_t sz,
						struct doca_sync_event **event);
doca_error_t doca_sync_event_get_dpa_handle(struct doca_sync_event *event, struct doca_dpa *dpa,
					    doca_dpa_dev_sync_event_t *dpa_dev_se_handle);
doca_error_t doca_sync_event_get(struct doca_sync_event *event, uint64_t *value);
/* the pods' TX doorbell (pod_doorbell.h tx_bell): a stand-alone event the Arm starts and
 * reads, that pods import and add to */
doca_error_t doca_sync_event_start(struct doca_sync_event *event);
doca_error_t doca_sync_event_stop(struct doca_sync_event *event);
doca_error_t doca_sync_event_update_add(struct doca_sync_event *event, uint64_t value, uint64_t *fetched);
doca_error_t doca_sync_event_task_wait_neq_set_conf(struct doca_sync_event *event,
						    doca_sync_event_task_wait_neq_completion_cb_t completion_cb,
						    doca_sync_event_task_wait_neq_completion_cb_t error_cb,
						    uint32_t num_tasks);
doca_error_t doca_sync_event_task_wait_neq_alloc_init(struct doca_sync_event *event, uint64_t wait_val,
						      uint64_t mask, union doca_data user_data,
						      struct doca_sync_event_task_wait_neq **task);
struct doca_task *doca_sync_event_task_wait_neq_as_doca_task(struct doca_sync_event_task_wait_neq *task);

#ifdef __cplusplus
}
#endif

#endif /* DPUMESH_DOCA_REAL */
#endif /* DPUMESH_DOCA_API_H */
