/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpumesh/host/dpumesh.h - libdpumesh, the host library a pod links to talk to the node's mesh.
 *
 * A pod registers under a service (dpumesh_open), then sends requests and responses, each
 * call returning at once, and receives messages, TX completions and errors from callbacks run
 * by dpumesh_progress(). Wait for work with epoll on dpumesh_fd() (the doorbell eventfd): no
 * busy polling. Received messages are zero-copy views of RX slots, held until
 * dpumesh_msg_release(). Full queues and empty pools return "try again" errors; nothing is
 * dropped silently. See docs/host-api.md.
 *
 *   static void on_request(dpumesh_t *h, struct dpumesh_msg *m, void *user) {
 *       dpumesh_send_response(h, 0, m, 200, NULL, 0, m->body, m->body_len);
 *       dpumesh_msg_release(h, m);
 *   }
 *   struct dpumesh_options o = {0};
 *   o.socket_path = "/run/dpumesh/node1.sock"; o.service = "echo"; o.nb_workers = 1;
 *   o.geometry = dpumesh_default_geometry(); o.callbacks.on_request = on_request;
 *   dpumesh_t *h; char err[128];
 *   if (dpumesh_open(&o, &h, err, sizeof(err)) != 0) { fprintf(stderr, "%s\n", err); exit(1); }
 *   for (;;) dpumesh_wait(h, -1);   // or: if (!dpumesh_prepare_wait(h)) epoll on dpumesh_fd(h);
 *                                   //     then dpumesh_progress(h)
 *
 * Threads, and no locks anywhere: worker i (0 .. nb_workers-1) owns TX SQ i and its share of
 * each TX pool (slot s belongs to worker s % nb_workers); each worker index must be used by
 * one thread at a time. The progress thread (one at a time) owns the RX side: run
 * dpumesh_progress(), dpumesh_msg_release() and the callbacks there; it hands TX slots freed
 * by completions back to their worker through a per-worker single-producer ring.
 * dpumesh_tx_buf()/dpumesh_tx_buf_put() take from and give to worker 0's share.
 */
#ifndef DPUMESH_DPUMESH_H
#define DPUMESH_DPUMESH_H

#include <stddef.h>
#include <stdint.h>

#include "dpumesh/abi/abi.h"
#include "dpumesh/podlayout/pod_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A registered pod (opaque). */
typedef struct dpumesh_pod dpumesh_t;

/** A received request or response; every field is read-only for the application. */
struct dpumesh_msg {
	const uint8_t *header; /**< L7 header bytes (dpumesh/wire/l7.h); NULL for a mesh error */
	uint32_t header_len;
	const uint8_t *body; /**< body bytes, NULL when body_len == 0 */
	uint32_t body_len;
	uint32_t req_id;  /**< execution context id */
	uint32_t step_id; /**< step within the context */
	uint32_t flags;   /**< DPUMESH_OP_REQUEST or DPUMESH_OP_RESPONSE, plus ERROR */
	uint32_t status;  /**< enum dpumesh_status of a mesh error (flags has ERROR), else 0 */
	int header_ok;    /**< 1 if the header decoded (l7_decode); the fields below valid */
	uint16_t http_status;                      /**< response status */
	const char *service, *method, *path;       /**< request pseudo-fields, not NUL-terminated */
	uint16_t service_len, method_len, path_len;
	/** Mesh-generated responses (503, 504, ...): machine-readable reason and the hop that
	 * produced it ("node1/sidecar"); empty otherwise. Not NUL-terminated. */
	const char *reason, *hop;
	uint16_t reason_len, hop_len;
	uint32_t priv_;                            /**< library use */
};

/** A header field to send (NUL-terminated strings; names lowercase tokens). */
struct dpumesh_field {
	const char *name;
	const char *value;
};

struct dpumesh_callbacks {
	/** A request arrived; answer with dpumesh_send_response, then release it. */
	void (*on_request)(dpumesh_t *h, struct dpumesh_msg *msg, void *user);
	/** A response (or a mesh error: flags & ERROR, status) arrived; release it. */
	void (*on_response)(dpumesh_t *h, struct dpumesh_msg *msg, void *user);
	/** A sent message's buffers are free again; status != 0 says why it was refused. */
	void (*on_tx_done)(dpumesh_t *h, uint32_t req_id, uint32_t step_id, uint32_t status,
			   void *user);
};

