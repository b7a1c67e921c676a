package doctor

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// A candidate is a config change worth trying for a failed start. Candidates are guesses from
// the error; only those with which the replayed start succeeds are offered as verified.
type candidate struct {
	// fields are the KubeletConfiguration fields apply sets; the fix names each with the value
	// it has after apply, so that setting them as written is the change replayed. apply gets a
	// copy of the user's config (try), its maps its own.
	fields []string
	apply  func(*replay.KubeletConfig)
}

func setting(apply func(*replay.KubeletConfig), fields ...string) candidate {
	return candidate{fields: fields, apply: apply}
}

// try is the input with the candidate applied to a copy of its config.
func (c candidate) try(in replay.StartInput) replay.StartInput {
	cfg := in.Config.DeepCopy()
	c.apply(cfg)
	in.Config = cfg
	return in
}

// change is the candidate's change in the words of the config it made (cfg): each field it
// sets, with its whole new value.
func (c candidate) change(cfg *replay.KubeletConfig) json.RawMessage {
	var all map[string]json.RawMessage
	b, _ := json.Marshal(cfg)
	_ = json.Unmarshal(b, &all)
	change := map[string]json.RawMessage{}
	for _, f := range c.fields {
		if v, ok := all[f]; ok {
			change[f] = v
		} else {
			change[f] = unsetField[f]
		}
	}
	out, _ := json.Marshal(change)
	return out
}

// unsetField is how a fix writes a field the change leaves empty (omitted from the config's JSON).
var unsetField = map[string]json.RawMessage{
	"cpuManagerPolicy": json.RawMessage(`""`), "memoryManagerPolicy": json.RawMessage(`""`),
	"reservedSystemCPUs": json.RawMessage(`""`), "reservedMemory": json.RawMessage(`[]`),
	"kubeReserved": json.RawMessage(`{}`), "systemReserved": json.RawMessage(`{}`),
	"cpuManagerPolicyOptions": json.RawMessage(`{}`), "featureGates": json.RawMessage(`{}`),
}

// proposeFix offers a verified config change and, when a checkpoint is what the kubelet
// refuses, the file to delete after draining (either one lets it start).
func proposeFix(in replay.StartInput, p replay.Prediction) *Fix {
	fix := &Fix{}
	cands := newTrials(in, p)
	for i := range cands.list {
		if t := cands.get(i); t.err == nil && t.q.Starts {
			fix.Config, fix.Verified = t.changeText(), true
			break
		}
	}
	var rep *decode.Report
	try := in
	switch p.Phase {
	case replay.PhaseCPUStart:
		rep, try.CPU = in.CPU, nil
	case replay.PhaseMemoryStart:
		rep, try.Memory = in.Memory, nil
	}
	var words []string
	if fix.Config != nil {
		words = append(words, "set "+string(fix.Config)+" in the kubelet config")
	}
	if rep != nil {
		q, err := replay.PredictStart(try)
		ok := err == nil && q.Starts
		if ok || fix.Config == nil {
			fix.Delete, fix.Loses = path.Join(rootDir(in), rep.File), loses(rep)
			fix.Verified = fix.Verified || ok
			w := "drain the node, then delete " + fix.Delete
			if len(fix.Loses) > 0 {
				w += fmt.Sprintf(" (this drops %d assignment(s) of the drained pods: %s)", len(fix.Loses), strings.Join(fix.Loses, "; "))
			} else {
				w += " (it holds no assignment: nothing is lost)"
			}
			if !ok && err == nil {
				w += "; that is not enough: then " + q.Error
			}
			words = append(words, w)
		}
	}
	// Only when no file is to blame yet: a config that keeps what was asked for may need the
	// state written under the old one gone.
	if fix.Delete == "" {
		if alt := configAndDelete(in, cands, fix.Config); alt != nil {
			fix.Alternatives = append(fix.Alternatives, *alt)
			words = append(words, alt.Text)
			fix.Verified = true
		}
	}
	if len(words) == 0 {
		return &Fix{Text: "change the kubelet config (no single change doctor tried lets it start): " + p.Error}
	}
	fix.Text = strings.Join(words, ", or ")
	return fix
}

