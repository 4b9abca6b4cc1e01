/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Variables an application sets itself (setenv) before fi_getinfo reach
 * lnx: the links, and the device runtime library (FI_LNX_CUDA_LIB), which
 * lnx once read through Go's copy of the environment taken at load time.
 *
 * usage: env_setenv <emulated device library>
 * The test starts with neither FI_LNX_PROV_LINKS nor FI_LNX_CUDA_LIB set.
 */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s <libemu.so>\n", argv[0]);
		return 2;
	}
	unsetenv("FI_LNX_PROV_LINKS");
	unsetenv("FI_LNX_CUDA_LIB");
	unsetenv("FI_LNX_ROCM_LIB");
	/* Load libfabric and lnx (and so the Go runtime, which copies the
	 * environment as it starts) before setenv, as an application that
	 * asks another provider first does. The prov_name keeps lnx's
	 * fi_getinfo from running, so nothing of lnx's is loaded yet. */
	uint32_t v = TEST_FI_VERSION;
	struct fi_info *info = NULL, *other = fi_allocinfo();
	other->fabric_attr->prov_name = strdup("tcp");
	(void)fi_getinfo(v, NULL, NULL, 0, other, &info);
	fi_freeinfo(info);
	fi_freeinfo(other);
	info = NULL;

	setenv("FI_LNX_PROV_LINKS", "shm", 1);
	setenv("FI_LNX_CUDA_LIB", argv[1], 1);
	setenv("FI_LNX_ROCM_LIB", "none", 1);
	setenv("EMU_DEVICES", "1", 1);
	struct fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("lnx");
	hints->caps = FI_TAGGED | FI_HMEM;
	hints->domain_attr->mr_mode =
		FI_MR_HMEM | FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	int ret = fi_getinfo(v, NULL, NULL, 0, hints, &info);
	if (ret) {
		fprintf(stderr, "FAIL: fi_getinfo(FI_HMEM) after setenv(FI_LNX_CUDA_LIB): %s\n",
			fi_strerror(-ret));
		return 1;
	}
	int fails = 0;
	for (struct fi_info *i = info; i; i = i->next) {
		if (strcmp(i->domain_attr->name, "shm") != 0) {
			fprintf(stderr,
				"FAIL: domain %s, want shm (FI_LNX_PROV_LINKS set by setenv)\n",
				i->domain_attr->name);
			fails++;
		}
		if (!(i->caps & FI_HMEM)) {
			fprintf(stderr, "FAIL: no FI_HMEM with FI_LNX_CUDA_LIB set by setenv\n");
			fails++;
		}
	}
	fi_freeinfo(info);
	fi_freeinfo(hints);
	if (!fails)
		printf("PASS: setenv before fi_getinfo reaches the links and the CUDA loader\n");
	return fails ? 1 : 0;
}
