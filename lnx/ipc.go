// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"encoding/binary"
	"errors"
	"os"

	"github.com/lnx-go/lnx-go/hmem"
	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/logging"
	"github.com/lnx-go/lnx-go/shm"
)

// Device-to-device between processes of one node by IPC handle: a large
// send from one device buffer over shm carries, instead of the data, the
// runtime's IPC handle of the sender's allocation (a small eager message
// flagged hdrIPC). The receiver maps the allocation, lets the runtime copy
// straight into its buffer (device to device, or device to host), unmaps
// it, and answers with an hdrAck message naming the send, which completes
// it: the sender's buffer is in use until then. One copy, by the device,
// where staging costs three.
//
// FI_LNX_HMEM_IPC=0 turns this off (staging is used instead). Sends that
// cannot use it (several iovs, small, to this same process, a runtime
// without IPC) are staged.

const (
	ipcMagic0, ipcMagic1, ipcVersion = 'L', 'I', 1
	ipcFixed                         = 3 + 1 + 4 + 8*4 + 2 // header before the handle
	ipcMaxHandle                     = 256
	// ipcCheckEvery: progress calls between liveness checks of the
	// receivers of unacknowledged IPC sends.
	ipcCheckEvery = 1024
)

// ipcDesc is what an IPC message carries.
type ipcDesc struct {
	iface  hmem.Iface
	device int
	size   uint64 // message length
	offset uint64 // of the data in the exported allocation
	cookie uint64 // sender's send id, echoed in the ack
	srcID  uint64 // sender's shm endpoint id, to route the ack
	handle []byte
}

func (d *ipcDesc) encode() []byte {
	b := make([]byte, ipcFixed+len(d.handle))
	b[0], b[1], b[2], b[3] = ipcMagic0, ipcMagic1, ipcVersion, byte(d.iface)
	binary.LittleEndian.PutUint32(b[4:], uint32(d.device))
	binary.LittleEndian.PutUint64(b[8:], d.size)
	binary.LittleEndian.PutUint64(b[16:], d.offset)
	binary.LittleEndian.PutUint64(b[24:], d.cookie)
	binary.LittleEndian.PutUint64(b[32:], d.srcID)
	binary.LittleEndian.PutUint16(b[40:], uint16(len(d.handle)))
	copy(b[ipcFixed:], d.handle)
	return b
}

var errBadIPC = errors.New("malformed IPC descriptor")

// decodeIPC parses a descriptor a peer wrote; it never trusts lengths.
func decodeIPC(b []byte) (ipcDesc, error) {
	var d ipcDesc
	if len(b) < ipcFixed || b[0] != ipcMagic0 || b[1] != ipcMagic1 || b[2] != ipcVersion {
		return d, errBadIPC
	}
	d.iface = hmem.Iface(b[3])
	d.device = int(binary.LittleEndian.Uint32(b[4:]))
	d.size = binary.LittleEndian.Uint64(b[8:])
	d.offset = binary.LittleEndian.Uint64(b[16:])
	d.cookie = binary.LittleEndian.Uint64(b[24:])
	d.srcID = binary.LittleEndian.Uint64(b[32:])
	n := int(binary.LittleEndian.Uint16(b[40:]))
	if n == 0 || n > ipcMaxHandle || len(b) != ipcFixed+n || !d.iface.IsDevice() {
		return d, errBadIPC
	}
	d.handle = b[ipcFixed:]
	return d, nil
}

// ipcDescFor builds the IPC message for op if it can go by IPC handle.
func (e *Endpoint) ipcDescFor(rt *route, op *Op, k memKind, size, id uint64) ([]byte, bool) {
	if !e.ipcOn || rt.shm == nil || op.N != 1 || !k.isDevice() ||
		size <= uint64(rt.shm.EagerMax()) || rt.shm.PID() == os.Getpid() {
		return nil, false
	}
	r, ok := hmem.Lookup(k.iface)
	if !ok {
		return nil, false
	}
	h, off, err := r.IPCHandle(uintptr(op.IovBuf[0].Ptr))
	if err != nil || len(h) == 0 || len(h) > ipcMaxHandle {
		logging.Debugf(logging.EPData, "device send of %d bytes staged: no IPC handle: %v", size, err)
		return nil, false
	}
	d := ipcDesc{iface: k.iface, device: k.device, size: size, offset: off, cookie: id, srcID: e.shm.ID(), handle: h}
	return d.encode(), true
}

// deliverIPC completes a receive whose data is in a peer's device
// allocation, and acknowledges the send.
func (e *Endpoint) deliverIPC(r *recvCtx, src, size uint64, hdr msgHdr, data []byte, kind uint64, core int) {
	d, err := decodeIPC(data)
	var n uint64
	if err == nil {
		n, err = e.ipcCopy(r, d)
		e.sendAck(d.srcID, d.cookie, err)
	}
	e.complete(r, src, size, n, hdr, kind, core, err)
}

