/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * getinfo_errors: fi_getinfo failures and recovery.
 *
 * libfabric 1.17's fi_getinfo returns -FI_ENODATA whenever no provider
 * answers, whatever the provider itself returned, so the public return
 * code alone cannot tell "malformed FI_LNX_PROV_LINKS" (-FI_EINVAL from lnx)
 * from "nothing matches" (-FI_ENODATA). With FI_LOG_LEVEL=warn libfabric
 * logs "fi_getinfo: provider lnx returned -N (...)"; the test captures
 * stderr around each call and checks N too. (A libfabric that passes the
 * provider code through is accepted as well.)
 *
 * Cases:
 *  - malformed links ("shm++tcp", "|", "shm:x", "tcp;", garbage bytes, ...)
 *    -> lnx returns -FI_EINVAL
 *  - "" and unset mean the default link (success)
 *  - unknown provider ("shm+nosuchprov") or domain -> -FI_ENODATA
 *  - a group with an unknown provider next to a good one is skipped
 *  - unsatisfiable hints (FI_COLLECTIVE, rma_iov_limit 2, FI_EP_MSG, FI_SOCKADDR_IN,
 *    FI_ADDR_STR (lnx addresses are FI_FORMAT_UNSPEC), inject_size 1<<30,
 *    unknown domain name, fabric "bogus", ...) -> -FI_ENODATA
 *  - nonsense hints (threading 99, av_type 55, resource_mgmt 77, every
 *    op_flags bit on tx or rx, src_addr or dest_addr of the wrong
 *    length, random bytes, a NULL pointer with a length, a huge length) ->
 *    -FI_ENODATA or -FI_EINVAL, never success or a crash
 *  - after every failure a normal fi_getinfo still succeeds
 */
#include "common.h"

#include <unistd.h>

static int failures;

/* Runs fi_getinfo with stderr redirected to a temp file; returns the public
 * return code and the code lnx logged (1 if none was logged). */
static int getinfo_capture(struct fi_info *hints, struct fi_info **info, int *prov_ret, char *log,
			   size_t loglen)
{
	FILE *tmp = tmpfile();
	int saved, ret;

	ASSERT(tmp);
	fflush(stderr);
	saved = dup(2);
	ASSERT(saved >= 0);
	dup2(fileno(tmp), 2);
	ret = lnx_getinfo(hints, info);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);

	*prov_ret = 1;
	log[0] = 0;
	rewind(tmp);
	char line[1024];
	size_t used = 0;
	while (fgets(line, sizeof(line), tmp)) {
		const char *p = strstr(line, "fi_getinfo: provider lnx returned ");
		if (p)
			*prov_ret = atoi(p + strlen("fi_getinfo: provider lnx returned "));
		if (strstr(line, "lnx") && used + strlen(line) < loglen) {
			memcpy(log + used, line, strlen(line) + 1);
			used += strlen(line);
		}
	}
	fclose(tmp);
	return ret;
}

/* lnx must refuse with want (a negative FI_Exxx). */
static void expect_refusal(const char *what, struct fi_info *hints, int want)
{
	struct fi_info *info = NULL;
	int prov = 1;
	char log[4096];
	int ret = getinfo_capture(hints, &info, &prov, log, sizeof(log));
	int ok = 1;

	if (ret == 0) {
		printf("FAIL %s: fi_getinfo succeeded (%d entries, first domain %s), "
		       "want %d (%s)\n",
		       what, info_count(info), info ? info->domain_attr->name : "-", want,
		       fi_strerror(-want));
		ok = 0;
	} else if (ret != want && ret != -FI_ENODATA) {
		printf("FAIL %s: fi_getinfo -> %d (%s), want %d (%s)\n", what, ret,
		       fi_strerror(-ret), want, fi_strerror(-want));
		ok = 0;
	} else if (ret == -FI_ENODATA && want != -FI_ENODATA) {
		/* The public code is libfabric's; look at what lnx said. */
		if (prov == 1) {
			printf("FAIL %s: fi_getinfo -> -FI_ENODATA and no 'provider lnx returned' "
			       "log line (is FI_LOG_LEVEL=warn set?)\n",
			       what);
			ok = 0;
		} else if (prov != want) {
			printf("FAIL %s: lnx getinfo returned %d (%s), want %d (%s)\n", what, prov,
			       fi_strerror(-prov), want, fi_strerror(-want));
			ok = 0;
		}
	} else if (prov != 1 && prov != want) {
		printf("FAIL %s: lnx getinfo returned %d (%s), want %d (%s)\n", what, prov,
		       fi_strerror(-prov), want, fi_strerror(-want));
		ok = 0;
	}
	if (info)
		fi_freeinfo(info);
	if (!ok) {
		if (log[0])
			printf("  log:\n%s", log);
		failures++;
	} else {
		note("%-44s -> %d, lnx %d (%s): ok", what, ret, prov == 1 ? ret : prov,
		     fi_strerror(-(prov == 1 ? ret : prov)));
	}
}

