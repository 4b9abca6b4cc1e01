/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The lnx-go release: the one place it is kept. libfabric sees it as the
 * provider version FI_VERSION(1000, LNX_RELEASE) (fi_info -l), the load
 * message at FI_LOG_LEVEL=info names it, and make puts it in the man
 * page's header. Raise it by one for each release.
 */
#ifndef LNX_VERSION_H
#define LNX_VERSION_H

#define LNX_RELEASE 1

#endif
