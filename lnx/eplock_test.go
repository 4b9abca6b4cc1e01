// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// The endpoint's lock must not be taken around the helpers that take back
// what C was lent: only eplock.go may name the field.
func TestEndpointGuardOnlyHere(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("package files: %v", err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if f == "eplock.go" {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok && s.Sel.Name == "guard" {
				t.Errorf("%s: the endpoint's guard used outside eplock.go; take it with lock, lockCollecting or lockToArm", fset.Position(s.Pos()))
			}
			return true
		})
	}
}
