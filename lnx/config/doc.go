// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package config is lnx's one list of settings: every FI_LNX_* variable,
// its libfabric parameter type and help text (which capi hands to
// fi_param_define, so `fi_info -e` lists exactly these), and Load, which
// reads them all at once into a typed Config.
//
// Load takes the lookup function to use: capi passes C's getenv, because
// Go's os.Getenv sees a copy of the environment taken when the Go runtime
// started and misses what an application set before calling fi_getinfo.
// lnx loads a Config at fi_getinfo and at domain open and hands it down
// (to endpoints, the registration cache, hmem) instead of reading the
// environment again on later calls.
package config
