// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

//go:build !cgo

package emutest

// Cgo: without cgo no library can be loaded.
const Cgo = false

// Touch needs cgo.
func Touch(uintptr) byte { panic("emutest: Touch needs cgo") }
