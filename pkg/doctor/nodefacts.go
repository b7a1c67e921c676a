package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// NodeFacts is what the node and the API server say beside the checkpoints: the files claim
// devices and prepared claims, these say whether the node really has them. Any part may be
// unknown (nil): the checks that need it are skipped and Result.Skipped says why.
type NodeFacts struct {
	// Capacity and Allocatable are the node's status.capacity and status.allocatable of
	// extended resources (the device plugins' resources), in whole units; nil: unknown.
	Capacity, Allocatable map[string]int64
	// Sockets are the socket files in device-plugins/ (kubelet.sock included); nil: not listed.
	Sockets []string
	// CDIDevices are the qualified CDI device names ("vendor/class=name") the node's CDI spec
	// files define, each with its file; nil: not read. CDIProblems are spec files a container
	// runtime would skip ("FILE: why").
	CDIDevices  map[string]string
	CDIProblems []string
	// Claims are the ResourceClaims of the prepared claims, by "namespace/name"; a claim the
	// API server does not have is absent. Nil: not read, and ClaimsSkipped says why (reading
	// ResourceClaims is optional: no RBAC of its own is asked for).
	Claims        map[string]ClaimStatus
	ClaimsSkipped string
}

// ClaimStatus is what doctor needs of a ResourceClaim.
type ClaimStatus struct {
	UID string
	// Allocated: status.allocation is set.
	Allocated bool
	// ReservedFor are the UIDs of status.reservedFor's pods.
	ReservedFor []string
}

// kubeletSocket is where the kubelet's device manager listens; every device plugin puts its
// own socket beside it and registers through it (pluginapi.DevicePluginPath).
const kubeletSocket = "kubelet.sock"

// deviceNodeFindings compares the device checkpoint's registered devices with the node's
// status and the plugin sockets, in the device manager's terms: after a restart it reads the
// checkpoint's resources with no healthy device (readCheckpoint) and advertises none until
// their plugin registers again; a plugin's last endpoint disconnecting marks all its devices
// unhealthy (PluginDisconnected), and 5 minutes later (endpointStopGracePeriod) the kubelet
// drops the resource, zeroing it in the node's status, and rewrites the checkpoint without it.
func deviceNodeFindings(in Input, res *Result) []Finding {
	rep := fileOf(in.Files, decode.KindDevices)
	ds, ok := decodedDevices(rep)
	if !ok {
		return nil
	}
	registered := map[string]int{}
	for r, ids := range ds.RegisteredDevices {
		if len(ids) > 0 {
			registered[r] = len(ids)
		}
	}
	if len(registered) == 0 {
		return nil
	}
	resources := slices.Sorted(maps.Keys(registered))
	node := in.Node
	if node == nil {
		node = &NodeFacts{}
	}
	var out []Finding
	if node.Capacity == nil {
		res.Skipped = append(res.Skipped, "registered devices against the node's capacity: the node's status is unknown (read the node live)")
	}
	for _, r := range resources {
		if node.Capacity == nil {
			break
		}
		n, capacity, alloc := registered[r], node.Capacity[r], node.Allocatable[r]
		restart := "start (or restart) the device plugin serving " + r + " on this node; it registers at " + devicePluginDir(in) + "/" + kubeletSocket
		switch {
		case capacity == 0:
			out = append(out, Finding{Severity: SeverityError, Check: "device-not-advertised", File: rep.File, Entry: r,
				Message: fmt.Sprintf("the checkpoint registers %d %s devices, but the node advertises none: the kubelet keeps a resource at 0 after a restart until its device plugin registers again, and zeroes it once the plugin has been gone 5 minutes; pods holding %s keep their devices, new pods needing it are refused", n, r, r),
				Fix:     restart + "; if " + r + " should be gone, drain the pods holding it"})
		case alloc == 0:
			out = append(out, Finding{Severity: SeverityError, Check: "device-plugin-disconnected", File: rep.File, Entry: r,
				Message: fmt.Sprintf("the node advertises %d %s but none allocatable: the kubelet marked every device unhealthy when the last device plugin for %s disconnected, and drops %s 5 minutes later; new pods needing it are refused", capacity, r, r, r),
				Fix:     restart})
		case alloc < capacity:
			out = append(out, Finding{Severity: SeverityWarning, Check: "device-unhealthy", File: rep.File, Entry: r,
				Message: fmt.Sprintf("%d of the node's %d %s devices are unhealthy (allocatable %d): the device plugin reports them so, and the kubelet gives them to no new pod", capacity-alloc, capacity, r, alloc),
				Fix:     "see the device plugin's logs for why; pods already holding them keep them"})
		case alloc != int64(n):
			out = append(out, Finding{Severity: SeverityWarning, Check: "device-count-drift", File: rep.File, Entry: r,
				Message: fmt.Sprintf("the checkpoint registers %d %s devices, the node has %d allocatable: the kubelet writes the healthy devices at every plugin update, so one of the two is stale", n, r, alloc),
				Fix:     "if the kubelet runs, this settles at its next node status update; if it stays, restart the device plugin"})
		}
	}
	if node.Sockets == nil {
		res.Skipped = append(res.Skipped, "device plugin sockets: device-plugins/ was not listed")
		return out
	}
	var plugins []string
	kubelet := false
	for _, s := range node.Sockets {
		if s == kubeletSocket {
			kubelet = true
		} else {
			plugins = append(plugins, s)
		}
	}
	if len(plugins) == 0 {
		out = append(out, Finding{Severity: SeverityError, Check: "device-plugin-gone", File: rep.File, Entry: strings.Join(resources, ","),
			Message: fmt.Sprintf("the checkpoint registers devices of %s, but %s holds no device plugin socket: every plugin serves the kubelet through its socket there, so none runs; the kubelet advertises none of them once it restarts, or 5 minutes after the plugin left", text.JoinAnd(resources), devicePluginDir(in)),
			Fix:     "start the device plugins of this node (their DaemonSet pods); if these resources are retired, drain the pods holding them"})
	}
	if !kubelet {
		out = append(out, Finding{Severity: SeverityInfo, Check: "kubelet-socket-missing", File: rep.File,
			Message: fmt.Sprintf("%s/%s is missing: the kubelet's device manager is not running (the kubelet is down or starting), so no device plugin can register", devicePluginDir(in), kubeletSocket),
			Fix:     "start the kubelet; its device plugins then register again"})
	}
	return out
}

