// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include <stdint.h>
#include "lnx_version.h"
*/
import "C"

import (
	"fmt"

	"github.com/lnx-go/lnx-go/lnx/logging"
)

// release is the lnx-go release (capi/include/lnx_version.h), the minor of
// the provider version libfabric sees.
const release = C.LNX_RELEASE

// gitCommit is the commit the library was built from; make lib sets it
// with -ldflags -X main.gitCommit=<hash>[-dirty].
var gitCommit = "unknown"

// loadMessage is what lnx logs once per fi_prov_ini: which lnx-go this is
// and which libfabric API version it reports (api) to the libfabric it
// runs in (running).
func loadMessage(api, running uint32) string {
	return fmt.Sprintf("lnx-go release %d, commit %s: provider version 1000.%d, libfabric API %d.%d (running libfabric %d.%d)",
		release, gitCommit, release, api>>16, api&0xffff, running>>16, running&0xffff)
}

//export lnx_go_loaded
func lnx_go_loaded(api, running C.uint32_t) {
	defer func() { _ = recover() }() // a log line must never take the host down
	logging.Infof(logging.Core, "%s", loadMessage(uint32(api), uint32(running)))
	if w := newerWarning(uint32(api), uint32(running)); w != "" {
		logging.Warnf(logging.Core, "%s", w)
	}
}

// newerWarning says so when the running libfabric is newer than the newest
// API lnx knows (api is then capped below running): applications asking
// for the newer version will not see lnx.
func newerWarning(api, running uint32) string {
	if running <= api {
		return ""
	}
	return fmt.Sprintf("libfabric %d.%d is newer than any API lnx-go release %d knows; lnx serves API %d.%d, "+
		"so applications asking for %d.%d or later will not see it",
		running>>16, running&0xffff, release, api>>16, api&0xffff, (api >> 16), (api&0xffff)+1)
}