/* After a failure, a normal request must work. */
static void expect_recovery(const char *after)
{
	struct fi_info *h = lnx_hints(), *info = NULL;
	int prov;
	char log[4096];
	set_links(LINK_SHM);
	int ret = getinfo_capture(h, &info, &prov, log, sizeof(log));
	if (ret || info_count(info) != 1 || strcmp(info->domain_attr->name, LINK_SHM)) {
		printf("FAIL after %s: fi_getinfo with links shm -> %d (%s), %d entries\n", after,
		       ret, fi_strerror(-ret), info_count(info));
		failures++;
	}
	fi_freeinfo(info);
	fi_freeinfo(h);
}

static void links_case(const char *links, int want)
{
	char what[160];
	struct fi_info *h = lnx_hints();
	char shown[64];
	size_t k = 0;
	for (const unsigned char *c = (const unsigned char *)links; *c && k + 5 < sizeof(shown);
	     c++)
		k += (size_t)snprintf(shown + k, sizeof(shown) - k,
				      *c >= 0x20 && *c < 0x7f ? "%c" : "\\x%02x", *c);
	shown[k] = 0;
	snprintf(what, sizeof(what), "links \"%s\"", shown);
	set_links(links);
	expect_refusal(what, h, want);
	fi_freeinfo(h);
	expect_recovery(what);
}

static void links_ok(const char *links, int nentries, const char *first)
{
	struct fi_info *h = lnx_hints(), *info = NULL;
	int prov;
	char log[4096];
	set_links(links);
	int ret = getinfo_capture(h, &info, &prov, log, sizeof(log));
	if (ret || info_count(info) != nentries ||
	    (first && strcmp(info->domain_attr->name, first))) {
		printf("FAIL links %s%s%s: fi_getinfo -> %d (%s), %d entries (want %d), first %s "
		       "(want %s)\n",
		       links ? "\"" : "", links ? links : "unset", links ? "\"" : "", ret,
		       fi_strerror(-ret), info_count(info), nentries,
		       info ? info->domain_attr->name : "-", first ? first : "any");
		failures++;
	} else {
		note("links %s%s%s -> %s: ok", links ? "\"" : "", links ? links : "unset",
		     links ? "\"" : "", info->domain_attr->name);
	}
	fi_freeinfo(info);
	fi_freeinfo(h);
}

typedef void (*hint_fn)(struct fi_info *h);
static void h_collective(struct fi_info *h)
{
	h->caps |= FI_COLLECTIVE;
}
static void h_rma_iov(struct fi_info *h)
{
	h->caps |= FI_RMA;
	h->tx_attr->rma_iov_limit = 2;
}
static void h_ep_msg(struct fi_info *h)
{
	h->ep_attr->type = FI_EP_MSG;
}
static void h_ep_dgram(struct fi_info *h)
{
	h->ep_attr->type = FI_EP_DGRAM;
}
static void h_sockaddr(struct fi_info *h)
{
	h->addr_format = FI_SOCKADDR_IN;
}
static void h_addr_str(struct fi_info *h)
{
	h->addr_format = FI_ADDR_STR;
}
static void h_inject(struct fi_info *h)
{
	h->tx_attr->inject_size = (size_t)1 << 30;
}
static void h_domain(struct fi_info *h)
{
	h->domain_attr->name = strdup("nosuchdomain");
}
static void h_fabric(struct fi_info *h)
{
	h->fabric_attr->name = strdup("bogus");
}
static void h_iov(struct fi_info *h)
{
	h->tx_attr->iov_limit = 1 << 20;
}
static void h_cqdata(struct fi_info *h)
{
	h->domain_attr->cq_data_size = 64;
}
static void h_msgsize(struct fi_info *h)
{
	h->ep_attr->max_msg_size = SIZE_MAX;
}
static void h_rxctx(struct fi_info *h)
{
	h->ep_attr->rx_ctx_cnt = 16;
}

