/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * peer_abi: capi/include/lnx_peer_abi.h against the installed libfabric
 * headers. With 1.17's (Debian 12) it checks the v1 mirrors against
 * rdma/fi_ext.h; with 2.0 to 2.2's (the Debian 13 root has 2.1) the v2
 * mirrors against rdma/providers/fi_peer.h; the structs both flavours
 * share against either. Other headers: skip (77). Every size and offset
 * is printed, so a mismatch names the field.
 */
#include <stddef.h>
#include <stdio.h>
#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#include "lnx_peer_abi.h"

#if FI_MAJOR_VERSION == 2 && FI_MINOR_VERSION <= 2
#include <rdma/providers/fi_peer.h>
#define FLAVOUR 2
#elif FI_MAJOR_VERSION == 1 && FI_MINOR_VERSION == 17
#include <rdma/fi_ext.h>
#define FLAVOUR 1
#else
#define FLAVOUR 0
#endif

static int bad;

static void check(const char *what, size_t mirror, size_t real)
{
	printf("peer_abi: %-52s %4zu %s\n", what, real, mirror == real ? "ok" : "MISMATCH");
	if (mirror != real) {
		printf("peer_abi:   lnx_peer_abi.h says %zu\n", mirror);
		bad++;
	}
}

/* The size of struct m against struct r, and of field f in each. */
#define SIZE(m, r) check("sizeof(struct " #r ")", sizeof(struct m), sizeof(struct r))
#define FIELD(m, r, f)                                                          \
	do {                                                                    \
		check("offsetof(struct " #r ", " #f ")", offsetof(struct m, f), \
		      offsetof(struct r, f));                                   \
		check("sizeof(" #r "." #f ")", sizeof(((struct m *)0)->f),      \
		      sizeof(((struct r *)0)->f));                              \
	} while (0)

