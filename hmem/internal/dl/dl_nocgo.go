// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

//go:build !cgo

package dl

import "unsafe"

func open(string) (unsafe.Pointer, error) { return nil, ErrNoCgo }

func sym(unsafe.Pointer, string) unsafe.Pointer { return nil }