/* Nonsense hints: libfabric's own providers answer -FI_ENODATA or
 * -FI_EINVAL; so must lnx (and it must not crash or accept them). */
static uint8_t junk[4096];
static void n_threading(struct fi_info *h)
{
	h->domain_attr->threading = (enum fi_threading)99;
}
static void n_av_type(struct fi_info *h)
{
	h->domain_attr->av_type = (enum fi_av_type)55;
}
static void n_rm(struct fi_info *h)
{
	h->domain_attr->resource_mgmt = (enum fi_resource_mgmt)77;
}
static void n_tx_opflags(struct fi_info *h)
{
	h->tx_attr->op_flags = ~0ULL;
}
static void n_rx_opflags(struct fi_info *h)
{
	h->rx_attr->op_flags = ~0ULL;
}
static void *dupjunk(size_t n)
{
	void *p = xmalloc(n);
	memcpy(p, junk, n);
	return p;
}
static void n_src_random(struct fi_info *h)
{
	h->src_addr = dupjunk(LNX_ADDRLEN);
	h->src_addrlen = LNX_ADDRLEN;
}
static void n_src_short(struct fi_info *h)
{
	h->src_addr = dupjunk(3);
	h->src_addrlen = 3;
}
static void n_src_str(struct fi_info *h)
{
	h->addr_format = FI_ADDR_STR;
	h->src_addr = strdup("fi_sockaddr_in://999.1.2.3:99999");
	h->src_addrlen = strlen(h->src_addr) + 1;
}
static void n_src_sin(struct fi_info *h)
{
	h->addr_format = FI_SOCKADDR_IN;
	h->src_addr = dupjunk(7); /* shorter than a sockaddr_in */
	h->src_addrlen = 7;
}
static void n_dest_random(struct fi_info *h)
{
	h->dest_addr = dupjunk(LNX_ADDRLEN);
	h->dest_addrlen = LNX_ADDRLEN;
}
static void n_dest_short(struct fi_info *h)
{
	h->dest_addr = dupjunk(5);
	h->dest_addrlen = 5;
}
static void n_dest_long(struct fi_info *h)
{
	h->dest_addr = dupjunk(sizeof(junk));
	h->dest_addrlen = sizeof(junk);
}
static void n_dest_len_only(struct fi_info *h)
{
	h->dest_addrlen = 1ULL << 40;
}
static void n_dest_str(struct fi_info *h)
{
	h->addr_format = FI_ADDR_STR;
	h->dest_addr = strdup("lnx://nonsense");
	h->dest_addrlen = strlen(h->dest_addr) + 1;
}

static void nonsense_case(const char *what, const char *links, hint_fn fn)
{
	char w[160];
	struct fi_info *h = lnx_hints(), *info = NULL;
	int prov = 1;
	char log[4096];
	fn(h);
	set_links(links);
	snprintf(w, sizeof(w), "%s (links %s)", what, links);
	int ret = getinfo_capture(h, &info, &prov, log, sizeof(log));
	int code = prov == 1 ? ret : prov;
	if (ret == 0 || (ret != -FI_ENODATA && ret != -FI_EINVAL) ||
	    (code != -FI_ENODATA && code != -FI_EINVAL)) {
		printf("FAIL %s: fi_getinfo -> %d (%s), lnx %d, want -FI_ENODATA or -FI_EINVAL\n",
		       w, ret, fi_strerror(-ret), prov == 1 ? 0 : prov);
		if (log[0])
			printf("  log:\n%s", log);
		failures++;
	} else {
		note("%-44s -> %d, lnx %d (%s): ok", w, ret, code, fi_strerror(-code));
	}
	if (info)
		fi_freeinfo(info);
	if (fn == n_dest_len_only)
		h->dest_addrlen = 0; /* fi_freeinfo must not look at it */
	fi_freeinfo(h);
	expect_recovery(w);
}

static void hints_case(const char *what, const char *links, hint_fn fn)
{
	char w[160];
	struct fi_info *h = lnx_hints();
	fn(h);
	set_links(links);
	snprintf(w, sizeof(w), "%s (links %s)", what, links);
	expect_refusal(w, h, -FI_ENODATA);
	fi_freeinfo(h);
	expect_recovery(w);
}

