// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

// The library's pthread_create calls (runtime/cgo's) go through
// threads.c, which keeps the runtime's threads out of real-time classes.

/*
#cgo LDFLAGS: -Wl,--wrap=pthread_create
*/
import "C"
