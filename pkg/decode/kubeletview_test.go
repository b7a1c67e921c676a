package decode

import (
	"encoding/base64"
	"strconv"
	"testing"
)

// kubeletView renders a model the way the vectors' expectedDecoded shows the kubelet's own
// decoded state, so the two can be compared.
func kubeletView(t *testing.T, kind Kind, model any) any {
	t.Helper()
	switch m := model.(type) {
	case *CPUState:
		entries := any(m.Entries)
		if m.ContainerIDEntries != nil {
			entries = m.ContainerIDEntries
		}
		return map[string]any{"policyName": m.PolicyName, "defaultCpuSet": m.DefaultCPUSet, "entries": entries,
			"podEntries": m.PodEntries, "baselines": m.Baselines}
	case *MemoryState:
		pods := map[string]any{}
		for uid, blocks := range m.PodEntries {
			pods[uid] = map[string]any{"memoryBlocks": blocks}
		}
		return map[string]any{"policyName": m.PolicyName, "machineState": m.MachineState, "entries": m.Entries, "podEntries": pods}
	case *DeviceState:
		var entries []any
		for _, e := range m.PodDeviceEntries {
			ids := any(e.DeviceIDs)
			if e.DevicesPerNUMA != nil {
				perNUMA := map[string][]string{}
				for n, d := range e.DevicesPerNUMA {
					perNUMA[strconv.FormatInt(n, 10)] = d
				}
				ids = perNUMA
			}
			entries = append(entries, map[string]any{"podUID": e.PodUID, "containerName": e.ContainerName,
				"resourceName": e.ResourceName, "deviceIDs": ids, "allocRespBase64": base64.StdEncoding.EncodeToString(e.AllocResp)})
		}
		return map[string]any{"podDeviceEntries": entries, "registeredDevices": m.RegisteredDevices}
	}
	if v, ok := kubeletViews[kind]; ok {
		return v(model)
	}
	t.Fatalf("no kubelet view for %T", model)
	return nil
}

// kubeletViews holds the views of kinds whose models live in other files.
var kubeletViews = map[Kind]func(any) any{}
