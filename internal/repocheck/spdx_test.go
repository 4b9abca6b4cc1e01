// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package repocheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// spdx is the licence of every source file: libfabric's dual terms, so
// code can move between the two projects (LICENSE, LICENSES/).
const spdx = "SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only"

// sourceFiles lists the tracked files that take a licence line.
func sourceFiles(t *testing.T) (root string, files []string) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	root = strings.TrimSpace(string(out))
	out, err = exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(out)) {
		base := filepath.Base(f)
		switch {
		case strings.Contains(f, "/testdata/"):
		case strings.HasSuffix(f, ".go"), strings.HasSuffix(f, ".c"), strings.HasSuffix(f, ".h"),
			strings.HasSuffix(f, ".sh"), strings.HasSuffix(f, ".gp"),
			base == "Makefile", base == "CMakeLists.txt", f == ".ci/run":
			files = append(files, f)
		}
	}
	return root, files
}

// TestSPDX: the licence line is within a file's first three lines (after
// a #! line where there is one).
func TestSPDX(t *testing.T) {
	root, files := sourceFiles(t)
	if len(files) < 100 {
		t.Fatalf("only %d source files found; the listing is wrong", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		head := strings.SplitN(string(b), "\n", 4)
		if len(head) > 3 {
			head = head[:3]
		}
		if !strings.Contains(strings.Join(head, "\n"), spdx) {
			t.Errorf("%s: no %q line at the top", f, spdx)
		}
	}
}