struct dpumesh_options {
	/** the node's control socket, or "doca:<PCI address>" for a DOCA node (the BlueField PF
	 *  as the host sees it; a DOCA build of libdpumesh only, else -ENOTSUP) */
	const char *socket_path;
	const char *service;     /**< service to register under */
	uint32_t nb_workers;     /**< TX SQs (worker threads): 1 .. DPUMESH_MAX_WORKERS */
	struct dpumesh_geometry geometry; /**< pools and queue depth (within the node's limits) */
	struct dpumesh_callbacks callbacks;
	void *user; /**< passed to every callback */
};

/** A request to send. */
struct dpumesh_request {
	const char *service, *method, *path;
	const struct dpumesh_field *fields;
	uint32_t nb_fields;
	const void *body; /**< copied, or used in place if it came from dpumesh_tx_buf() */
	uint32_t body_len;
	uint32_t req_id, step_id;
	uint32_t deadline_ms; /**< 0: none */
};

/** Library counters. */
struct dpumesh_stats {
	uint64_t sent, tx_done, tx_errors, received, try_again, bad_rx;
	uint64_t sleeps;     /**< times the pod armed its need-wakeup flag (about to block) */
	uint64_t self_rings; /**< progress() found work while arming and rang its own doorbell */
};

/** The node's default geometry (docs/config.md "pools"): 256 slots, 1 KiB / 64 KiB, depth 256. */
struct dpumesh_geometry dpumesh_default_geometry(void);

/**
 * Connects to the control socket, creates and exports the pod region, registers, maps the TX
 * SQs and posts every RX slot to the refill rings. Blocks (at most ~5 s for the reply).
 *
 * @param err optional buffer for a human-readable reason
 * @return 0 and *out set; -EINVAL (bad options or geometry), -ECONNREFUSED/-ENOENT (no
 *         server at socket_path), -ESRCH (unknown service), -E2BIG (over the node's limits),
 *         -ENOSPC (service or node full), -EPROTO (malformed reply or refusal otherwise),
 *         -ETIMEDOUT, -ENOMEM, or another negative errno from a syscall; on "doca:" paths
 *         also -ENOTSUP (libdpumesh built without DOCA) and -EIO (a DOCA call of the link's
 *         set-up failed: err names it)
 */
int dpumesh_open(const struct dpumesh_options *opts, dpumesh_t **out, char *err, size_t errlen);

/** Unregisters (UNREGISTER, then close) and frees everything; messages held become invalid. */
void dpumesh_close(dpumesh_t *h);

/**
 * The doorbell eventfd: readable when progress has work. Owned by the handle. The DPU rings
 * it only while the pod is armed (asleep): see dpumesh_prepare_wait().
 */
int dpumesh_fd(const dpumesh_t *h);

/**
 * About to block on dpumesh_fd(): arms the pod's need-wakeup flag (the DPU rings the doorbell
 * only for an armed pod), then re-checks the RX SQ. Call it on the progress thread right
 * before every blocking wait (epoll_wait, poll, select) that includes dpumesh_fd(); the next
 * dpumesh_progress() disarms. A pod that never calls it is armed by dpumesh_progress() itself
 * on its way out (correct for a loop that blocks right after progress, but the DPU may then
 * ring while the application works); once it has called it, it must call it before every
 * block, or it may sleep through a delivery.
 *
 * @return 0: nothing queued, block; 1: work is queued already, call dpumesh_progress()
 *         without blocking
 */
int dpumesh_prepare_wait(dpumesh_t *h);
uint32_t dpumesh_pod_id(const dpumesh_t *h);
uint32_t dpumesh_generation(const dpumesh_t *h);

/**
 * Drains the doorbell and the RX SQ, running callbacks, then re-posts released RX slots.
 *
 * @return number of descriptors handled (>= 0); -EBUSY if every message object is held by
 *         the application (release some, then call again)
 */
int dpumesh_progress(dpumesh_t *h);

