package admit

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// TestPreparedMatchesFresh: on every admission vector's input (the conformance test's), a
// prediction on a copy of the kubelet started once answers exactly as one that starts it
// again: the same Result and the same managers' state after each pod. Each case is predicted
// several times on one Prepared, with other active sets and the pods reversed in between, so a
// copy that shared any state with the start would change the next answer.
func TestPreparedMatchesFresh(t *testing.T) {
	compared, restarts := 0, 0
	for _, set := range admissionSets(t) {
		kubelet := set.MetaString("kubelet")
		for _, c := range set.Cases {
			in := caseInput(t, c, kubelet, deviceSet(set.Name))
			if in.Restart != nil {
				restarts++ // PredictRestart's re-admissions change the node as they go: never prepared
				continue
			}
			p, err := Prepare(in)
			if err != nil {
				t.Fatalf("%s %s: %v", set.Name, c.Name, err)
			}
			reversed := slices.Clone(in.Pods)
			slices.Reverse(reversed)
			// The case as shipped, then other pods and active sets, then as shipped again.
			active := activeSets(in)
			tries := []struct {
				pods   []*v1.Pod
				active map[string]bool
			}{{in.Pods, nil}, {reversed, active[0]}, {in.Pods, active[1]}, {in.Pods, nil}}
			for i, try := range tries {
				next := in
				next.Pods, next.ActivePods = try.pods, try.active
				if diff := samePrediction(next, p, i == 0); diff != "" {
					t.Fatalf("%s %s (try %d, active %v): prepared and fresh differ: %s", set.Name, c.Name, i, slices.Sorted(maps.Keys(try.active)), diff)
				}
				compared++
			}
		}
	}
	if compared == 0 {
		t.Fatal("no case compared")
	}
	t.Logf("%d predictions compared, %d restart cases not prepared", compared, restarts)
}

// samePrediction compares the prepared prediction with a fresh one: the Result and the
// managers' states after each pod, and with public also Predict's Result (the stale device
// holders named).
func samePrediction(in Input, p *Prepared, public bool) string {
	want, wantStates, wantErr := predict(in, true, nil)
	got, gotStates, gotErr := predict(in, true, p)
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		return "error: " + errText(gotErr) + ", fresh: " + errText(wantErr)
	}
	if !reflect.DeepEqual(gotStates, wantStates) {
		return "states after the pods: " + jsonText(gotStates) + ", fresh: " + jsonText(wantStates)
	}
	if !reflect.DeepEqual(got, want) {
		return "result: " + jsonText(got) + ", fresh: " + jsonText(want)
	}
	if !public {
		return ""
	}
	want, wantErr = Predict(in)
	got, gotErr = p.Predict(in.ActivePods, in.Pods)
	if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(got, want) {
		return "Predict: " + jsonText(got) + ", fresh: " + jsonText(want)
	}
	return ""
}

// activeSets are the active pods a case is tried with besides not known: none (every
// checkpoint owner stale), and every checkpoint owner but one (none when there is no owner).
func activeSets(in Input) []map[string]bool {
	out := []map[string]bool{{}}
	owners := map[string]bool{}
	if in.CPU != nil && in.CPU.Decoded.CPU != nil {
		for uid := range in.CPU.Decoded.CPU.Entries {
			owners[uid] = true
		}
	}
	if in.Memory != nil && in.Memory.Decoded.Memory != nil {
		for uid := range in.Memory.Decoded.Memory.Entries {
			owners[uid] = true
		}
	}
	if in.Devices != nil && in.Devices.Checkpoint != nil && in.Devices.Checkpoint.Decoded.Devices != nil {
		for _, e := range in.Devices.Checkpoint.Decoded.Devices.PodDeviceEntries {
			owners[e.PodUID] = true
		}
	}
	if len(owners) > 0 {
		delete(owners, slices.Sorted(maps.Keys(owners))[0])
	}
	return append(out, owners)
}

// TestCloneLeavesStartAlone: admitting pods on a copy of a started kubelet leaves the start as
// it was (its managers' state, free memory and stored affinities), and a second copy admits as
// the first did.
func TestCloneLeavesStartAlone(t *testing.T) {
	checked := 0
	forEachAdmission(t, func(name string, in Input) {
		started, err := replay.StartOnce(startInput(in))
		if err != nil {
			t.Fatal(err)
		}
		first := started.Node(nil)
		if first == nil {
			return // the kubelet does not start: nothing to copy
		}
		before := first.State()
		var admitted []replay.PodAdmission
		for _, pod := range in.Pods {
			admitted = append(admitted, first.Admit(pod))
		}
		second := started.Node(nil)
		if after := second.State(); !reflect.DeepEqual(after, before) {
			t.Fatalf("%s: the start changed under a copy's admissions: %s, was %s", name, jsonText(after), jsonText(before))
		}
		for i, pod := range in.Pods {
			if got := second.Admit(pod); !reflect.DeepEqual(got, admitted[i]) {
				t.Fatalf("%s: pod %s on a second copy: %s, on the first: %s", name, pod.Name, jsonText(got), jsonText(admitted[i]))
			}
		}
		checked++
	})
	if checked == 0 {
		t.Fatal("no case checked")
	}
}

// forEachAdmission calls f with every admission vector's input that admits pods on a kubelet
// started once (a restart's re-admissions are never prepared), named by its set and case.
func forEachAdmission(t *testing.T, f func(name string, in Input)) {
	for _, set := range admissionSets(t) {
		kubelet := set.MetaString("kubelet")
		for _, c := range set.Cases {
			if in := caseInput(t, c, kubelet, deviceSet(set.Name)); in.Restart == nil && len(in.Pods) > 0 {
				f(set.Name+" "+c.Name, in)
			}
		}
	}
}

func errText(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// TestPrefixMatchesPredict: on every admission vector's input, with each active set the
// scheduler may give, and after some of its pods, the node kept after those pods
// (Prepared.After) predicts the next as Predict on all of them does, each time alike (a copy
// of the kept node that shared any state with it would change the second answer), and with no
// active set (the stale holders named over the whole result) as Predict too.
func TestPrefixMatchesPredict(t *testing.T) {
	compared := 0
	forEachAdmission(t, func(name string, in Input) {
		p, err := Prepare(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The middle and the last pod after those before it, with each active set the
		// scheduler gives; with none known, the last (a kept node is not used then).
		n := len(in.Pods)
		type split struct {
			k      int
			active map[string]bool
		}
		var splits []split
		for _, active := range activeSets(in) {
			for _, k := range slices.Compact([]int{n / 2, n - 1}) {
				splits = append(splits, split{k, active})
			}
		}
		for _, sp := range append(splits, split{n - 1, nil}) {
			prefix := p.After(sp.active, in.Pods[:sp.k])
			want, wantErr := p.Predict(sp.active, in.Pods[:sp.k+1])
			for try := range 2 {
				got, gotErr := prefix.Predict(in.Pods[sp.k])
				if errText(gotErr) != errText(wantErr) || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s (active %v, after %d pods, try %d): the kept node and Predict differ: %s (%s), Predict: %s (%s)",
						name, slices.Sorted(maps.Keys(sp.active)), sp.k, try, jsonText(got), errText(gotErr), jsonText(want), errText(wantErr))
				}
				compared++
			}
		}
	})
	if compared == 0 {
		t.Fatal("no case compared")
	}
	t.Logf("%d predictions compared", compared)
}