int main(void)
{
	snprintf(g_role, sizeof(g_role), "getinfo_errors");
	/* Must be set before libfabric initialises (first fi_* call). */
	if (!getenv("FI_LOG_LEVEL"))
		setenv("FI_LOG_LEVEL", "warn", 1);

	expect_recovery("start");

	/* Malformed FI_LNX_PROV_LINKS. */
	static const char *malformed[] = {
		"shm++tcp",
		"|",
		"shm:x",
		"tcp;",
		"+",
		"shm|",
		"|shm",
		"shm+",
		"shm+shm",
		"tcp:",
		"tcp;ofi_rxm:lo,",
		"tcp;ofi_rxm:lo,lo",
		";ofi_rxm",
		"shm tcp",
		"shm$tcp",
		"\x01\x02\xff\xfe",
		"shm+tcp;ofi_rxm:l\xc3\xb6",
	};
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++)
		links_case(malformed[i], -FI_EINVAL);
	{
		char *huge = xmalloc(5001);
		memset(huge, 'a', 5000);
		huge[5000] = 0;
		links_case(huge, -FI_EINVAL);
		free(huge);
	}

	/* Unset and empty mean the default. */
	links_ok(NULL, 1, NULL);
	links_ok("", 1, NULL);

	/* Well-formed but unavailable. */
	links_case("shm+nosuchprov", -FI_ENODATA);
	links_case("nosuchprov", -FI_ENODATA);
	links_case("shm+tcp;ofi_rxm:nosuchiface0", -FI_ENODATA);
	/* An unavailable group is skipped; the good one is still offered. */
	links_ok("shm+nosuchprov|shm", 1, "shm");

	/* Hints lnx cannot satisfy. */
	static const struct {
		const char *what;
		hint_fn fn;
	} hc[] = {
		{ "caps FI_COLLECTIVE", h_collective },
		{ "FI_RMA with rma_iov_limit 2", h_rma_iov },
		{ "ep_type FI_EP_MSG", h_ep_msg },
		{ "ep_type FI_EP_DGRAM", h_ep_dgram },
		{ "addr_format FI_SOCKADDR_IN", h_sockaddr },
		{ "addr_format FI_ADDR_STR", h_addr_str },
		{ "inject_size 1<<30", h_inject },
		{ "domain name nosuchdomain", h_domain },
		{ "fabric name bogus", h_fabric },
		{ "tx iov_limit 1<<20", h_iov },
		{ "cq_data_size 64", h_cqdata },
		{ "max_msg_size SIZE_MAX", h_msgsize },
		{ "rx_ctx_cnt 16", h_rxctx },
	};
	for (size_t i = 0; i < sizeof(hc) / sizeof(hc[0]); i++) {
		hints_case(hc[i].what, LINK_SHM, hc[i].fn);
		hints_case(hc[i].what, LINK_TCP, hc[i].fn);
	}

	/* Nonsense hints. */
	srandom(1234);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)random();
	junk[0] = 'L'; /* lnx's magic byte, so that the check goes deeper */
	static const struct {
		const char *what;
		hint_fn fn;
	} nc[] = {
		{ "threading 99", n_threading },
		{ "av_type 55", n_av_type },
		{ "resource_mgmt 77", n_rm },
		{ "tx op_flags ~0", n_tx_opflags },
		{ "rx op_flags ~0", n_rx_opflags },
		{ "src_addr 64 random bytes", n_src_random },
		{ "src_addr 3 bytes", n_src_short },
		{ "src_addr FI_ADDR_STR garbage", n_src_str },
		{ "src_addr FI_SOCKADDR_IN of 7 bytes", n_src_sin },
		{ "dest_addr 64 random bytes", n_dest_random },
		{ "dest_addr 5 bytes", n_dest_short },
		{ "dest_addr 4096 bytes", n_dest_long },
		{ "dest_addr NULL, dest_addrlen 1<<40", n_dest_len_only },
		{ "dest_addr FI_ADDR_STR garbage", n_dest_str },
	};
	for (size_t i = 0; i < sizeof(nc) / sizeof(nc[0]); i++) {
		nonsense_case(nc[i].what, LINK_SHM, nc[i].fn);
		nonsense_case(nc[i].what, LINK_TCP, nc[i].fn);
	}

	/* A domain name offered by a different links setting is not offered now. */
	{
		struct fi_info *h = lnx_hints();
		h->domain_attr->name = strdup(LINK_TCP);
		set_links(LINK_SHM);
		expect_refusal("domain " LINK_TCP " with links shm", h, -FI_ENODATA);
		fi_freeinfo(h);
		expect_recovery("foreign domain");
	}

	if (failures) {
		printf("getinfo_errors: %d FAILURES\n", failures);
		return 1;
	}
	note("PASS");
	return 0;
}
