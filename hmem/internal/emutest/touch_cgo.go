// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

//go:build cgo

package emutest

/*
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

// on_segv reports the fault and returns with the default disposition
// restored (SA_RESETHAND): the faulting load runs again and the kernel
// kills the process with SIGSEGV.
static void on_segv(int sig, siginfo_t *si, void *uc) {
	(void)sig;
	(void)uc;
	char msg[128];
	int n = snprintf(msg, sizeof msg, "emutest: SIGSEGV addr=%#lx code=%s\n",
			 (unsigned long)(uintptr_t)si->si_addr,
			 si->si_code == SEGV_ACCERR ? "SEGV_ACCERR" :
			 si->si_code == SEGV_MAPERR ? "SEGV_MAPERR" : "other");
	if (n > 0)
		(void)!write(2, msg, (size_t)n);
}

// emutest_touch reads one byte at p with the CPU, as code that mistook
// device memory for host memory would.
static int emutest_touch(uintptr_t p) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
	sigaction(SIGSEGV, &sa, NULL);
	return *(volatile unsigned char *)p;
}
*/
import "C"

// Cgo: libraries can be loaded (and Touch works).
const Cgo = true

// Touch reads the byte at p directly with the CPU, from C, with SIGSEGV
// reset to its default action (after a one-line report on stderr): on
// device memory the process dies by SIGSEGV. Only for child processes.
func Touch(p uintptr) byte { return byte(C.emutest_touch(C.uintptr_t(p))) }
