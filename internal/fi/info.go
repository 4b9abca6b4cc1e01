// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package fi

// Info is a Go copy of struct fi_info and its attribute structs, limited to
// the fields lnx reads or reports. Strings are empty where C has NULL.
type Info struct {
	Caps, Mode uint64
	AddrFormat uint32
	HasTx      bool // tx_attr present (hints may omit attrs)
	HasRx      bool
	HasEP      bool
	HasDomain  bool
	HasFabric  bool
	// Addresses in hints: SrcAddrLen and DestAddrLen as the caller gave
	// them (HasSrcAddr/HasDestAddr: the pointer was non-NULL). SrcAddr and
	// DestAddr hold the bytes (nil: none, or a length no address has).
	HasSrcAddr        bool
	SrcAddrLen        uint64
	HasDestAddr       bool
	DestAddrLen       uint64
	SrcAddr, DestAddr []byte
	Tx                TxAttr
	Rx                RxAttr
	EP                EPAttr
	Domain            DomainAttr
	Fabric            FabricAttr
}

type TxAttr struct {
	Caps, Mode, OpFlags, MsgOrder, CompOrder uint64
	InjectSize, Size, IovLimit, RmaIovLimit  uint64
}

type RxAttr struct {
	Caps, Mode, OpFlags, MsgOrder, CompOrder uint64
	TotalBufferedRecv, Size, IovLimit        uint64
}

type EPAttr struct {
	Type               int
	Protocol, ProtoVer uint32
	MaxMsgSize         uint64
	MsgPrefixSize      uint64
	MaxOrderRawSize    uint64
	MaxOrderWarSize    uint64
	MaxOrderWawSize    uint64
	MemTagFormat       uint64
	TxCtxCnt, RxCtxCnt uint64
}

type DomainAttr struct {
	Name                                 string
	Threading, ControlProgress, DataProg int
	ResourceMgmt, AVType                 int
	MRMode                               int
	MRKeySize, CQDataSize, CQCnt, EPCnt  uint64
	TxCtxCnt, RxCtxCnt                   uint64
	MaxEPTxCtx, MaxEPRxCtx               uint64
	MaxEPStxCtx, MaxEPSrxCtx             uint64
	MRIovLimit                           uint64
	Caps, Mode                           uint64
	MRCnt                                uint64
	CntrCnt                              uint64
}

type FabricAttr struct {
	Name, ProvName string
	ProvVersion    uint32
	APIVersion     uint32
}

// Version packs major.minor the way FI_VERSION does.
func Version(major, minor uint32) uint32 { return major<<16 | minor }
