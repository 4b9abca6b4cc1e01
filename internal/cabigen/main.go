// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Command cabigen generates the Go side of the memory C and Go share
// (capi/include/lnx_capi.h, the source) and the checks that keep the two
// sides together:
//
//   - per Go package, a file of Go types mirroring the C structs
//     (structs.HostLayout first, the Go names the code uses, every C
//     pointer and uintptr_t as uintptr: Go never stores a Go-typed pointer
//     into C memory, capi/cmem.go) and of the constants taken from C
//     macros;
//   - per Go package, a test comparing the size, offset and size of every
//     field of those types, and the Go constants C repeats, with what the
//     C compiler made of them when the file was generated;
//   - capi/layout_gen.c: the same numbers as _Static_asserts, so that a C
//     change that was not regenerated fails to compile.
//
// The fields, their order, types and comments come from the header (a
// small parser for the plain declarations it uses); the numbers come from
// the C compiler, through go tool cgo -godefs. Run it from anywhere in the
// module (make generate, or go generate ./internal/cabigen); with -check
// it writes nothing and fails if a generated file is out of date.
package main

//go:generate go run . -root ../..

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// header is the source of every shared definition, relative to the root.
const header = "capi/include/lnx_capi.h"

// peerHeader mirrors libfabric's peer API structs of both ABI flavours
// (issue #20); only capi/layout_gen.c includes it yet, and its Go mirrors
// live in their own package.
const peerHeader = "capi/include/lnx_peer_abi.h"

// headers are every header an output takes its structs from.
var headers = []string{header, peerHeader}

// cFile is the generated C file of static assertions (capi compiles it).
const cFile = "capi/layout_gen.c"

// A goStruct is a C struct mirrored in Go.
type goStruct struct {
	c      string            // C struct tag
	name   string            // Go type name
	export bool              // Go field names exported
	rename map[string]string // C field -> Go field where the rule does not fit
	doc    string            // Go doc comment after "name mirrors struct c"
}

// A constant is a C macro: generated as a Go constant (gen), or a Go
// constant the package owns that C repeats (checked only).
type constant struct {
	name  string // Go name (gen) or Go expression (checked)
	macro string
	doc   string
}

// An output is one Go package's generated files.
type output struct {
	pkg     string
	dir     string // relative to the root
	hdr     string // the header of its structs and macros; "" is header
	see     string // the document its types' comments point to; "" is docs/design.md
	structs []goStruct
	gen     []constant
	checked []constant
}

