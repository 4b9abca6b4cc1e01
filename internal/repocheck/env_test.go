// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// envReaders: the os functions that read Go's copy of the environment,
// taken when the Go runtime started in the host process. lnx is loaded
// by libfabric, often before the application sets its variables, so the
// library reads them through C's getenv (lnx.Getenv, config.Load).
var envReaders = map[string]bool{"Getenv": true, "LookupEnv": true, "Environ": true}

// envAllowed: files that may read Go's copy: the default lnx.Getenv
// (replaced by C's getenv in the library, kept for Go tests), the test
// log switch of Go tests, and the harness of the emulated-device tests.
var envAllowed = map[string]bool{
	"lnx/env.go":                       true,
	"lnx/logging/logging.go":           true,
	"hmem/internal/emutest/emutest.go": true,
}

// TestNoGoEnvironment: no library code reads the environment through Go's
// os package. lnx once kept rxm's SAR off by looking up
// FI_OFI_RXM_SAR_LIMIT with os.LookupEnv, missed the value an application
// had set with setenv and overwrote it.
func TestNoGoEnvironment(t *testing.T) {
	root, files := sourceFiles(t)
	fset := token.NewFileSet()
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || envAllowed[f] ||
			strings.HasPrefix(f, "tests/") || strings.HasPrefix(f, "internal/cabigen/") {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(root, f), nil, parser.SkipObjectResolution)
		if err != nil {
			continue // deleted in the work tree, or not Go this test reads
		}
		osName := ""
		for _, imp := range file.Imports {
			if imp.Path.Value == `"os"` {
				osName = "os"
				if imp.Name != nil {
					osName = imp.Name.Name
				}
			}
		}
		if osName == "" {
			continue
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || !envReaders[sel.Sel.Name] {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == osName {
				t.Errorf("%s: os.%s reads Go's copy of the environment; use lnx.Getenv (C's getenv)",
					fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