// ipcCopy maps the sender's allocation and copies the message out of it.
func (e *Endpoint) ipcCopy(r *recvCtx, d ipcDesc) (uint64, error) {
	rt, ok := hmem.Lookup(d.iface)
	if !ok {
		return 0, fi.Wrap(fi.ENOSYS, "IPC message of %v memory, but no %v runtime here", d.iface, d.iface)
	}
	base, err := e.ipcMaps.open(rt, d)
	if err != nil {
		return 0, fi.Wrap(fi.EIO, "opening the sender's IPC handle: %v", err)
	}
	p := base + uintptr(d.offset)
	left := d.size
	var n uint64
	for i, b := range r.bufs() {
		c := min(left, b.Len)
		if c == 0 {
			continue
		}
		k := r.kinds[i]
		switch {
		case k.iface == d.iface:
			err = rt.CopyDevice(uintptr(b.Ptr), p, c)
		case !k.isDevice():
			err = rt.CopyToHost(b.bytes()[:c], p)
		default: // another runtime's memory: through the host
			var st []byte
			if st, err = e.stage.get(c); err == nil {
				if err = rt.CopyToHost(st, p); err == nil {
					_, err = scatterKinds([]Buf{b}, []memKind{k}, st)
				}
				e.stage.put(st)
			}
		}
		if err != nil {
			return n, fi.Wrap(fi.EIO, "IPC copy: %v", err)
		}
		p += uintptr(c)
		left -= c
		n += c
	}
	return n, nil
}

// sendAck answers an IPC send with an hdrAck message: Tag is the send id,
// Data the status (0, or the positive fi_errno of the receiver's failure).
func (e *Endpoint) sendAck(srcID, cookie uint64, status error) {
	hdr := shm.Hdr{Flags: hdrAck, Tag: cookie}
	if status != nil {
		hdr.Data = uint64(-fi.Code(status))
	}
	raw, err := e.shm.SourceAddr(srcID)
	var p *shm.Peer
	if err == nil {
		p, err = e.shm.Connect(raw)
	}
	if err != nil {
		logging.Warnf(logging.EPData, "cannot acknowledge an IPC receive to its sender: %v", err)
		return
	}
	e.acks = append(e.acks, pendingAck{p: p, hdr: hdr})
	e.flushAcks()
}

type pendingAck struct {
	p   *shm.Peer
	hdr shm.Hdr
}

// flushAcks sends queued acknowledgements; a full ring keeps them queued.
func (e *Endpoint) flushAcks() {
	for len(e.acks) > 0 {
		a := e.acks[0]
		if _, err := e.shm.Send(a.p, a.hdr, nil, 0); err != nil {
			if errors.Is(err, shm.ErrAgain) {
				return
			}
			logging.Warnf(logging.EPData, "acknowledging an IPC receive: %v", err)
		}
		e.acks = e.acks[1:]
	}
	e.acks = nil
}

// onAck completes an IPC send.
func (e *Endpoint) onAck(hdr msgHdr) {
	var err error
	if hdr.Data != 0 {
		err = fi.Wrap(fi.Errno(hdr.Data), "the receiver failed to copy the device data")
	}
	e.onSendDone(hdr.Tag, err)
}

// checkIPCPeers fails IPC sends whose receiver died before acknowledging.
func (e *Endpoint) checkIPCPeers() {
	if e.ipcTick++; e.ipcTick < ipcCheckEvery {
		return
	}
	e.ipcTick = 0
	for id, s := range e.sends {
		if s.ipc != nil && !s.ipc.Alive() {
			e.onSendDone(id, fi.Wrap(fi.EIO, "receiver died before copying the device data"))
		}
	}
}

// ipcCache keeps the mappings of peers' allocations open: opening an IPC
// handle maps memory (on a real GPU it costs tens of microseconds or more),
// and MPI applications send from the same few buffers again and again.
// Keyed by the sender's endpoint and the handle bytes, which name one
// allocation for as long as it lives; the oldest mapping is closed beyond
// ipcCacheMax, and all of them with the endpoint.
type ipcCache struct {
	m     map[ipcKey]ipcMap
	order []ipcKey
}

type ipcKey struct {
	src    uint64
	handle string
}

type ipcMap struct {
	rt   hmem.Runtime
	base uintptr
}

const ipcCacheMax = 64

func (c *ipcCache) open(rt hmem.Runtime, d ipcDesc) (uintptr, error) {
	k := ipcKey{src: d.srcID, handle: string(d.handle)}
	if m, ok := c.m[k]; ok && m.rt == rt {
		return m.base, nil
	}
	base, err := rt.IPCOpen(d.handle)
	if err != nil {
		return 0, err
	}
	if c.m == nil {
		c.m = map[ipcKey]ipcMap{}
	}
	if len(c.order) >= ipcCacheMax {
		c.closeOne(c.order[0])
		c.order = c.order[1:]
	}
	c.m[k] = ipcMap{rt: rt, base: base}
	c.order = append(c.order, k)
	return base, nil
}

func (c *ipcCache) closeOne(k ipcKey) {
	m, ok := c.m[k]
	if !ok {
		return
	}
	delete(c.m, k)
	if err := m.rt.IPCClose(m.base); err != nil {
		logging.Warnf(logging.EPData, "closing an IPC mapping: %v", err)
	}
}

// closeAll closes every mapping (endpoint close).
func (c *ipcCache) closeAll() {
	for _, k := range c.order {
		c.closeOne(k)
	}
	c.order = nil
}