// configAndDelete looks for a config change that keeps what the new config asks for but
// needs the state written under the old one gone: the change, then the file to delete.
func configAndDelete(in replay.StartInput, cands *trials, chosen json.RawMessage) *Fix {
	for i := range cands.list {
		t := cands.get(i)
		try, q := t.in, t.q
		if t.err != nil || q.Starts {
			continue
		}
		b := t.changeText()
		if string(b) == string(chosen) {
			continue
		}
		var rep *decode.Report
		switch q.Phase {
		case replay.PhaseCPUStart:
			rep, try.CPU = in.CPU, nil
		case replay.PhaseMemoryStart:
			rep, try.Memory = in.Memory, nil
		default:
			continue
		}
		if rep == nil {
			continue
		}
		if !startsWith(try) {
			continue
		}
		f := &Fix{Config: b, Delete: path.Join(rootDir(in), rep.File), Loses: loses(rep), Verified: true}
		f.Text = "set " + string(b) + " in the kubelet config, then drain the node and delete " + f.Delete
		if len(f.Loses) > 0 {
			f.Text += fmt.Sprintf(" (this drops %d assignment(s) of the drained pods: %s)", len(f.Loses), strings.Join(f.Loses, "; "))
		}
		return f
	}
	return nil
}

// trials are the config candidates of a failed start, each applied and its start replayed
// once, when first asked for: proposeFix and configAndDelete go through the same candidates,
// and a replayed start is most of what doctor costs a node that would not start.
type trials struct {
	in   replay.StartInput
	list []candidate
	done []*trial
}

// trial is a candidate applied and what the replayed start made of it.
type trial struct {
	cand   candidate
	in     replay.StartInput
	change json.RawMessage // changeText's, once asked: most trials are never offered
	q      replay.Prediction
	err    error
}

// changeText is the change in the config's words.
func (t *trial) changeText() json.RawMessage {
	if t.change == nil {
		t.change = t.cand.change(t.in.Config)
	}
	return t.change
}

func newTrials(in replay.StartInput, p replay.Prediction) *trials {
	list := configCandidates(in, p)
	return &trials{in: in, list: list, done: make([]*trial, len(list))}
}

// get is candidate i tried.
func (ts *trials) get(i int) *trial {
	if ts.done[i] == nil {
		t := &trial{cand: ts.list[i]}
		t.in = ts.list[i].try(ts.in)
		t.q, t.err = replay.PredictStart(t.in)
		ts.done[i] = t
	}
	return ts.done[i]
}

func startsWith(in replay.StartInput) bool {
	q, err := replay.PredictStart(in)
	return err == nil && q.Starts
}

func rootDir(in replay.StartInput) string {
	if in.RootDir == "" {
		return decode.DefaultRootDir
	}
	return in.RootDir
}

// loses lists what deleting a checkpoint drops: the exclusive CPUs and NUMA memory of pods.
func loses(rep *decode.Report) []string {
	var out []string
	if s := rep.Decoded.CPU; s != nil {
		for _, pod := range slices.Sorted(maps.Keys(s.Entries)) {
			for _, ctr := range slices.Sorted(maps.Keys(s.Entries[pod])) {
				if set := s.Entries[pod][ctr]; set != "" {
					out = append(out, fmt.Sprintf("pod %s container %s: exclusive CPUs %s", pod, ctr, set))
				}
			}
		}
		for _, pod := range slices.Sorted(maps.Keys(s.PodEntries)) {
			out = append(out, fmt.Sprintf("pod %s: exclusive CPUs %s", pod, s.PodEntries[pod]))
		}
	}
	if s := rep.Decoded.Memory; s != nil {
		for _, pod := range slices.Sorted(maps.Keys(s.Entries)) {
			for _, ctr := range slices.Sorted(maps.Keys(s.Entries[pod])) {
				for _, b := range s.Entries[pod][ctr] {
					out = append(out, fmt.Sprintf("pod %s container %s: %s %s on NUMA %v", pod, ctr, bytesText(b.Size), b.Type, b.NUMAAffinity))
				}
			}
		}
	}
	return out
}

func bytesText(n uint64) string {
	return resource.NewQuantity(int64(n), resource.BinarySI).String()
}

