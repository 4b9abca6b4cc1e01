/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lnx_capi.h"
#include "_cgo_export.h"

#include "lnx_version.h"

/* Our provider version: the major, 1000, is above every built-in provider
 * (libfabric 2.x numbers them 2xx.y) so this DL replaces a built-in lnx of
 * the same name; the minor is the lnx-go release. */
#define LNX_PROV_VERSION FI_VERSION(1000, LNX_RELEASE)

static int lnx_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info)
{
	return lnx_go_getinfo(version, (char *)node, (char *)service, flags,
			      (struct fi_info *)hints, info);
}

static int lnx_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	lnx_handle h = 0;
	int ret = lnx_go_fabric(attr, &h);
	if (ret)
		return ret;
	*fabric = lnx_new_fabric(h, context);
	if (!*fabric) {
		lnx_go_close(h);
		return -FI_ENOMEM;
	}
	return 0;
}

/*
 * The shm regions (/dev/shm files) of this process's open endpoints. A
 * process that exits without closing them (exit(), a return from main)
 * would leave them until the next lnx process on the node cleans up stale
 * regions; the destructor below unlinks them at exit, without entering
 * Go. Each entry remembers its creator's pid: a child forked without exec
 * exits with a copy of the table and must not unlink its parent's live
 * regions. Best effort: beyond LNX_REGIONS live regions the rest wait for
 * the stale cleanup, as do those of a process killed by a signal.
 */
#define LNX_REGIONS	256
#define LNX_REGION_PATH 64
static struct {
	pid_t pid;
	char path[LNX_REGION_PATH];
} lnx_regions[LNX_REGIONS];
static int lnx_regions_lock;

void lnx_region_note(const char *path, int live)
{
	if (strlen(path) >= LNX_REGION_PATH)
		return;
	while (__atomic_exchange_n(&lnx_regions_lock, 1, __ATOMIC_ACQUIRE))
		;
	pid_t self = getpid();
	for (int i = 0; i < LNX_REGIONS; i++) {
		if (live && lnx_regions[i].pid == 0) {
			strcpy(lnx_regions[i].path, path);
			lnx_regions[i].pid = self;
			break;
		}
		if (!live && lnx_regions[i].pid == self && !strcmp(lnx_regions[i].path, path)) {
			lnx_regions[i].pid = 0;
			break;
		}
	}
	__atomic_store_n(&lnx_regions_lock, 0, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void lnx_regions_unlink(void)
{
	/* No lock: at exit another thread may hold it forever. Only this
	 * process's own entries, each unlinked once. */
	pid_t self = getpid();
	for (int i = 0; i < LNX_REGIONS; i++) {
		if (lnx_regions[i].pid == self) {
			lnx_regions[i].pid = 0;
			unlink(lnx_regions[i].path);
		}
	}
}

/* Called from libfabric's destructor at process exit. It must not enter
 * Go: if the process is exiting because the Go runtime hit a fatal error,
 * a callback into it never returns and the process hangs instead of dying.
 * Go objects need no teardown at exit; shm regions are unlinked. */
static void lnx_cleanup(void)
{
	lnx_regions_unlink();
}

/* The newest libfabric API whose ABI and semantics lnx knows (checked
 * against that release's headers by tests/deb13). */
#define LNX_API_NEWEST FI_VERSION(2, 1)
/* The oldest: the headers lnx is built against (Debian 12's 1.17). */
#define LNX_API_OLDEST FI_VERSION(1, 17)

/* The API version lnx reports: the running libfabric's, capped at the
 * newest lnx knows. fi_getinfo hides a provider whose fi_version is below
 * the version an application asks for, and Open MPI 5 asks for 1.18. */
static uint32_t lnx_api_version(uint32_t running)
{
	return FI_VERSION_LT(running, LNX_API_NEWEST) ? running : LNX_API_NEWEST;
}

struct fi_provider lnx_prov = {
	.version = LNX_PROV_VERSION,
	.fi_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
	.name = "lnx",
	.getinfo = lnx_getinfo,
	.fabric = lnx_fabric_open,
	.cleanup = lnx_cleanup,
};

int lnx_log_enabled(int level, int subsys)
{
	return fi_log_enabled(&lnx_prov, (enum fi_log_level)level, (enum fi_log_subsys)subsys);
}

/* lnx_log logs msg if the level is enabled (Go asks lnx_log_enabled first,
 * to skip formatting; C callers need not). */
void lnx_log(int level, int subsys, const char *msg)
{
	if (!fi_log_enabled(&lnx_prov, (enum fi_log_level)level, (enum fi_log_subsys)subsys))
		return;
	fi_log(&lnx_prov, (enum fi_log_level)level, (enum fi_log_subsys)subsys, "lnx", 0, "%s\n",
	       msg);
}

const char *lnx_getenv(const char *name)
{
	return getenv(name);
}

struct fi_info *lnx_info_next(struct fi_info *info)
{
	return info->next;
}

/* Every FI_LNX_* variable, from Go's one list (lnx/config), so that
 * `fi_info -e` shows exactly what lnx reads. */
/* Go makes the strings once and keeps them for the process; a C global
 * holds them too so that LeakSanitizer, which does not scan Go's heap,
 * sees them reachable (not static: a write-only static is optimised away). */
const char *lnx_param_strings[2 * 64];

static void lnx_define_params(void)
{
	const char *name, *help;
	int type;

	for (int i = 0; lnx_go_param(i, (char **)&name, &type, (char **)&help) == 0; i++) {
		if (2 * i + 1 < (int)(sizeof(lnx_param_strings) / sizeof(lnx_param_strings[0]))) {
			lnx_param_strings[2 * i] = name;
			lnx_param_strings[2 * i + 1] = help;
		}
		fi_param_define(&lnx_prov, name, (enum fi_param_type)type, "%s", help);
	}
}

/* libfabric's fi_fini may dlclose us; the Go runtime cannot be unloaded,
 * so the library is linked with -z nodelete and fi_prov_ini may run again
 * on the same image after a later fi_getinfo. */
__attribute__((visibility("default"))) struct fi_provider *fi_prov_ini(void)
{
	/* fi_fini frees the parameter list, so define again on each load. */
	lnx_define_params();
	if (FI_VERSION_LT(fi_version(), LNX_API_OLDEST)) {
		/* lnx reads and writes the 1.17 layouts of libfabric's structs;
		 * an older library allocates smaller ones. */
		fi_log(&lnx_prov, FI_LOG_WARN, FI_LOG_CORE, "lnx", __LINE__,
		       "lnx-go needs libfabric 1.17 or later; this is %u.%u: not loading\n",
		       FI_MAJOR(fi_version()), FI_MINOR(fi_version()));
		return NULL;
	}
	lnx_prov.fi_version = lnx_api_version(fi_version());
	lnx_go_init();
	lnx_go_loaded(lnx_prov.fi_version, fi_version());
	return &lnx_prov;
}
