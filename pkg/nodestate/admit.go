package nodestate

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// AdmitConfig asks Run to predict, in each node's worker, the kubelet's admission of Pods, in
// order, on the node as it is (package admit); the answer is NodeResult.Admit. Machine and
// KubeletConfig are the ones about to be used; nil takes each node's own, as for doctor.
// A live node's allocatable and running pods (read with its files, no request more) feed the
// node-resource predicate.
type AdmitConfig struct {
	Machine       *machine.Machine
	KubeletConfig *replay.KubeletConfig
	Pods          []*v1.Pod
	// Devices is the node's device plugins' devices per resource (admit --devices); nil: not
	// known, the device manager is not replayed.
	Devices map[string][]replay.Device
	// Largest also asks, for each refused pod, the most exclusive CPUs a pod like it is
	// admitted with on the node as it is (AdmitResult.Largest), and the most devices of each
	// device-plugin resource it asks for that the node admits with the rest of it
	// (AdmitResult.LargestDevices).
	Largest bool
}

// AdmitResult is one node's admissions, and in order what they took from the node and what
// they lacked.
type AdmitResult struct {
	admit.Result
	Notes []string
	// Err is why nothing could be predicted (no machine, config or kubelet version).
	Err error
	// Largest is, by refused pod name, AdmitConfig.Largest's answer.
	Largest map[string]int
	// LargestDevices is, by refused pod name and resource, the most devices that fit (only the
	// resources where fewer devices admit the pod).
	LargestDevices map[string]map[string]int

	// replayed is what the replay read, and its start's key: a published fleet's node replays
	// it again with no checkpoint owner running (ownersDecide).
	replayed struct {
		in    admit.Input
		key   [sha256.Size]byte
		keyed bool
	}
}

// note adds a line to what the replay took and lacked.
func (a *AdmitResult) note(format string, args ...any) {
	a.Notes = append(a.Notes, fmt.Sprintf(format, args...))
}

// admit judges the node's files for the target kubelet and replays the admission of the pods.
func (r *Runner) admit(n *NodeResult) *AdmitResult {
	out := &AdmitResult{}
	note := out.note
	in, ok := r.admitInput(n, out)
	if !ok {
		return out
	}
	key, keyed := startKey(n, in)
	res, err := r.memo.predict(key, keyed, in)
	out.Result, out.Err = res, err
	out.replayed.in, out.replayed.key, out.replayed.keyed = in, key, keyed
	if err != nil || !r.cfg.Admit.Largest {
		return out
	}
	empty := in
	empty.Pods = nil
	for i, a := range res.Admissions {
		if a.Verdict != admit.VerdictRefused {
			continue
		}
		n, err := admit.LargestCPURequest(empty, in.Pods[i])
		if err != nil {
			note("largest request of %s: %v", a.Pod, err)
			continue
		}
		if out.Largest == nil {
			out.Largest = map[string]int{}
		}
		out.Largest[a.Pod] = n
		if a.Before == nil {
			continue
		}
		for _, resource := range slices.Sorted(maps.Keys(admit.DeviceRequests(in.Pods[i], a.Before.Devices))) {
			n, ok, err := admit.LargestDeviceRequest(in, i, resource)
			if err != nil {
				note("largest %s request of %s: %v", resource, a.Pod, err)
				continue
			}
			if !ok {
				continue
			}
			if out.LargestDevices == nil {
				out.LargestDevices = map[string]map[string]int{}
			}
			if out.LargestDevices[a.Pod] == nil {
				out.LargestDevices[a.Pod] = map[string]int{}
			}
			out.LargestDevices[a.Pod][resource] = n
		}
	}
	return out
}