/**
 * The whole event loop of a simple C pod: dpumesh_prepare_wait(), waits up to timeout_ms
 * (-1: no limit) for the doorbell or the node's channel unless work is queued, then
 * dpumesh_progress(). Pods with other fds watch dpumesh_fd() and dpumesh_node_fd()
 * themselves (with dpumesh_prepare_wait() before each block); C++ pods use
 * dpumesh::host::event_loop (dpumesh/host/coro.h).
 *
 * @return as dpumesh_progress, or -ENOTCONN once the node has closed the pod's channel (it
 *         stopped or died: nothing more will come, and no answer to what is outstanding)
 *         and nothing was left to hand out; every later call returns it too
 */
int dpumesh_wait(dpumesh_t *h, int timeout_ms);

/**
 * The pod's channel to its node (the registration socket): readable when the node closes
 * it, i.e. stops or dies. An event loop of the application's own watches it beside
 * dpumesh_fd() and calls dpumesh_node_check() when it turns readable. -1 on a DOCA node,
 * whose link does not say so (there the node's loss is not detected).
 */
int dpumesh_node_fd(const dpumesh_t *h);

/**
 * Whether the node is still there, without blocking (one recv of the channel, peeking).
 *
 * @return 0: it is (or cannot be told); -ENOTCONN: it closed the channel, for good
 */
int dpumesh_node_check(dpumesh_t *h);

#define DPUMESH_BUF_HEADER 0
#define DPUMESH_BUF_BODY 1

/**
 * Takes a free TX buffer (worker 0's share: call on worker 0's thread) to write a body into
 * in place (zero copy); pass it as the body of
 * a send, or give it back with dpumesh_tx_buf_put().
 *
 * @return 0 with *buf and *cap set; -ENOBUFS (pool empty: try again after completions),
 *         -EINVAL (kind)
 */
int dpumesh_tx_buf(dpumesh_t *h, int kind, void **buf, uint32_t *cap);
/** Gives back an unused buffer from dpumesh_tx_buf(). */
void dpumesh_tx_buf_put(dpumesh_t *h, void *buf);

/**
 * Sends a request on TX SQ `worker`; returns at once. Its buffers are freed when the TX
 * completion arrives (on_tx_done).
 *
 * @return 0; -EAGAIN (TX SQ full: try again), -ENOBUFS (TX pool empty: try again),
 *         -EMSGSIZE (header or body larger than a slot), -EINVAL (bad arguments or worker)
 */
int dpumesh_send_request(dpumesh_t *h, uint32_t worker, const struct dpumesh_request *req);

/**
 * Sends the response to a received request (same req_id/step_id); returns at once.
 *
 * @return as dpumesh_send_request
 */
int dpumesh_send_response(dpumesh_t *h, uint32_t worker, const struct dpumesh_msg *to,
			  uint16_t status, const struct dpumesh_field *fields, uint32_t nb_fields,
			  const void *body, uint32_t body_len);

/**
 * Posts a descriptor as is on TX SQ `worker` (custom framing, tests). The DPU validates it
 * like any other; no library buffer is involved.
 *
 * @return 0; -EAGAIN (TX SQ full); -EINVAL (worker)
 */
int dpumesh_post_raw(dpumesh_t *h, uint32_t worker, const struct sw_descriptor *d);

/** Releases a received message: its RX slots go back to the refill rings (progress thread). */
void dpumesh_msg_release(dpumesh_t *h, struct dpumesh_msg *msg);

/** A received request's deadline: the budget in ms its sender gave it (its header's, as
 *  sent), or 0 when it has none (or msg is no request with a header). */
uint32_t dpumesh_msg_deadline_ms(const struct dpumesh_msg *msg);

/** Finds a header field of a received message; 0 with *value and *len set, or -ENOENT. */
int dpumesh_msg_field(const struct dpumesh_msg *msg, const char *name, const char **value,
		      size_t *len);

/** Pod-side address range of a pool (DPUMESH_POOL_*): base (the pod's address), bytes. */
int dpumesh_pool_range(const dpumesh_t *h, int which, uint64_t *base, uint64_t *len);
#define DPUMESH_POOL_TX_HEADER 0
#define DPUMESH_POOL_TX_BODY 1
#define DPUMESH_POOL_RX_HEADER 2
#define DPUMESH_POOL_RX_BODY 3

void dpumesh_get_stats(const dpumesh_t *h, struct dpumesh_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* DPUMESH_DPUMESH_H */
