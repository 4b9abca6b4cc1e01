// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package fi

// Capability and operation flags (rdma/fabric.h).
const (
	MSG             uint64 = 1 << 1
	RMA             uint64 = 1 << 2
	TAGGED          uint64 = 1 << 3
	ATOMIC          uint64 = 1 << 4
	MULTICAST       uint64 = 1 << 5
	COLLECTIVE      uint64 = 1 << 6
	READ            uint64 = 1 << 8
	WRITE           uint64 = 1 << 9
	RECV            uint64 = 1 << 10
	SEND            uint64 = 1 << 11
	REMOTE_READ     uint64 = 1 << 12
	REMOTE_WRITE    uint64 = 1 << 13
	MULTI_RECV      uint64 = 1 << 16
	REMOTE_CQ_DATA  uint64 = 1 << 17
	MORE            uint64 = 1 << 18
	PEEK            uint64 = 1 << 19
	TRIGGER         uint64 = 1 << 20
	FENCE           uint64 = 1 << 21
	COMPLETION      uint64 = 1 << 24
	INJECT          uint64 = 1 << 25
	INJECT_COMPLETE uint64 = 1 << 26
	TRANSMIT_COMPL  uint64 = 1 << 27
	DELIVERY_COMPL  uint64 = 1 << 28
	MATCH_COMPLETE  uint64 = 1 << 31
	AV_USER_ID      uint64 = 1 << 41
	PEER            uint64 = 1 << 43
	HMEM            uint64 = 1 << 47
	VARIABLE_MSG    uint64 = 1 << 48
	SOURCE_ERR      uint64 = 1 << 50
	LOCAL_COMM      uint64 = 1 << 51
	REMOTE_COMM     uint64 = 1 << 52
	SHARED_AV       uint64 = 1 << 53
	NUMERICHOST     uint64 = 1 << 55
	RMA_EVENT       uint64 = 1 << 56
	SYNC_ERR        uint64 = 1 << 58 // fi_av_insert: per-address errors in context
	SOURCE          uint64 = 1 << 57
	NAMED_RX_CTX    uint64 = 1 << 58
	DIRECTED_RECV   uint64 = 1 << 59
	CLAIM           uint64 = 1 << 59
	DISCARD         uint64 = 1 << 58
)

// Mode bits.
const (
	CONTEXT        uint64 = 1 << 59
	MSG_PREFIX     uint64 = 1 << 58
	ASYNC_IOV      uint64 = 1 << 57
	RX_CQ_DATA     uint64 = 1 << 56
	LOCAL_MR       uint64 = 1 << 55
	CONTEXT2       uint64 = 1 << 52
	BUFFERED_RECV  uint64 = 1 << 51
	ADDR_UNSPEC    uint64 = ^uint64(0)
	ADDR_NOTAVAIL  uint64 = ^uint64(0)
	ORDER_NONE     uint64 = 0
	ORDER_SAS      uint64 = 1 << 8
	ORDER_STRICT   uint64 = 0x1ff
	ORDER_DATA     uint64 = 1 << 16
	HMEM_SYSTEM           = 0
	HMEM_CUDA             = 1
	HMEM_ROCR             = 2
	HMEM_ZE               = 3
	HMEM_NEURON           = 4
	HMEM_SYNAPSEAI        = 5
)

// mr_mode bits.
const (
	MR_UNSPEC    = 0
	MR_BASIC     = 1
	MR_SCALABLE  = 2
	MR_LOCAL     = 1 << 2
	MR_RAW       = 1 << 3
	MR_VIRT_ADDR = 1 << 4
	MR_ALLOCATED = 1 << 5
	MR_PROV_KEY  = 1 << 6
	MR_MMU_NOTIF = 1 << 7
	MR_RMA_EVENT = 1 << 8
	MR_ENDPOINT  = 1 << 9
	MR_HMEM      = 1 << 10
)

// Enums.
const (
	FORMAT_UNSPEC = 0
	ADDR_STR      = 9

	AV_UNSPEC = 0
	AV_MAP    = 1
	AV_TABLE  = 2

	PROGRESS_UNSPEC = 0
	PROGRESS_AUTO   = 1
	PROGRESS_MANUAL = 2

	THREAD_UNSPEC     = 0
	THREAD_SAFE       = 1
	THREAD_FID        = 2
	THREAD_DOMAIN     = 3
	THREAD_COMPLETION = 4
	THREAD_ENDPOINT   = 5

	RM_UNSPEC   = 0
	RM_DISABLED = 1
	RM_ENABLED  = 2

	EP_UNSPEC = 0
	EP_MSG    = 1
	EP_DGRAM  = 2
	EP_RDM    = 3

	CQ_FORMAT_UNSPEC  = 0
	CQ_FORMAT_CONTEXT = 1
	CQ_FORMAT_MSG     = 2
	CQ_FORMAT_DATA    = 3
	CQ_FORMAT_TAGGED  = 4

	WAIT_NONE   = 0
	WAIT_UNSPEC = 1
	WAIT_FD     = 3
)

// API versions (FI_VERSION(major, minor)).
const (
	V1_18 = 1<<16 | 18
	V2_0  = 2 << 16
)

// Bits that libfabric 2.0 reassigned (capi/include/lnx_abi2.h): which
// meaning applies follows the API version the application asked for.
// The MR flags keep their 1.x bits in fi_mr_regattr's flags.
const (
	TAGGED_DIRECTED_RECV uint64 = 1 << 45 // cap, API >= 2.0
	TAGGED_MULTI_RECV    uint64 = 1 << 46 // cap, API >= 2.0
	EXACT_DIRECTED_RECV  uint64 = 1 << 48 // cap, API >= 2.0 (FI_VARIABLE_MSG before)
	HMEM_HOST_ALLOC      uint64 = 1 << 45 // fi_mr_regattr flag
	HMEM_DEVICE_ONLY     uint64 = 1 << 46 // fi_mr_regattr flag
	MR_DMABUF            uint64 = 1 << 40 // fi_mr_regattr flag, API >= 1.20

	PROGRESS_CONTROL_UNIFIED = 3 // control progress, API >= 2.0
)
