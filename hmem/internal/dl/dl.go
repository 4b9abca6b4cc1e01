// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package dl opens shared libraries and resolves their symbols at run time
// (dlopen/dlsym), so that lnx has no link-time dependency on any device
// library. Libraries are never closed: device runtimes do not survive
// being unloaded, and the process keeps them until it exits.
package dl

import (
	"errors"
	"unsafe"
)

// Lib is an opened shared library.
type Lib struct {
	Path string
	h    unsafe.Pointer
}

// ErrNoCgo is returned by Open in a build without cgo.
var ErrNoCgo = errors.New("dl: built without cgo, cannot load libraries")

// Open loads the library at path (a file path, or a name the dynamic
// linker searches for) with RTLD_NOW|RTLD_LOCAL.
func Open(path string) (*Lib, error) {
	h, err := open(path)
	if err != nil {
		return nil, err
	}
	return &Lib{Path: path, h: h}, nil
}

// Sym returns the address of the named symbol, or nil if the library does
// not define it.
func (l *Lib) Sym(name string) unsafe.Pointer {
	if l == nil || l.h == nil {
		return nil
	}
	return sym(l.h, name)
}
