// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package logging routes lnx's diagnostics to libfabric's log facility
// (FI_LOG_LEVEL, FI_LOG_PROV, FI_LOG_SUBSYS). capi installs the sink that
// calls fi_log; without one (Go unit tests) messages are dropped unless
// LNX_TEST_LOG is set.
package logging

import (
	"fmt"
	"os"
	"sync/atomic"
)

// Level matches enum fi_log_level.
type Level int

const (
	Warn Level = iota
	Trace
	Info
	Debug
)

// Subsys matches enum fi_log_subsys.
type Subsys int

const (
	Core Subsys = iota
	Fabric
	Domain
	EPCtrl
	EPData
	AV
	CQ
	EQ
	MR
	Cntr
)

// Sink receives one formatted line. Enabled lets callers skip formatting.
type Sink interface {
	Enabled(l Level, s Subsys) bool
	Log(l Level, s Subsys, msg string)
}

var sink atomic.Pointer[Sink]

// SetSink installs the libfabric-backed sink.
func SetSink(s Sink) { sink.Store(&s) }

func logf(l Level, s Subsys, format string, args ...any) {
	p := sink.Load()
	if p == nil {
		if os.Getenv("LNX_TEST_LOG") != "" {
			fmt.Fprintf(os.Stderr, "lnx: "+format+"\n", args...)
		}
		return
	}
	if (*p).Enabled(l, s) {
		(*p).Log(l, s, fmt.Sprintf(format, args...))
	}
}

// Warnf logs at FI_LOG_WARN.
func Warnf(s Subsys, format string, args ...any) { logf(Warn, s, format, args...) }

// Infof logs at FI_LOG_INFO.
func Infof(s Subsys, format string, args ...any) { logf(Info, s, format, args...) }

// Debugf logs at FI_LOG_DEBUG.
func Debugf(s Subsys, format string, args ...any) { logf(Debug, s, format, args...) }