// configCandidates guesses config changes from the failure and the state on the node.
func configCandidates(in replay.StartInput, p replay.Prediction) []candidate {
	var out []candidate
	cs, _ := decodedCPU(in.CPU)
	ms, _ := decodedMemory(in.Memory)
	// A config-phase failure stops before either manager: both get candidates.
	cpuFailed := p.CPU == nil || p.CPU.Phase != replay.PhaseOK
	memFailed := p.Memory == nil || p.Memory.Phase != replay.PhaseOK
	cpuErr := p.Error
	if p.CPU != nil {
		cpuErr = p.CPU.Error
	}

	if cpuFailed {
		// The policy the file was written with.
		if cs != nil && (cs.PolicyName == replay.CPUPolicyNone || cs.PolicyName == replay.CPUPolicyStatic) && cs.PolicyName != in.Config.CPUPolicy() {
			pol := cs.PolicyName
			out = append(out, setting(func(c *replay.KubeletConfig) { c.CPUManagerPolicy = pol }, "cpuManagerPolicy"))
			if pol == replay.CPUPolicyStatic {
				// static needs a CPU reservation; the smallest one.
				out = append(out, setting(func(c *replay.KubeletConfig) {
					c.CPUManagerPolicy = pol
					c.KubeReserved = orEmpty(c.KubeReserved)
					c.KubeReserved["cpu"] = "1"
				}, "cpuManagerPolicy", "kubeReserved"))
			}
		}
		if low := strings.ToLower(in.Config.CPUPolicy()); low != in.Config.CPUPolicy() {
			out = append(out, setting(func(c *replay.KubeletConfig) { c.CPUManagerPolicy = low }, "cpuManagerPolicy"))
		}
		// Options: turn the gate on, or drop the option.
		for _, name := range slices.Sorted(maps.Keys(in.Config.CPUManagerPolicyOptions)) {
			name := name
			if strings.Contains(cpuErr, fmt.Sprintf("%q", name)) || strings.Contains(cpuErr, name+" and") || strings.Contains(cpuErr, "and "+name) {
				for _, g := range []string{decode.GateCPUManagerPolicyAlphaOptions, decode.GateCPUManagerPolicyBetaOptions} {
					if strings.Contains(cpuErr, strings.TrimPrefix(strings.TrimSuffix(g, "Options"), "CPUManagerPolicy")+"-level") {
						g := g
						out = append(out, setting(func(c *replay.KubeletConfig) {
							c.FeatureGates = orEmpty(c.FeatureGates)
							c.FeatureGates[g] = true
						}, "featureGates"))
					}
				}
				rest := map[string]string{}
				for k, v := range in.Config.CPUManagerPolicyOptions {
					if k != name {
						rest[k] = v
					}
				}
				out = append(out, setting(func(c *replay.KubeletConfig) { c.CPUManagerPolicyOptions = rest }, "cpuManagerPolicyOptions"))
			}
		}
		// Reserved CPUs: the same number, chosen among the CPUs the state's default set holds.
		if cs != nil && in.Machine != nil {
			if def, err := replay.ParseCPUSet(cs.DefaultCPUSet); err == nil {
				n := reservedCount(in)
				topo := in.Topology
				if topo == nil {
					topo = replay.Discover(in.Machine)
				}
				if n > 0 {
					if set, _ := replay.TakeByTopologyNUMAPacked(topo, def.Intersection(topo.CPUs()), n, replay.CPUSortingStrategyPacked, false); set.Size() == n {
						s := set.String()
						out = append(out, setting(func(c *replay.KubeletConfig) { c.ReservedSystemCPUs = s }, "reservedSystemCPUs"))
					}
				}
				// strict-cpu-reservation: reserve what the default set lacks.
				if rest := topo.CPUs().Difference(def); rest.Size() > 0 {
					s := rest.String()
					out = append(out, setting(func(c *replay.KubeletConfig) { c.ReservedSystemCPUs = s }, "reservedSystemCPUs"))
				}
			}
		}
		if in.Config.ReservedSystemCPUs != "" {
			out = append(out, setting(func(c *replay.KubeletConfig) { c.ReservedSystemCPUs = "" }, "reservedSystemCPUs"))
		}
		if strings.Contains(cpuErr, "unable to determine reserved CPU") || strings.Contains(cpuErr, "unable to reserve") {
			// One CPU reserved in all: kubeReserved's, and none in systemReserved.
			fields := []string{"kubeReserved"}
			if _, ok := in.Config.SystemReserved["cpu"]; ok {
				fields = append(fields, "systemReserved")
			}
			out = append(out, setting(func(c *replay.KubeletConfig) {
				c.KubeReserved = orEmpty(c.KubeReserved)
				c.KubeReserved["cpu"] = "1"
				c.SystemReserved = orEmpty(c.SystemReserved)
				delete(c.SystemReserved, "cpu")
			}, fields...))
		}
	}
	if memFailed {
		if ms != nil && (ms.PolicyName == replay.MemoryPolicyNone || ms.PolicyName == replay.MemoryPolicyStatic) && ms.PolicyName != in.Config.MemoryPolicy() {
			pol := ms.PolicyName
			out = append(out, setting(func(c *replay.KubeletConfig) { c.MemoryManagerPolicy = pol }, "memoryManagerPolicy"))
		}
		for _, pol := range []string{replay.MemoryPolicyStatic, replay.MemoryPolicyNone} {
			if strings.EqualFold(pol, in.Config.MemoryPolicy()) && pol != in.Config.MemoryPolicy() {
				pol := pol
				out = append(out, setting(func(c *replay.KubeletConfig) { c.MemoryManagerPolicy = pol }, "memoryManagerPolicy"))
			}
		}
		// reservedMemory as the stored machine state records it (what the pods were placed with).
		if ms != nil && len(ms.MachineState) > 0 {
			rm := reservedFromState(ms)
			out = append(out, setting(func(c *replay.KubeletConfig) { c.ReservedMemory = rm }, "reservedMemory"))
		}
		// The reservation the state was written with: reservedMemory as recorded, and
		// systemReserved memory so that node allocatable adds up to it.
		if ms != nil && len(ms.MachineState) > 0 && in.Machine != nil {
			rm := reservedFromState(ms)
			if sys, ok := systemReservedFor(in, rm); ok {
				out = append(out, setting(func(c *replay.KubeletConfig) {
					c.ReservedMemory = rm
					c.SystemReserved = orEmpty(c.SystemReserved)
					c.SystemReserved["memory"] = sys
				}, "reservedMemory", "systemReserved"))
			}
		}
		// systemReserved memory adjusted so node allocatable matches reservedMemory.
		if sys, ok := systemReservedFor(in, in.Config.ReservedMemory); ok {
			out = append(out, setting(func(c *replay.KubeletConfig) {
				c.SystemReserved = orEmpty(c.SystemReserved)
				c.SystemReserved["memory"] = sys
			}, "systemReserved"))
		}
		// reservedMemory adding up to the node-allocatable reservation, on the first NUMA node.
		if in.Machine != nil {
			if rm := reservedMatchingAllocatable(in); rm != nil {
				out = append(out, setting(func(c *replay.KubeletConfig) { c.ReservedMemory = rm }, "reservedMemory"))
			}
		}
	}
	return out
}

