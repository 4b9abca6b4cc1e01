// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

/*
#include <stdlib.h>
#include "lnx_capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/lnx-go/lnx-go/shm"
)

// Regions this process creates are recorded in C, which unlinks them at
// exit if their endpoints were never closed (provider.c).
func init() {
	shm.RegionHook = func(path string, live bool) {
		cs := C.CString(path)
		l := C.int(0)
		if live {
			l = 1
		}
		C.lnx_region_note(cs, l)
		C.free(unsafe.Pointer(cs))
	}
}