func devicePluginDir(in Input) string { return onNode(in, "device-plugins") }

func decodedDevices(rep *decode.Report) (*decode.DeviceState, bool) {
	if rep == nil {
		return nil, false
	}
	return rep.Decoded.Devices, rep.Decoded.Devices != nil
}

func decodedDRA(rep *decode.Report) (*decode.DRAState, bool) {
	if rep == nil {
		return nil, false
	}
	return rep.Decoded.DRA, rep.Decoded.DRA != nil
}

// draNodeFindings checks each prepared claim against its ResourceClaim and against the CDI
// specs its devices need, and reports the devices dra_health_state calls unhealthy.
func draNodeFindings(in Input, res *Result) []Finding {
	node := in.Node
	if node == nil {
		node = &NodeFacts{}
	}
	var out []Finding
	rep := fileOf(in.Files, decode.KindDRA)
	if st, ok := decodedDRA(rep); ok && len(st.Claims) > 0 {
		if node.Claims == nil {
			why := node.ClaimsSkipped
			if why == "" {
				why = "not read (read the node live)"
			}
			res.Skipped = append(res.Skipped, "prepared claims against their ResourceClaims: "+why)
		} else {
			out = append(out, claimFindings(in, rep.File, st)...)
		}
		if node.CDIDevices == nil {
			res.Skipped = append(res.Skipped, "CDI devices of the prepared claims: the node's CDI specs were not read")
		} else {
			out = append(out, cdiFindings(in, rep.File, st)...)
		}
	}
	for _, p := range node.CDIProblems {
		file, why, _ := strings.Cut(p, ": ")
		out = append(out, Finding{Severity: SeverityWarning, Check: "cdi-spec-unreadable", File: file,
			Message: "container runtimes skip this CDI spec file: " + why,
			Fix:     "have its DRA driver or device plugin write it again, or remove it"})
	}
	out = append(out, healthFindings(in)...)
	return out
}

func claimFindings(in Input, file string, st *decode.DRAState) []Finding {
	var out []Finding
	for _, c := range st.Claims {
		key := c.Namespace + "/" + c.ClaimName
		entry := "claim " + key
		// Pods gone from the API are stale-pod findings; a claim none of whose pods lives is
		// unprepared by the kubelet's next sync, whatever its ResourceClaim says.
		pods := c.PodUIDs
		if in.LivePods != nil {
			pods = slices.DeleteFunc(slices.Clone(pods), func(p string) bool { return !in.LivePods[p] })
			if len(pods) == 0 {
				continue
			}
		}
		cs, ok := in.Node.Claims[key]
		switch {
		case !ok:
			out = append(out, Finding{Severity: SeverityWarning, Check: "dra-claim-gone", File: file, Entry: entry,
				Message: fmt.Sprintf("claim %s is prepared on the node, but the API server has no such ResourceClaim: the driver keeps its devices prepared until the kubelet unprepares the claim, once no pod here uses it", key),
				Fix:     "delete the pods using it (" + strings.Join(pods, ", ") + "); the kubelet then unprepares it"})
			continue
		case cs.UID != c.ClaimUID:
			out = append(out, Finding{Severity: SeverityWarning, Check: "dra-claim-replaced", File: file, Entry: entry,
				Message: fmt.Sprintf("ResourceClaim %s is now UID %s, but the node prepared UID %s: the claim was deleted and created again, and the old one's devices are still prepared here", key, cs.UID, c.ClaimUID),
				Fix:     "delete the pods that used the old claim; the kubelet then unprepares it"})
			continue
		case !cs.Allocated:
			out = append(out, Finding{Severity: SeverityError, Check: "dra-claim-not-allocated", File: file, Entry: entry,
				Message: fmt.Sprintf("claim %s is prepared on the node, but its ResourceClaim has no allocation: the scheduler may hand its devices to another claim while they are still prepared here", key),
				Fix:     "delete the pods using it so the kubelet unprepares it; they get a fresh allocation when created again"})
		}
		reserved := map[string]bool{}
		for _, uid := range cs.ReservedFor {
			reserved[uid] = true
		}
		for _, pod := range pods {
			if reserved[pod] {
				continue
			}
			out = append(out, Finding{Severity: SeverityWarning, Check: "dra-claim-not-reserved", File: file, Entry: entry,
				Message: fmt.Sprintf("claim %s is prepared for pod %s, but its ResourceClaim is not reserved for that pod (status.reservedFor): the claim may be deallocated while the pod runs on its devices", key, pod),
				Fix:     "delete the pod; when created again it reserves the claim before it runs"})
		}
	}
	return out
}

