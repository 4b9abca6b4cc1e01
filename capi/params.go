// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package main

/*
#include <rdma/fabric.h>
*/
import "C"

import (
	"sync"

	"github.com/lnx-go/lnx-go/lnx/config"
)

// params holds config.Vars as C strings for fi_param_define, made once and
// never freed: libfabric may keep them for as long as the process lives.
var params struct {
	once        sync.Once
	names, help []*C.char
}

func paramType(t config.ParamType) C.int {
	switch t {
	case config.ParamInt:
		return C.FI_PARAM_INT
	case config.ParamBool:
		return C.FI_PARAM_BOOL
	case config.ParamSize:
		return C.FI_PARAM_SIZE_T
	}
	return C.FI_PARAM_STRING
}

// lnx_go_param gives fi_prov_ini the i-th variable to define: its name
// without FI_LNX_, its fi_param_type and its help. It returns 0, or -1
// past the last one. One list (config.Vars) for what lnx reads and what
// `fi_info -e` shows.
//
//export lnx_go_param
func lnx_go_param(i C.int, name **C.char, typ *C.int, help **C.char) (ret C.int) {
	defer recoverTo(&ret, "fi_prov_ini (parameters)")
	params.once.Do(func() {
		for _, v := range config.Vars {
			params.names = append(params.names, C.CString(v.Param()))
			params.help = append(params.help, C.CString(v.Help))
		}
	})
	if i < 0 || int(i) >= len(config.Vars) {
		return -1
	}
	*name, *help = params.names[i], params.help[i]
	*typ = paramType(config.Vars[i].Type)
	return 0
}
