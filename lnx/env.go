// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package lnx

import (
	"os"
	"sync/atomic"

	"github.com/lnx-go/lnx-go/hmem"
	"github.com/lnx-go/lnx-go/lnx/config"
)

// Getenv reads the process environment. capi replaces it with C getenv:
// Go's os.Getenv sees a copy taken when the runtime started, which misses
// variables an application sets before calling fi_getinfo.
var Getenv = os.Getenv

// defaultNetwork is the network core every Linux host has.
const defaultNetwork = "tcp;ofi_rxm"

// settings is the configuration the last fi_getinfo read.
var settings atomic.Pointer[config.Config]

// loadSettings reads every FI_LNX_* variable now, through Getenv, and
// makes that the configuration later objects take. fi_getinfo calls it:
// that is when an application's environment is set up. hmem gets its
// library settings here too (it loads them on first use).
func loadSettings() *config.Config {
	c := config.Load(Getenv)
	settings.Store(c)
	hmem.Configure(c.CudaLib, c.RocmLib)
	return c
}

// currentSettings is the configuration the last fi_getinfo read (read now
// if there was none). Domains keep the one current when they open, and
// their endpoints and caches use that.
func currentSettings() *config.Config {
	if c := settings.Load(); c != nil {
		return c
	}
	return loadSettings()
}

// cfg is the configuration the endpoint's domain opened with.
func (e *Endpoint) cfg() *config.Config { return e.Domain.cfg }
