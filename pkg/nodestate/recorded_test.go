package nodestate

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// A collect bundle answers "if the kubelet restarts" as the live node does: the GPU node of
// TestDoctorRestartOutlookLive (the device checkpoint's other pod is gone from the API server) is read live, written as collect writes it (its files, node.json
// with the pods RecordPods keeps), and read back with --from-dir. With the trainer's container
// running, both say it comes back after a kubelet restart; with it not running, both say it
// waits on its plugin, in the same words. A bundle without the pods (an older collect) gives
// the reboot outlook alone and says why not the other.
func TestRestartOutlookFromRecordedBundleAsLive(t *testing.T) {
	dc, _ := admitNode(t)
	cp, node := gpuRestartNode(t)
	yes := true
	// As TestDoctorRestartOutlookLive: its VF's NUMA node needs sysfs, which doctor does not
	// read live here, so the live pod asks the GPUs only; the files give it its VF too, which
	// changes the words of its refusal (the VF's, not the GPUs'), not its fate.
	devices := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("3")}
	for _, running := range []bool{true, false} {
		state := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		if running {
			state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		}
		trainer := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: "ml", UID: types.UID("6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f"),
			CreationTimestamp: metav1.Unix(100, 0), OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "trainer-1", Controller: &yes}}},
			Spec:   corev1.PodSpec{NodeName: "a", Containers: []corev1.Container{{Name: "trainer", Resources: corev1.ResourceRequirements{Requests: devices, Limits: devices}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "trainer", ContainerID: "containerd://t1", State: state}}}}
		web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", CreationTimestamp: metav1.Unix(50, 0)},
			Spec:   corev1.PodSpec{NodeName: "a", Containers: []corev1.Container{{Name: "app"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		exec := fakeNodeExec(map[string][]byte{"device-plugins/kubelet_internal_checkpoint": cp}, nil)
		r, err := New(context.Background(), Config{AllNodes: true, Client: runningPodsClient(node, trainer, web), RESTConfig: &rest.Config{}, Exec: exec,
			Engines: Engines{Doctor: dc}})
		if err != nil {
			t.Fatal(err)
		}
		live := only(t, r)
		if live.Doctor == nil || len(live.Doctor.Restart) != 2 {
			t.Fatalf("running %v: live doctor %+v", running, live.Doctor)
		}
		recorded := RecordPods(live)
		if recorded == nil || len(recorded.ByUID) != 2 {
			t.Fatalf("running %v: recorded %+v, want the trainer and web (not the debug pod)", running, recorded)
		}

		// As collect writes it.
		dir := t.TempDir()
		if err := live.WriteFiles(dir); err != nil {
			t.Fatal(err)
		}
		writeInfo := func(pods *RecordedPods) {
			b, err := json.Marshal(NodeInfo{Schema: NodeInfoSchema, Node: "a", KubeletVersion: "v1.37.1", Pods: pods})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, NodeInfoFile), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		writeInfo(recorded)
		off := readOne(t, Config{FromDir: dir, Engines: Engines{Doctor: dc}})
		if off.Doctor == nil || len(off.Doctor.Restart) != 2 {
			t.Fatalf("running %v: bundle doctor %+v", running, off.Doctor)
		}
		for i, kind := range []string{admit.RestartReboot, admit.RestartKubelet} {
			l, o := live.Doctor.Restart[i], off.Doctor.Restart[i]
			if l.Kind != kind || o.Kind != kind || !o.FromFiles {
				t.Fatalf("running %v: outlooks %s / %s (from files %v), want %s", running, l.Kind, o.Kind, o.FromFiles, kind)
			}
			if got, want := atRiskPods(o), atRiskPods(l); !slices.Equal(got, want) {
				t.Errorf("running %v, %s: the bundle's pods at risk\n  %v\nthe live node's\n  %v", running, kind, got, want)
			}
			if len(l.NotJudged) > 0 || len(o.NotJudged) != 1 || !strings.HasPrefix(o.NotJudged[0], "pod 0b9e8d7c-6a5f-4e3d-8c2b-1a0f9e8d7c6b (not among the node's pods the API server listed") {
				t.Errorf("running %v, %s: not judged: from the bundle %v (want only the pod gone from the API server), live %v", running, kind, o.NotJudged, l.NotJudged)
			}
		}
		// The running container is what changes the trainer's fate after a kubelet restart.
		if back := len(off.Doctor.Restart[1].AtRisk) == 0; back != running {
			t.Errorf("running %v: after a kubelet restart the trainer comes back: %v", running, back)
		}

		// An older bundle: no pods recorded; the reboot outlook alone, and why not the other.
		writeInfo(nil)
		old := readOne(t, Config{FromDir: dir, Engines: Engines{Doctor: dc}})
		if old.Doctor == nil || len(old.Doctor.Restart) != 1 || old.Doctor.Restart[0].Kind != admit.RestartReboot {
			t.Fatalf("running %v: older bundle's doctor %+v", running, old.Doctor)
		}
		if !slices.ContainsFunc(old.Doctor.Skipped, func(s string) bool {
			return strings.Contains(s, CheckIfKubeletRestart) && strings.Contains(s, "do not say which containers run")
		}) {
			t.Errorf("running %v: the older bundle does not say why no kubelet-restart outlook: %v", running, old.Doctor.Skipped)
		}
	}
}

// atRiskPods are an outlook's pods at risk, each with its reason and owner.
func atRiskPods(o RestartOutlook) []string {
	var out []string
	for _, p := range o.AtRisk {
		out = append(out, strings.Join([]string{p.Pod, p.Reason, p.Owner}, " | "))
	}
	return out
}

// The restart packs' kubelet-restart cases (no plugin back during the re-admissions, the
// kubelet's sources not ready: doctor's own outlook), each written as a bundle whose node.json
// records the case's running containers as collect records them from the API server: each pod
// the outlook lists at risk is one the real kubelet refused, in its words, and each the real
// kubelet refused and the files hold is at risk or not judged, and the running pods it admitted
// are back.
func TestKubeletRestartOutlookFromVectorBundles(t *testing.T) {
	sets, err := vectorpack.ReadGlob(restartPacks)
	if err != nil {
		t.Fatal(err)
	}
	cases, atRisk, back, notJudged, changed := 0, 0, 0, 0, 0
	for _, set := range sets {
		kubelet := set.MetaString("kubelet")
		for _, c := range set.Cases {
			restart, err := admit.ParseRestart(c.Files["restart.json"])
			if err != nil {
				t.Fatal(err)
			}
			if restart.Kind != admit.RestartKubelet || restart.SourcesReady || !registersNever(restart.Register) {
				continue
			}
			if strings.Contains(c.Name, "__changed-request__") {
				// The pod's spec changed in the API server after its devices were allocated:
				// the bundle holds the files' spec, not the new one, and does not tell.
				changed++
				continue
			}
			var want struct {
				Starts bool `json:"starts"`
				Pods   []struct {
					UID     string `json:"uid"`
					Admit   bool   `json:"admit"`
					Reason  string `json:"reason"`
					Message string `json:"message"`
				} `json:"pods"`
			}
			if err := json.Unmarshal(c.Expected, &want); err != nil || !want.Starts {
				t.Fatalf("%s: %v", c.Name, err)
			}
			// The API server lists every pod of the case, with the containers the case runs.
			recorded := &RecordedPods{ByUID: map[string]RecordedPod{}}
			for _, w := range want.Pods {
				p := RecordedPod{Namespace: "default", Name: w.UID}
				for _, name := range slices.Sorted(maps.Keys(restart.Running[w.UID])) {
					p.Containers = append(p.Containers, RecordedContainer{Name: name, Running: true, Restarted: restart.Exited[w.UID][name]})
				}
				recorded.ByUID[w.UID] = p
			}
			cases++
			out := vectorBundleOutlookRecorded(t, c, kubelet, recorded)
			risk := map[string]PodAtRisk{}
			for _, p := range out.AtRisk {
				risk[strings.TrimPrefix(p.Pod, "default/")] = p
			}
			judgedNot := strings.Join(out.NotJudged, " ")
			for _, w := range want.Pods {
				p, listed := risk[w.UID]
				switch {
				case listed && w.Admit:
					t.Errorf("%s %s: pod %s at risk (%s), the real kubelet admitted it", kubelet, c.Name, w.UID, p.Message)
				case listed && (p.Reason != w.Reason || p.Message != w.Message):
					t.Errorf("%s %s: pod %s refused with %q, the real kubelet's words: %q", kubelet, c.Name, w.UID, p.Message, w.Message)
				case listed:
					atRisk++
				case w.Admit && len(restart.Running[w.UID]) > 0 && !strings.Contains(judgedNot, "default/"+w.UID+" "):
					back++
				case !w.Admit && strings.Contains(judgedNot, "default/"+w.UID+" "):
					notJudged++
				case !w.Admit && strings.HasSuffix(w.UID, "-n"):
					// A new pod: in no file.
				case !w.Admit:
					t.Errorf("%s %s: the real kubelet refused pod %s (%s), the outlook does not say so: %+v", kubelet, c.Name, w.UID, w.Message, out)
				}
			}
		}
	}
	t.Logf("%d kubelet-restart cases with no plugin back: %d pods at risk as the real kubelet refused them, %d running pods back as it admitted them, %d refused pods not judged; %d cases of a spec changed in the API server left out", cases, atRisk, back, notJudged, changed)
	if cases == 0 || back == 0 {
		t.Fatalf("no case exercised the kubelet-restart outlook: %d cases, %d running pods back", cases, back)
	}
}

// registersNever: no plugin registers during the re-admissions.
func registersNever(register map[string]int) bool {
	if len(register) == 0 {
		return false
	}
	for _, after := range register {
		if after < 99 {
			return false
		}
	}
	return true
}

// vectorBundleOutlookRecorded writes the case as a collect bundle whose node.json records the
// pods, and returns doctor's kubelet-restart outlook.
func vectorBundleOutlookRecorded(t *testing.T, c vectorpack.Case, kubelet string, recorded *RecordedPods) RestartOutlook {
	t.Helper()
	dir := vectorBundle(t, c, kubelet)
	b, err := json.Marshal(NodeInfo{Schema: NodeInfoSchema, Node: "n", KubeletVersion: kubelet, Pods: recorded})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, NodeInfoFile), b, 0o600)
	dc, _, err := LoadDoctorConfig("", "", dir)
	if err != nil {
		t.Fatal(err)
	}
	res := readOne(t, Config{FromDir: dir, Engines: Engines{Doctor: dc}})
	if res.Doctor == nil || len(res.Doctor.Restart) != 2 || res.Doctor.Restart[1].Kind != admit.RestartKubelet || !res.Doctor.Restart[1].FromFiles {
		t.Fatalf("%s: %+v", c.Name, res.Doctor)
	}
	return res.Doctor.Restart[1]
}

