// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"sync"

	"github.com/lnx-go/lnx-go/hmem"
	"github.com/lnx-go/lnx-go/internal/fi"
	"github.com/lnx-go/lnx-go/lnx/logging"
)

var logRuntimes sync.Once

// hmemCaps reports FI_HMEM only where a device runtime is usable: a
// runtime library loaded, its entry points resolved, and a device present.
// The first call logs (FI_LOG_LEVEL=info) what each runtime is or why not.
func hmemCaps() uint64 {
	logRuntimes.Do(func() {
		for _, r := range hmem.Runtimes() {
			if r.Available() {
				logging.Infof(logging.Core, "device runtime %s: %d device(s)", r.Name(), r.DeviceCount())
			} else {
				logging.Infof(logging.Core, "device runtime %s unavailable: %s", r.Name(), r.Reason())
			}
		}
	})
	if hmem.Available() {
		return fi.HMEM
	}
	return 0
}
