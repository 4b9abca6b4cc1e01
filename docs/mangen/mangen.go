// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Command mangen turns docs/lnx.7.md into the roff man page fi_lnx.7
// (make man; make install puts it under share/man/man7).
//
//	go run ./docs/mangen -release 1 -o build/man/fi_lnx.7 docs/lnx.7.md
//
// It knows the Markdown lnx.7.md is written in and nothing more, and fails
// on anything else rather than render it wrongly:
//
//	# name(7) — title             the .TH line (first line)
//	## SECTION, ### Subsection    .SH, .SS
//	paragraphs                    .PP
//	    indented code             .nf block
//	- item (continued by "  ")    .IP bullets
//	**TERM** then ": text"        .TP definitions (continued by "  ")
//	`code`, **bold**, *emphasis*  \fB, \fB, \fI (no nesting)
//
// In NAME, " — " becomes the " \- " that whatis and lexgrog look for; in
// SEE ALSO, name(N) references are set in bold.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
)

func main() {
	release := flag.String("release", "", "lnx-go release named in the page footer")
	out := flag.String("o", "", "output file (default: standard output)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: mangen [-release N] [-o file] page.md")
		os.Exit(2)
	}
	src, err := os.ReadFile(flag.Arg(0))
	if err == nil {
		var roff string
		roff, err = Convert(string(src), *release)
		if err == nil {
			if *out == "" {
				_, err = os.Stdout.WriteString(roff)
			} else {
				err = os.WriteFile(*out, []byte(roff), 0o644)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mangen: %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
}

var (
	titleRe  = regexp.MustCompile(`^# ([A-Za-z0-9_.-]+)\(([1-9])\) — (.+)$`)
	seeAlso  = regexp.MustCompile(`([A-Za-z0-9_.]+)\(([1-9][a-z]*)\)`)
	badStart = regexp.MustCompile(`^(\x60\x60\x60|\||>|#|\* |\+ |[0-9]+[.)] |\t)`)
)

// Convert renders the Markdown man page md as roff.
func Convert(md, release string) (string, error) {
	lines := strings.Split(strings.TrimRight(md, "\n"), "\n")
	var b strings.Builder
	m := titleRe.FindStringSubmatch(lines[0])
	if m == nil {
		return "", fmt.Errorf("line 1: want %q, got %q", "# name(N) — title", lines[0])
	}
	footer := "lnx-go"
	if release != "" {
		footer = "lnx-go release " + release
	}
	b.WriteString(`.\" Generated from docs/lnx.7.md by docs/mangen; edit that file instead.` + "\n")
	fmt.Fprintf(&b, ".TH %s %s \"\" %s %s\n", quote(strings.ToUpper(m[1])), m[2], quote(footer), quote(m[3]))
	// Left-aligned and never hyphenated: identifiers and paths stay whole.
	b.WriteString(".ad l\n.nh\n")

	section := ""
	for i := 1; i < len(lines); {
		line := lines[i]
		n := i + 1 // line number for messages
		switch {
		case strings.TrimSpace(line) == "":
			i++
		case strings.HasPrefix(line, "## "), strings.HasPrefix(line, "### "):
			macro, text := ".SH", strings.TrimPrefix(line, "## ")
			if strings.HasPrefix(line, "### ") {
				macro, text = ".SS", strings.TrimPrefix(line, "### ")
			}
			if strings.ContainsAny(text, "`*\\") {
				return "", fmt.Errorf("line %d: markup in a heading", n)
			}
			if macro == ".SH" {
				section = text
			}
			fmt.Fprintf(&b, "%s %s\n", macro, quote(text))
			i++
		case strings.HasPrefix(line, "    "):
			j := i
			for j < len(lines) && (strings.HasPrefix(lines[j], "    ") || strings.TrimSpace(lines[j]) == "") {
				j++
			}
			for j > i && strings.TrimSpace(lines[j-1]) == "" {
				j--
			}
			b.WriteString(".PP\n.RS 4\n.nf\n")
			for _, l := range lines[i:j] {
				b.WriteString(lineStart(escape(strings.TrimPrefix(l, "    "))) + "\n")
			}
			b.WriteString(".fi\n.RE\n")
			i = j
		case strings.HasPrefix(line, "- "):
			j := continued(lines, i+1)
			text, err := inline(strings.TrimPrefix(line, "- ")+joinTrimmed(lines[i+1:j]), section)
			if err != nil {
				return "", fmt.Errorf("line %d: %v", n, err)
			}
			b.WriteString(".IP \\(bu 2\n" + text + "\n")
			i = j
		case strings.HasPrefix(line, "**") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], ": "):
			term, err := inline(line, section)
			if err != nil {
				return "", fmt.Errorf("line %d: %v", n, err)
			}
			j := continued(lines, i+2)
			def, err := inline(strings.TrimPrefix(lines[i+1], ": ")+joinTrimmed(lines[i+2:j]), section)
			if err != nil {
				return "", fmt.Errorf("line %d: %v", n+1, err)
			}
			b.WriteString(".TP\n" + term + "\n" + def + "\n")
			i = j
		case badStart.MatchString(line) || strings.HasPrefix(line, " "):
			return "", fmt.Errorf("line %d: mangen does not render %q", n, line)
		default:
			j := i + 1
			for j < len(lines) && strings.TrimSpace(lines[j]) != "" && !startsBlock(lines, j) {
				j++
			}
			text, err := inline(line+joinTrimmed(lines[i+1:j]), section)
			if err != nil {
				return "", fmt.Errorf("line %d: %v", n, err)
			}
			b.WriteString(".PP\n" + text + "\n")
			i = j
		}
	}
	return b.String(), nil
}

