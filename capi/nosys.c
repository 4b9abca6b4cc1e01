/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The ops table for what lnx endpoints do not offer (collectives):
 * libfabric's inline calls jump through ep->collective without a check,
 * so it must exist and answer -FI_ENOSYS.
 */
#include "lnx_capi.h"
#include <rdma/fi_collective.h>

static ssize_t co_barrier(struct fid_ep *ep, fi_addr_t coll_addr, void *ctx)
{
	return -FI_ENOSYS;
}
static ssize_t co_barrier2(struct fid_ep *ep, fi_addr_t coll_addr, uint64_t flags, void *ctx)
{
	return -FI_ENOSYS;
}
static ssize_t co_broadcast(struct fid_ep *ep, void *buf, size_t count, void *desc,
			    fi_addr_t coll_addr, fi_addr_t root, enum fi_datatype dt,
			    uint64_t flags, void *ctx)
{
	return -FI_ENOSYS;
}
static ssize_t co_alltoall(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   void *result, void *result_desc, fi_addr_t coll_addr,
			   enum fi_datatype dt, uint64_t flags, void *ctx)
{
	return -FI_ENOSYS;
}
static ssize_t co_allreduce(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			    void *result, void *result_desc, fi_addr_t coll_addr,
			    enum fi_datatype dt, enum fi_op op, uint64_t flags, void *ctx)
{
	return -FI_ENOSYS;
}
static ssize_t co_reduce(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
			 void *result_desc, fi_addr_t coll_addr, fi_addr_t root,
			 enum fi_datatype dt, enum fi_op op, uint64_t flags, void *ctx)
{
	return -FI_ENOSYS;
}
static ssize_t co_scatter(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			  void *result, void *result_desc, fi_addr_t coll_addr, fi_addr_t root,
			  enum fi_datatype dt, uint64_t flags, void *ctx)
{
	return -FI_ENOSYS;
}
static ssize_t co_msg(struct fid_ep *ep, const struct fi_msg_collective *msg,
		      struct fi_ioc *resultv, void **result_desc, size_t result_count,
		      uint64_t flags)
{
	return -FI_ENOSYS;
}

struct fi_ops_collective lnx_ep_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = co_barrier,
	.broadcast = co_broadcast,
	.alltoall = co_alltoall,
	.allreduce = co_allreduce,
	.allgather = co_alltoall,
	.reduce_scatter = co_allreduce,
	.reduce = co_reduce,
	.scatter = co_scatter,
	.gather = co_scatter,
	.msg = co_msg,
	.barrier2 = co_barrier2,
};
