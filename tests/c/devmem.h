/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Device memory for the C tests, through the runtime's own entry points
 * (CUDA driver API or HIP), loaded with dlopen from the library lnx itself
 * is told to load ($FI_LNX_CUDA_LIB / $FI_LNX_ROCM_LIB): in ctest that is
 * the emulated device built from hmem/emu/emu.c, whose device pointers
 * fault on any CPU access. The API is $LNX_TEST_API ("cuda" or "rocm").
 */
#ifndef LNX_TEST_DEVMEM_H
#define LNX_TEST_DEVMEM_H

#include <stddef.h>
#include <stdint.h>
#include <rdma/fi_domain.h>

/* Loads the runtime (dies if it cannot); returns the iface of its memory. */
enum fi_hmem_iface dev_init(void);
const char *dev_api(void);
void *dev_alloc(size_t n);
void dev_free(void *p);
void dev_to_host(void *dst, const void *src, size_t n);
void host_to_dev(void *dst, const void *src, size_t n);
/* Fills n bytes of device memory with the test pattern for seed. */
void dev_fill(void *dev, size_t n, uint64_t seed);
/* Dies unless n bytes of device memory hold the pattern for seed. */
void dev_expect(const void *dev, size_t n, uint64_t seed, const char *what);
/* Registers device memory as Open MPI 5.0.6 does: one iov, FI_SEND|FI_RECV,
 * requested_key 0, the runtime's iface, device 0. */
int dev_reg(struct fid_domain *dom, void *buf, size_t n, struct fid_mr **mr);
/* The emulated device's count of IPC mappings open in this process. */
long dev_ipc_maps(void);
/* One of the emulated device's counters (hmem/emu/emu.c, emu_counter);
 * -1 on a real runtime or before dev_init. */
long dev_counter(const char *name);

#endif
