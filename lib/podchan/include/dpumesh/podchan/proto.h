/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpumesh/podchan/proto.h - the messages of the pod registration channel (the portable stand-in
 * for DOCA comch): a Unix SOCK_SEQPACKET socket at node.control_socket, served by the DPU.
 *
 * Every message is one datagram: a 16-byte header, then a fixed body per type. Host byte
 * order (both ends are on one node). Every field is checked on receipt (dpumesh/podchan/channel.h);
 * file descriptors travel as SCM_RIGHTS only where listed below, anything else is closed and
 * the message refused. Sequence (docs/memory-model.md, "Control channel"):
 *
 *   pod                                        DPU
 *   region export (tag DPUMESH_REGION_TAG_POD) ->
 *   REGISTER                                   ->
 *                                              <- REGISTERED (+ RX and TX doorbell eventfds when ok)
 *                                              <- region export (tag DPUMESH_REGION_TAG_TX_SQ),
 *                                                 only when ok
 *   UNREGISTER                                 ->
 *                                              <- UNREGISTERED
 *   (close: the same as UNREGISTER)
 */
#ifndef DPUMESH_CTRL_PROTO_H
#define DPUMESH_CTRL_PROTO_H

#include <stdint.h>

#include "dpumesh/abi/abi.h"
#include "dpumesh/podlayout/pod_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DPUMESH_CTRL_MAGIC 0x43504d44u /**< "DMPC" in memory order */
/** 2: the pod region ends with the pod control block (DPUMESH_POD_LAYOUT_VERSION 2).
 *  3: REGISTERED carries a second fd, the TX doorbell the pod rings while the DPU has
 *     parked its TX SQs (dpumesh_pod_ctrl::tx_wait); a pod that did not ring would stall.
 *  4: dpumesh_pod_ctrl::rx_wait's flags (DPUMESH_RX_WAIT_*): a successful TX completion
 *     rings only a pod that asked for it; an older pod would wait for one forever. */
#define DPUMESH_CTRL_VERSION 4u
/** Region export tags (region_export_header.tag) on this channel. */
#define DPUMESH_REGION_TAG_POD 0x31444f50u   /**< "POD1": the pod's region */
#define DPUMESH_REGION_TAG_TX_SQ 0x31515354u /**< "TSQ1": the TX SQ region */
/** Longest service name, in bytes, without the terminating NUL. */
#define DPUMESH_SERVICE_NAME_MAX 63u
#define DPUMESH_CTRL_ERROR_MAX 128u

enum dpumesh_ctrl_type {
	DPUMESH_CTRL_REGISTER = 1,     /**< pod -> DPU */
	DPUMESH_CTRL_REGISTERED = 2,   /**< DPU -> pod */
	DPUMESH_CTRL_UNREGISTER = 3,   /**< pod -> DPU */
	DPUMESH_CTRL_UNREGISTERED = 4, /**< DPU -> pod */
};

/** Outcome of a REGISTER/UNREGISTER, in the replies' `result`. */
enum dpumesh_ctrl_result {
	DPUMESH_CTRL_OK = 0,
	DPUMESH_CTRL_ERR_MESSAGE = 1,      /**< malformed message, or fds where none belong */
	DPUMESH_CTRL_ERR_NO_REGION = 2,    /**< REGISTER without a valid region export before it */
	DPUMESH_CTRL_ERR_SERVICE = 3,      /**< unknown service */
	DPUMESH_CTRL_ERR_GEOMETRY = 4,     /**< invalid geometry, or the region is too small */
	DPUMESH_CTRL_ERR_LIMITS = 5,       /**< geometry over the node's pools limits */
	DPUMESH_CTRL_ERR_SERVICE_FULL = 6, /**< the service's max_pods are registered */
	DPUMESH_CTRL_ERR_TABLE_FULL = 7,   /**< DPUMESH_MAX_PODS pods, or no mkey left */
	DPUMESH_CTRL_ERR_INTERNAL = 8,     /**< a DPU-side resource failed (eventfd, memfd) */
	DPUMESH_CTRL_ERR_NOT_REGISTERED = 9, /**< UNREGISTER on a connection with no pod */
};

/** Every message starts with this. */
struct dpumesh_ctrl_hdr {
	uint32_t magic;    /**< DPUMESH_CTRL_MAGIC */
	uint16_t version;  /**< DPUMESH_CTRL_VERSION */
	uint16_t type;     /**< enum dpumesh_ctrl_type */
	uint32_t length;   /**< bytes of the whole message: exactly the type's size */
	uint32_t reserved; /**< zero */
};
DPUMESH_STATIC_ASSERT(sizeof(struct dpumesh_ctrl_hdr) == 16, "ctrl hdr: 16 bytes");

/** REGISTER: no fds (the region came in the export message just before). */
struct dpumesh_ctrl_register {
	struct dpumesh_ctrl_hdr hdr;
	char service[DPUMESH_SERVICE_NAME_MAX + 1]; /**< NUL-terminated, NUL-padded */
	uint32_t nb_workers;                        /**< TX SQs: 1 .. DPUMESH_MAX_WORKERS */
	uint32_t reserved;                          /**< zero */
	struct dpumesh_geometry geometry;           /**< valid per dpumesh_pod_layout_compute */
};
DPUMESH_STATIC_ASSERT(sizeof(struct dpumesh_ctrl_register) == 128, "REGISTER: 128 bytes");

/** REGISTERED: with result OK exactly two fds, the doorbell eventfd (DPU rings, pod waits)
 *  and the TX doorbell eventfd (pod rings, DPU waits); otherwise none. */
struct dpumesh_ctrl_registered {
	struct dpumesh_ctrl_hdr hdr;
	uint32_t result;     /**< enum dpumesh_ctrl_result */
	uint32_t pod_id;     /**< 0 .. DPUMESH_MAX_PODS-1 (0 on refusal) */
	uint32_t generation; /**< 1 .. DPUMESH_GENERATION_MAX; stamp refill descriptors with it */
	uint32_t mkey;       /**< the DPU's key for the pod's region (informational) */
	uint32_t nb_workers; /**< TX SQs in the TX SQ region that follows */
	uint32_t sq_depth;   /**< slots of each TX SQ */
	uint32_t reserved[2];
	char error[DPUMESH_CTRL_ERROR_MAX]; /**< NUL-terminated reason on refusal, else empty */
};
DPUMESH_STATIC_ASSERT(sizeof(struct dpumesh_ctrl_registered) == 176, "REGISTERED: 176 bytes");

/** UNREGISTER and UNREGISTERED: no fds. */
struct dpumesh_ctrl_unregister {
	struct dpumesh_ctrl_hdr hdr;
	uint32_t result; /**< UNREGISTER: zero; UNREGISTERED: enum dpumesh_ctrl_result */
	uint32_t reserved[3];
};
DPUMESH_STATIC_ASSERT(sizeof(struct dpumesh_ctrl_unregister) == 32, "UNREGISTER: 32 bytes");

#ifdef __cplusplus
}
#endif

#endif /* DPUMESH_CTRL_PROTO_H */