var outputs = []output{
	{
		pkg: "lnx", dir: "lnx",
		structs: []goStruct{
			{c: "lnx_gate", name: "gateMem", doc: "a CQ's gate (gate.go), in C memory."},
			{c: "lnx_gate_watch", name: "gateWatch", doc: "one word of shm the gate watches."},
			{c: "lnx_rxq_entry", name: "queuedRecv", doc: "a receive C queued (fast.go), in C memory; Go only reads it."},
			{c: "lnx_arm_ring", name: "armRing", doc: "an inbound shm ring lent to C (arm.go), in C memory."},
			{c: "lnx_arm_slot", name: "armSlot", doc: "one armed receive (arm.go), in C memory."},
			{c: "lnx_arm", name: "armMem", doc: "an endpoint's armed receives (arm.go), in C memory."},
			{c: "lnx_fast", name: "fastMem", doc: "an endpoint's C fast paths (fast.go), in C memory (capi allocates it with the endpoint).",
				rename: map[string]string{"rxq_lock": "rxLock", "rxq_head": "rxHead", "rxq_tail": "rxTail"}},
		},
		gen: []constant{
			{"GateWatches", "LNX_GATE_WATCHES", "the number of words a gate can watch."},
			{"FastRecvs", "LNX_RXQ", "the number of receives C can queue."},
			{"QueuedTagged", "LNX_RXQ_TAGGED", "the kind bit of a queued receive of the tagged queue."},
			{"QueuedIov", "LNX_RXQ_IOV", "the kind bit of a queued receive of one buffer (else none)."},
			{"ArmRings", "LNX_ARM_RINGS", "the most inbound rings lent: with more, nothing is armed."},
			{"ArmSlots", "LNX_ARM_SLOTS", "the most receives armed at once (a power of 2)."},
			{"ArmTx", "LNX_ARM_TX", "the most peers C has rendezvous sends out to."},
			{"FastPeers", "LNX_FAST_PEERS", "the bound of the fi_addrs C can send to."},
		},
		checked: []constant{{name: "hdrTagged", macro: "LNX_HDR_TAGGED"}, {name: "hdrData", macro: "LNX_HDR_DATA"}},
	},
	{
		pkg: "shm", dir: "shm",
		structs: []goStruct{
			{c: "lnx_txrndv", name: "TxRndv", export: true, doc: "a rendezvous send C posted through a TxSlot (txslot.go), in its arena."},
			{c: "lnx_txslot", name: "TxSlot", export: true, doc: "a peer's send-side ring state (txslot.go), in an anonymous mapping outside the Go heap (txArena)."},
			{c: "lnx_rec", name: "recHdr", doc: "the header of a forward-ring record (layout.go), in a shm region."},
			{c: "lnx_ack", name: "ackEnt", doc: "an entry of a channel's ack ring (layout.go), in a shm region."},
		},
		checked: []constant{
			{name: "epOpen", macro: "LNX_SHM_PEER_OPEN"}, {name: "recHdrSize", macro: "LNX_REC_HDR"},
			{name: "lineBytes", macro: "LNX_REC_LINE"}, {name: "recPad", macro: "LNX_REC_PAD"},
			{name: "recEager", macro: "LNX_REC_EAGER"},
			{name: "recRndv", macro: "LNX_REC_RNDV"}, {name: "iovBytes", macro: "LNX_REC_IOV"},
			{name: "MaxIOV", macro: "LNX_REC_MAX_IOV"}, {name: "rfNoCMA", macro: "LNX_REC_NOCMA"},
			{name: "ackOK", macro: "LNX_ACK_OK"}, {name: "ackBytes", macro: "LNX_ACK_BYTES"},
			{name: "ackDiscard", macro: "LNX_ACK_DISCARD"},
		},
		gen: []constant{
			{"TxRndvs", "LNX_TX_RNDV", "the rendezvous sends C may have out through one TxSlot."},
			{"txRndvBit", "LNX_TX_RNDV_BIT", "the bit of a cookie's slot index that names a TxSlot's table."},
			{"txrFree", "LNX_TXR_FREE", "a TxRndv entry unused."},
			{"txrC", "LNX_TXR_C", "a TxRndv entry C posted and reaps."},
			{"txrGo", "LNX_TXR_GO", "a TxRndv entry Go adopted."},
		},
	},
	{
		pkg: "peerapi", dir: "peers/peerapi", hdr: peerHeader, see: "docs/peer-api.md",
		structs: []goStruct{
			{c: "lnx_peer_fid", name: "Fid", export: true, doc: "struct fid (both flavours)."},
			{c: "lnx_peer_fid_ep", name: "FidEp", export: true, doc: "struct fid_ep (both flavours)."},
			{c: "lnx_peer_rx_entry_v1", name: "RxEntryV1", export: true, doc: "struct fi_peer_rx_entry of libfabric 1.17 (rdma/fi_ext.h)."},
			{c: "lnx_peer_rx_entry_v2", name: "RxEntryV2", export: true, doc: "struct fi_peer_rx_entry of libfabric 2.0 to 2.2 (rdma/providers/fi_peer.h)."},
			{c: "lnx_peer_match_attr", name: "MatchAttr", export: true, doc: "struct fi_peer_match_attr (2.0 to 2.2): what get_msg and get_tag get."},
			{c: "lnx_peer_srx_owner_v1", name: "SrxOwnerOpsV1", export: true, doc: "struct fi_ops_srx_owner of 1.17."},
			{c: "lnx_peer_srx_owner_v2", name: "SrxOwnerOpsV2", export: true, doc: "struct fi_ops_srx_owner of 2.0 to 2.2."},
			{c: "lnx_peer_srx_peer", name: "SrxPeerOps", export: true, doc: "struct fi_ops_srx_peer (both flavours)."},
			{c: "lnx_peer_srx", name: "Srx", export: true, doc: "struct fid_peer_srx (both flavours)."},
			{c: "lnx_peer_srx_context", name: "SrxContext", export: true, doc: "struct fi_peer_srx_context (both flavours)."},
			{c: "lnx_peer_cq_owner", name: "CqOwnerOps", export: true, doc: "struct fi_ops_cq_owner (both flavours)."},
			{c: "lnx_peer_cq", name: "Cq", export: true, doc: "struct fid_peer_cq (both flavours)."},
			{c: "lnx_peer_cq_context", name: "CqContext", export: true, doc: "struct fi_peer_cq_context (both flavours)."},
		},
		gen: []constant{
			{"FlagPeer", "LNX_FI_PEER", "the flag asking a core for the peer API."},
			{"ClassSrxCtx", "LNX_FI_CLASS_SRX_CTX", "the fid class of an SRX (the one 1.17 shm takes from the owner)."},
			{"ClassPeerCq", "LNX_FI_CLASS_PEER_CQ", "the fid class of an owner's peer CQ."},
			{"ClassPeerSrx", "LNX_FI_CLASS_PEER_SRX", "the fid class of an owner's peer SRX."},
		},
	},
}