// collect records the pods a node's read listed, none when the list failed: an empty record
// would say every pod of the files is gone.
func TestRecordPodsOnlyListed(t *testing.T) {
	web := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	failed := fetch.NewPodIndex(nil)
	failed.Unlisted = true
	for _, tt := range []struct {
		ix   *fetch.PodIndex
		want int // pods recorded; -1: no record
	}{{fetch.NewPodIndex([]corev1.Pod{web}), 1}, {fetch.NewPodIndex(nil), 0}, {failed, -1}} {
		got, n := RecordPods(&NodeResult{Node: "a", Snapshot: &fetch.Snapshot{Pods: tt.ix}}), -1
		if got != nil {
			n = len(got.ByUID)
		}
		if n != tt.want {
			t.Errorf("unlisted %v, %d pods: %d recorded, want %d", tt.ix.Unlisted, len(tt.ix.Pods), n, tt.want)
		}
	}
}

// The recorded pods name the rebuilt ones, and put them in the kubelet's order (by creation)
// only when every pod re-admitted has its time: the note that the order is not known goes
// then, and no other.
func TestRecordedPodsNameAndOrder(t *testing.T) {
	rebuilt := func() *admit.Rebuild {
		return &admit.Rebuild{Notes: []string{admit.NoteNoCreationTimes, "plugins: nvidia.com/gpu"}, Pods: []admit.RebuiltPod{
			{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "u1", UID: "u1"}}},
			{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "u2", UID: "u2"}}},
			{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "u3", UID: "u3"}}},
		}}
	}
	names := func(rb *admit.Rebuild) (out []string) {
		for _, p := range rb.Pods {
			out = append(out, p.Pod.Namespace+"/"+p.Pod.Name)
		}
		return out
	}
	timed := &RecordedPods{ByUID: map[string]RecordedPod{
		"u1": {Namespace: "ml", Name: "late", Created: metav1.Unix(300, 0), Owner: "Job"},
		"u2": {Namespace: "ml", Name: "early", Created: metav1.Unix(100, 0)},
		"u3": {Namespace: "ml", Name: "done", Terminal: true}, // not re-admitted: its time does not matter
	}}
	rb := rebuilt()
	timed.name(rb)
	if want := []string{"/u3", "ml/early", "ml/late"}; !rb.OrderKnown || !slices.Equal(names(rb), want) || !slices.Equal(rb.Notes, []string{"plugins: nvidia.com/gpu"}) {
		t.Errorf("timed: order known %v, pods %q (want %q), notes %q", rb.OrderKnown, names(rb), want, rb.Notes)
	}
	if p := rb.Pods[2]; !p.OwnerKnown || p.Pod.OwnerReferences[0].Kind != "Job" || rb.Pods[0].OwnerKnown {
		t.Errorf("owners: %+v", rb.Pods)
	}
	untimed := &RecordedPods{ByUID: map[string]RecordedPod{
		"u1": {Namespace: "ml", Name: "late", Created: metav1.Unix(300, 0)},
		"u2": {Namespace: "ml", Name: "early"},
	}}
	rb = rebuilt()
	untimed.name(rb)
	if want := []string{"ml/late", "ml/early", "/u3"}; rb.OrderKnown || !slices.Equal(names(rb), want) || len(rb.Notes) != 2 {
		t.Errorf("untimed: order known %v, pods %q (want %q in UID order), notes %q", rb.OrderKnown, names(rb), want, rb.Notes)
	}
}
