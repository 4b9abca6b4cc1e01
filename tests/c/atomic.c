/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * FI_ATOMIC: every operation MPI uses on every integer and floating type
 * checked against a model (fetched values and the target's memory),
 * compare-and-swap family, fi_query_atomic / fi_atomicvalid, refusals, and
 * atomicity under contention: 4 processes x 10,000 fetch-adds on one
 * counter end at exactly 40,000, and the fetched values are exactly
 * 0..39,999.
 *
 * Usage: atomic <shm|link|tcp|mixed|LINKS [distinct]>
 *   mixed: 4 processes, 2 per simulated node (shm and tcp initiators at
 *          once on the same counter)
 */
#include "rma_common.h"

#define NELEM 4

/* ---- the model ------------------------------------------------------------ */

#define MODEL(T, NAME, INTEGER)                                         \
	static void NAME(int op, T *m, const T *v, const T *c)          \
	{                                                               \
		for (int i = 0; i < NELEM; i++) {                       \
			T x = m[i], y = v ? v[i] : 0, z = c ? c[i] : 0; \
			switch (op) {                                   \
			case FI_MIN:                                    \
				x = y < x ? y : x;                      \
				break;                                  \
			case FI_MAX:                                    \
				x = y > x ? y : x;                      \
				break;                                  \
			case FI_SUM:                                    \
				x = (T)(x + y);                         \
				break;                                  \
			case FI_PROD:                                   \
				x = (T)(x * y);                         \
				break;                                  \
			case FI_LOR:                                    \
				x = (x != 0) || (y != 0);               \
				break;                                  \
			case FI_LAND:                                   \
				x = (x != 0) && (y != 0);               \
				break;                                  \
			case FI_LXOR:                                   \
				x = (x != 0) != (y != 0);               \
				break;                                  \
			case FI_ATOMIC_READ:                            \
				break;                                  \
			case FI_ATOMIC_WRITE:                           \
				x = y;                                  \
				break;                                  \
			case FI_CSWAP:                                  \
				if (z == x)                             \
					x = y;                          \
				break;                                  \
			case FI_CSWAP_NE:                               \
				if (z != x)                             \
					x = y;                          \
				break;                                  \
			case FI_CSWAP_LE:                               \
				if (z <= x)                             \
					x = y;                          \
				break;                                  \
			case FI_CSWAP_LT:                               \
				if (z < x)                              \
					x = y;                          \
				break;                                  \
			case FI_CSWAP_GE:                               \
				if (z >= x)                             \
					x = y;                          \
				break;                                  \
			case FI_CSWAP_GT:                               \
				if (z > x)                              \
					x = y;                          \
				break;                                  \
			default:                                        \
				INTEGER(op, x, y, z);                   \
			}                                               \
			m[i] = x;                                       \
		}                                                       \
	}
#define BITWISE(op, x, y, z)            \
	switch (op) {                   \
	case FI_BOR:                    \
		x |= y;                 \
		break;                  \
	case FI_BAND:                   \
		x &= y;                 \
		break;                  \
	case FI_BXOR:                   \
		x ^= y;                 \
		break;                  \
	case FI_MSWAP:                  \
		x = (y & z) | (x & ~z); \
		break;                  \
	}
#define NOBITWISE(op, x, y, z) FAIL("op %d on a floating type", op)

MODEL(int8_t, model_i8, BITWISE)
MODEL(uint8_t, model_u8, BITWISE)
MODEL(int16_t, model_i16, BITWISE)
MODEL(uint16_t, model_u16, BITWISE)
MODEL(int32_t, model_i32, BITWISE)
MODEL(uint32_t, model_u32, BITWISE)
MODEL(int64_t, model_i64, BITWISE)
MODEL(uint64_t, model_u64, BITWISE)
MODEL(float, model_f32, NOBITWISE)
MODEL(double, model_f64, NOBITWISE)

struct dtype {
	enum fi_datatype dt;
	size_t size;
	int floating;
	const char *name;
};

static const struct dtype k_types[] = {
	{ FI_INT8, 1, 0, "int8" },     { FI_UINT8, 1, 0, "uint8" },   { FI_INT16, 2, 0, "int16" },
	{ FI_UINT16, 2, 0, "uint16" }, { FI_INT32, 4, 0, "int32" },   { FI_UINT32, 4, 0, "uint32" },
	{ FI_INT64, 8, 0, "int64" },   { FI_UINT64, 8, 0, "uint64" }, { FI_FLOAT, 4, 1, "float" },
	{ FI_DOUBLE, 8, 1, "double" },
};
#define NTYPES (sizeof(k_types) / sizeof(k_types[0]))

static void model(const struct dtype *t, int op, void *m, const void *v, const void *c)
{
	switch (t->dt) {
	case FI_INT8:
		model_i8(op, m, v, c);
		break;
	case FI_UINT8:
		model_u8(op, m, v, c);
		break;
	case FI_INT16:
		model_i16(op, m, v, c);
		break;
	case FI_UINT16:
		model_u16(op, m, v, c);
		break;
	case FI_INT32:
		model_i32(op, m, v, c);
		break;
	case FI_UINT32:
		model_u32(op, m, v, c);
		break;
	case FI_INT64:
		model_i64(op, m, v, c);
		break;
	case FI_UINT64:
		model_u64(op, m, v, c);
		break;
	case FI_FLOAT:
		model_f32(op, m, v, c);
		break;
	case FI_DOUBLE:
		model_f64(op, m, v, c);
		break;
	default:
		FAIL("type %d", t->dt);
	}
}

/* Values of type t from small integers (exact in every type). */
static void values(const struct dtype *t, void *out, const int *src)
{
	for (int i = 0; i < NELEM; i++) {
		switch (t->dt) {
		case FI_INT8:
			((int8_t *)out)[i] = (int8_t)src[i];
			break;
		case FI_UINT8:
			((uint8_t *)out)[i] = (uint8_t)src[i];
			break;
		case FI_INT16:
			((int16_t *)out)[i] = (int16_t)src[i];
			break;
		case FI_UINT16:
			((uint16_t *)out)[i] = (uint16_t)src[i];
			break;
		case FI_INT32:
			((int32_t *)out)[i] = src[i];
			break;
		case FI_UINT32:
			((uint32_t *)out)[i] = (uint32_t)src[i];
			break;
		case FI_INT64:
			((int64_t *)out)[i] = src[i];
			break;
		case FI_UINT64:
			((uint64_t *)out)[i] = (uint64_t)(int64_t)src[i];
			break;
		case FI_FLOAT:
			((float *)out)[i] = (float)src[i];
			break;
		case FI_DOUBLE:
			((double *)out)[i] = src[i];
			break;
		default:
			FAIL("type %d", t->dt);
		}
	}
}

static int op_for_floats(int op)
{
	switch (op) {
	case FI_LOR:
	case FI_LAND:
	case FI_LXOR:
	case FI_BOR:
	case FI_BAND:
	case FI_BXOR:
	case FI_MSWAP:
		return 0;
	}
	return 1;
}

static const int k_init[NELEM] = { 5, -3, 0, 12 };
static const int k_operand[NELEM] = { 3, 7, 0, -2 };
static const int k_compare[NELEM] = { 5, 1, 0, 100 };

/* Sets the target's element block to k_init with an RMA write. */
static void remote_set(struct peer *p, struct rwin *r, const struct dtype *t, void *scratch)
{
	values(t, scratch, k_init);
	POST(p->l.cq, fi_write(p->l.ep, scratch, NELEM * t->size, NULL, peer_addr(p), r->addr,
			       r->key, scratch));
	wait_op(p, scratch, FI_RMA | FI_WRITE, "reset");
}

static void remote_check(struct peer *p, struct rwin *r, const struct dtype *t, const void *want,
			 const char *what)
{
	uint8_t got[64];
	POST(p->l.cq,
	     fi_read(p->l.ep, got, NELEM * t->size, NULL, peer_addr(p), r->addr, r->key, got));
	wait_op(p, got, FI_RMA | FI_READ, "read back");
	EXPECT(!memcmp(got, want, NELEM * t->size), "%s: the target holds other values", what);
}

static void ops_a(struct peer *p, void *arg)
{
	struct rwin r = win_learn(p, 1);
	uint8_t init[64], v[64], c[64], want[64], res[64], scratch[64];
	int checked = 0;
	for (size_t ti = 0; ti < NTYPES; ti++) {
		const struct dtype *t = &k_types[ti];
		for (int op = FI_MIN; op <= FI_MSWAP; op++) {
			int cmp = op >= FI_CSWAP;
			if (t->floating && !op_for_floats(op))
				continue;
			char what[96];
			snprintf(what, sizeof(what), "%s op %d", t->name, op);
			size_t count = 0;
			int q = cmp ? fi_compare_atomicvalid(p->l.ep, t->dt, op, &count) :
				      fi_fetch_atomicvalid(p->l.ep, t->dt, op, &count);
			EXPECT(q == 0 && count >= NELEM, "%s: valid -> %d, count %zu", what, q,
			       count);
			values(t, init, k_init);
			values(t, v, k_operand);
			values(t, c, k_compare);
			memcpy(want, init, sizeof(want));
			model(t, op, want, op == FI_ATOMIC_READ ? NULL : v, cmp ? c : NULL);
			remote_set(p, &r, t, scratch);
			memset(res, 0xa5, sizeof(res));
			if (cmp)
				POST(p->l.cq, fi_compare_atomic(p->l.ep, v, NELEM, NULL, c, NULL,
								res, NULL, peer_addr(p), r.addr,
								r.key, t->dt, op, res));
			else
				POST(p->l.cq,
				     fi_fetch_atomic(p->l.ep, op == FI_ATOMIC_READ ? NULL : v,
						     NELEM, NULL, res, NULL, peer_addr(p), r.addr,
						     r.key, t->dt, op, res));
			wait_op(p, res, FI_ATOMIC | FI_READ, what);
			EXPECT(!memcmp(res, init, NELEM * t->size),
			       "%s: fetched values are not the old ones", what);
			remote_check(p, &r, t, want, what);
			checked++;
			/* The non-fetching form of the same op. */
			if (cmp || op == FI_ATOMIC_READ)
				continue;
			remote_set(p, &r, t, scratch);
			POST(p->l.cq, fi_atomic(p->l.ep, v, NELEM, NULL, peer_addr(p), r.addr,
						r.key, t->dt, op, v));
			wait_op(p, v, FI_ATOMIC | FI_WRITE, what);
			remote_check(p, &r, t, want, what);
			/* And the inject form. */
			remote_set(p, &r, t, scratch);
			POST(p->l.cq, fi_inject_atomic(p->l.ep, v, NELEM, peer_addr(p), r.addr,
						       r.key, t->dt, op));
			memset(v, 0, sizeof(v));
			remote_check(p, &r, t, want,
				     what); /* the read follows the inject at the target */
		}
	}
	note("%d (type, op) pairs checked", checked);
	EXPECT(checked == 8 * 19 + 2 * 12, "checked %d pairs", checked);
	barrier(p);
}

static void target_b(struct peer *p, void *arg)
{
	struct win w;
	win_reg(p, &w, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE, 31);
	win_tell(p, 0, &w);
	barrier(p);
	win_close(&w);
}

/* fi_query_atomic and fi_atomicvalid tell the truth: what ops_a checked
 * is valid; the rest is -FI_EOPNOTSUPP. */
static void query_a(struct peer *p, void *arg)
{
	struct fi_atomic_attr a;
	size_t count;
	CHECK(fi_query_atomic(p->l.domain, FI_UINT64, FI_SUM, &a, 0));
	EXPECT(a.size == 8 && a.count >= 1, "uint64 sum: size %zu count %zu", a.size, a.count);
	CHECK(fi_query_atomic(p->l.domain, FI_INT16, FI_MIN, &a, FI_FETCH_ATOMIC));
	EXPECT(a.size == 2, "int16 size %zu", a.size);
	CHECK(fi_query_atomic(p->l.domain, FI_DOUBLE, FI_CSWAP, &a, FI_COMPARE_ATOMIC));
	EXPECT(a.size == 8, "double size %zu", a.size);
	CHECK(fi_query_atomic(p->l.domain, FI_UINT32, FI_ATOMIC_READ, &a, FI_FETCH_ATOMIC));
	CHECK_RC(fi_query_atomic(p->l.domain, FI_UINT32, FI_ATOMIC_READ, &a, 0), -FI_EOPNOTSUPP);
	CHECK_RC(fi_query_atomic(p->l.domain, FI_UINT64, FI_CSWAP, &a, 0), -FI_EOPNOTSUPP);
	CHECK_RC(fi_query_atomic(p->l.domain, FI_UINT64, FI_SUM, &a, FI_COMPARE_ATOMIC),
		 -FI_EOPNOTSUPP);
	CHECK_RC(fi_query_atomic(p->l.domain, FI_DOUBLE, FI_BOR, &a, 0), -FI_EOPNOTSUPP);
	CHECK_RC(fi_query_atomic(p->l.domain, FI_FLOAT, FI_MSWAP, &a, FI_COMPARE_ATOMIC),
		 -FI_EOPNOTSUPP);
	CHECK_RC(fi_query_atomic(p->l.domain, FI_DOUBLE_COMPLEX, FI_SUM, &a, 0), -FI_EOPNOTSUPP);
	CHECK_RC(fi_query_atomic(p->l.domain, FI_LONG_DOUBLE, FI_SUM, &a, 0), -FI_EOPNOTSUPP);
	CHECK_RC(fi_atomicvalid(p->l.ep, FI_INT8, FI_BXOR, &count), 0);
	EXPECT(count >= 1, "count %zu", count);
	CHECK_RC(fi_atomicvalid(p->l.ep, FI_FLOAT, FI_LXOR, &count), -FI_EOPNOTSUPP);
	/* A count beyond what the query said is refused at once. */
	CHECK(fi_atomicvalid(p->l.ep, FI_UINT8, FI_SUM, &count));
	uint8_t *big = xmalloc(count + 1);
	memset(big, 1, count + 1);
	struct rwin r = win_learn(p, 1);
	CHECK_RC(fi_atomic(p->l.ep, big, count + 1, NULL, peer_addr(p), r.addr, r.key, FI_UINT8,
			   FI_SUM, big),
		 -FI_EINVAL);
	/* The largest count works. */
	POST(p->l.cq, fi_atomic(p->l.ep, big, count, NULL, peer_addr(p), r.addr, r.key, FI_UINT8,
				FI_SUM, big));
	wait_op(p, big, FI_ATOMIC | FI_WRITE, "largest count");
	uint8_t *back = xmalloc(count);
	POST(p->l.cq, fi_read(p->l.ep, back, count, NULL, peer_addr(p), r.addr, r.key, back));
	wait_op(p, back, FI_RMA | FI_READ, "read back");
	for (size_t i = 0; i < count; i++)
		EXPECT(back[i] == 1, "element %zu is %u", i, back[i]);
	free(big);
	free(back);
	barrier(p);
}

/* Refusals: the target's memory keeps every byte. */
static void bad_a(struct peer *p, void *arg)
{
	struct rwin ro = win_learn(p, 1);
	uint64_t v[2] = { 1, 1 }, res[2];
	int ctx[4];
	POST(p->l.cq, fi_atomic(p->l.ep, v, 1, NULL, peer_addr(p), ro.addr, ro.key, FI_UINT64,
				FI_SUM, &ctx[0]));
	wait_err(p, &ctx[0], FI_EACCES, FI_ATOMIC, "sum on a read-only MR");
	POST(p->l.cq, fi_fetch_atomic(p->l.ep, v, 1, NULL, res, NULL, peer_addr(p), ro.addr,
				      ro.key + 999, FI_UINT64, FI_SUM, &ctx[1]));
	wait_err(p, &ctx[1], FI_EKEYREJECTED, FI_ATOMIC, "unknown key");
	POST(p->l.cq,
	     fi_fetch_atomic(p->l.ep, NULL, 2, NULL, res, NULL, peer_addr(p), ro.addr + ro.len - 8,
			     ro.key, FI_UINT64, FI_ATOMIC_READ, &ctx[2]));
	wait_err(p, &ctx[2], FI_EINVAL, FI_ATOMIC, "past the end");
	/* A read-only MR serves FI_ATOMIC_READ. */
	POST(p->l.cq, fi_fetch_atomic(p->l.ep, NULL, 1, NULL, res, NULL, peer_addr(p), ro.addr,
				      ro.key, FI_UINT64, FI_ATOMIC_READ, &ctx[3]));
	wait_op(p, &ctx[3], FI_ATOMIC | FI_READ, "atomic read");
	EXPECT(res[0] == 0x0123456789abcdefull, "atomic read got %#llx",
	       (unsigned long long)res[0]);
	barrier(p);
}

static void bad_b(struct peer *p, void *arg)
{
	struct win w;
	win_reg(p, &w, 64, FI_REMOTE_READ, 32);
	for (int i = 0; i < 8; i++)
		((uint64_t *)w.buf)[i] = 0x0123456789abcdefull;
	win_tell(p, 0, &w);
	barrier(p);
	for (int i = 0; i < 8; i++)
		EXPECT(((uint64_t *)w.buf)[i] == 0x0123456789abcdefull, "element %d touched", i);
	win_close(&w);
}

/* ---- contention ------------------------------------------------------------ */

#define NADD   10000
#define WINDOW 16

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Every rank (the owner too, on its own window) fetch-adds 1 NADD times,
 * WINDOW at a time, to rank 0's counter. */
static void contend(struct peer *p, void *arg)
{
	struct win w = { 0 };
	struct rwin r;
	if (p->rank == 0) {
		win_reg(p, &w, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE, 40);
		r = (struct rwin){ w.key, w.addr, w.len };
		for (int k = 1; k < p->nranks; k++)
			win_tell(p, k, &w);
	} else {
		r = win_learn(p, 0);
	}
	uint64_t *got = xmalloc(NADD * sizeof(uint64_t));
	uint64_t one = 1;
	int posted = 0, done = 0;
	while (done < NADD) {
		while (posted < NADD && posted - done < WINDOW) {
			ssize_t ret = fi_fetch_atomic(p->l.ep, &one, 1, NULL, &got[posted], NULL,
						      p->addr[0], r.addr, r.key, FI_UINT64, FI_SUM,
						      &got[posted]);
			if (ret == -FI_EAGAIN)
				break;
			CHECK(ret);
			posted++;
		}
		struct fi_cq_tagged_entry e;
		int ret = wait_cq(p->l.cq, &e, NULL, NULL, WAIT_MS);
		EXPECT(ret == 0, "fetch-add %d: %d", done, ret);
		EXPECT(e.flags == (FI_ATOMIC | FI_READ), "flags %#llx",
		       (unsigned long long)e.flags);
		done++;
	}
	/* One initiator's own fetches increase. */
	for (int i = 1; i < NADD; i++)
		EXPECT(got[i] != got[i - 1], "fetched %llu twice", (unsigned long long)got[i]);
	if (p->rank != 0) {
		oob_send(p, 0, got, NADD * sizeof(uint64_t));
		barrier(p);
		free(got);
		return;
	}
	size_t total = (size_t)NADD * p->nranks;
	uint64_t *all = xmalloc(total * sizeof(uint64_t));
	memcpy(all, got, NADD * sizeof(uint64_t));
	for (int k = 1; k < p->nranks; k++)
		oob_recv(p, k, all + (size_t)k * NADD, NADD * sizeof(uint64_t));
	barrier(p);
	uint64_t final = *(volatile uint64_t *)w.buf;
	EXPECT(final == total, "counter ends at %llu, want %zu", (unsigned long long) final, total);
	qsort(all, total, sizeof(uint64_t), cmp_u64);
	for (size_t i = 0; i < total; i++)
		EXPECT(all[i] == i,
		       "fetched values: position %zu holds %llu (lost or duplicated updates)", i,
		       (unsigned long long)all[i]);
	note("%d ranks x %d fetch-adds: counter %llu, every value 0..%zu fetched once", p->nranks,
	     NADD, (unsigned long long) final, total - 1);
	free(all);
	free(got);
	win_close(&w);
}

static const struct subtest cases[] = {
	{ .name = "ops", .a = ops_a, .b = target_b, .opt_caps = RMA_CAPS },
	{ .name = "query", .a = query_a, .b = target_b, .opt_caps = RMA_CAPS },
	{ .name = "bad", .a = bad_a, .b = bad_b, .opt_caps = RMA_CAPS },
	{ .name = "contend", .a = contend, .b = contend, .nranks = 4, .opt_caps = RMA_CAPS },
	{ .name = "ops_offset",
	  .a = ops_a,
	  .b = target_b,
	  .opt_caps = RMA_CAPS,
	  .mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY },
};

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "mixed")) {
		/* Ranks 0,1 on one simulated node, 2,3 on another: rank 0's
		 * counter takes shm and tcp initiators at once. */
		struct lnx_opts o;
		char *args[] = { argv[0], "tcp", NULL };
		msg_test_opts(2, args, &o);
		o.distinct_nodes = 2;
		o.caps = RMA_CAPS;
		role_fn roles[4] = { contend, contend, contend, contend };
		int r = run_group("contend_mixed", &o, 4, roles, NULL, PAIR_TIMEOUT_S * 4);
		printf("\n%s mixed: %s\n", argv[0], r ? "FAILED" : "ok");
		return r ? 1 : 0;
	}
	return run_subtests(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
