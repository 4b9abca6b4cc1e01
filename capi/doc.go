// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Command capi is the C boundary of lnx, built with -buildmode=c-shared into
// liblnx-fi.so. It exports fi_prov_ini (provider.c), owns the C ops tables
// (one file per fid: fabric.c, domain.c, ep.c, av.c, cq.c, cntr.c, mr.c, ...),
// the C fast paths (fast_send.c, recv_queue.c, arm.c, cq_ring.c) and the Go
// entry points they call (exports*.go). It converts
// between C and Go values, maps Go errors to negative FI_E* codes and
// recovers every panic so that none reaches the host process.
package main

func main() {}
