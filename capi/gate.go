package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include <stddef.h>
#include "lnx_capi.h"
enum {
	lnx_gate_w_off = offsetof(struct lnx_gate, w),
	lnx_gate_readers_off = offsetof(struct lnx_gate, readers),
	lnx_gate_seq_off = offsetof(struct lnx_gate, seq),
	lnx_fast_peer_off = offsetof(struct lnx_fast, peer),
	lnx_fast_rxq_off = offsetof(struct lnx_fast, rxq),
	lnx_gate_posts_off = offsetof(struct lnx_gate, posts),
	lnx_gate_arm_off = offsetof(struct lnx_gate, arm),
	lnx_fast_arm_off = offsetof(struct lnx_fast, arm),
	lnx_arm_r_off = offsetof(struct lnx_arm, r),
	lnx_arm_cring_off = offsetof(struct lnx_arm, cring),
	lnx_arm_ring_head_off = offsetof(struct lnx_arm_ring, head),
	lnx_txslot_fwd_off = offsetof(struct lnx_txslot, fwd_head),
	lnx_txslot_tail_off = offsetof(struct lnx_txslot, tail),
	lnx_txslot_state_off = offsetof(struct lnx_txslot, peer_state),
	lnx_rec_stamp_off = offsetof(struct lnx_rec, stamp),
	lnx_rec_kf_off = offsetof(struct lnx_rec, kf),
	lnx_rec_tag_off = offsetof(struct lnx_rec, tag),
	lnx_rec_data_off = offsetof(struct lnx_rec, data),
	lnx_rec_size_off = offsetof(struct lnx_rec, size),
};
*/
import "C"

// cLayout is what the C compiler makes of the structures that C and Go
// both read and write (the CQ gate, the fast send and receive paths, shm's ring
// records); the tests compare it with the Go mirrors.
type cLayout struct {
	gateSize, gateW, gateWSize, gateReaders, gateSeq uintptr
	gateWatches                                      int
	fastSize, fastPeer, fastRxq, rxqSize, gatePosts  uintptr
	fastPeers, fastRecvs                             int
	rxqTagged, rxqIov                                uint32
	gateArm, fastArm, armSize, armRingSize, armR     uintptr
	armCring, armRingHead                            uintptr
	armRings                                         int
	slotSize, slotFwd, slotTail, slotState           uintptr
	peerOpen                                         uint64
	recHdr, recLine, recEager                        uintptr
	recStamp, recKF, recTag, recData, recSize        uintptr
	hdrTagged, hdrData                               uint32
}

func layoutC() cLayout {
	return cLayout{
		gateSize: C.sizeof_struct_lnx_gate, gateW: C.lnx_gate_w_off, gateWSize: C.sizeof_struct_lnx_gate_watch,
		gateReaders: C.lnx_gate_readers_off, gateSeq: C.lnx_gate_seq_off, gateWatches: C.LNX_GATE_WATCHES,
		fastSize: C.sizeof_struct_lnx_fast, fastPeer: C.lnx_fast_peer_off, fastPeers: C.LNX_FAST_PEERS,
		fastRxq: C.lnx_fast_rxq_off, rxqSize: C.sizeof_struct_lnx_rxq_entry, gatePosts: C.lnx_gate_posts_off,
		fastRecvs: C.LNX_RXQ, rxqTagged: C.LNX_RXQ_TAGGED, rxqIov: C.LNX_RXQ_IOV,
		gateArm: C.lnx_gate_arm_off, fastArm: C.lnx_fast_arm_off, armSize: C.sizeof_struct_lnx_arm,
		armRingSize: C.sizeof_struct_lnx_arm_ring, armR: C.lnx_arm_r_off, armCring: C.lnx_arm_cring_off,
		armRingHead: C.lnx_arm_ring_head_off, armRings: C.LNX_ARM_RINGS,
		slotSize: C.sizeof_struct_lnx_txslot, slotFwd: C.lnx_txslot_fwd_off, slotTail: C.lnx_txslot_tail_off,
		slotState: C.lnx_txslot_state_off, peerOpen: C.LNX_SHM_PEER_OPEN,
		recHdr: C.LNX_REC_HDR, recLine: C.LNX_REC_LINE, recEager: C.LNX_REC_EAGER,
		recStamp: C.lnx_rec_stamp_off, recKF: C.lnx_rec_kf_off, recTag: C.lnx_rec_tag_off,
		recData: C.lnx_rec_data_off, recSize: C.lnx_rec_size_off,
		hdrTagged: C.LNX_HDR_TAGGED, hdrData: C.LNX_HDR_DATA,
	}
}
