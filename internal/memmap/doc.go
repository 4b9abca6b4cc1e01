// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package memmap answers whether an application's buffer is mapped over
// its whole length, before lnx or a core copies from it: a buffer shorter
// than the length the application gave must fail its send, not crash the
// process (lnx's own copies) or break a connection (a core's).
package memmap
