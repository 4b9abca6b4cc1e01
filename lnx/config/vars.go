// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package config

import "strings"

// The variables, by their environment names.
const (
	Links              = "FI_LNX_PROV_LINKS"
	DisableShm         = "FI_LNX_DISABLE_SHM"
	NodeID             = "FI_LNX_NODE_ID"
	MultiRailSelection = "FI_LNX_MULTI_RAIL_SELECTION"
	NetAddrFormat      = "FI_LNX_NET_ADDR_FORMAT"
	DumpStats          = "FI_LNX_DUMP_STATS"
	UnexpectedMax      = "FI_LNX_UNEXPECTED_MAX"
	PeerTimeout        = "FI_LNX_PEER_TIMEOUT"
	NetCredits         = "FI_LNX_NET_CREDITS"
	NetRead            = "FI_LNX_NET_READ"
	FastSend           = "FI_LNX_FAST_SEND"
	FastRndv           = "FI_LNX_FAST_RNDV"
	FastRecv           = "FI_LNX_FAST_RECV"
	ArmRecv            = "FI_LNX_ARM_RECV"
	RearmRecv          = "FI_LNX_REARM_RECV"
	HmemIPC            = "FI_LNX_HMEM_IPC"
	MRCacheMax         = "FI_LNX_MR_CACHE_MAX"
	CudaLib            = "FI_LNX_CUDA_LIB"
	RocmLib            = "FI_LNX_ROCM_LIB"
	WaitSleepMax       = "FI_LNX_WAIT_SLEEP_MAX"
	NativeRMA          = "FI_LNX_NATIVE_RMA"
	PeerAPI            = "FI_LNX_PEER_API"
	CheckSendBuffers   = "FI_LNX_CHECK_SEND_BUFFERS"
)

// ParamType says how `fi_info -e` shows a variable (capi maps it to
// libfabric's enum fi_param_type).
type ParamType int

const (
	ParamString ParamType = iota // FI_PARAM_STRING
	ParamInt                     // FI_PARAM_INT
	ParamBool                    // FI_PARAM_BOOL
	ParamSize                    // FI_PARAM_SIZE_T
)

// Var is one variable as fi_param_define sees it.
type Var struct {
	Env  string    // FI_LNX_...
	Type ParamType // what `fi_info -e` shows
	Help string
}

// Param is the name fi_param_define takes: the variable without FI_LNX_,
// in lower case (libfabric adds the prefix back).
func (v Var) Param() string { return strings.ToLower(strings.TrimPrefix(v.Env, "FI_LNX_")) }

// Vars is every variable lnx reads, in the order `fi_info -e` lists them.
// docs/lnx.7.md describes the same list (docs/mangen's tests check).
var Vars = []Var{
	{Links, ParamString, "Core providers to link: group['|'group], group = prov['+'prov[':'dom[,dom]]]. " +
		"'shm' is lnx's own intra-node core. Default: shm plus the first network provider found."},
	{DisableShm, ParamBool, "Drop the shm core from every link (all peers go over the network core)."},
	{NodeID, ParamString, "Node identity used to decide which peers are local (default: hostname and boot id)."},
	{MultiRailSelection, ParamString, "Rail selection over several domains of one core: PER_PEER (each peer keeps one rail) " +
		"or PER_MSG (messages take the rails in turn; the receiver restores their order)."},
	{NetAddrFormat, ParamString, "inet or inet6: the address family of a network core that offers both (default: its first)."},
	{DumpStats, ParamBool, "Log per-core traffic counters when an endpoint closes."},
	{UnexpectedMax, ParamSize, "Bytes of unexpected messages buffered per endpoint before senders are held back " +
		"(k/m/g suffixes; default 64m)."},
	{PeerTimeout, ParamString, "How long the network core may fail to reach a peer before lnx checks " +
		"that its process is gone (Go duration, default 10s, at least 500ms)."},
	{NetCredits, ParamInt, "Messages a sender may have in flight to one network receiver before it waits for " +
		"credits (1-255, default 64; 0 turns flow control off)."},
	{NativeRMA, ParamBool, "Writes and reads toward network peers go as the network core's own RMA " +
		"where it can carry them (default: on; off: the target executes every one-sided operation)."},
	{PeerAPI, ParamBool, "Under libfabric 2.0 to 2.2, drive a network core that accepts a peer SRX and peer CQ " +
		"(shm as fi_shm, tcp;ofi_rxm) through the peer API instead of lnx's transport adapter (default: on; " +
		"off: every network core on the adapter, with lnx's credits)."},
	{CheckSendBuffers, ParamBool, "On the peer API path, check that a send buffer over a page is mapped over its " +
		"length (one msync) before the core reads it later, so that a short buffer fails the send at the call " +
		"(default: on). Off, the core fails it: an error completion over shm with CMA, a broken connection over " +
		"tcp;ofi_rxm, a crash where the core copies it in this process."},
	{NetRead, ParamBool, "Large network sends of one buffer are read by the receiver (RMA) where the core can (default: on)."},
	{FastSend, ParamBool, "Write small sends to peers on this node from C, without calling into Go (default: on)."},
	{FastRndv, ParamBool, "With FI_LNX_FAST_SEND, C also posts shm rendezvous sends (above the eager limit, up to 4 MiB) " +
		"while receives are armed, and reaps their acknowledgements in fi_cq_read (default: on)."},
	{FastRecv, ParamBool, "Queue receives into one host buffer in C; Go posts them in order when it next runs (default: on)."},
	{ArmRecv, ParamBool, "With one receive posted and nothing unexpected, complete small shm messages, and network " +
		"messages of one peer, in C (default: on)."},
	{RearmRecv, ParamBool, "Once C completed an armed receive, arm the next one posted in C too (default: on)."},
	{HmemIPC, ParamBool, "Move large device buffers between processes of one node by IPC handle; " +
		"0 stages them through host memory (default: on)."},
	{MRCacheMax, ParamSize, "Idle network-core registrations kept per domain for reuse, and per endpoint of large sends' " +
		"buffers on cores that pin nothing (default 1024; 0 closes them with their MR or send)."},
	{CudaLib, ParamString, "CUDA driver library to load instead of libcuda.so.1; 'none' disables CUDA."},
	{RocmLib, ParamString, "HIP runtime library to load instead of libamdhip64.so; 'none' disables ROCm."},
	{WaitSleepMax, ParamString, "Longest sleep between two progress polls of a blocked wait (fi_cq_sread, fi_cntr_wait, " +
		"fi_wait, an FI_GETWAIT fd after fi_trywait); Go duration, default 1ms, 10us to 100ms."},
}
