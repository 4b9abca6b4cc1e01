package lnx

import (
	"github.com/lnx-go/lnx-go/hmem"
	"github.com/lnx-go/lnx-go/lnx/fi"
)

// hmemCaps reports FI_HMEM only where a device runtime is usable: a
// runtime library loaded, its entry points resolved, and a device present.
func hmemCaps() uint64 {
	if hmem.Available() {
		return fi.HMEM
	}
	return 0
}
