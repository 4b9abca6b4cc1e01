#include <stdlib.h>
#include <string.h>
#include "lnx_capi.h"
#include "_cgo_export.h"

#include "lnx_version.h"

/* Our provider version: the major, 1000, is above every built-in provider
 * (libfabric 2.x numbers them 2xx.y) so this DL replaces a built-in lnx of
 * the same name; the minor is the lnx-go release. */
#define LNX_PROV_VERSION FI_VERSION(1000, LNX_RELEASE)

static int lnx_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints, struct fi_info **info)
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

/* Called from libfabric's destructor at process exit. It must not enter
 * Go: if the process is exiting because the Go runtime hit a fatal error,
 * a callback into it never returns and the process hangs instead of dying.
 * Go objects need no teardown at exit. */
static void lnx_cleanup(void)
{
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

void lnx_log(int level, int subsys, const char *msg)
{
	fi_log(&lnx_prov, (enum fi_log_level)level, (enum fi_log_subsys)subsys,
	       "lnx", 0, "%s\n", msg);
}

const char *lnx_getenv(const char *name)
{
	return getenv(name);
}

struct fi_info *lnx_info_next(struct fi_info *info)
{
	return info->next;
}

static void lnx_define_params(void)
{
	fi_param_define(&lnx_prov, "prov_links", FI_PARAM_STRING,
		"Core providers to link: group['|'group], group = prov['+'prov[':'dom[,dom]]]. "
		"'shm' is lnx's own intra-node core. Default: shm plus the first network provider found.");
	fi_param_define(&lnx_prov, "disable_shm", FI_PARAM_BOOL,
		"Drop the shm core from every link (all peers go over the network core).");
	fi_param_define(&lnx_prov, "node_id", FI_PARAM_STRING,
		"Node identity used to decide which peers are local (default: hostname and boot id).");
	fi_param_define(&lnx_prov, "multi_rail_selection", FI_PARAM_STRING,
		"Rail selection over several domains of one core: PER_PEER (each peer keeps one rail) "
		"or PER_MSG (messages take the rails in turn; the receiver restores their order).");
	fi_param_define(&lnx_prov, "net_addr_format", FI_PARAM_STRING,
		"inet or inet6: the address family of a network core that offers both (default: its first).");
	fi_param_define(&lnx_prov, "dump_stats", FI_PARAM_BOOL,
		"Log per-core traffic counters when an endpoint closes.");
	fi_param_define(&lnx_prov, "unexpected_max", FI_PARAM_SIZE_T,
		"Bytes of unexpected messages buffered per endpoint before senders are held back.");
	fi_param_define(&lnx_prov, "peer_timeout", FI_PARAM_STRING,
		"How long a silent network peer is probed before its operations fail (Go duration, default 10s).");
	fi_param_define(&lnx_prov, "wait_sleep_max", FI_PARAM_STRING,
		"Longest sleep between two progress polls of a blocked wait (fi_cq_sread, fi_cntr_wait, "
		"fi_wait, an FI_GETWAIT fd after fi_trywait); Go duration, default 1ms.");
	fi_param_define(&lnx_prov, "net_credits", FI_PARAM_INT,
		"Messages a sender may have in flight to one network receiver before it waits for "
		"credits (1-255, default 64; 0 turns flow control off).");
	fi_param_define(&lnx_prov, "net_read", FI_PARAM_BOOL,
		"Large network sends of one buffer are read by the receiver (RMA) where the core can (default: on).");
	fi_param_define(&lnx_prov, "fast_send", FI_PARAM_BOOL,
		"Write small sends to peers on this node from C, without calling into Go (default: on).");
	fi_param_define(&lnx_prov, "fast_recv", FI_PARAM_BOOL,
		"Queue receives into one host buffer in C; Go posts them in order when it next runs (default: on).");
	fi_param_define(&lnx_prov, "arm_recv", FI_PARAM_BOOL,
		"With one receive posted and nothing unexpected, complete small shm messages, and network "
		"messages of one peer, in C (default: on).");
	fi_param_define(&lnx_prov, "rearm_recv", FI_PARAM_BOOL,
		"Once C completed an armed receive, arm the next one posted in C too (default: on).");
}

/* libfabric's fi_fini may dlclose us; the Go runtime cannot be unloaded,
 * so the library is linked with -z nodelete and fi_prov_ini may run again
 * on the same image after a later fi_getinfo. */
__attribute__((visibility("default")))
struct fi_provider *fi_prov_ini(void)
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
