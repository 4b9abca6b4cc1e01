/*
 * load_flood: an unexpected-message flood from 8 sender processes to one
 * receiver process. The receiver posts nothing for a while: lnx buffers up
 * to FI_LNX_UNEXPECTED_MAX (1 MiB in ctest) and then leaves messages in the
 * senders' rings, so the senders see -FI_EAGAIN (flow control) instead of
 * the receiver's memory growing with the flood. Then it drains everything
 * through wildcard receives and checks that nothing was lost, that each
 * sender's messages came in its send order, with the right source, tag,
 * length and data, and that its peak RSS grew by far less than the flood.
 *
 *   load_flood shm|tcp [unbounded]   (tcp: every process on its own node)
 *
 * "unbounded" checks delivery and order but only reports the RSS growth:
 * over tcp;ofi_rxm 1.17 the flood piles up inside rxm (each 4000-byte
 * message in its own ~16 KiB buffer) before lnx sees it, and lnx has no
 * credit scheme on the network path yet to hold senders back.
 */
#include <unistd.h>
#include "common.h"

#define SENDERS 8
#define MSGS 3000
#define SZ 4000
#define WIN 256
#define FLOOD ((long)SENDERS * MSGS * SZ)

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && sscanf(line + n, " %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static int bounded = 1;

static uint64_t seed_of(int sender, uint64_t seq) { return (uint64_t)sender * 1000000 + seq; }

static void sender(struct peer *p, void *arg)
{
	/* One buffer per message: a send's buffer is the application's until
	 * its completion, and completions are reaped at the end. */
	char *buf = xmalloc((size_t)MSGS * SZ);
	struct fi_context2 *ctx = xmalloc(MSGS * sizeof(*ctx));
	for (uint64_t i = 0; i < MSGS; i++)
		fill_pattern(buf + i * SZ, SZ, seed_of(p->rank, i));
	barrier(p);
	for (uint64_t i = 0; i < MSGS; i++)
		POST(p->l.cq, fi_tsend(p->l.ep, buf + i * SZ, SZ, NULL, p->addr[0], i, &ctx[i]));
	for (uint64_t i = 0; i < MSGS; i++)
		wait_ok(p->l.cq, NULL, NULL, "flood send completion");
	free(ctx);
	free(buf);
}

static void receiver(struct peer *p, void *arg)
{
	long hwm0 = status_kb("VmHWM:");
	barrier(p);
	/* Nothing posted: the flood arrives unexpected. */
	progress_for(p->l.cq, 1500);
	long hwm1 = status_kb("VmHWM:");

	char *bufs = xmalloc((size_t)WIN * SZ);
	struct fi_context2 ctx[WIN];
	for (int w = 0; w < WIN; w++)
		POST(p->l.cq, fi_trecv(p->l.ep, bufs + (size_t)w * SZ, SZ, NULL, FI_ADDR_UNSPEC, 0, ~0ULL, &ctx[w]));
	uint64_t next[MAX_RANKS] = { 0 };
	long total = 0;
	uint64_t t0 = now_ms();
	while (total < (long)SENDERS * MSGS) {
		struct fi_cq_tagged_entry e;
		fi_addr_t src;
		wait_ok(p->l.cq, &e, &src, "flood receive");
		int w = (struct fi_context2 *)e.op_context - ctx;
		EXPECT(w >= 0 && w < WIN, "unknown context");
		int s = -1;
		for (int r = 1; r <= SENDERS; r++)
			if (p->addr[r] == src)
				s = r;
		EXPECT(s > 0, "completion from unknown source %llu", (unsigned long long)src);
		EXPECT(e.tag == next[s], "sender %d: message %llu arrived where %llu was due", s,
		       (unsigned long long)e.tag, (unsigned long long)next[s]);
		EXPECT(e.len == SZ, "len %zu", e.len);
		EXPECT_PATTERN(bufs + (size_t)w * SZ, SZ, seed_of(s, e.tag));
		next[s]++;
		total++;
		POST(p->l.cq, fi_trecv(p->l.ep, bufs + (size_t)w * SZ, SZ, NULL, FI_ADDR_UNSPEC, 0, ~0ULL, &ctx[w]));
	}
	long hwm2 = status_kb("VmHWM:");
	note("flood of %ld MiB from %d senders: all %ld messages in order in %llu ms; receiver peak RSS "
	     "%ld -> %ld KiB while unexpected, %ld KiB at the end",
	     FLOOD >> 20, SENDERS, total, (unsigned long long)(now_ms() - t0), hwm0, hwm1, hwm2);
	EXPECT(!bounded || hwm2 - hwm0 < FLOOD / 1024 / 3, "peak RSS grew by %ld KiB for a %ld KiB flood: buffering is not bounded",
	       hwm2 - hwm0, FLOOD / 1024);
	for (int w = 0; w < WIN; w++)
		CHECK(fi_cancel(&p->l.ep->fid, &ctx[w]));
	int g = g_cq_print_errors;
	g_cq_print_errors = 0;
	for (int w = 0; w < WIN; w++) {
		struct fi_cq_err_entry err;
		EXPECT(wait_cq(p->l.cq, NULL, NULL, &err, WAIT_MS) == -FI_ECANCELED, "cancel of leftover receive");
	}
	g_cq_print_errors = g;
	free(bufs);
}

int main(int argc, char **argv)
{
	struct lnx_opts o;
	msg_test_opts(argc, argv, &o);
	bounded = !(argc > 2 && !strcmp(argv[2], "unbounded"));
	snprintf(g_role, sizeof(g_role), "load_flood");
	role_fn roles[SENDERS + 1] = { receiver };
	for (int r = 1; r <= SENDERS; r++)
		roles[r] = sender;
	return run_group("load_flood", &o, SENDERS + 1, roles, NULL, 120);
}
