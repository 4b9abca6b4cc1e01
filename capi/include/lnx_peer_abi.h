/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * libfabric's peer API structs (issue #20), mirrored in both ABI flavours
 * lnx meets, so that one liblnx-fi.so built against the 1.17 headers can
 * pick the layout of the running libfabric from fi_version():
 *
 *   v1  libfabric 1.17, rdma/fi_ext.h: rx_entry with next/prev and "size",
 *       get_msg(srx, addr, size, &entry), get_tag(srx, addr, tag, &entry),
 *       no foreach_unspec_addr, no cq_data.
 *   v2  libfabric 2.0 to 2.2, rdma/providers/fi_peer.h: rx_entry with
 *       next/prev, "msg_size" and cq_data; get_msg/get_tag take a struct
 *       fi_peer_match_attr; foreach_unspec_addr before free_entry.
 *
 * 2.3 and later (rx_entry without next/prev) are not mirrored: no such
 * header is installed here to check a mirror against.
 *
 * Function pointers are uintptr_t (lnx stores C function addresses). The
 * Go mirrors (peers/peerapi/cabi_gen.go) are generated from this file by
 * internal/cabigen; tests/c/peer_abi.c checks this file against the
 * installed headers (1.17 on Debian 12, 2.1 in the Debian 13 root).
 * docs/peer-api.md has what the cores do with these structs.
 */
#ifndef LNX_PEER_ABI_H
#define LNX_PEER_ABI_H

#include <stddef.h>
#include <stdint.h>

/* struct fid: the same in both flavours. */
struct lnx_peer_fid {
	size_t fclass;
	uintptr_t context;
	uintptr_t ops;
};

/* struct fid_ep: the same in both flavours. */
struct lnx_peer_fid_ep {
	struct lnx_peer_fid fid;
	uintptr_t ops;
	uintptr_t cm;
	uintptr_t msg;
	uintptr_t rma;
	uintptr_t tagged;
	uintptr_t atomic;
	uintptr_t collective;
};

/* struct fi_peer_rx_entry of 1.17. */
struct lnx_peer_rx_entry_v1 {
	uintptr_t next;
	uintptr_t prev;
	uintptr_t srx;
	uint64_t addr;
	size_t size; /* untagged: the message size; tagged: left to the owner */
	uint64_t tag;
	uint64_t flags;
	uintptr_t context;
	size_t count;
	uintptr_t desc;
	uintptr_t peer_context;
	uintptr_t owner_context;
	uintptr_t iov;
};

/* struct fi_peer_rx_entry of 2.0 to 2.2. */
struct lnx_peer_rx_entry_v2 {
	uintptr_t next;
	uintptr_t prev;
	uintptr_t srx;
	uint64_t addr;
	size_t msg_size;
	uint64_t tag;
	uint64_t cq_data;
	uint64_t flags;
	uintptr_t context;
	size_t count;
	uintptr_t desc;
	uintptr_t peer_context;
	uintptr_t owner_context;
	uintptr_t iov;
};

/* struct fi_peer_match_attr (2.0 to 2.2): what get_msg and get_tag get. */
struct lnx_peer_match_attr {
	uint64_t addr;
	size_t msg_size;
	uint64_t tag;
};

/* struct fi_ops_srx_owner of 1.17. */
struct lnx_peer_srx_owner_v1 {
	size_t size;
	uintptr_t get_msg;
	uintptr_t get_tag;
	uintptr_t queue_msg;
	uintptr_t queue_tag;
	uintptr_t free_entry;
};

/* struct fi_ops_srx_owner of 2.0 to 2.2. */
struct lnx_peer_srx_owner_v2 {
	size_t size;
	uintptr_t get_msg;
	uintptr_t get_tag;
	uintptr_t queue_msg;
	uintptr_t queue_tag;
	uintptr_t foreach_unspec_addr;
	uintptr_t free_entry;
};

/* struct fi_ops_srx_peer: the same in both flavours. */
struct lnx_peer_srx_peer {
	size_t size;
	uintptr_t start_msg;
	uintptr_t start_tag;
	uintptr_t discard_msg;
	uintptr_t discard_tag;
};

/* struct fid_peer_srx: the same in both flavours. */
struct lnx_peer_srx {
	struct lnx_peer_fid_ep ep_fid;
	uintptr_t owner_ops;
	uintptr_t peer_ops;
};

/* struct fi_peer_srx_context: the same in both flavours. */
struct lnx_peer_srx_context {
	size_t size;
	uintptr_t srx;
};

/* struct fi_ops_cq_owner: the same in both flavours. */
struct lnx_peer_cq_owner {
	size_t size;
	uintptr_t write;
	uintptr_t writeerr;
};

/* struct fid_peer_cq: the same in both flavours. */
struct lnx_peer_cq {
	struct lnx_peer_fid fid;
	uintptr_t owner_ops;
};

/* struct fi_peer_cq_context: the same in both flavours. */
struct lnx_peer_cq_context {
	size_t size;
	uintptr_t cq;
};

/* The flag that asks a core for the peer API (fi_cq_attr.flags,
 * fi_rx_attr.op_flags), 1.17 and 2.x alike. */
#define LNX_FI_PEER (1ULL << 43)

/* The fid classes of an owner's peer CQ and SRX, and of the SRX a core
 * returns (enum fi_class). 1.17 shm takes the owner's SRX fid itself in
 * fi_ep_bind, with class SRX_CTX. */
#define LNX_FI_CLASS_SRX_CTX  6
#define LNX_FI_CLASS_PEER_CQ  24
#define LNX_FI_CLASS_PEER_SRX 25

#endif