// admitInput is the admission replay's input for the node: its files judged for the target
// kubelet, its machine, config and devices, and its pods where they are known (the node-resource
// predicate, the kubelet's active pods, the holders' names); what it took and lacked goes to
// out's notes, and ok false (out.Err set) when nothing can be replayed.
func (r *Runner) admitInput(n *NodeResult, out *AdmitResult) (in admit.Input, ok bool) {
	note := out.note
	mi := r.managerInputs(n, r.cfg.Admit.Machine, r.cfg.Admit.KubeletConfig, note)
	switch {
	case mi.kubelet == nil:
		out.Err = fmt.Errorf("no kubelet version: give --kubelet-version")
		return in, false
	case mi.machine == nil:
		out.Err = fmt.Errorf("no machine: give --machine (machine.json)")
		return in, false
	case mi.config == nil:
		out.Err = fmt.Errorf("no kubelet config: give --kubelet-config")
		return in, false
	}
	in, d := r.replayInput(n, mi, r.cfg.Admit.Pods)
	if d != nil {
		for _, line := range deviceTopologyNotes(d) {
			note("%s", line)
		}
	}
	if n.Node != "" {
		in.DRAExtendedResources, in.DRAExtendedNotKnown = r.draExtended, r.noDRAExtended
	}
	switch pods := n.Snapshot.Pods; {
	case n.Node == "":
		note("node-resource predicate not replayed: the node's allocatable and running pods are known on live nodes only")
	case pods == nil:
		// Nor is a checkpoint owner known gone: an admitted pod's CPUs and devices are those it
		// gets while every owner runs (the answer holds either way, ownersDecide).
		note("node-resource predicate not replayed, and an admitted pod placed as if every checkpoint owner still runs: the node's pods were not listed (--all-nodes --from-published lists them only where they decide an answer; name the node for them)")
	case pods.Unlisted:
		// Weighed against no pod, a node full of them would admit anything.
		note("node-resource predicate not replayed: the node's pods could not be listed")
	case len(n.Snapshot.Allocatable) == 0:
		note("node-resource predicate not replayed: the node's status gives no allocatable")
	default:
		in.Node = &admit.NodeResources{Allocatable: n.Snapshot.Allocatable, Pods: pods.Running, Object: n.Snapshot.NodeObject}
	}
	// The pods the API server has on the node, to tell a device checkpoint's gone holders
	// (none known when they could not be listed).
	if n.Node != "" && n.Snapshot.Pods != nil && !n.Snapshot.Pods.Unlisted {
		in.KnownPods = map[string]bool{}
		for uid := range n.Snapshot.Pods.Pods {
			in.KnownPods[uid] = true
		}
		in.ActivePods = n.Snapshot.Pods.Active
		staleHolderNotes(in, note)
	}
	if n.Snapshot.Pods != nil {
		in.PodNames = map[string]string{}
		for uid, ref := range n.Snapshot.Pods.Pods {
			in.PodNames[uid] = ref.String()
		}
	}
	return in, true
}

// nodeDevices joins what the node's files, status, PodResources API, sysfs and NVIDIA driver say of
// its devices with --devices.
func (r *Runner) nodeDevices(n *NodeResult, mi managerInputs) *nodeDevices {
	in := nodeDeviceInput{topologyNone: mi.config.TopologyPolicy() == "none"}
	if r.cfg.Admit != nil {
		in.file = r.cfg.Admit.Devices
	}
	if s := n.Snapshot; s != nil {
		in.status = s.Devices
		if dump, ok := s.Dumps[machine.PCIHeader]; ok {
			in.pci, in.pciErr = machine.ParsePCINUMA(dump)
		}
		if dump, ok := s.Dumps[machine.NVIDIAHeader]; ok {
			in.nvidia, in.nvidiaErr = machine.ParseNVIDIAGPUs(dump)
		}
		// Only the node reader (--reader=binary) prints it; absent, the join says so.
		if dump, ok := s.Dumps[machine.PodResourcesHeader]; ok {
			in.podResources, in.podResourcesErr = machine.ParsePodResources(dump)
		}
	}
	if rep := mi.report(decode.KindDevices); rep != nil && rep.Verdict == decode.Valid && rep.Decoded.Devices != nil {
		in.checkpoint = rep.Decoded.Devices
	}
	return joinNodeDevices(in)
}

// noDevicePlugins is the device manager of a node nodeDevices knows no device of. A node whose
// status is known and counts no extended resource (its checkpoint registering none) has no
// plugin registered: the device manager is replayed with none, on its checkpoint, and a pod's
// extended resources are not its. Otherwise (offline, no --devices) the plugins are not known:
// nil, and why, which the pods asking for devices say as they are not judged.
func noDevicePlugins(n *NodeResult, mi managerInputs) (*replay.DeviceInput, string) {
	checkpoint := mi.report(decode.KindDevices)
	var registered []string
	if checkpoint != nil && checkpoint.Decoded.Devices != nil {
		registered = slices.Sorted(maps.Keys(checkpoint.Decoded.Devices.RegisteredDevices))
	}
	if n.Snapshot != nil && n.Snapshot.Devices != nil {
		return &replay.DeviceInput{Checkpoint: checkpoint}, ""
	}
	const give = "give --devices FILE (the device plugin API's Device messages; an empty {\"resources\": {}}: no plugin registered yet)"
	if len(registered) > 0 {
		return nil, fmt.Sprintf("the device checkpoint registers %s, whose plugins and devices are not known offline: %s", strings.Join(registered, ", "), give)
	}
	return nil, "the node's device plugins are not known offline: " + give
}