func decodedCPU(r *decode.Report) (*decode.CPUState, bool) {
	if r == nil {
		return nil, false
	}
	return r.Decoded.CPU, r.Decoded.CPU != nil
}

func decodedMemory(r *decode.Report) (*decode.MemoryState, bool) {
	if r == nil {
		return nil, false
	}
	return r.Decoded.Memory, r.Decoded.Memory != nil
}

// reservedCount is numReservedCPUs under the current config, 0 when it cannot be computed.
func reservedCount(in replay.StartInput) int {
	res, err := replay.NodeAllocatableReservation(in.Machine, in.Config)
	if err != nil {
		return 0
	}
	q, ok := res["cpu"]
	if !ok {
		return 0
	}
	return int((q.MilliValue() + 999) / 1000)
}

func reservedFromState(ms *decode.MemoryState) []replay.MemoryReservation {
	ids := make([]int, 0, len(ms.MachineState))
	for id := range ms.MachineState {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	var out []replay.MemoryReservation
	for _, id := range ids {
		n := ms.MachineState[id]
		if n == nil {
			continue
		}
		limits := map[string]resource.Quantity{}
		for name, t := range n.MemoryMap {
			if t != nil && t.SystemReserved > 0 {
				limits[name] = *resource.NewQuantity(int64(t.SystemReserved), resource.BinarySI)
			}
		}
		if len(limits) > 0 {
			out = append(out, replay.MemoryReservation{NumaNode: int32(id), Limits: limits})
		}
	}
	return out
}

func reservedMatchingAllocatable(in replay.StartInput) []replay.MemoryReservation {
	res, err := replay.NodeAllocatableReservation(in.Machine, in.Config)
	if err != nil {
		return nil
	}
	ids := in.Machine.NodeIDs()
	if len(ids) == 0 {
		return nil
	}
	limits := map[string]resource.Quantity{}
	for name, q := range res {
		if name == string(v1.ResourceMemory) || replay.IsHugePages(name) {
			limits[name] = q
		}
	}
	if len(limits) == 0 {
		return nil
	}
	return []replay.MemoryReservation{{NumaNode: int32(ids[0]), Limits: limits}}
}

// orEmpty is m, or an empty map to write into when m is nil.
func orEmpty[M ~map[K]V, K comparable, V any](m M) M {
	if m == nil {
		return M{}
	}
	return m
}

// systemReservedFor is the systemReserved memory with which the node-allocatable memory
// reservation equals the memory that rm reserves.
func systemReservedFor(in replay.StartInput, rm []replay.MemoryReservation) (string, bool) {
	want := resource.NewQuantity(0, resource.BinarySI)
	for _, r := range rm {
		if q, ok := r.Limits[string(v1.ResourceMemory)]; ok {
			want.Add(q)
		}
	}
	if want.IsZero() {
		return "", false
	}
	cfg := in.Config.DeepCopy()
	if cfg.SystemReserved != nil {
		delete(cfg.SystemReserved, string(v1.ResourceMemory))
	}
	res, err := replay.NodeAllocatableReservation(in.Machine, cfg)
	if err != nil {
		return "", false
	}
	rest := res[string(v1.ResourceMemory)]
	want.Sub(rest)
	if want.Sign() < 0 {
		return "", false
	}
	return want.String(), true
}
