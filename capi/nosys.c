/*
 * Ops tables for what lnx endpoints do not offer (atomics, collectives):
 * libfabric's inline calls jump through ep->atomic and ep->collective
 * without a check, so they must exist and answer -FI_ENOSYS.
 */
#include "lnx_capi.h"
#include <rdma/fi_collective.h>

static ssize_t at_write(struct fid_ep *ep, const void *buf, size_t count, void *desc, fi_addr_t dest,
			uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{ return -FI_ENOSYS; }
static ssize_t at_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count, fi_addr_t dest,
			 uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{ return -FI_ENOSYS; }
static ssize_t at_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags)
{ return -FI_ENOSYS; }
static ssize_t at_inject(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest, uint64_t addr,
			 uint64_t key, enum fi_datatype dt, enum fi_op op)
{ return -FI_ENOSYS; }
static ssize_t at_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
			    void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			    enum fi_op op, void *ctx)
{ return -FI_ENOSYS; }
static ssize_t at_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			     struct fi_ioc *resultv, void **result_desc, size_t result_count, fi_addr_t dest,
			     uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{ return -FI_ENOSYS; }
static ssize_t at_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, struct fi_ioc *resultv,
			       void **result_desc, size_t result_count, uint64_t flags)
{ return -FI_ENOSYS; }
static ssize_t at_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc, const void *compare,
			    void *compare_desc, void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
			    uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{ return -FI_ENOSYS; }
static ssize_t at_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			     const struct fi_ioc *comparev, void **compare_desc, size_t compare_count,
			     struct fi_ioc *resultv, void **result_desc, size_t result_count, fi_addr_t dest,
			     uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{ return -FI_ENOSYS; }
static ssize_t at_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, const struct fi_ioc *comparev,
			       void **compare_desc, size_t compare_count, struct fi_ioc *resultv,
			       void **result_desc, size_t result_count, uint64_t flags)
{ return -FI_ENOSYS; }
static int at_valid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count) { return -FI_ENOSYS; }

struct fi_ops_atomic lnx_ep_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic), .write = at_write, .writev = at_writev,
	.writemsg = at_writemsg, .inject = at_inject, .readwrite = at_readwrite,
	.readwritev = at_readwritev, .readwritemsg = at_readwritemsg, .compwrite = at_compwrite,
	.compwritev = at_compwritev, .compwritemsg = at_compwritemsg, .writevalid = at_valid,
	.readwritevalid = at_valid, .compwritevalid = at_valid,
};

static ssize_t co_barrier(struct fid_ep *ep, fi_addr_t coll_addr, void *ctx) { return -FI_ENOSYS; }
static ssize_t co_barrier2(struct fid_ep *ep, fi_addr_t coll_addr, uint64_t flags, void *ctx) { return -FI_ENOSYS; }
static ssize_t co_broadcast(struct fid_ep *ep, void *buf, size_t count, void *desc, fi_addr_t coll_addr,
			    fi_addr_t root, enum fi_datatype dt, uint64_t flags, void *ctx)
{ return -FI_ENOSYS; }
static ssize_t co_alltoall(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
			   void *result_desc, fi_addr_t coll_addr, enum fi_datatype dt, uint64_t flags, void *ctx)
{ return -FI_ENOSYS; }
static ssize_t co_allreduce(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
			    void *result_desc, fi_addr_t coll_addr, enum fi_datatype dt, enum fi_op op,
			    uint64_t flags, void *ctx)
{ return -FI_ENOSYS; }
static ssize_t co_reduce(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
			 void *result_desc, fi_addr_t coll_addr, fi_addr_t root, enum fi_datatype dt, enum fi_op op,
			 uint64_t flags, void *ctx)
{ return -FI_ENOSYS; }
static ssize_t co_scatter(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
			  void *result_desc, fi_addr_t coll_addr, fi_addr_t root, enum fi_datatype dt,
			  uint64_t flags, void *ctx)
{ return -FI_ENOSYS; }
static ssize_t co_msg(struct fid_ep *ep, const struct fi_msg_collective *msg, struct fi_ioc *resultv,
		      void **result_desc, size_t result_count, uint64_t flags)
{ return -FI_ENOSYS; }

struct fi_ops_collective lnx_ep_collective_ops = {
	.size = sizeof(struct fi_ops_collective), .barrier = co_barrier, .broadcast = co_broadcast,
	.alltoall = co_alltoall, .allreduce = co_allreduce, .allgather = co_alltoall,
	.reduce_scatter = co_allreduce, .reduce = co_reduce, .scatter = co_scatter, .gather = co_scatter,
	.msg = co_msg, .barrier2 = co_barrier2,
};