// input is the device manager's input: the plugins joined, on the node's device checkpoint.
func (d *nodeDevices) input(checkpoint *decode.Report) *replay.DeviceInput {
	return &replay.DeviceInput{Plugins: d.plugins, NotJudged: d.notJudged, Checkpoint: checkpoint}
}

// report is the report of the node's file of kind (one file a kind), or nil.
func (mi managerInputs) report(kind decode.Kind) *decode.Report {
	var out *decode.Report
	for _, row := range mi.rows {
		if rep := row.Report; rep != nil && rep.Kind == kind {
			out = rep
		}
	}
	return out
}

// replayInput is what both replays of a node read, admit's and the restart outlook's (the
// machine, config and kubelet known): the node's checkpoints, and its devices as the kubelet
// holds them when they are known (--devices FILE; on a live node, the device join, whose
// sources come back for the notes; nil without it), with pods to admit.
func (r *Runner) replayInput(n *NodeResult, mi managerInputs, pods []*v1.Pod) (admit.Input, *nodeDevices) {
	in := admit.Input{Machine: mi.machine, Topology: r.memo.topology(mi.machine), Config: mi.config, Kubelet: *mi.kubelet, RootDir: r.cfg.KubeletRootDir, Pods: pods,
		CPU: mi.report(decode.KindCPU), Memory: mi.report(decode.KindMemory)}
	d := r.nodeDevices(n, mi)
	if d != nil {
		in.Devices = d.input(mi.report(decode.KindDevices))
		in.DeviceTopology = d.sources
	} else {
		in.Devices, in.DevicesNotReplayed = noDevicePlugins(n, mi)
	}
	return in, d
}

// staleHolderNotes says which holders of the device checkpoint the node no longer runs: the
// kubelet rewrites the file only at its next allocation, and frees their devices then
// (UpdateAllocatedDevices), as the replay does.
func staleHolderNotes(in admit.Input, note func(string, ...any)) {
	for _, h := range admit.StaleHolders(in) {
		var held []string
		for _, resource := range slices.Sorted(maps.Keys(h.Devices)) {
			held = append(held, resource+" "+strings.Join(h.Devices[resource], ","))
		}
		note("device checkpoint: pod %s, which the node no longer runs, still holds %s: the kubelet frees them at its next admission, and so does the replay", h.PodUID, strings.Join(held, "; "))
	}
}

// startKey is what the kubelet's start reads of the node, hashed, so that the nodes of a fleet
// read that start alike start once (parseMemo.predict): every file the node has (the
// checkpoints the start restores, and whatever judging them read), the machine and config (the
// memo parses each content once: the same content, the same pointer), the kubelet with its
// gates, the root dir and the devices. ok false: no snapshot, nothing to key on.
func startKey(n *NodeResult, in admit.Input) (key [sha256.Size]byte, ok bool) {
	if n.Snapshot == nil {
		return key, false
	}
	h := sha256.New()
	fmt.Fprintf(h, "%p %p %q %q\n", in.Machine, in.Config, in.Kubelet.String(), in.RootDir)
	files := n.Snapshot.Files
	for _, path := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%q %d\n", path, len(files[path]))
		h.Write(files[path])
	}
	fmt.Fprintf(h, "%q %q %q\n", n.Snapshot.Missing, n.Snapshot.Oversized, n.Snapshot.TempFiles)
	for _, rep := range []*decode.Report{in.CPU, in.Memory} {
		if rep != nil {
			fmt.Fprintf(h, "%q %q\n", rep.File, rep.Verdict)
		}
	}
	if in.Devices != nil {
		d := *in.Devices
		if d.Checkpoint != nil {
			fmt.Fprintf(h, "devices %q %q\n", d.Checkpoint.File, d.Checkpoint.Verdict)
		}
		d.Checkpoint = nil
		b, err := json.Marshal(d)
		if err != nil {
			return key, false
		}
		h.Write(b)
	}
	h.Sum(key[:0])
	return key, true
}
