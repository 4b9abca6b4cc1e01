// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package cinfo

import "testing"

func TestABIMirror(t *testing.T) {
	for _, m := range ABIMismatches() {
		t.Error(m)
	}
}
