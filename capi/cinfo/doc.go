// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package cinfo converts between C's struct fi_info and its Go mirror
// (internal/fi.Info), and checks that mirror's constants against the C
// headers lnx is built with (ABIMismatches, TestABIMirror).
//
// It lives under capi because it is part of the C boundary, but as its own
// leaf package (it imports only internal/fi): capi converts the
// application's hints and answers with it, and peers/ofi the answers of the
// core providers it opens. capi itself is package main and cannot be
// imported.
package cinfo