// hdrOf is the header o's structs and macros come from.
func hdrOf(o output) string {
	if o.hdr != "" {
		return o.hdr
	}
	return header
}

func main() {
	root := flag.String("root", "", "the module's root (default: found from the working directory)")
	check := flag.Bool("check", false, "write nothing; fail if a generated file differs")
	flag.Parse()
	dir := *root
	if dir == "" {
		var err error
		if dir, err = findRoot(); err != nil {
			fatal(err)
		}
	}
	files, err := generate(dir)
	if err != nil {
		fatal(err)
	}
	stale := false
	for _, f := range files {
		p := filepath.Join(dir, f.path)
		old, _ := os.ReadFile(p)
		if bytes.Equal(old, f.data) {
			continue
		}
		if *check {
			fmt.Fprintf(os.Stderr, "cabigen: %s is out of date\n", f.path)
			stale = true
			continue
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			fatal(err)
		}
	}
	if stale {
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "cabigen:", err)
	os.Exit(1)
}

func findRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		d = up
	}
}

// A file is one generated file.
type file struct {
	path string // relative to the root
	data []byte
}

// generate returns every generated file's contents.
func generate(root string) ([]file, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	texts := map[string]string{}
	for _, h := range headers {
		src, err := os.ReadFile(filepath.Join(root, h))
		if err != nil {
			return nil, err
		}
		texts[h] = string(src)
	}
	parsed := map[string]*cStruct{}
	var order []*cStruct
	var macros []string
	for _, o := range outputs {
		for _, s := range o.structs {
			cs, err := parseStruct(texts[hdrOf(o)], s.c)
			if err != nil {
				return nil, err
			}
			parsed[s.c] = cs
			order = append(order, cs)
		}
		for _, c := range o.gen {
			macros = append(macros, c.macro)
		}
		for _, c := range o.checked {
			macros = append(macros, c.macro)
		}
	}
	lay, err := cLayout(root, order, macros)
	if err != nil {
		return nil, err
	}
	var files []file
	var cAsserts bytes.Buffer
	for _, o := range outputs {
		goSrc, err := genGo(o, parsed, lay)
		if err != nil {
			return nil, err
		}
		if err := checkGo(o, goSrc, parsed, lay); err != nil {
			return nil, err
		}
		testSrc, err := genTest(o, parsed, lay)
		if err != nil {
			return nil, err
		}
		files = append(files, file{filepath.Join(o.dir, "cabi_gen.go"), goSrc},
			file{filepath.Join(o.dir, "cabi_gen_test.go"), testSrc})
		genAsserts(&cAsserts, o, parsed, lay)
	}
	files = append(files, file{cFile, cSource(cAsserts.Bytes())})
	return files, nil
}

// A cStruct is a C struct as the header declares it.
type cStruct struct {
	tag    string
	fields []cField
}

// A cField is one declarator.
type cField struct {
	name    string
	ctype   string // base type: uint32_t, ..., "struct lnx_x"
	ptr     bool
	arrLen  string // array length as written (a number or a macro), or ""
	comment string // trailing comment
	lead    string // comment on the lines before
}

var declRe = regexp.MustCompile(`^((?:const\s+|volatile\s+)*)(struct\s+\w+|\w+)\s*(\**)\s*(\w+)\s*(?:\[\s*(\w+)\s*\])?$`)
var moreRe = regexp.MustCompile(`^(\**)\s*(\w+)\s*(?:\[\s*(\w+)\s*\])?$`)

