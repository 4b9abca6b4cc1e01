// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

//go:build cgo

package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// dlopen and dlerror on one thread, in one call.
static void *lnx_dlopen(const char *path, char **err) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		*err = strdup(e ? e : "dlopen failed");
	}
	return h;
}

static void *lnx_dlsym(void *h, const char *name) {
	return dlsym(h, name);
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

func open(path string) (unsafe.Pointer, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var cerr *C.char
	h := C.lnx_dlopen(cpath, &cerr)
	if h == nil {
		msg := C.GoString(cerr)
		C.free(unsafe.Pointer(cerr))
		return nil, errors.New(msg)
	}
	return h, nil
}

func sym(h unsafe.Pointer, name string) unsafe.Pointer {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return C.lnx_dlsym(h, cname)
}