// startsBlock reports whether lines[j] interrupts a paragraph.
func startsBlock(lines []string, j int) bool {
	l := lines[j]
	return strings.HasPrefix(l, "#") || strings.HasPrefix(l, "- ") || badStart.MatchString(l) ||
		strings.HasPrefix(l, "**") && j+1 < len(lines) && strings.HasPrefix(lines[j+1], ": ")
}

// continued returns the end of the lines from j on that continue a list
// item or definition (indented by at least two spaces).
func continued(lines []string, j int) int {
	for j < len(lines) && strings.HasPrefix(lines[j], "  ") && strings.TrimSpace(lines[j]) != "" {
		j++
	}
	return j
}

// joinTrimmed gives each line, without its indentation, after a newline.
func joinTrimmed(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("\n" + strings.TrimSpace(l))
	}
	return b.String()
}

// inline renders a block's text: code spans, bold and emphasis, escapes,
// and keeps its line breaks (roff joins them again).
func inline(s, section string) (string, error) {
	var b strings.Builder
	for len(s) > 0 {
		var open, font string
		switch {
		case s[0] == '`':
			open, font = "`", `\fB`
		case strings.HasPrefix(s, "**"):
			open, font = "**", `\fB`
		case s[0] == '*' && len(s) > 1 && s[1] != ' ':
			open, font = "*", `\fI`
		case s[0] == '\\' && len(s) > 1 && strings.ContainsRune("\\`*_[]()#+-.!", rune(s[1])):
			b.WriteString(escape(s[1:2]))
			s = s[2:]
			continue
		}
		if open == "" {
			k := strings.IndexAny(s, "`*\\")
			if k == 0 {
				k = 1
			} else if k < 0 {
				k = len(s)
			}
			text := s[:k]
			if strings.Contains(text, "](") {
				return "", fmt.Errorf("links are not rendered: %q", text)
			}
			b.WriteString(escape(text))
			s = s[k:]
			continue
		}
		end := strings.Index(s[len(open):], open)
		if end < 0 {
			return "", fmt.Errorf("unclosed %s in %q", open, s)
		}
		inner := s[len(open) : len(open)+end]
		if open != "`" && strings.ContainsAny(inner, "`*") {
			return "", fmt.Errorf("nested markup in %q", inner)
		}
		b.WriteString(font + escape(inner) + `\fR`)
		s = s[len(open)+end+len(open):]
	}
	out := b.String()
	switch section {
	case "NAME":
		out = strings.Replace(out, ` \(em `, ` \- `, 1)
	case "SEE ALSO":
		out = seeAlso.ReplaceAllString(out, `\fB$1\fR($2)`)
	}
	ls := strings.Split(out, "\n")
	for i, l := range ls {
		l = lineStart(strings.TrimRight(l, " "))
		if strings.HasSuffix(l, "e.g.") || strings.HasSuffix(l, "i.e.") {
			l += `\&` // not the end of a sentence
		}
		ls[i] = l
	}
	return strings.Join(ls, "\n"), nil
}

// escape makes text safe for roff: backslashes, minus signs (so options
// and error codes render as the ASCII '-' one can paste), dashes and any
// other non-ASCII character.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r == '—':
			b.WriteString(`\(em`)
		case r == '–':
			b.WriteString(`\(en`)
		case r > 0x7e || r < 0x20 && r != '\t' && r != '\n':
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lineStart keeps a text line that begins with a control character from
// being read as a request.
func lineStart(l string) string {
	if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
		return `\&` + l
	}
	return l
}

// quote makes a macro argument of s.
func quote(s string) string {
	return `"` + strings.ReplaceAll(escape(s), `"`, `\(dq`) + `"`
}
