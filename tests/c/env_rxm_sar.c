/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * lnx keeps rxm's SAR protocol off on the peer API path
 * (FI_OFI_RXM_SAR_LIMIT=0, fi_lnx(7)) unless the user set the variable.
 * An application that sets it itself (setenv) after libfabric loaded lnx
 * must keep its value: lnx once looked in Go's copy of the environment,
 * taken when lnx was loaded, missed the application's value and
 * overwrote it with 0.
 *
 * usage: env_rxm_sar set|unset
 *   set:   the application sets 131072 before fi_getinfo; it must still
 *          read 131072 once an lnx endpoint on tcp;ofi_rxm is open.
 *   unset: the application sets nothing; on the peer path lnx sets 0,
 *          elsewhere (the transport adapter) it leaves the variable unset.
 */
#include "common.h"

#define SAR_VAR "FI_OFI_RXM_SAR_LIMIT"

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "set") != 0 && strcmp(argv[1], "unset") != 0)) {
		fprintf(stderr, "usage: %s set|unset\n", argv[0]);
		return 2;
	}
	int set = strcmp(argv[1], "set") == 0;
	unsetenv(SAR_VAR);
	/* Load libfabric and lnx (so the Go runtime, which copies the
	 * environment as it starts) before setenv, as an application that
	 * asks another provider first does. */
	struct fi_info *info = NULL, *other = fi_allocinfo();
	other->fabric_attr->prov_name = strdup("tcp");
	(void)fi_getinfo(TEST_FI_VERSION, NULL, NULL, 0, other, &info);
	fi_freeinfo(info);
	fi_freeinfo(other);
	if (set)
		setenv(SAR_VAR, "131072", 1);

	struct lnx l;
	struct lnx_opts o = { .links = LINK_TCP };
	lnx_open(&l, &o);
	const char *v = getenv(SAR_VAR);
	int peer = lnx_peer_path();
	note("%s after the endpoint opened: %s (peer API path: %s)", SAR_VAR, v ? v : "unset",
	     peer ? "yes" : "no");
	if (set && (!v || strcmp(v, "131072") != 0))
		FAIL("lnx changed the application's %s=131072 to %s", SAR_VAR, v ? v : "unset");
	if (!set && peer && (!v || strcmp(v, "0") != 0))
		FAIL("on the peer path lnx left %s at %s, want 0 (SAR off)", SAR_VAR,
		     v ? v : "unset");
	if (!set && !peer && v)
		FAIL("on the transport adapter lnx set %s=%s", SAR_VAR, v);
	lnx_close(&l);
	note("PASS");
	return 0;
}
