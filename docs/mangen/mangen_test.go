// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lnx-go/lnx-go/lnx/config"
)

const root = "../.."

func page(t *testing.T) string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(root, "docs/lnx.7.md"))
	if err != nil {
		t.Fatal(err)
	}
	roff, err := Convert(string(md), "1")
	if err != nil {
		t.Fatalf("docs/lnx.7.md: %v", err)
	}
	return roff
}

// sourceVars returns every FI_LNX_* name in lnx's sources (tests, docs and
// the build aside), with a file it was found in.
func sourceVars(t *testing.T) map[string]string {
	t.Helper()
	vars := map[string]string{}
	name := regexp.MustCompile(`\bFI_LNX_[A-Z0-9_]*[A-Z0-9]\b`)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch rel {
			case ".git", "build", "tests", "docs":
				return filepath.SkipDir
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(p)
		if ext != ".go" && ext != ".c" && ext != ".h" || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, v := range name.FindAllString(string(src), -1) {
			vars[v] = rel
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return vars
}

// documented returns the variables the ENVIRONMENT section describes (its
// .TP terms).
func documented(roff string) map[string]bool {
	doc := map[string]bool{}
	name := regexp.MustCompile(`FI_LNX_[A-Z0-9_]*[A-Z0-9]`)
	in := false
	lines := strings.Split(roff, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".SH ") {
			in = l == `.SH "ENVIRONMENT"`
		}
		if in && l == ".TP" && i+1 < len(lines) {
			for _, v := range name.FindAllString(lines[i+1], -1) {
				doc[v] = true
			}
		}
	}
	return doc
}

// The three lists agree: config.Vars (what lnx reads, and what capi hands
// to fi_param_define, so what `fi_info -e` lists) is exactly what
// ENVIRONMENT describes, and no source file names a variable outside it
// (one read behind config's back, or a misspelling in a message).
func TestEnvironmentComplete(t *testing.T) {
	listed := map[string]bool{}
	for _, v := range config.Vars {
		listed[v.Env] = true
	}
	doc := documented(page(t))
	sameVars(t, listed, doc, "described under ENVIRONMENT in docs/lnx.7.md")
	for v, where := range sourceVars(t) {
		if !listed[v] {
			t.Errorf("%s names %s, which lnx/config does not list", where, v)
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	inReadme := map[string]bool{}
	name := regexp.MustCompile(`FI_LNX_[A-Z0-9_]*[A-Z0-9]`)
	for _, row := range regexp.MustCompile(`(?m)^\| (.*?) \|`).FindAllStringSubmatch(string(readme), -1) {
		for _, v := range name.FindAllString(row[1], -1) {
			inReadme[v] = true
		}
	}
	sameVars(t, listed, inReadme, "in README.md's Environment table")
	prov, err := os.ReadFile(filepath.Join(root, "capi/provider.c"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`fi_param_define\(\s*&lnx_prov,\s*"`).Find(prov); m != nil {
		t.Errorf("capi/provider.c defines a parameter by hand (%q); add it to lnx/config.Vars", m)
	}
	if len(doc) < 10 {
		t.Errorf("only %d variables found under ENVIRONMENT", len(doc))
	}
}

// sameVars reports every variable lnx/config lists that where lacks, and
// every one where has that lnx/config does not list.
func sameVars(t *testing.T, listed, other map[string]bool, where string) {
	t.Helper()
	var names []string
	for v := range listed {
		names = append(names, v)
	}
	for v := range other {
		if !listed[v] {
			names = append(names, v)
		}
	}
	sort.Strings(names)
	for _, v := range names {
		switch {
		case !other[v]:
			t.Errorf("%s (lnx/config) is not %s", v, where)
		case !listed[v]:
			t.Errorf("%s is %s, but lnx/config does not list it", v, where)
		}
	}
}

// man renders the page without warnings, in 80 columns, and man-db reads
// its NAME line.
func TestManRenders(t *testing.T) {
	for _, tool := range []string{"man", "lexgrog"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: install man-db (make deps)", tool)
		}
	}
	f := filepath.Join(t.TempDir(), "fi_lnx.7")
	if err := os.WriteFile(f, []byte(page(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("man", "--warnings", "-l", f)
	cmd.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat", "LC_ALL=C.UTF-8")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || errb.Len() > 0 {
		t.Fatalf("man --warnings -l: %v\n%s", err, errb.String())
	}
	for i, l := range strings.Split(out.String(), "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("rendered line %d is %d columns wide: %q", i+1, n, l)
		}
	}
	for _, want := range []string{"FI_LNX_PROV_LINKS", "ENVIRONMENT", "SEE ALSO"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	lg, err := exec.Command("lexgrog", f).CombinedOutput()
	if err != nil || !strings.Contains(string(lg), `"fi_lnx - `) {
		t.Errorf("lexgrog cannot read the NAME line: %v: %s", err, lg)
	}
}

func TestConvert(t *testing.T) {
	md := "# fi_x(7) — a page\n\n## NAME\nfi_x — does x\n\n## SYNOPSIS\n    run -v\n\n    .dot\n" +
		"## ENVIRONMENT\n**FI_X**\n: Takes `a-b` or *c*,\n  e.g.\n  .5 or 'q'.\n\n- item `\\x`\n  more\n- two\n\n## SEE ALSO\nfi_y(3)\n"
	got, err := Convert(md, "9")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`.TH "FI_X" 7 "" "lnx\-go release 9" "a page"`,
		".SH \"NAME\"\n.PP\nfi_x \\- does x\n",
		".nf\nrun \\-v\n\n\\&.dot\n.fi\n",
		".TP\n\\fBFI_X\\fR\nTakes \\fBa\\-b\\fR or \\fIc\\fR,\ne.g.\\&\n\\&.5 or 'q'.\n",
		".IP \\(bu 2\nitem \\fB\\ex\\fR\nmore\n.IP \\(bu 2\ntwo\n",
		"\\fBfi_y\\fR(3)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{
		"no title\n",
		"# x(7) — t\n\n| a | b |\n",
		"# x(7) — t\n\n```\ncode\n```\n",
		"# x(7) — t\n\n1. one\n",
		"# x(7) — t\n\nsee [this](http://x)\n",
		"# x(7) — t\n\nan `unclosed span\n",
		"# x(7) — t\n\n**bold `code`**\n",
	} {
		if _, err := Convert(bad, ""); err == nil {
			t.Errorf("Convert(%q) accepted it", bad)
		}
	}
}
