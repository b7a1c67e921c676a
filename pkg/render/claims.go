package render

import (
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// Claims is one node's DRA manager state, with the device health the kubelet recorded (if any).
type Claims struct {
	Source
	State  *nodestate.DRAState
	Health *nodestate.DRAHealthState
}

// ClaimRow is one device (or, in 1.27-1.30 files, one driver's CDI devices) of one claim.
type ClaimRow struct {
	Node       string   `json:"node,omitempty"`
	Namespace  string   `json:"namespace"`
	Claim      string   `json:"claim"`
	ClaimUID   string   `json:"claimUID"`
	Pods       []string `json:"pods"`
	Driver     string   `json:"driver"`
	Pool       string   `json:"pool,omitempty"`
	Device     string   `json:"device,omitempty"`
	ShareID    string   `json:"shareID,omitempty"`
	Requests   []string `json:"requests,omitempty"`
	CDIDevices []string `json:"cdiDevices,omitempty"`
	Health     string   `json:"health,omitempty"`
}

// ClaimRows flattens claims into one row per device.
func ClaimRows(in []Claims) []ClaimRow {
	var rows []ClaimRow
	for _, n := range in {
		var node []ClaimRow
		for _, c := range n.State.Claims {
			base := ClaimRow{Node: n.Node, Namespace: c.Namespace, Claim: c.ClaimName, ClaimUID: c.ClaimUID}
			for _, uid := range c.PodUIDs {
				ns, name := podName(n.Names, uid)
				base.Pods = append(base.Pods, podCell(ns, name, uid))
			}
			for _, driver := range slices.Sorted(maps.Keys(c.DriverState)) {
				for _, d := range c.DriverState[driver].Devices {
					r := base
					r.Driver, r.Pool, r.Device, r.Requests, r.CDIDevices = driver, d.PoolName, d.DeviceName, d.RequestNames, d.CDIDeviceIDs
					if d.ShareID != nil {
						r.ShareID = *d.ShareID
					}
					r.Health = deviceHealth(n.Health, driver, d.PoolName, d.DeviceName)
					node = append(node, r)
				}
				if len(c.DriverState[driver].Devices) == 0 {
					r := base
					r.Driver = driver
					node = append(node, r)
				}
			}
			for _, driver := range slices.Sorted(maps.Keys(c.CDIDevices)) {
				r := base
				r.Driver, r.CDIDevices = driver, c.CDIDevices[driver]
				node = append(node, r)
			}
			if len(c.DriverState) == 0 && len(c.CDIDevices) == 0 {
				r := base
				r.Driver = c.DriverName
				node = append(node, r)
			}
		}
		sort.SliceStable(node, func(i, j int) bool {
			return node[i].Namespace+"/"+node[i].Claim < node[j].Namespace+"/"+node[j].Claim
		})
		rows = append(rows, node...)
	}
	return rows
}

func deviceHealth(h *nodestate.DRAHealthState, driver, pool, device string) string {
	if h == nil {
		return ""
	}
	if d, ok := h.Drivers[driver][pool+"/"+device]; ok {
		return d.Health
	}
	return ""
}

// PrintClaims prints each claim's devices, the pods sharing it and, when recorded, their health.
func PrintClaims(w io.Writer, o Options, in []Claims) error {
	rows := ClaimRows(in)
	if done, err := printStructured(w, o, "ResourceClaimList", rows); done {
		return err
	}
	headers := []string{"CLAIM", "PODS", "DRIVER", "DEVICE", "REQUESTS", "HEALTH"}
	if o.Format == Wide {
		headers = append(headers, "CDI-DEVICES", "SHARE-ID", "CLAIM-UID")
	}
	t := newTable(w, o, headers...)
	for _, r := range rows {
		device := ""
		if r.Device != "" {
			device = r.Pool + "/" + r.Device
		}
		cells := []string{r.Namespace + "/" + r.Claim, strings.Join(r.Pods, ","), r.Driver, device, strings.Join(r.Requests, ","), r.Health}
		if o.Format == Wide {
			cells = append(cells, strings.Join(r.CDIDevices, ","), r.ShareID, r.ClaimUID)
		}
		t.add(r.Node, cells...)
	}
	t.render()
	return nil
}
