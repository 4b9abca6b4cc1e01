// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package links parses FI_LNX_PROV_LINKS, the list of core-provider groups
// that one lnx endpoint links together.
//
// The grammar is upstream LNX's:
//
//	links  ::= group ( '|' group )*
//	group  ::= member ( '+' member )*
//	member ::= prov [ ':' domain ( ',' domain )* ]
//
// A prov may itself be a layered name such as "tcp;ofi_rxm". The name "shm"
// is lnx's own intra-node core; every other name is a libfabric provider.
// Each group becomes one fi_info (one "link") in lnx's getinfo answer.
package links
