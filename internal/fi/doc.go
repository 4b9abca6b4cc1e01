// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package fi mirrors the parts of libfabric's public ABI that lnx reasons
// about in Go: capability and mode bits, enums, error codes and a Go copy of
// struct fi_info. It has no cgo so that getinfo and matching logic can be
// tested without libfabric; package capi/cinfo converts its Info to and
// from C and checks every value here against the C headers.
//
// It sits below every package that uses it (capi, lnx, peers/ofi), so no
// lower layer reaches into a higher one for libfabric's constants.
package fi
