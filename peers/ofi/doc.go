// Package ofi is lnx's client side of libfabric: it opens the core
// providers that a link names ("tcp;ofi_rxm", "cxi", ...) through the public
// libfabric API and converts between C struct fi_info and fi.Info. It is the
// only package besides capi that uses cgo.
package ofi
