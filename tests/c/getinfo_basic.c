/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * getinfo_basic: what lnx reports from fi_getinfo.
 *
 *  1. no hints: at least one lnx entry; each is fabric "lnx", FI_EP_RDM,
 *     FI_FORMAT_UNSPEC, caps >= MSG|TAGGED|DIRECTED_RECV|LOCAL_COMM|REMOTE_COMM
 *  2. FI_LNX_PROV_LINKS unset -> the default link (shm + a network core)
 *  3. Open MPI mtl/ofi style hints -> honoured (av_type, caps, mode, mr_mode,
 *     msg_order, cq_data_size, sane limits)
 *  4. domain name hint = a link name returned earlier -> exactly that link
 *  5. FI_LNX_PROV_LINKS="shm+tcp;ofi_rxm:lo|shm" -> two entries, in order
 *  6. an answer fed back as hints gives the same link again
 *  7. caps and progress values read by the API version asked for
 */
#include "common.h"

#define BASE_CAPS (FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM)

static void check_lnx_entry(const struct fi_info *i)
{
	char buf[512];
	EXPECT(i->fabric_attr && i->domain_attr && i->ep_attr && i->tx_attr && i->rx_attr,
	       "attribute structs present");
	const char *pn = i->fabric_attr->prov_name;
	EXPECT(!strcmp(pn, "lnx") || (lnx_linked_names() && has_linked_name(i)), "prov_name %s",
	       pn);
	EXPECT(i->fabric_attr->name && !strcmp(i->fabric_attr->name, "lnx"), "fabric name %s",
	       i->fabric_attr->name ? i->fabric_attr->name : "(null)");
	EXPECT(i->domain_attr->name && i->domain_attr->name[0], "domain name set");
	EXPECT(i->ep_attr->type == FI_EP_RDM, "ep_type %d", i->ep_attr->type);
	EXPECT((i->caps & BASE_CAPS) == BASE_CAPS, "caps %s",
	       fi_tostr_r(buf, sizeof(buf), &i->caps, FI_TYPE_CAPS));
	EXPECT(i->addr_format == FI_FORMAT_UNSPEC, "addr_format %u", i->addr_format);
	/* Asked for or not, rma_iov_limit is what one-sided calls take. */
	if (i->caps & FI_RMA)
		EXPECT(i->tx_attr->rma_iov_limit == 1, "rma_iov_limit %zu",
		       i->tx_attr->rma_iov_limit);
	EXPECT(i->tx_attr->inject_size > 0, "inject_size %zu", i->tx_attr->inject_size);
	EXPECT(i->ep_attr->max_msg_size > 0, "max_msg_size");
	EXPECT(i->tx_attr->iov_limit >= 1 && i->rx_attr->iov_limit >= 1, "iov_limit %zu/%zu",
	       i->tx_attr->iov_limit, i->rx_attr->iov_limit);
	EXPECT(i->tx_attr->size > 0 && i->rx_attr->size > 0, "queue sizes");
	EXPECT((i->tx_attr->caps & ~i->caps) == 0, "tx caps subset of caps");
	EXPECT((i->rx_attr->caps & ~i->caps) == 0, "rx caps subset of caps");
}

/* One-sided operations work over every core (target-executed): offered
 * without hints, granted when hints ask. */
static void check_one_sided(struct fi_info *i)
{
	char buf[512];
	const uint64_t one_sided =
		FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	EXPECT((i->caps & one_sided) == one_sided, "one-sided caps %s",
	       fi_tostr_r(buf, sizeof(buf), &i->caps, FI_TYPE_CAPS));
	EXPECT(i->tx_attr->rma_iov_limit == 1, "rma_iov_limit %zu", i->tx_attr->rma_iov_limit);
	const uint64_t tx = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE,
		       rx = FI_REMOTE_READ | FI_REMOTE_WRITE;
	EXPECT((i->tx_attr->caps & tx) == tx, "tx caps %s",
	       fi_tostr_r(buf, sizeof(buf), &i->tx_attr->caps, FI_TYPE_CAPS));
	EXPECT((i->rx_attr->caps & rx) == rx, "rx caps %s",
	       fi_tostr_r(buf, sizeof(buf), &i->rx_attr->caps, FI_TYPE_CAPS));
}

