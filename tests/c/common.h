/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Shared helpers for the lnx C tests.
 *
 * Everything here uses only the public libfabric API. The tests are plain
 * programs: exit status 0 = pass, anything else = fail.
 *
 * Two-process tests: run_pair()/run_group() fork one child per role BEFORE
 * libfabric is touched (the provider is a Go c-shared library, and a Go
 * runtime does not survive fork), so a test's main() must not call any fi_*
 * function before calling them. The parent only supervises.
 */
#ifndef LNX_TEST_COMMON_H
#define LNX_TEST_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

/* API version the tests ask for: LNX_TEST_API=major.minor, else the
 * version of the headers the tests were built with (1.17 on Debian 12,
 * 2.1 on Debian 13). */
uint32_t test_fi_version(void);
#define TEST_FI_VERSION test_fi_version()

/* Whether the running libfabric names lnx's fi_infos as linked providers
 * (2.0+): each link then comes twice, "lnx" and "<cores>:lnx". */
int lnx_linked_names(void);
/* Whether an entry's prov_name is a linked spelling ("<cores>:lnx"). */
int has_linked_name(const struct fi_info *i);
/* The entry of the next link in an lnx answer (past a linked twin). */
struct fi_info *next_link(struct fi_info *info);
/* Whether lnx drives its network core through the peer API: libfabric
 * 2.0-2.2, and FI_LNX_PEER_API not off (its default is on). */
int lnx_peer_path(void);

/* lnx addresses are fixed-size opaque blobs. */
#define LNX_ADDRLEN 64 /* FI_NAME_MAX: what Open MPI gives fi_getname */
#define ADDR_MAX    1024

/* Default bound for every wait on a CQ, counter or peer. */
#define WAIT_MS 10000

#define LINK_SHM "shm"
#define LINK_TCP "shm+tcp;ofi_rxm:lo"

/* ---- failure reporting -------------------------------------------------- */

/* Prints "[role] file:line: message" and exits with status 1 (_exit in
 * harness children, so a failing child never runs atexit handlers while
 * its peer is still talking to it). */
void die(const char *file, int line, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 3, 4)));
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define FAIL(...) die(__FILE__, __LINE__, __VA_ARGS__)

