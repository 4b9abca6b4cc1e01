// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package links

import (
	"errors"
	"fmt"
	"strings"
)

// Shm is the member name that selects lnx's built-in intra-node core.
const Shm = "shm"

// FiShm names libfabric's own shm provider as a core. lnx drives it like
// any network core (its transport, over the provider's public API), so it
// reaches only processes of this machine: peers on other simulated nodes
// in tests and benchmarks (a sub-microsecond core to measure what lnx adds
// over a fast one), or a site's same-node-only link.
const FiShm = "fi_shm"

// CoreProv is the libfabric provider name of a member that is not lnx's
// shm: FI_LNX_PROV_LINKS's own name for it, except fi_shm, which is
// libfabric's "shm".
func CoreProv(prov string) string {
	if prov == FiShm {
		return "shm"
	}
	return prov
}

// MaxLen bounds the accepted string so a hostile environment cannot make
// getinfo allocate without limit.
const MaxLen = 4096

// Member is one core provider of a group, optionally restricted to domains.
type Member struct {
	Prov    string   // "shm", "tcp;ofi_rxm", "cxi", ...
	Domains []string // empty: the core's first (preferred) domain
}

// IsShm reports whether the member is lnx's built-in shm core.
func (m Member) IsShm() bool { return m.Prov == Shm }

// String renders the member back in FI_LNX_PROV_LINKS syntax.
func (m Member) String() string {
	if len(m.Domains) == 0 {
		return m.Prov
	}
	return m.Prov + ":" + strings.Join(m.Domains, ",")
}

// Group is a set of cores linked behind one endpoint.
type Group struct {
	Members []Member
}

// String renders the group in FI_LNX_PROV_LINKS syntax; it is also the
// domain name lnx reports for the link.
func (g Group) String() string {
	parts := make([]string, len(g.Members))
	for i, m := range g.Members {
		parts[i] = m.String()
	}
	return strings.Join(parts, "+")
}

// HasShm reports whether the group links the built-in shm core.
func (g Group) HasShm() bool {
	for _, m := range g.Members {
		if m.IsShm() {
			return true
		}
	}
	return false
}

// Network returns the members that are libfabric providers.
func (g Group) Network() []Member {
	var out []Member
	for _, m := range g.Members {
		if !m.IsShm() {
			out = append(out, m)
		}
	}
	return out
}

// ErrSyntax wraps every parse failure so callers can map it to -FI_EINVAL.
var ErrSyntax = errors.New("malformed FI_LNX_PROV_LINKS")

func syntaxErr(s string, pos int, format string, args ...any) error {
	return fmt.Errorf("%w %q at offset %d: %s", ErrSyntax, s, pos, fmt.Sprintf(format, args...))
}

// Parse parses a FI_LNX_PROV_LINKS value.
func Parse(s string) ([]Group, error) {
	if len(s) > MaxLen {
		return nil, syntaxErr(s[:32]+"...", 0, "longer than %d bytes", MaxLen)
	}
	if strings.TrimSpace(s) == "" {
		return nil, syntaxErr(s, 0, "empty")
	}
	var groups []Group
	pos := 0
	for _, gs := range strings.Split(s, "|") {
		g, err := parseGroup(s, pos, gs)
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
		pos += len(gs) + 1
	}
	return groups, nil
}

func parseGroup(whole string, pos int, gs string) (Group, error) {
	var g Group
	seen := map[string]bool{}
	for _, ms := range strings.Split(gs, "+") {
		m, err := parseMember(whole, pos, ms)
		if err != nil {
			return Group{}, err
		}
		if seen[m.Prov] {
			return Group{}, syntaxErr(whole, pos, "provider %q appears twice in one group", m.Prov)
		}
		seen[m.Prov] = true
		g.Members = append(g.Members, m)
		pos += len(ms) + 1
	}
	return g, nil
}

func parseMember(whole string, pos int, ms string) (Member, error) {
	prov, doms, hasDoms := strings.Cut(ms, ":")
	if prov == "" {
		return Member{}, syntaxErr(whole, pos, "missing provider name")
	}
	for _, layer := range strings.Split(prov, ";") {
		if layer == "" {
			return Member{}, syntaxErr(whole, pos, "empty layer in provider %q", prov)
		}
		if i := strings.IndexFunc(layer, func(r rune) bool { return !isNameRune(r) }); i >= 0 {
			return Member{}, syntaxErr(whole, pos+i, "invalid character %q in provider %q", layer[i], prov)
		}
	}
	m := Member{Prov: prov}
	if !hasDoms {
		return m, nil
	}
	if prov == Shm {
		return Member{}, syntaxErr(whole, pos, "the shm core takes no domain list")
	}
	dpos := pos + len(prov) + 1
	seen := map[string]bool{}
	for _, d := range strings.Split(doms, ",") {
		if d == "" {
			return Member{}, syntaxErr(whole, dpos, "empty domain name for %q", prov)
		}
		if i := strings.IndexFunc(d, func(r rune) bool { return !isNameRune(r) && r != '.' }); i >= 0 {
			return Member{}, syntaxErr(whole, dpos+i, "invalid character %q in domain %q", d[i], d)
		}
		if seen[d] {
			return Member{}, syntaxErr(whole, dpos, "domain %q listed twice", d)
		}
		seen[d] = true
		m.Domains = append(m.Domains, d)
		dpos += len(d) + 1
	}
	return m, nil
}

func isNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}