int main(void)
{
#if !FLAVOUR
	printf("peer_abi: SKIP: libfabric %d.%d headers: lnx_peer_abi.h mirrors 1.17 and "
	       "2.0-2.2 only\n",
	       FI_MAJOR_VERSION, FI_MINOR_VERSION);
	return 77;
#else
	SIZE(lnx_peer_fid, fid);
	FIELD(lnx_peer_fid, fid, fclass);
	FIELD(lnx_peer_fid, fid, context);
	FIELD(lnx_peer_fid, fid, ops);
	SIZE(lnx_peer_fid_ep, fid_ep);
	FIELD(lnx_peer_fid_ep, fid_ep, fid);
	FIELD(lnx_peer_fid_ep, fid_ep, ops);
	FIELD(lnx_peer_fid_ep, fid_ep, cm);
	FIELD(lnx_peer_fid_ep, fid_ep, msg);
	FIELD(lnx_peer_fid_ep, fid_ep, rma);
	FIELD(lnx_peer_fid_ep, fid_ep, tagged);
	FIELD(lnx_peer_fid_ep, fid_ep, atomic);
	FIELD(lnx_peer_fid_ep, fid_ep, collective);
#if FLAVOUR == 1
#define RX  lnx_peer_rx_entry_v1
#define OWN lnx_peer_srx_owner_v1
	FIELD(RX, fi_peer_rx_entry, size);
#else
#define RX  lnx_peer_rx_entry_v2
#define OWN lnx_peer_srx_owner_v2
	FIELD(RX, fi_peer_rx_entry, msg_size);
	FIELD(RX, fi_peer_rx_entry, cq_data);
	SIZE(lnx_peer_match_attr, fi_peer_match_attr);
	FIELD(lnx_peer_match_attr, fi_peer_match_attr, addr);
	FIELD(lnx_peer_match_attr, fi_peer_match_attr, msg_size);
	FIELD(lnx_peer_match_attr, fi_peer_match_attr, tag);
	FIELD(OWN, fi_ops_srx_owner, foreach_unspec_addr);
#endif
	SIZE(RX, fi_peer_rx_entry);
	FIELD(RX, fi_peer_rx_entry, next);
	FIELD(RX, fi_peer_rx_entry, prev);
	FIELD(RX, fi_peer_rx_entry, srx);
	FIELD(RX, fi_peer_rx_entry, addr);
	FIELD(RX, fi_peer_rx_entry, tag);
	FIELD(RX, fi_peer_rx_entry, flags);
	FIELD(RX, fi_peer_rx_entry, context);
	FIELD(RX, fi_peer_rx_entry, count);
	FIELD(RX, fi_peer_rx_entry, desc);
	FIELD(RX, fi_peer_rx_entry, peer_context);
	FIELD(RX, fi_peer_rx_entry, owner_context);
	FIELD(RX, fi_peer_rx_entry, iov);
	SIZE(OWN, fi_ops_srx_owner);
	FIELD(OWN, fi_ops_srx_owner, size);
	FIELD(OWN, fi_ops_srx_owner, get_msg);
	FIELD(OWN, fi_ops_srx_owner, get_tag);
	FIELD(OWN, fi_ops_srx_owner, queue_msg);
	FIELD(OWN, fi_ops_srx_owner, queue_tag);
	FIELD(OWN, fi_ops_srx_owner, free_entry);
	SIZE(lnx_peer_srx_peer, fi_ops_srx_peer);
	FIELD(lnx_peer_srx_peer, fi_ops_srx_peer, size);
	FIELD(lnx_peer_srx_peer, fi_ops_srx_peer, start_msg);
	FIELD(lnx_peer_srx_peer, fi_ops_srx_peer, start_tag);
	FIELD(lnx_peer_srx_peer, fi_ops_srx_peer, discard_msg);
	FIELD(lnx_peer_srx_peer, fi_ops_srx_peer, discard_tag);
	SIZE(lnx_peer_srx, fid_peer_srx);
	FIELD(lnx_peer_srx, fid_peer_srx, ep_fid);
	FIELD(lnx_peer_srx, fid_peer_srx, owner_ops);
	FIELD(lnx_peer_srx, fid_peer_srx, peer_ops);
	SIZE(lnx_peer_srx_context, fi_peer_srx_context);
	FIELD(lnx_peer_srx_context, fi_peer_srx_context, size);
	FIELD(lnx_peer_srx_context, fi_peer_srx_context, srx);
	SIZE(lnx_peer_cq_owner, fi_ops_cq_owner);
	FIELD(lnx_peer_cq_owner, fi_ops_cq_owner, size);
	FIELD(lnx_peer_cq_owner, fi_ops_cq_owner, write);
	FIELD(lnx_peer_cq_owner, fi_ops_cq_owner, writeerr);
	SIZE(lnx_peer_cq, fid_peer_cq);
	FIELD(lnx_peer_cq, fid_peer_cq, fid);
	FIELD(lnx_peer_cq, fid_peer_cq, owner_ops);
	SIZE(lnx_peer_cq_context, fi_peer_cq_context);
	FIELD(lnx_peer_cq_context, fi_peer_cq_context, size);
	FIELD(lnx_peer_cq_context, fi_peer_cq_context, cq);
	check("FI_PEER", LNX_FI_PEER, FI_PEER);
	check("FI_CLASS_SRX_CTX", LNX_FI_CLASS_SRX_CTX, FI_CLASS_SRX_CTX);
	check("FI_CLASS_PEER_CQ", LNX_FI_CLASS_PEER_CQ, FI_CLASS_PEER_CQ);
	check("FI_CLASS_PEER_SRX", LNX_FI_CLASS_PEER_SRX, FI_CLASS_PEER_SRX);
	printf("peer_abi: libfabric %d.%d headers, flavour v%d: %s\n", FI_MAJOR_VERSION,
	       FI_MINOR_VERSION, FLAVOUR, bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
#endif
}
