/* SPDX-License-Identifier: BSD-3-Clause */
/* Compiles the ABI header as C11 (its static asserts run here too) and reports C's view. */
#include <stddef.h>

#include "dpumesh/abi/abi.h"

size_t dpumesh_c_sizeof_descriptor(void);
size_t dpumesh_c_offsetof_valid(void);
size_t dpumesh_c_offsetof_port(void);
size_t dpumesh_c_sizeof_registry_entry(void);

size_t dpumesh_c_sizeof_descriptor(void) { return sizeof(struct sw_descriptor); }
size_t dpumesh_c_offsetof_valid(void) { return offsetof(struct sw_descriptor, valid); }
size_t dpumesh_c_offsetof_port(void) { return offsetof(struct sw_descriptor, dst.external.port); }
size_t dpumesh_c_sizeof_registry_entry(void) { return sizeof(struct pod_registry_entry); }