static void test_one_sided_hints(void)
{
	struct fi_info *hints = lnx_hints(), *info = NULL;
	hints->caps |= FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	hints->tx_attr->rma_iov_limit = 1;
	set_links(LINK_TCP);
	CHECK(lnx_getinfo(hints, &info));
	for (struct fi_info *i = info; i; i = i->next)
		check_one_sided(i);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	note("one-sided hints granted: ok");
}

static void test_no_hints(void)
{
	struct fi_info *info = NULL;
	int lnx = 0;

	set_links(LINK_TCP);
	CHECK(fi_getinfo(TEST_FI_VERSION, NULL, NULL, 0, NULL, &info));
	for (struct fi_info *i = info; i; i = i->next) {
		if (!i->fabric_attr || !i->fabric_attr->prov_name ||
		    strcmp(i->fabric_attr->prov_name, "lnx"))
			continue;
		lnx++;
		check_lnx_entry(i);
		check_one_sided(i);
		EXPECT(!strcmp(i->domain_attr->name, LINK_TCP), "domain %s", i->domain_attr->name);
	}
	EXPECT(lnx == 1, "%d lnx entries without hints for links %s", lnx, LINK_TCP);
	fi_freeinfo(info);
	note("no hints: ok");
}

static void test_default_links(void)
{
	struct fi_info *hints = lnx_hints(), *info = NULL;

	set_links(NULL);
	CHECK(lnx_getinfo(hints, &info));
	EXPECT(info_count(info) >= 1, "default links give an entry");
	for (struct fi_info *i = info; i; i = i->next) {
		check_lnx_entry(i);
		EXPECT(!strcmp(i->domain_attr->name, "shm") ||
			       !strncmp(i->domain_attr->name, "shm+", 4),
		       "default link %s includes shm", i->domain_attr->name);
	}
	note("default link: %s", info->domain_attr->name);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

static struct fi_info *ompi_hints(void)
{
	struct fi_info *h = fi_allocinfo();
	ASSERT(h);
	h->caps = FI_MSG | FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	h->tx_attr->op_flags = FI_COMPLETION;
	h->rx_attr->op_flags = FI_COMPLETION;
	h->domain_attr->av_type = FI_AV_MAP;
	h->domain_attr->cq_data_size = 4;
	h->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	h->fabric_attr->prov_name = strdup("lnx");
	return h;
}

static void test_ompi_hints(const char *links)
{
	struct fi_info *h = ompi_hints(), *info = NULL;
	char buf[512];

	set_links(links);
	CHECK(lnx_getinfo(h, &info));
	EXPECT(info_count(info) == 1, "%d entries for one link", info_count(info));
	for (struct fi_info *i = info; i; i = i->next) {
		check_lnx_entry(i);
		EXPECT(!strcmp(i->domain_attr->name, links), "domain %s", i->domain_attr->name);
		EXPECT(i->domain_attr->av_type == FI_AV_MAP, "av_type %d", i->domain_attr->av_type);
		EXPECT((i->caps & h->caps) == h->caps, "caps %s ⊇ requested",
		       fi_tostr_r(buf, sizeof(buf), &i->caps, FI_TYPE_CAPS));
		/* Only secondary caps may be added to what was asked. */
		uint64_t extra = i->caps & ~h->caps &
				 ~(FI_SEND | FI_RECV | FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM);
		EXPECT(extra == 0, "unrequested primary caps %s",
		       fi_tostr_r(buf, sizeof(buf), &extra, FI_TYPE_CAPS));
		EXPECT((i->mode & ~h->mode) == 0, "mode %#llx within the offered %#llx",
		       (unsigned long long)i->mode, (unsigned long long)h->mode);
		EXPECT((i->domain_attr->mr_mode & ~h->domain_attr->mr_mode) == 0,
		       "mr_mode %#x within the offered %#x", i->domain_attr->mr_mode,
		       h->domain_attr->mr_mode);
		EXPECT(i->tx_attr->msg_order & FI_ORDER_SAS, "tx msg_order has SAS");
		EXPECT(i->rx_attr->msg_order & FI_ORDER_SAS, "rx msg_order has SAS");
		EXPECT(i->domain_attr->cq_data_size >= 4, "cq_data_size %zu",
		       i->domain_attr->cq_data_size);
		EXPECT(i->domain_attr->data_progress != FI_PROGRESS_UNSPEC, "data_progress set");
		EXPECT(i->domain_attr->threading != FI_THREAD_UNSPEC, "threading set");
	}
	fi_freeinfo(info);
	fi_freeinfo(h);
	note("Open MPI hints (%s): ok", links);
}

static void test_domain_hint(void)
{
	struct fi_info *h = lnx_hints(), *info = NULL, *again = NULL;
	const char *two = LINK_TCP "|" LINK_SHM;

	set_links(two);
	CHECK(lnx_getinfo(h, &info));
	EXPECT(info_count(info) == 2, "%d entries for %s", info_count(info), two);
	EXPECT(!strcmp(info->domain_attr->name, LINK_TCP), "first %s", info->domain_attr->name);
	EXPECT(!strcmp(next_link(info)->domain_attr->name, LINK_SHM), "second %s",
	       next_link(info)->domain_attr->name);
	for (struct fi_info *i = info; i; i = i->next)
		check_lnx_entry(i);
	note("two links: %s | %s", info->domain_attr->name, next_link(info)->domain_attr->name);

	/* Ask for each link by name. */
	for (struct fi_info *i = info; i; i = i->next) {
		struct fi_info *hd = lnx_hints();
		hd->domain_attr->name = strdup(i->domain_attr->name);
		CHECK(lnx_getinfo(hd, &again));
		EXPECT(info_count(again) == 1, "%d entries for domain %s", info_count(again),
		       i->domain_attr->name);
		EXPECT(!strcmp(again->domain_attr->name, i->domain_attr->name), "got %s want %s",
		       again->domain_attr->name, i->domain_attr->name);
		fi_freeinfo(again);
		fi_freeinfo(hd);
	}

	/* An answer fed back as hints (a common application pattern). Not
	 * a linked twin ("<cores>:lnx"): libfabric 2.x's own name filter
	 * passes no provider for such a prov_name hint. */
	for (struct fi_info *i = info; i; i = next_link(i)) {
		struct fi_info *dup = fi_dupinfo(i);
		ASSERT(dup);
		CHECK(lnx_getinfo(dup, &again));
		EXPECT(info_count(again) == 1 &&
			       !strcmp(again->domain_attr->name, i->domain_attr->name),
		       "round trip of %s", i->domain_attr->name);
		fi_freeinfo(again);
		fi_freeinfo(dup);
	}
	note("domain name hints: ok");

	/* The single-link answer names the same domain. */
	set_links(LINK_TCP);
	h->domain_attr->name = strdup(LINK_TCP);
	CHECK(lnx_getinfo(h, &again));
	EXPECT(info_count(again) == 1 && !strcmp(again->domain_attr->name, LINK_TCP),
	       "domain %s with links %s", LINK_TCP, LINK_TCP);
	fi_freeinfo(again);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

static void test_shm_only(void)
{
	struct fi_info *h = lnx_hints(), *info = NULL;
	set_links(LINK_SHM);
	CHECK(lnx_getinfo(h, &info));
	EXPECT(info_count(info) == 1, "one entry");
	check_lnx_entry(info);
	EXPECT(!strcmp(info->domain_attr->name, LINK_SHM), "domain %s", info->domain_attr->name);
	EXPECT(info->caps & FI_SOURCE, "FI_SOURCE granted when asked");
	fi_freeinfo(info);
	fi_freeinfo(h);
	note("shm link: ok");
}

/* Bits that libfabric 2.0 gave new meanings (rdma/fabric.h of 2.x); the
 * 1.17 headers name them otherwise. */
#define API2_TAGGED_DIRECTED_RECV     (1ULL << 45)
#define API2_TAGGED_MULTI_RECV	      (1ULL << 46)
#define API2_EXACT_DIRECTED_RECV      (1ULL << 48)
#define API2_PROGRESS_CONTROL_UNIFIED 3

/* 7. What the caps and progress bits mean follows the API version asked
 *    for: under 2.x lnx grants tagged and exact directed receive and
 *    unified control progress; under 1.x those values mean other things
 *    (or nothing) and are refused. */
static int try_hints(uint64_t caps, int control_progress)
{
	struct fi_info *h = lnx_hints(), *info = NULL;
	h->caps |= caps;
	h->domain_attr->control_progress = control_progress;
	int ret = lnx_getinfo(h, &info);
	if (!ret) {
		for (struct fi_info *i = info; i; i = i->next)
			EXPECT((i->caps & caps) == caps, "caps %#llx not granted",
			       (unsigned long long)caps);
	}
	fi_freeinfo(info);
	fi_freeinfo(h);
	return ret;
}

static void test_api_semantics(void)
{
	set_links(LINK_SHM);
	int v2 = FI_VERSION_GE(TEST_FI_VERSION, FI_VERSION(2, 0));
	int want = v2 ? 0 : -FI_ENODATA;
	EXPECT(try_hints(API2_TAGGED_DIRECTED_RECV, 0) == want,
	       "FI_TAGGED_DIRECTED_RECV bit under API %u.%u", FI_MAJOR(TEST_FI_VERSION),
	       FI_MINOR(TEST_FI_VERSION));
	EXPECT(try_hints(API2_EXACT_DIRECTED_RECV, 0) == want, "FI_EXACT_DIRECTED_RECV bit");
	EXPECT(try_hints(0, API2_PROGRESS_CONTROL_UNIFIED) == want, "FI_PROGRESS_CONTROL_UNIFIED");
	EXPECT(try_hints(API2_TAGGED_MULTI_RECV, 0) == -FI_ENODATA, "FI_TAGGED_MULTI_RECV granted");
	EXPECT(try_hints(0, 77) == -FI_ENODATA, "control progress 77 accepted");

	/* The default answer reports tagged directed receive only under 2.x. */
	struct fi_info *h = lnx_hints(), *info = NULL;
	h->caps = 0;
	CHECK(lnx_getinfo(h, &info));
	fi_freeinfo(h);
	EXPECT(!!(info->caps & API2_TAGGED_DIRECTED_RECV) == v2, "caps %#llx under API %u.%u",
	       (unsigned long long)info->caps, FI_MAJOR(TEST_FI_VERSION),
	       FI_MINOR(TEST_FI_VERSION));
	EXPECT(info->fabric_attr->api_version == TEST_FI_VERSION, "api_version %#x",
	       info->fabric_attr->api_version);
	fi_freeinfo(info);
	note("API %u.%u semantics: ok", FI_MAJOR(TEST_FI_VERSION), FI_MINOR(TEST_FI_VERSION));
}

int main(void)
{
	snprintf(g_role, sizeof(g_role), "getinfo_basic");
	test_no_hints();
	test_one_sided_hints();
	test_default_links();
	test_ompi_hints(LINK_TCP);
	test_ompi_hints(LINK_SHM);
	test_domain_hint();
	test_shm_only();
	test_api_semantics();
	note("PASS");
	return 0;
}