/* expr returns a libfabric status: negative = -FI_Exxx failure. */
#define CHECK(expr)                                                                \
	do {                                                                       \
		long long _r = (long long)(expr);                                  \
		if (_r < 0)                                                        \
			FAIL("%s -> %lld (%s)", #expr, _r, fi_strerror((int)-_r)); \
	} while (0)

/* expr must return exactly want. */
#define CHECK_RC(expr, want)                                               \
	do {                                                               \
		long long _r = (long long)(expr), _w = (long long)(want);  \
		if (_r != _w)                                              \
			FAIL("%s -> %lld (%s), want %lld (%s)", #expr, _r, \
			     _r < 0 ? fi_strerror((int)-_r) : "ok", _w,    \
			     _w < 0 ? fi_strerror((int)-_w) : "ok");       \
	} while (0)

/* expr must fail (return < 0). */
#define CHECK_FAILS(expr)                                                     \
	do {                                                                  \
		long long _r = (long long)(expr);                             \
		if (_r >= 0)                                                  \
			FAIL("%s -> %lld, want a negative error", #expr, _r); \
	} while (0)

#define EXPECT(cond, ...)                                                 \
	do {                                                              \
		if (!(cond))                                              \
			die_cond(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)
#define ASSERT(cond) EXPECT(cond, "%s", "")

void die_cond(const char *file, int line, const char *cond, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));

/* Role name used in messages ("A", "B", "rank 2", or the program name). */
extern char g_role[32];

/* ---- small utilities ----------------------------------------------------- */

uint64_t now_ms(void);
void fill_pattern(void *buf, size_t len, uint64_t seed);
/* Returns -1 if buf matches the pattern, else the first bad offset. */
long long check_pattern(const void *buf, size_t len, uint64_t seed);
#define EXPECT_PATTERN(buf, len, seed)                                                \
	do {                                                                          \
		long long _o = check_pattern((buf), (len), (seed));                   \
		EXPECT(_o < 0, "data mismatch at offset %lld of %zu (seed %llu)", _o, \
		       (size_t)(len), (unsigned long long)(seed));                    \
	} while (0)
void *xmalloc(size_t n);
const char *flags_str(uint64_t flags, char *buf, size_t len);

/* ---- getinfo helpers ------------------------------------------------------ */

/* Sets FI_LNX_PROV_LINKS (NULL: unset). */
void set_links(const char *links);

/* Hints for an lnx RDM endpoint with tagged+msg, directed recv and source
 * addressing, prov_name "lnx". Caller frees with fi_freeinfo. */
struct fi_info *lnx_hints(void);

/* fi_getinfo with hints; returns the raw return code and stores the list. */
int lnx_getinfo(struct fi_info *hints, struct fi_info **info);

/* Counts entries of a list. */
int info_count(const struct fi_info *info);

/* ---- one lnx endpoint ----------------------------------------------------- */

struct lnx_opts {
	const char *links;	     /* FI_LNX_PROV_LINKS; NULL keeps the environment */
	const char *domain;	     /* domain name hint; NULL takes the first link */
	enum fi_av_type av_type;     /* 0 = FI_AV_TABLE */
	enum fi_cq_format cq_format; /* 0 = FI_CQ_FORMAT_TAGGED */
	uint64_t caps;		     /* 0 = default lnx_hints() caps */
	int mr_mode;		     /* 0 = default lnx_hints() mr_mode */
	size_t cq_size;		     /* 0 = the provider's default */
	int counters;		     /* open and bind a send and a recv counter;
				      2: also FI_WRITE|FI_READ on the send one and
				      FI_REMOTE_WRITE|FI_REMOTE_READ on the recv one */
	int selective;		     /* as Open MPI's ofi MTL: FI_COMPLETION as the default
				      transmit and receive op flags, and the CQ bound
				      with FI_SELECTIVE_COMPLETION */
	int distinct_nodes;	     /* harness: give each rank its own FI_LNX_NODE_ID
				      so lnx treats peers as remote (network core);
				      n > 1: n consecutive ranks share a node */
	enum fi_threading threading; /* 0: LNX_TEST_THREADING (safe, domain), else
					FI_THREAD_DOMAIN, as Open MPI asks without
					MPI_THREAD_MULTIPLE */
};

struct lnx {
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *tx_cntr, *rx_cntr;
	struct fid_ep *ep;
	uint8_t name[ADDR_MAX];
	size_t namelen;
};

/* Opens fabric/domain/AV/CQ(/counters)/endpoint, binds, enables and reads
 * the endpoint name. Dies on any failure. */
void lnx_open(struct lnx *l, const struct lnx_opts *o);
/* Closes everything in the right order; dies if a close fails. */
void lnx_close(struct lnx *l);
/* Runs in each rank after its endpoint, domain and fabric are closed;
 * weak and empty unless the test program defines it. */
void test_after_close(void);

/* ---- completion queues ---------------------------------------------------- */

/*
 * Completions read while waiting for something else (e.g. during a
 * barrier) are kept in a per-process stash and handed out first, in order.
 */

/* Drives progress once: reads what the CQ has into the stash. Returns the
 * number of entries stashed, or a negative error other than -FI_EAGAIN. */
int cq_progress(struct fid_cq *cq);

/* Records the format a CQ was opened with (lnx_open does it for its CQ):
 * the stash reads entries of that size and widens them to tagged entries. */
void cq_format_note(struct fid_cq *cq, enum fi_cq_format fmt);

/* The size of one entry of a CQ format, and an entry of that format widened
 * to a tagged entry (fields the format lacks are 0). */
size_t cq_entry_size(enum fi_cq_format fmt);
void cq_widen(enum fi_cq_format fmt, const void *entry, struct fi_cq_tagged_entry *out);

/* Takes the oldest stashed entry of cq: 1 (success entry, fields the CQ's
 * format lacks are 0), -1 (error entry, in *err), 0 (none). */
int cq_stash_pop(struct fid_cq *cq, struct fi_cq_tagged_entry *entry, fi_addr_t *src,
		 struct fi_cq_err_entry *err);

/*
 * Waits up to timeout_ms for the next completion on cq.
 *  0            success entry stored in *entry (and the source in *src)
 *  -err         an error entry (err is FI_Exxx; printed, stored in *err)
 *  -FI_ETIMEDOUT nothing arrived in time
 *  other < 0    fi_cq_readfrom / fi_cq_readerr itself failed
 * entry, src and err may be NULL.
 */
int wait_cq(struct fid_cq *cq, struct fi_cq_tagged_entry *entry, fi_addr_t *src,
	    struct fi_cq_err_entry *err, int timeout_ms);

/* Set to 0 to stop wait_cq printing error entries (e.g. expected FI_ENOMSG
 * while polling with FI_PEEK). */
extern int g_cq_print_errors;

/* wait_cq without printing an error entry it returns: for errors a test
 * expects. */
int wait_cq_quiet(struct fid_cq *cq, struct fi_cq_tagged_entry *entry, fi_addr_t *src,
		  struct fi_cq_err_entry *err, int timeout_ms);

/* Like wait_cq, but a non-zero result is fatal; wait_ok waits WAIT_MS. */
void wait_ok_ms(struct fid_cq *cq, struct fi_cq_tagged_entry *entry, fi_addr_t *src, int timeout_ms,
		const char *what);
void wait_ok(struct fid_cq *cq, struct fi_cq_tagged_entry *entry, fi_addr_t *src, const char *what);

/* Asserts no completion shows up on cq within ms (progressing meanwhile). */
void expect_no_completion(struct fid_cq *cq, int ms, const char *what);

/* Progresses cq for ms milliseconds, stashing whatever completes. */
void progress_for(struct fid_cq *cq, int ms);

/* All of n bytes to or from a test driver's socket or pipe, or FAIL. */
void xwrite(int fd, const void *b, size_t n);
void xread(int fd, void *b, size_t n);
/* Waits up to 60 s for sock to be readable while progressing cq, as a
 * server's main loop would (a core's connection set-up and lnx's finding
 * of dead peers happen in progress). */
void wait_readable(int sock, struct fid_cq *cq);
/* Forks a server process that runs serve(sock, arg) on its end of a socket
 * pair and exits 0; the server first writes its endpoint's name as a
 * uint32_t length and the bytes. Returns the server's pid, with the
 * driver's end in *sock and that name in name (ADDR_MAX bytes) and *len. */
pid_t fork_server(void (*serve)(int sock, void *arg), void *arg, int *sock, uint8_t *name,
		  uint32_t *len);

/* Open file descriptors of this process (leak checks). */
int count_fds(void);

/* Posts with retry on -FI_EAGAIN (progressing cq in between), for at most
 * ms milliseconds; POST for WAIT_MS. */
#define POST_MS(cq, ms, expr)                                                                      \
	do {                                                                                       \
		uint64_t _dl = now_ms() + (ms);                                                    \
		long long _r;                                                                      \
		while ((_r = (long long)(expr)) == -FI_EAGAIN) {                                   \
			if (cq_progress(cq) < 0 || now_ms() > _dl)                                 \
				break;                                                             \
		}                                                                                  \
		if (_r != 0)                                                                       \
			FAIL("%s -> %lld (%s)", #expr, _r, fi_strerror((int)(_r < 0 ? -_r : _r))); \
	} while (0)
#define POST(cq, expr) POST_MS(cq, WAIT_MS, expr)

/* ---- multi-process harness ------------------------------------------------ */

#define MAX_RANKS      9
#define PAIR_TIMEOUT_S 30

struct peer {
	int rank, nranks;
	struct lnx l;
	fi_addr_t addr[MAX_RANKS]; /* fi_addr of each rank in our AV (incl. self) */
	int sock[MAX_RANKS];	   /* out-of-band socket to each other rank */
	const struct lnx_opts *opts;
};

typedef void (*role_fn)(struct peer *p, void *arg);

/*
 * Forks n children; each opens its own lnx endpoint with opts, exchanges
 * fi_getname blobs with the others over socketpairs made before the fork,
 * inserts all addresses into its AV (its own first, then the others in rank
 * order, so a peer's fi_addr is never simply its rank), runs roles[rank],
 * meets the others in a final barrier and closes everything. The parent
 * waits up to timeout_s (killing everyone on timeout, or shortly after the
 * first failure). Returns 0 if every child passed.
 */
int run_group(const char *name, const struct lnx_opts *opts, int n, const role_fn *roles, void *arg,
	      int timeout_s);
int run_pair(const char *name, const struct lnx_opts *opts, role_fn a, role_fn b, void *arg);

/* Out-of-band helpers usable inside roles. They keep progressing the CQ
 * while waiting, so a peer blocked on our progress is not starved. */
void oob_send(struct peer *p, int rank, const void *buf, size_t len);
void oob_recv(struct peer *p, int rank, void *buf, size_t len);
void barrier(struct peer *p);
/* A barrier that does not read the CQ meanwhile. */
void barrier_quiet(struct peer *p);

/* If set, every harness child calls it with its rank before libfabric is
 * touched (namespace set-up, resource limits). It may fork: the caller of
 * run_group supervises whichever process returns from it only through the
 * process it forked, so a forking hook must make its parent wait for the
 * child and exit with its status. */
extern void (*g_child_setup)(int rank);

/* Convenience for 2-rank tests. */
static inline int other(const struct peer *p)
{
	return 1 - p->rank;
}
static inline fi_addr_t peer_addr(const struct peer *p)
{
	return p->addr[other(p)];
}

/* Parses argv for messaging tests. argv[1] is a configuration:
 *   shm   links "shm"
 *   link  links "shm+tcp;ofi_rxm:lo", both processes on this node
 *   tcp   links "shm+tcp;ofi_rxm:lo", distinct FI_LNX_NODE_ID per process
 *         so lnx routes between them over tcp;ofi_rxm on loopback
 * or a literal FI_LNX_PROV_LINKS value, optionally followed by "distinct". */
void msg_test_opts(int argc, char **argv, struct lnx_opts *o);

/* A messaging test program is a list of independent two-process cases. */
struct subtest {
	const char *name;
	role_fn a, b;
	int nranks;	   /* 0 = 2 (a, b); 3 = a, b, b for ranks 0, 1, 2 */
	uint64_t opt_caps; /* non-zero: override hints caps */
	int mr_mode;	   /* non-zero: override hints mr_mode */
	int counters;	   /* bind counters */
};

#define CASE(n, fa, fb)                           \
	{                                         \
		.name = (n), .a = (fa), .b = (fb) \
	}

/* Runs every case (or only those named in $LNX_TEST_ONLY, comma separated)
 * each in fresh processes, prints a summary, returns the exit status. */
int run_subtests(int argc, char **argv, const struct subtest *t, size_t n);

#endif