// parseStruct finds "struct tag {...};" in src and parses its fields:
// declarations of scalars, pointers and one-dimensional arrays, several
// declarators to one declaration, and /* */ comments.
func parseStruct(src, tag string) (*cStruct, error) {
	re := regexp.MustCompile(`(?m)^struct\s+` + regexp.QuoteMeta(tag) + `\s*\{`)
	loc := re.FindStringIndex(src)
	if loc == nil {
		return nil, fmt.Errorf("no definition of struct %s", tag)
	}
	body := src[loc[1]:]
	end := strings.Index(body, "}")
	if end < 0 {
		return nil, fmt.Errorf("struct %s: no closing brace", tag)
	}
	body = body[:end]
	if strings.Contains(stripComments(body), "{") {
		return nil, fmt.Errorf("struct %s: nested struct definitions are not supported", tag)
	}
	s := &cStruct{tag: tag}
	lead := ""
	lastLine := -1 // line of the last declaration's ';'
	lastFirst := -1
	line := 0
	for i := 0; i < len(body); {
		switch {
		case body[i] == '\n':
			line++
			i++
		case body[i] == ' ' || body[i] == '\t' || body[i] == '\r':
			i++
		case strings.HasPrefix(body[i:], "/*"):
			j := strings.Index(body[i:], "*/")
			if j < 0 {
				return nil, fmt.Errorf("struct %s: unterminated comment", tag)
			}
			c := cleanComment(body[i+2 : i+j])
			if line == lastLine && lastFirst >= 0 {
				s.fields[lastFirst].comment = c
			} else {
				lead = strings.TrimSpace(lead + " " + c)
			}
			line += strings.Count(body[i:i+j], "\n")
			i += j + 2
		default:
			j := strings.IndexByte(body[i:], ';')
			if j < 0 {
				return nil, fmt.Errorf("struct %s: declaration without ';'", tag)
			}
			decl := body[i : i+j]
			if strings.Contains(decl, "/*") {
				return nil, fmt.Errorf("struct %s: comment inside %q", tag, decl)
			}
			line += strings.Count(decl, "\n")
			fs, err := parseDecl(strings.Join(strings.Fields(decl), " "))
			if err != nil {
				return nil, fmt.Errorf("struct %s: %v", tag, err)
			}
			fs[0].lead, lead = lead, ""
			lastFirst = len(s.fields)
			s.fields = append(s.fields, fs...)
			lastLine = line
			i += j + 1
		}
	}
	if len(s.fields) == 0 {
		return nil, fmt.Errorf("struct %s: no fields", tag)
	}
	return s, nil
}

func parseDecl(d string) ([]cField, error) {
	parts := strings.Split(d, ",")
	m := declRe.FindStringSubmatch(strings.TrimSpace(parts[0]))
	if m == nil {
		return nil, fmt.Errorf("cannot parse declaration %q", d)
	}
	base := strings.Join(strings.Fields(m[2]), " ")
	fs := []cField{{name: m[4], ctype: base, ptr: m[3] != "", arrLen: m[5]}}
	if len(m[3]) > 1 {
		return nil, fmt.Errorf("%q: pointers to pointers are not supported", d)
	}
	for _, p := range parts[1:] {
		n := moreRe.FindStringSubmatch(strings.TrimSpace(p))
		if n == nil || len(n[1]) > 1 {
			return nil, fmt.Errorf("cannot parse declarator %q in %q", p, d)
		}
		fs = append(fs, cField{name: n[2], ctype: base, ptr: n[1] != "", arrLen: n[3]})
	}
	return fs, nil
}

func stripComments(s string) string {
	return regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(s, "")
}

// cleanComment turns a C comment's text into one line of words.
func cleanComment(c string) string {
	var w []string
	for _, l := range strings.Split(c, "\n") {
		l = strings.TrimSpace(l)
		l = strings.TrimPrefix(l, "*")
		w = append(w, strings.Fields(l)...)
	}
	return strings.Join(w, " ")
}

// layout is what the C compiler made of the header.
type layout struct {
	size   map[string]uint64            // struct tag -> sizeof
	off    map[string]map[string]uint64 // tag -> field -> offsetof
	fsize  map[string]map[string]uint64 // tag -> field -> sizeof
	macros map[string]uint64
}

