// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedCurrent regenerates every file from the header and fails if
// one on disk differs: the header changed and make generate was not run,
// or a generated file was edited by hand.
func TestGeneratedCurrent(t *testing.T) {
	if out, err := exec.Command(goTool(), "env", "CGO_ENABLED", "CC").Output(); err != nil {
		t.Skipf("cannot ask the go command about cgo: %v", err)
	} else if f := strings.Fields(string(out)); len(f) < 2 || f[0] != "1" {
		t.Skip("cgo is disabled: go tool cgo -godefs cannot run")
	} else if _, err := exec.LookPath(f[1]); err != nil {
		t.Skipf("no C compiler (%s) for go tool cgo -godefs: %v", f[1], err)
	}
	root := filepath.Join("..", "..")
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		old, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			t.Errorf("%s: %v (run make generate)", f.path, err)
			continue
		}
		if !bytes.Equal(old, f.data) {
			t.Errorf("%s differs from what %s generates: run make generate", f.path, header)
		}
	}
}

// TestParseStruct checks the parser on the declarations the header uses.
func TestParseStruct(t *testing.T) {
	src := `struct lnx_x {
	uint32_t a, *b; /* one
			   two */
	/* lead */
	struct lnx_y y[LNX_N];
	void *p;
	uint8_t pad[40];
};`
	s, err := parseStruct(src, "lnx_x")
	if err != nil {
		t.Fatal(err)
	}
	want := []cField{
		{name: "a", ctype: "uint32_t", comment: "one two"},
		{name: "b", ctype: "uint32_t", ptr: true},
		{name: "y", ctype: "struct lnx_y", arrLen: "LNX_N", lead: "lead"},
		{name: "p", ctype: "void", ptr: true},
		{name: "pad", ctype: "uint8_t", arrLen: "40"},
	}
	if len(s.fields) != len(want) {
		t.Fatalf("fields %+v, want %+v", s.fields, want)
	}
	for i := range want {
		if s.fields[i] != want[i] {
			t.Errorf("field %d: %+v, want %+v", i, s.fields[i], want[i])
		}
	}
	if _, err := parseStruct("struct lnx_z {\n\tstruct { int a; } e;\n};", "lnx_z"); err == nil {
		t.Error("a nested struct definition parsed")
	}
}