// cdiFindings: a prepared device whose CDI device ID no spec defines. The container runtime
// resolves every CDI device of a container when it creates it, and refuses it if one does not
// resolve (containerd, CRI-O: "unresolvable CDI devices").
func cdiFindings(in Input, file string, st *decode.DRAState) []Finding {
	var out []Finding
	for _, c := range st.Claims {
		key := c.Namespace + "/" + c.ClaimName
		missing := func(driver, device string, ids []string) {
			for _, id := range ids {
				if _, ok := in.Node.CDIDevices[id]; ok {
					continue
				}
				out = append(out, Finding{Severity: SeverityError, Check: "dra-cdi-missing", File: file, Entry: "claim " + key,
					Message: fmt.Sprintf("claim %s is prepared with CDI device %s (driver %s%s), which no CDI spec on the node defines: the container runtime refuses to create the claim's containers (unresolvable CDI devices)", key, id, driver, device),
					Fix:     "restart the DRA driver's kubelet plugin on this node so it writes its CDI specs again (after a reboot /var/run/cdi starts empty), or delete the pods using the claim so the kubelet prepares it again"})
			}
		}
		for _, driver := range slices.Sorted(maps.Keys(c.DriverState)) {
			for _, d := range c.DriverState[driver].Devices {
				missing(driver, ", device "+d.PoolName+"/"+d.DeviceName, d.CDIDeviceIDs)
			}
		}
		for _, driver := range slices.Sorted(maps.Keys(c.CDIDevices)) {
			missing(driver, "", c.CDIDevices[driver])
		}
	}
	return out
}

// healthFindings: the devices dra_health_state last heard of as Unhealthy, with the claims
// prepared on them.
func healthFindings(in Input) []Finding {
	rep := fileOf(in.Files, decode.KindDRAHealth)
	if rep == nil {
		return nil
	}
	hs := rep.Decoded.DRAHealth
	if hs == nil {
		return nil
	}
	users := map[string][]string{} // driver/pool/device -> claims
	if st, ok := decodedDRA(fileOf(in.Files, decode.KindDRA)); ok {
		for _, c := range st.Claims {
			for driver, ds := range c.DriverState {
				for _, d := range ds.Devices {
					k := driver + "/" + d.PoolName + "/" + d.DeviceName
					users[k] = append(users[k], c.Namespace+"/"+c.ClaimName)
				}
			}
		}
	}
	var out []Finding
	for _, driver := range slices.Sorted(maps.Keys(hs.Drivers)) {
		devs := hs.Drivers[driver]
		for _, key := range slices.Sorted(maps.Keys(devs)) {
			h := devs[key]
			if h.Health != "Unhealthy" {
				continue
			}
			msg := fmt.Sprintf("driver %s last reported device %s/%s Unhealthy (%s)", driver, h.PoolName, h.DeviceName, h.LastUpdated.UTC().Format("2006-01-02T15:04:05Z"))
			if h.Message != nil && *h.Message != "" {
				msg += ": " + *h.Message
			}
			fix := "see the driver's logs; the device is given to no new claim while the driver reports it so"
			if claims := users[driver+"/"+h.PoolName+"/"+h.DeviceName]; len(claims) > 0 {
				msg += "; claims prepared on it: " + strings.Join(claims, ", ")
				fix = "move the pods using " + strings.Join(claims, ", ") + " off the device (delete them); " + fix
			}
			out = append(out, Finding{Severity: SeverityWarning, Check: "dra-device-unhealthy", File: rep.File, Entry: driver + " " + key,
				Message: msg, Fix: fix})
		}
	}
	return out
}