// cLayout asks the C compiler, through go tool cgo -godefs, for the size
// of every struct, the offset and size of every field and the value of
// every macro.
func cLayout(root string, ss []*cStruct, macros []string) (*layout, error) {
	var enum, consts strings.Builder
	type ref struct{ kind, tag, field string }
	var refs []ref
	add := func(expr string, r ref) {
		n := fmt.Sprintf("lnx_cabigen_%d", len(refs))
		fmt.Fprintf(&enum, "\t%s = %s,\n", n, expr)
		fmt.Fprintf(&consts, "\t%s = C.%s\n", n, n)
		refs = append(refs, r)
	}
	for _, s := range ss {
		add(fmt.Sprintf("sizeof(struct %s)", s.tag), ref{"size", s.tag, ""})
		for _, f := range s.fields {
			add(fmt.Sprintf("offsetof(struct %s, %s)", s.tag, f.name), ref{"off", s.tag, f.name})
			add(fmt.Sprintf("sizeof(((struct %s *)0)->%s)", s.tag, f.name), ref{"fsize", s.tag, f.name})
		}
	}
	for _, m := range macros {
		add(m, ref{"macro", m, ""})
	}
	tmp, err := os.MkdirTemp("", "cabigen")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var incl strings.Builder
	for _, h := range headers {
		fmt.Fprintf(&incl, "#include \"%s\"\n", filepath.Base(h))
	}
	defs := fmt.Sprintf("//go:build ignore\n\npackage defs\n\n/*\n#include <stddef.h>\n%senum {\n%s};\n*/\nimport \"C\"\n\nconst (\n%s)\n",
		incl.String(), enum.String(), consts.String())
	if err := os.WriteFile(filepath.Join(tmp, "defs.go"), []byte(defs), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(goTool(), "tool", "cgo", "-godefs", "--", "-I", filepath.Join(root, filepath.Dir(header)), "defs.go")
	cmd.Dir = tmp
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go tool cgo -godefs: %v\n%s", err, stderr.String())
	}
	f, err := parser.ParseFile(token.NewFileSet(), "godefs.go", out, 0)
	if err != nil {
		return nil, fmt.Errorf("godefs output: %v", err)
	}
	vals := map[string]uint64{}
	ast.Inspect(f, func(n ast.Node) bool {
		if v, ok := n.(*ast.ValueSpec); ok && len(v.Values) == 1 {
			if lit, ok := v.Values[0].(*ast.BasicLit); ok {
				if x, err := strconv.ParseUint(lit.Value, 0, 64); err == nil {
					vals[v.Names[0].Name] = x
				}
			}
		}
		return true
	})
	l := &layout{size: map[string]uint64{}, off: map[string]map[string]uint64{}, fsize: map[string]map[string]uint64{},
		macros: map[string]uint64{}}
	for i, r := range refs {
		v, ok := vals[fmt.Sprintf("lnx_cabigen_%d", i)]
		if !ok {
			return nil, fmt.Errorf("godefs gave no value for %v", r)
		}
		switch r.kind {
		case "size":
			l.size[r.tag] = v
		case "off", "fsize":
			m := l.off
			if r.kind == "fsize" {
				m = l.fsize
			}
			if m[r.tag] == nil {
				m[r.tag] = map[string]uint64{}
			}
			m[r.tag][r.field] = v
		case "macro":
			l.macros[r.tag] = v
		}
	}
	return l, nil
}

// goTool is the go command: go run, go generate and go test put the
// running toolchain's bin directory first in PATH.
func goTool() string { return "go" }

