package doctor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// FuzzDiagnose: whatever a node's CPU and memory files hold, once decoded as valid or not,
// doctor's start prediction and findings neither panic nor build what the files only name (a
// hostile CPU range), on a real case's machine and config; and the result is one a caller can
// use: it serialises to JSON, the same input gives the same result, and each finding is about a
// file doctor was given (or the config or machine) and names an entry that file or the machine
// has.
func FuzzDiagnose(f *testing.F) {
	for _, name := range []string{"cpu-s2c8t2n2-healthy-assigned__w1.25.16", "cpu-s2c8t2n2-healthy-assigned__w1.37.1", "mem-n2hp-healthy-assigned__w1.37.1",
		"cpu-s2c8t2n2-two-pods-same-cpus__w1.37.1", "mem-n1-drift-node0-plus-4KiB__w1.37.1"} {
		c := startVector(f, name)
		cpu, mem := c.Files["cpu_manager_state"], c.Files["memory_manager_state"]
		f.Add(cpu, mem, uint8(0))
		f.Add(cpu, mem, uint8(3))
		f.Add(cpu, mem, uint8(8+5)) // live pods known (none): stale entries too
	}
	versions := []string{"v1.25.16", "v1.27.0", "v1.31.14", "v1.34.10", "v1.36.0", decode.HomeKubelet}
	base := map[string]replay.StartInput{}
	for _, v := range versions {
		base[v] = startCase(f, "mem-n2hp-healthy-assigned__w1.37.1", nil, v)
	}
	f.Fuzz(func(t *testing.T, cpu, mem []byte, flags uint8) {
		in := base[versions[int(flags&7)%len(versions)]]
		in.CPU = decode.Decode(decode.KindCPU, cpu, decode.Options{Kubelet: &in.Kubelet})
		in.Memory = decode.Decode(decode.KindMemory, mem, decode.Options{Kubelet: &in.Kubelet})
		if _, err := replay.PredictStart(in); err != nil {
			t.Fatal(err)
		}
		din := Input{Machine: in.Machine, Config: in.Config, Kubelet: &in.Kubelet, Files: []*decode.Report{in.CPU, in.Memory}}
		if flags&8 != 0 {
			din.LivePods = map[string]bool{}
		}
		first, err := json.Marshal(Diagnose(din))
		if err != nil {
			t.Fatalf("the result does not serialise: %v", err)
		}
		r := Diagnose(din)
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("the result does not serialise: %v", err)
		}
		if !bytes.Equal(first, again) {
			t.Fatalf("the same input gave two results:\n%s\n%s", first, again)
		}
		if err := findingsNameEntries(din, r.Findings); err != nil {
			t.Fatalf("%v\n%s", err, first)
		}
	})
}

// findingsNameEntries checks that each finding is about a file of the input, the kubelet config
// or the machine, and that its entry is one that file (or, for NUMA nodes, the machine) has.
func findingsNameEntries(in Input, findings []Finding) error {
	entries := map[string]map[string]bool{
		"kubelet-config": {"reservedSystemCPUs": true},
		"machine":        {},
	}
	numa := func(add func(string), id int) {
		add(fmt.Sprintf("NUMA node %d", id))
	}
	for _, rep := range in.Files {
		if rep == nil {
			continue
		}
		set := map[string]bool{}
		entries[rep.File] = set
		add := func(e string) { set[e] = true }
		if s := rep.Decoded.CPU; s != nil {
			add("defaultCpuSet")
			for pod, ctrs := range s.Entries {
				add("pod " + pod)
				for ctr := range ctrs {
					add(pod + "/" + ctr)
				}
			}
			for pod := range s.PodEntries {
				add("pod " + pod)
			}
		}
		if s := rep.Decoded.Memory; s != nil {
			for pod, ctrs := range s.Entries {
				add("pod " + pod)
				for ctr, blocks := range ctrs {
					add(pod + "/" + ctr)
					for _, b := range blocks {
						for _, id := range b.NUMAAffinity {
							numa(add, id)
						}
					}
				}
			}
			for pod := range s.PodEntries {
				add("pod " + pod)
			}
			for id, node := range s.MachineState {
				numa(add, id)
				if node != nil {
					for name := range node.MemoryMap {
						add(fmt.Sprintf("NUMA node %d %s", id, name))
					}
				}
			}
			if in.Machine != nil {
				for _, id := range in.Machine.NodeIDs() {
					numa(add, id)
				}
			}
		}
	}
	for _, f := range findings {
		set, ok := entries[f.File]
		if !ok {
			return fmt.Errorf("finding %s is about %q, which is none of %v", f.Check, f.File, slices.Sorted(maps.Keys(entries)))
		}
		if f.Entry != "" && !set[f.Entry] {
			return fmt.Errorf("finding %s names entry %q, which %s does not have", f.Check, f.Entry, f.File)
		}
	}
	return nil
}
