// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package fi

import (
	"fmt"
	"syscall"
	"testing"
)

func TestCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{EAGAIN, -int(EAGAIN)},
		{Wrap(EMSGSIZE, "inject of %d bytes", 9000), -int(EMSGSIZE)},
		{fmt.Errorf("open: %w", syscall.ENOSPC), -int(syscall.ENOSPC)},
		{fmt.Errorf("no code"), -int(EOTHER)},
	} {
		if got := Code(c.err); got != c.want {
			t.Errorf("Code(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// Every busy send returns -FI_EAGAIN through Code: it must not allocate
// (docs/lnx.7.md, REAL-TIME SCHEDULING).
func TestCodeOfErrnoAllocatesNothing(t *testing.T) {
	var err error = EAGAIN
	if n := testing.AllocsPerRun(100, func() { _ = Code(err) }); n != 0 {
		t.Errorf("Code(EAGAIN): %v allocations per call, want 0", n)
	}
}