// goFieldName is f's Go name in s: the C name in camel case (exported for
// an exported struct), "_" for padding, or s's rename.
func goFieldName(s goStruct, f cField) string {
	if n, ok := s.rename[f.name]; ok {
		return n
	}
	if f.name == "pad" || strings.HasPrefix(f.name, "pad_") {
		return "_"
	}
	parts := strings.Split(f.name, "_")
	for i, p := range parts {
		if p != "" && (i > 0 || s.export) {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "")
}

var scalar = map[string]string{
	"uint8_t": "byte", "int8_t": "int8", "uint16_t": "uint16", "int16_t": "int16",
	"uint32_t": "uint32", "int32_t": "int32", "uint64_t": "uint64", "int64_t": "int64",
	"uintptr_t": "uintptr", "size_t": "uintptr",
}

// goType is f's Go type: pointers are uintptr, structs their mirror.
func goType(o output, f cField) (string, error) {
	var t string
	switch {
	case f.ptr:
		t = "uintptr"
	case strings.HasPrefix(f.ctype, "struct "):
		tag := strings.TrimPrefix(f.ctype, "struct ")
		for _, s := range o.structs {
			if s.c == tag {
				t = s.name
			}
		}
		if t == "" {
			return "", fmt.Errorf("%s: struct %s is not mirrored in package %s", f.name, tag, o.pkg)
		}
	default:
		t = scalar[f.ctype]
		if t == "" {
			return "", fmt.Errorf("%s: no Go type for C type %s", f.name, f.ctype)
		}
	}
	if f.arrLen == "" {
		return t, nil
	}
	n := f.arrLen
	if _, err := strconv.ParseUint(n, 0, 64); err != nil {
		n = ""
		for _, c := range o.gen {
			if c.macro == f.arrLen {
				n = c.name
			}
		}
		if n == "" {
			return "", fmt.Errorf("%s: array length %s has no Go constant in package %s", f.name, f.arrLen, o.pkg)
		}
	}
	return "[" + n + "]" + t, nil
}

// spdxGo and spdxC are the licence line every source file starts with.
const (
	spdxGo = "// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only\n\n"
	spdxC  = "/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */\n"
)

// generatedBy is the head of o's generated Go files.
func generatedBy(o output) string {
	return spdxGo + "// Code generated by internal/cabigen from " + hdrOf(o) + "; DO NOT EDIT.\n// Regenerate with make generate.\n\n"
}

func genGo(o output, parsed map[string]*cStruct, l *layout) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(generatedBy(o))
	fmt.Fprintf(&b, "package %s\n\nimport \"structs\"\n\n", o.pkg)
	if len(o.gen) > 0 {
		b.WriteString("// Constants of " + hdrOf(o) + ".\nconst (\n")
		for _, c := range o.gen {
			writeComment(&b, "\t", c.name+" is "+c.macro+", "+c.doc)
			fmt.Fprintf(&b, "\t%s = %d\n", c.name, l.macros[c.macro])
		}
		b.WriteString(")\n\n")
	}
	for _, s := range o.structs {
		cs := parsed[s.c]
		see := "See docs/design.md for who writes and reads each word."
		if o.see != "" {
			see = "See " + o.see + "."
		}
		writeComment(&b, "", fmt.Sprintf("%s mirrors struct %s: %s %s", s.name, s.c, s.doc, see))
		fmt.Fprintf(&b, "type %s struct {\n\t_ structs.HostLayout\n\n", s.name)
		for _, f := range cs.fields {
			t, err := goType(o, f)
			if err != nil {
				return nil, fmt.Errorf("struct %s: %v", s.c, err)
			}
			if f.lead != "" {
				b.WriteString("\n")
				writeComment(&b, "\t", f.lead)
			}
			if len(f.comment) > 70 {
				writeComment(&b, "\t", f.comment)
			}
			fmt.Fprintf(&b, "\t%s %s", goFieldName(s, f), t)
			if f.comment != "" && len(f.comment) <= 70 {
				fmt.Fprintf(&b, " // %s", f.comment)
			}
			b.WriteString("\n")
		}
		b.WriteString("}\n\n")
	}
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("package %s: gofmt: %v\n%s", o.pkg, err, b.String())
	}
	return out, nil
}

// writeComment writes text as // lines of at most about 76 columns.
func writeComment(b *bytes.Buffer, indent, text string) {
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(indent)*8+len(line)+1+len(w) > 76 {
			fmt.Fprintf(b, "%s// %s\n", indent, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		fmt.Fprintf(b, "%s// %s\n", indent, line)
	}
}

// checkGo type-checks the generated Go and compares its layout on this
// machine with C's, so that a generator mistake shows at once.
func checkGo(o output, src []byte, parsed map[string]*cStruct, l *layout) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, o.pkg+"/cabi_gen.go", src, 0)
	if err != nil {
		return err
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check(o.pkg, fset, []*ast.File{f}, nil)
	if err != nil {
		return err
	}
	sizes := types.SizesFor("gc", runtime.GOARCH)
	for _, s := range o.structs {
		st := pkg.Scope().Lookup(s.name).Type().Underlying().(*types.Struct)
		if got, want := uint64(sizes.Sizeof(st)), l.size[s.c]; got != want {
			return fmt.Errorf("%s: Go size %d, C's %d", s.name, got, want)
		}
		var vars []*types.Var
		for i := 0; i < st.NumFields(); i++ {
			vars = append(vars, st.Field(i))
		}
		offs := sizes.Offsetsof(vars)
		for i, cf := range parsed[s.c].fields {
			// Field 0 is the HostLayout marker.
			if got, want := uint64(offs[i+1]), l.off[s.c][cf.name]; got != want {
				return fmt.Errorf("%s.%s: Go offset %d, C's %d", s.name, cf.name, got, want)
			}
			if got, want := uint64(sizes.Sizeof(vars[i+1].Type())), l.fsize[s.c][cf.name]; got != want {
				return fmt.Errorf("%s.%s: Go size %d, C's %d", s.name, cf.name, got, want)
			}
		}
	}
	return nil
}

