// The machine types the managers take, from github.com/google/cadvisor/lib/model.
package main

import cadvisorapi "github.com/google/cadvisor/lib/model"

type (
	cadvisorMachine   = cadvisorapi.MachineInfo
	cadvisorNode      = cadvisorapi.Node
	cadvisorCore      = cadvisorapi.Core
	cadvisorHugePages = cadvisorapi.HugePagesInfo
	cadvisorCache     = cadvisorapi.Cache
)
