package main

import (
	"testing"
	"unsafe"

	"github.com/lnx-go/lnx-go/lnx"
	"github.com/lnx-go/lnx-go/shm"
)

// C's fast paths (idle fi_cq_read, small sends) read and write memory that
// Go reads and writes through its own mirrors of the C structures, and
// write shm ring records that package shm parses: both sides must agree
// to the byte.
func TestSharedLayouts(t *testing.T) {
	var slot shm.TxSlot
	want := cLayout{
		gateSize: lnx.GateSize, gateW: lnx.GateWatchOffset, gateWSize: lnx.GateWatchSize,
		gateReaders: lnx.GateReadersOff, gateSeq: lnx.GateSeqOff, gateWatches: lnx.GateWatches,
		fastSize: lnx.FastSize, fastPeer: lnx.FastPeerOffset, fastPeers: lnx.FastPeers,
		fastRxq: lnx.FastRxqOffset, rxqSize: lnx.FastRxqSize, gatePosts: lnx.GatePostsOff,
		fastRecvs: lnx.FastRecvs, rxqTagged: lnx.QueuedTagged, rxqIov: lnx.QueuedIov,
		gateArm: lnx.GateArmOff, fastArm: lnx.FastArmOff, armSize: lnx.ArmSize,
		armRingSize: lnx.ArmRingSize, armR: lnx.ArmRingOff, armCring: lnx.ArmCringOff,
		armRingHead: lnx.ArmRingHdOff, armRings: lnx.ArmRings,
		slotSize: unsafe.Sizeof(slot), slotFwd: unsafe.Offsetof(slot.FwdHead), slotTail: unsafe.Offsetof(slot.Tail),
		slotState: unsafe.Offsetof(slot.PeerState), peerOpen: shm.PeerOpen,
		recHdr: shm.RecHdrSize, recLine: shm.RecLine, recEager: shm.RecEager,
		recStamp: shm.RecStampOff, recKF: shm.RecKFOff, recTag: shm.RecTagOff,
		recData: shm.RecDataOff, recSize: shm.RecSizeOff,
		hdrTagged: lnx.HdrTagged, hdrData: lnx.HdrData,
	}
	if got := layoutC(); got != want {
		t.Fatalf("C layout\n%+v\ndiffers from Go's\n%+v", got, want)
	}
}
