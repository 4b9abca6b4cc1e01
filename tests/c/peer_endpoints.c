/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * How many endpoints of the network core one lnx endpoint opens, counted
 * as an administrator would: the TCP listening sockets the process holds
 * (each tcp;ofi_rxm endpoint listens on its own port).
 *
 * An endpoint that asks for no one-sided operations holds one, on either
 * path: the transport adapter's endpoint, or the peer-API core alone
 * (docs/peer-api.md: the side transport beside it is opened for FI_RMA
 * and FI_ATOMIC only, since 2.1's rxm posts some 130 MB of receive
 * buffers per endpoint). One that asks for them holds one on the adapter
 * and two on the peer path (libfabric 2.0-2.2 unless FI_LNX_PEER_API=0).
 * Each endpoint must also still give a name after the others closed.
 */
#include <dirent.h>
#include <unistd.h>

#include "common.h"
#include "rma_common.h"

#define MAX_SOCKS 256

/* The inodes of the sockets this process holds. */
static int own_sockets(unsigned long *ino, int max)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		FAIL("opendir /proc/self/fd failed");
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL && n < max) {
		char path[300], link[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		ssize_t k = readlink(path, link, sizeof(link) - 1);
		if (k <= 0)
			continue;
		link[k] = 0;
		if (sscanf(link, "socket:[%lu]", &ino[n]) == 1)
			n++;
	}
	closedir(d);
	return n;
}

/* The TCP sockets in LISTEN state among this process's. */
static int listeners(void)
{
	unsigned long ino[MAX_SOCKS];
	int n = own_sockets(ino, MAX_SOCKS), count = 0;
	const char *tables[] = { "/proc/self/net/tcp", "/proc/self/net/tcp6" };
	for (size_t t = 0; t < 2; t++) {
		FILE *f = fopen(tables[t], "r");
		if (!f)
			continue;
		char line[512];
		if (!fgets(line, sizeof(line), f)) { /* the header */
			fclose(f);
			continue;
		}
		while (fgets(line, sizeof(line), f)) {
			unsigned st;
			unsigned long inode;
			/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
			if (sscanf(line, "%*s %*s %*s %x %*s %*s %*s %*s %*s %lu", &st, &inode) !=
			    2)
				continue;
			if (st != 0x0A)
				continue;
			for (int i = 0; i < n; i++)
				if (ino[i] == inode)
					count++;
		}
		fclose(f);
	}
	return count;
}

int main(void)
{
	struct lnx msg, rma;
	struct lnx_opts o = { .links = LINK_TCP };
	int base = listeners();

	lnx_open(&msg, &o);
	int after_msg = listeners();
	note("endpoint without one-sided caps: %d listening sockets (before: %d)", after_msg, base);
	if (after_msg - base != 1)
		FAIL("an endpoint without one-sided caps holds %d core listeners, want 1",
		     after_msg - base);

	o.caps = RMA_CAPS;
	lnx_open(&rma, &o);
	int after_rma = listeners();
	int want = lnx_peer_path() ? 2 : 1;
	note("endpoint with FI_RMA|FI_ATOMIC: %d more (peer path: %s)", after_rma - after_msg,
	     lnx_peer_path() ? "yes" : "no");
	if (after_rma - after_msg != want)
		FAIL("an endpoint with one-sided caps holds %d core listeners, want %d",
		     after_rma - after_msg, want);

	/* Both still answer for themselves. */
	size_t len = ADDR_MAX;
	uint8_t name[ADDR_MAX];
	CHECK(fi_getname(&msg.ep->fid, name, &len));
	CHECK_RC(len, LNX_ADDRLEN);
	lnx_close(&rma);
	len = ADDR_MAX;
	CHECK(fi_getname(&msg.ep->fid, name, &len));
	lnx_close(&msg);
	if (listeners() != base)
		FAIL("%d core listeners left after both endpoints closed (before: %d)", listeners(),
		     base);
	note("PASS");
	return 0;
}
