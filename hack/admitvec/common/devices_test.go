package common

import "testing"

// TestHeldFor: a checkpoint holding tells its device apart only while the device manager keeps
// it (a restart with the sources ready drops the pods not yet re-admitted at the first admission).
func TestHeldFor(t *testing.T) {
	state := func(holdings map[string]string) *StateAfter {
		a := map[string]map[string]map[string][]string{}
		for uid, id := range holdings {
			a[uid] = map[string]map[string][]string{"app": {"nvidia.com/gpu": {id}}}
		}
		return &StateAfter{DeviceAssignments: &a}
	}
	pods := []PodResult{
		{UID: "uid-a", StateAfter: state(map[string]string{"uid-a": "gpu-0", "uid-b": "gpu-1"})},
		{UID: "uid-b", StateAfter: state(map[string]string{"uid-a": "gpu-0", "uid-b": "gpu-1"})},
		{UID: "uid-n", StateAfter: state(map[string]string{"uid-b": "gpu-1", "uid-n": "gpu-2"})},
	}
	for _, tc := range []struct {
		name, uid, id, want string
	}{
		{"kept to the end", "uid-b", "gpu-1", "uid-b"},
		{"dropped by the first admission, picked again", "uid-n", "gpu-2", ""},
		{"dropped by the third admission", "uid-a", "gpu-0", "uid-a@2"},
		{"not a pod of the case (an active seed)", "uid-seed", "gpu-3", "uid-seed"},
	} {
		if got := heldFor(pods, tc.uid, "app", "nvidia.com/gpu", tc.id); got != tc.want {
			t.Errorf("%s: heldFor(%s, %s) = %q, want %q", tc.name, tc.uid, tc.id, got, tc.want)
		}
	}
	unknown := []PodResult{{UID: "uid-b", Hangs: true}}
	if got := heldFor(unknown, "uid-b", "app", "nvidia.com/gpu", "gpu-1"); got != "uid-b" {
		t.Errorf("no state read: heldFor = %q, want the holding kept", got)
	}
}
