// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

// The library's pthread_create calls (runtime/cgo's) go through
// threads.c, which keeps the runtime's threads off SCHED_FIFO (SCHED_RR
// at the same priority when their creator runs at SCHED_FIFO).

/*
#cgo LDFLAGS: -Wl,--wrap=pthread_create
*/
import "C"
