package common

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// deviceMode: -devices, the device manager runs with real device plugins.
var deviceMode bool

const (
	// devicePluginDir is the kubelet's (pluginapi.DevicePluginPath): run.sh mounts a tmpfs there
	// in a private mount namespace for each device-mode process.
	devicePluginDir = "/var/lib/kubelet/device-plugins"
	// deviceCheckpoint is a case's device manager checkpoint, relative to the case.
	deviceCheckpoint = "device-plugins/kubelet_internal_checkpoint"
)

// Device is the device plugin API's Device message as devices.json writes it.
type Device struct {
	ID       string `json:"ID"`
	Health   string `json:"health"`
	Topology *struct {
		Nodes []struct {
			ID int64 `json:"ID"`
		} `json:"nodes"`
	} `json:"topology,omitempty"`
}

// readDevices reads devices.json; no file is no plugin.
func readDevices(path string) (map[string][]Device, error) {
	var f struct {
		Resources map[string][]Device `json:"resources"`
	}
	if err := readJSON(path, &f); err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	return f.Resources, nil
}

// deviceEntry is one entry of the device manager's checkpoint (its JSON).
type deviceEntry struct {
	PodUID        string
	ContainerName string
	ResourceName  string
	DeviceIDs     map[string][]string
}

func readDeviceCheckpoint(path string) ([]deviceEntry, error) {
	var cp struct {
		Data struct {
			PodDeviceEntries []deviceEntry
		}
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if json.Unmarshal(b, &cp) != nil {
		return nil, nil // the real restore says what is wrong with it
	}
	return cp.Data.PodDeviceEntries, nil
}

// deviceCheckpointOwners adds the pods holding devices in the device checkpoint (running pods).
func deviceCheckpointOwners(owners map[string]map[string]bool) error {
	entries, err := readDeviceCheckpoint(filepath.Join(devicePluginDir, "kubelet_internal_checkpoint"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if owners[e.PodUID] == nil {
			owners[e.PodUID] = map[string]bool{}
		}
		owners[e.PodUID][e.ContainerName] = true
	}
	return nil
}

// deviceAssignments is the device manager's state, read through GetDevices for every container
// it can hold devices for: the active pods' and every pod of the case (a refused pod's partial
// allocation stays until the next admission).
func deviceAssignments(k Kubelet, active *ActivePods, pods []*v1.Pod) *map[string]map[string]map[string][]string {
	out := map[string]map[string]map[string][]string{}
	for _, p := range append(active.List(), pods...) {
		for _, c := range append(append([]v1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			devs := k.ContainerDevices(string(p.UID), c.Name)
			if len(devs) == 0 {
				continue
			}
			if out[string(p.UID)] == nil {
				out[string(p.UID)] = map[string]map[string][]string{}
			}
			out[string(p.UID)][c.Name] = devs
		}
	}
	return &out
}

// heldFor is how a checkpoint holding tells its device apart in the classes: the holder's UID,
// and when the device manager dropped the holding before the last pod, the admission it was
// gone by ("uid@i"); "" when it was gone by the first admission. A holding of one of the
// case's pods is dropped when that pod is not active at an admission with the sources ready
// (UpdateAllocatedDevices, before any device is picked for the pod admitted): a restart's
// first admission drops every later pod's holding, which the kubelet then picks among the
// free devices at random, like any other. Other holders (active seeds, never in the case's
// stateAfter) are kept as held.
func heldFor(pods []PodResult, podUID, container, resource, id string) string {
	ofCase := false
	for _, p := range pods {
		ofCase = ofCase || p.UID == podUID
	}
	if !ofCase {
		return podUID
	}
	for i, p := range pods {
		if p.StateAfter == nil || p.StateAfter.DeviceAssignments == nil {
			return podUID // not known from here on: kept, as before the state was read
		}
		if !slices.Contains((*p.StateAfter.DeviceAssignments)[podUID][container][resource], id) {
			if i == 0 {
				return ""
			}
			return fmt.Sprintf("%s@%d", podUID, i)
		}
	}
	return podUID
}

// classifyDevices writes deviceClasses and deviceChoice (the shipped device set's README): the
// devices the kubelet's decisions cannot tell apart (same health, same NUMA nodes unless the
// topology manager policy is none, held by the same pods at start for as long as the device
// manager kept the holding: heldFor), and whether the kubelet
// picked among such devices ("symmetric": some class ends split between holders) or every pick
// was forced ("exact"). Its picks are random among a class: the vectors are exact up to
// swapping inside classes.
func classifyDevices(e *Expected, m *Machine, plugins map[string][]Device, checkpoint string) {
	if !e.Starts {
		return
	}
	policyNone := m.Kubelet.TopologyManagerPolicy == "" || m.Kubelet.TopologyManagerPolicy == "none"
	keys := map[string]map[string]string{} // resource -> device -> what the kubelet sees of it
	see := func(resource, id string) map[string]string {
		if keys[resource] == nil {
			keys[resource] = map[string]string{}
		}
		return keys[resource]
	}
	for r, devs := range plugins {
		for _, d := range devs {
			topo := ""
			if d.Topology != nil && !policyNone {
				var ids []string
				for _, n := range d.Topology.Nodes {
					ids = append(ids, fmt.Sprint(n.ID))
				}
				sort.Strings(ids)
				topo = strings.Join(ids, ",")
			}
			see(r, d.ID)[d.ID] = "health=" + d.Health + " numa=" + topo
		}
	}
	entries, _ := readDeviceCheckpoint(checkpoint)
	holders := map[[2]string]map[string]bool{}
	for _, en := range entries {
		for _, ids := range en.DeviceIDs {
			for _, id := range ids {
				k := [2]string{en.ResourceName, id}
				if holders[k] == nil {
					holders[k] = map[string]bool{}
				}
				if held := heldFor(e.Pods, en.PodUID, en.ContainerName, en.ResourceName, id); held != "" {
					holders[k][held] = true
				}
				if _, ok := see(en.ResourceName, id)[id]; !ok {
					see(en.ResourceName, id)[id] = "unknown"
				}
			}
		}
	}
	classes := map[string][][]string{}
	for r, devs := range keys {
		groups := map[string][]string{}
		for id, seen := range devs {
			k := seen + " held=" + strings.Join(sortedKeys(holders[[2]string{r, id}]), ",")
			groups[k] = append(groups[k], id)
		}
		for _, g := range groups {
			if len(g) > 1 {
				sort.Strings(g)
				classes[r] = append(classes[r], g)
			}
		}
		sort.Slice(classes[r], func(i, j int) bool { return classes[r][i][0] < classes[r][j][0] })
	}
	e.DeviceClasses = &classes
	// A device's signature: who holds it after each pod (containers and state).
	sig := map[[2]string][]string{}
	for i, p := range e.Pods {
		for name, c := range p.Containers {
			if c.Devices != nil {
				for r, ids := range *c.Devices {
					for _, id := range ids {
						sig[[2]string{r, id}] = append(sig[[2]string{r, id}], fmt.Sprintf("%d:container %s", i, name))
					}
				}
			}
		}
		if p.StateAfter != nil && p.StateAfter.DeviceAssignments != nil {
			for uid, ctrs := range *p.StateAfter.DeviceAssignments {
				for ctr, res := range ctrs {
					for r, ids := range res {
						for _, id := range ids {
							sig[[2]string{r, id}] = append(sig[[2]string{r, id}], fmt.Sprintf("%d:state %s/%s", i, uid, ctr))
						}
					}
				}
			}
		}
	}
	e.DeviceChoice = "exact"
	for r, cs := range classes {
		for _, c := range cs {
			first := sig[[2]string{r, c[0]}]
			sort.Strings(first)
			for _, id := range c[1:] {
				s := sig[[2]string{r, id}]
				sort.Strings(s)
				if strings.Join(s, "|") != strings.Join(first, "|") {
					e.DeviceChoice = "symmetric"
				}
			}
		}
	}
}