func genTest(o output, parsed map[string]*cStruct, l *layout) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(generatedBy(o))
	fmt.Fprintf(&b, "package %s\n\nimport (\n\t\"testing\"\n\t\"unsafe\"\n)\n\n", o.pkg)
	b.WriteString(`// TestCLayout compares every generated type's size and every field's
// offset and size, and the constants C repeats, with what the C compiler
// made of ` + hdrOf(o) + ` (capi/layout_gen.c asserts the same
// numbers in C): a field moved on one side and not the other fails here or
// does not compile there.
func TestCLayout(t *testing.T) {
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
`)
	for _, s := range o.structs {
		fmt.Fprintf(&b, "\t\t{\"sizeof(struct %s)\", unsafe.Sizeof(%s{}), %d},\n", s.c, s.name, l.size[s.c])
		for _, f := range parsed[s.c].fields {
			n := goFieldName(s, f)
			if n == "_" {
				continue // its neighbours' offsets and the size cover it
			}
			fmt.Fprintf(&b, "\t\t{\"offsetof(struct %s, %s)\", unsafe.Offsetof(%s{}.%s), %d},\n", s.c, f.name, s.name, n, l.off[s.c][f.name])
			fmt.Fprintf(&b, "\t\t{\"sizeof(struct %s.%s)\", unsafe.Sizeof(%s{}.%s), %d},\n", s.c, f.name, s.name, n, l.fsize[s.c][f.name])
		}
	}
	for _, c := range o.checked {
		fmt.Fprintf(&b, "\t\t{\"%s (%s)\", uintptr(%s), %d},\n", c.macro, c.name, c.name, l.macros[c.macro])
	}
	b.WriteString(`	} {
		if c.got != c.want {
			t.Errorf("%s: Go has %d, C %d", c.what, c.got, c.want)
		}
	}
}
`)
	return format.Source(b.Bytes())
}

func genAsserts(b *bytes.Buffer, o output, parsed map[string]*cStruct, l *layout) {
	fmt.Fprintf(b, "\n/* Mirrored in package %s (%s/cabi_gen.go). */\n", o.pkg, o.dir)
	for _, s := range o.structs {
		fmt.Fprintf(b, "A(sizeof(struct %s) == %d);\n", s.c, l.size[s.c])
		for _, f := range parsed[s.c].fields {
			fmt.Fprintf(b, "A(offsetof(struct %s, %s) == %d);\n", s.c, f.name, l.off[s.c][f.name])
			fmt.Fprintf(b, "A(sizeof(((struct %s *)0)->%s) == %d);\n", s.c, f.name, l.fsize[s.c][f.name])
		}
	}
	var ms []string
	for _, c := range append(append([]constant{}, o.gen...), o.checked...) {
		ms = append(ms, c.macro)
	}
	sort.Strings(ms)
	for _, m := range ms {
		fmt.Fprintf(b, "A(%s == %d);\n", m, l.macros[m])
	}
}

func cSource(asserts []byte) []byte {
	var b bytes.Buffer
	b.WriteString(spdxC + "/* Code generated by internal/cabigen from\n * " + strings.Join(headers, " and ") + "; DO NOT EDIT.\n" +
		" * Regenerate with make generate.\n *\n" +
		" * The layout Go's mirrors of the shared structs were generated for: a\n" +
		" * change to the header that was not regenerated fails to compile here.\n */\n" +
		"#include <stddef.h>\n#include \"lnx_capi.h\"\n#include \"lnx_peer_abi.h\"\n\n" +
		"#define A(x) _Static_assert(x, #x \": Go's mirror differs; run make generate\")\n")
	b.Write(asserts)
	b.WriteString("\n#undef A\n")
	return b.Bytes()
}
