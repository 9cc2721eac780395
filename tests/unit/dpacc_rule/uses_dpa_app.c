/* SPDX-License-Identifier: BSD-3-Clause */
/* Links against the DPA program the rule built: exits 0 when its dpumesh_dpa is there. */
extern void *dpumesh_dpa;
int main(void) { return dpumesh_dpa != 0 ? 0 : 1; }
