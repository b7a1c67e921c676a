package nodestate

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// sysfsDumpOf prints m as machine.SysfsScript would on its node, so that a published state can
// carry a recorded node's machine (its machine.json) the way a node reads its own.
func sysfsDumpOf(m *machine.Machine) []byte {
	var b strings.Builder
	b.WriteString(machine.SysfsHeader + "\n")
	online := m.Online()
	fmt.Fprintf(&b, "cpu/online:%s\n", online.String())
	for _, c := range m.CPUs {
		fmt.Fprintf(&b, "cpu/cpu%d/topology/core_id:%d\n", c.ID, c.Core)
	}
	for _, c := range m.CPUs {
		fmt.Fprintf(&b, "cpu/cpu%d/topology/physical_package_id:%d\n", c.ID, c.Socket)
	}
	for _, n := range m.NUMA {
		var ids []string
		for _, c := range m.CPUs {
			if c.NUMA == n.ID {
				ids = append(ids, fmt.Sprint(c.ID))
			}
		}
		set, _ := machine.ParseCPUList(strings.Join(ids, ","))
		fmt.Fprintf(&b, "node/node%d/cpulist:%s\n", n.ID, set.String())
	}
	for _, n := range m.NUMA {
		if len(n.Distances) > 0 {
			fmt.Fprintf(&b, "node/node%d/distance:%s\n", n.ID, strings.Trim(fmt.Sprint(n.Distances), "[]"))
		}
	}
	for _, n := range m.NUMA {
		for _, h := range n.HugePages {
			fmt.Fprintf(&b, "node/node%d/hugepages/hugepages-%dkB/nr_hugepages:%d\n", n.ID, h.PageSizeKiB, h.NumPages)
		}
	}
	for _, n := range m.NUMA {
		fmt.Fprintf(&b, "node/node%d/meminfo:Node %d MemTotal:       %d kB\n", n.ID, n.ID, n.Memory/1024)
	}
	b.WriteString(machine.SysfsEnd + "\n")
	return []byte(b.String())
}

func publishedExample(t testing.TB) *PublishedState {
	t.Helper()
	dir := filepath.Join(repo, "examples/kubelet-root")
	snap, err := local.Read(dir, decode.Paths(), local.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	return &PublishedState{Format: PublishedFormat, Node: "worker-1", ReadAt: time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC),
		KubeletVersion: "v1.37.1", KubeletVersionFrom: "the build info of /usr/bin/kubelet", KubeletRootDir: "/var/lib/kubelet",
		KubeletConfig: []byte("cpuManagerPolicy: static\n"), KubeletConfigFrom: "/var/lib/kubelet/config.yaml",
		Files: snap.Files, Missing: snap.Missing, Sections: map[string][]byte{machine.PCIHeader: []byte(machine.PCIHeader + "\n" + machine.PCIEnd + "\n")}}
}

// What EncodePublished writes, DecodePublished and PublishedStateOf read back whole.
func TestPublishedRoundTrip(t *testing.T) {
	s := publishedExample(t)
	b, err := EncodePublished(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodePublished(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("round trip changed the state:\n got %+v\nwant %+v", got, s)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Namespace: PublishedNamespace}, BinaryData: map[string][]byte{PublishedDataKey: b}}
	if got, err := PublishedStateOf(cm); err != nil || got.Fingerprint() != s.Fingerprint() {
		t.Errorf("PublishedStateOf: %v, fingerprint %s want %s", err, got.Fingerprint(), s.Fingerprint())
	}
	cm.Name = "worker-2"
	if _, err := PublishedStateOf(cm); err == nil || !strings.Contains(err.Error(), `holds the state of node "worker-1", not its own`) {
		t.Errorf("another node's state under this node's name: %v", err)
	}
	delete(cm.BinaryData, PublishedDataKey)
	if _, err := PublishedStateOf(cm); err == nil || !strings.Contains(err.Error(), "holds no "+PublishedDataKey) {
		t.Errorf("no data: %v", err)
	}
}

// The fingerprint is the content's: not the read time's, and any byte of a file changes it.
func TestPublishedFingerprint(t *testing.T) {
	a, b := publishedExample(t), publishedExample(t)
	b.ReadAt = b.ReadAt.Add(time.Hour)
	if a.Fingerprint() != b.Fingerprint() {
		t.Errorf("read time changed the fingerprint")
	}
	b.Files["cpu_manager_state"] = append(bytes.Clone(b.Files["cpu_manager_state"]), ' ')
	if a.Fingerprint() == b.Fingerprint() {
		t.Errorf("a changed file kept the fingerprint")
	}
	c := publishedExample(t)
	c.Sections[machine.SysfsHeader] = []byte("x")
	if a.Fingerprint() == c.Fingerprint() {
		t.Errorf("a new section kept the fingerprint")
	}
}

func gzipped(t testing.TB, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Whatever a node (or anyone who may write its ConfigMap) puts there, every consumer refuses
// what no publisher writes, within the caps, and never writes outside the kubelet root dir.
func TestDecodePublishedRefuses(t *testing.T) {
	good := func(edit func(s map[string]any)) []byte {
		s := map[string]any{"format": PublishedFormat, "node": "n", "readAt": "2026-11-29T05:00:00Z", "kubeletRootDir": "/var/lib/kubelet",
			"files": map[string]any{"cpu_manager_state": []byte("{}")}}
		if edit != nil {
			edit(s)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return gzipped(t, b)
	}
	file := func(name string) func(map[string]any) {
		return func(s map[string]any) { s["files"] = map[string]any{name: []byte("{}")} }
	}
	bomb := gzipped(t, make([]byte, MaxPublishedExpanded+1))
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"over the API cap":  {make([]byte, MaxPublishedBytes+1), "over the cap of 524288"},
		"not gzip":          {[]byte(`{"format":"x"}`), "not gzip"},
		"gzip bomb":         {bomb, "expands past the cap"},
		"cut gzip":          {good(nil)[:20], "unexpected EOF"},
		"not JSON":          {gzipped(t, []byte("<xml/>")), "published state: invalid character"},
		"data after":        {gzipped(t, append(mustUngzip(t, good(nil)), []byte(" {}")...)), "data after the state"},
		"other format":      {good(func(s map[string]any) { s["format"] = "nodestate.kubectl-nodestate.io/v2" }), "format \"nodestate.kubectl-nodestate.io/v2\""},
		"no node":           {good(func(s map[string]any) { delete(s, "node") }), "no node name"},
		"parent path":       {good(file("../etc/shadow")), "not a plain path"},
		"absolute path":     {good(file("/etc/shadow")), "not a plain path"},
		"unclean path":      {good(file("device-plugins/../../x")), "not a plain path"},
		"dot dot":           {good(file("..")), "not a plain path"},
		"empty path":        {good(file("")), "not a plain path"},
		"unknown section":   {good(func(s map[string]any) { s["sections"] = map[string]any{"@@nodestate-cgroups v1": []byte("x")} }), "unknown section"},
		"files not a map":   {good(func(s map[string]any) { s["files"] = []string{"x"} }), "cannot unmarshal"},
		"file not base64":   {good(func(s map[string]any) { s["files"] = map[string]any{"cpu_manager_state": "%%%"} }), "illegal base64"},
		"empty input":       {nil, "not gzip"},
		"readAt not a time": {good(func(s map[string]any) { s["readAt"] = "yesterday" }), "cannot parse"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodePublished(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := DecodePublished(good(nil)); err != nil {
		t.Errorf("the good state itself: %v", err)
	}
}

func mustUngzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// A publisher refuses to write what no consumer would read: over the caps, or a bad path.
func TestEncodePublishedRefuses(t *testing.T) {
	big := publishedExample(t)
	big.Files["cpu_manager_state"] = make([]byte, local.DefaultLimits.MaxFileBytes+1)
	if _, err := EncodePublished(big); err == nil || !strings.Contains(err.Error(), "over the per-file cap") {
		t.Errorf("a file over the per-file cap: %v", err)
	}
	expanded := publishedExample(t)
	expanded.Files["cpu_manager_state"] = make([]byte, MaxPublishedExpanded)
	if _, err := EncodePublished(expanded); err == nil || !strings.Contains(err.Error(), "bytes of JSON, over the cap") {
		t.Errorf("over the expanded cap: %v", err)
	}
	// Random bytes do not compress: the compressed cap is met before the expanded one.
	random := publishedExample(t)
	noise := make([]byte, MaxPublishedBytes)
	rand.NewChaCha8([32]byte{}).Read(noise)
	random.Files["cpu_manager_state"] = noise
	if _, err := EncodePublished(random); err == nil || !strings.Contains(err.Error(), "bytes compressed, over the cap") {
		t.Errorf("over the compressed cap: %v", err)
	}
	bad := publishedExample(t)
	bad.Files["../x"] = nil
	if _, err := EncodePublished(bad); err == nil {
		t.Errorf("a path out of the root dir was encoded")
	}
}

// A node's published state replays as admit --from-dir replays the same files: examples/
// admit-node (a real kubelet v1.37.1's state) with its machine as its sysfs prints it and its
// kubelet config, the example pods in order.
func TestPreparePublishedAdmitsAsFromDir(t *testing.T) {
	dir := filepath.Join(repo, "examples/admit-node")
	dc, _, err := LoadDoctorConfig(filepath.Join(dir, "machine.json"), filepath.Join(dir, "kubelet-config.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	dump := sysfsDumpOf(dc.Machine)
	if m, err := machine.FromSysfs(dump); err != nil || !reflect.DeepEqual(m.CPUs, dc.Machine.CPUs) || !reflect.DeepEqual(m.NUMA, dc.Machine.NUMA) {
		t.Fatalf("the sysfs dump is not machine.json's machine: %v", err)
	}
	var pods []*corev1.Pod
	for i, f := range []string{"pod-db.yaml", "pod-wide.yaml", "pod-odd.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := obj.(*corev1.Pod)
		p.Namespace, p.UID = "default", types.UID(fmt.Sprintf("nodestate-admit-%d", i))
		pods = append(pods, p)
	}
	kubelet, err := decode.ParseKubelet("v1.37.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(t.Context(), Config{FromDir: dir, Kubelet: &kubelet, Engines: Engines{Admit: &AdmitConfig{Machine: dc.Machine, KubeletConfig: dc.KubeletConfig, Pods: pods}}})
	if err != nil {
		t.Fatal(err)
	}
	fromDir := only(t, r)
	if fromDir.Admit == nil || fromDir.Admit.Err != nil {
		t.Fatalf("admit --from-dir: %+v", fromDir.Admit)
	}

	snap, err := local.Read(dir, decode.Paths(), local.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(dir, "kubelet-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := &PublishedState{Format: PublishedFormat, Node: "admit-node", ReadAt: time.Now(), KubeletVersion: "v1.37.1", KubeletRootDir: decode.DefaultRootDir,
		KubeletConfig: config, Files: snap.Files, Missing: snap.Missing, Sections: map[string][]byte{machine.SysfsHeader: dump}}
	b, err := EncodePublished(s)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = DecodePublished(b); err != nil {
		t.Fatal(err)
	}
	p := PreparePublished(s, nil, nil)
	if p.Err != nil {
		t.Fatalf("PreparePublished: %v", p.Err)
	}
	got, err := p.Admit(pods)
	if err != nil {
		t.Fatal(err)
	}
	want := fromDir.Admit.Result
	if !reflect.DeepEqual(got.Admissions, want.Admissions) || !reflect.DeepEqual(got.KubeletStart, want.KubeletStart) {
		t.Errorf("published: %+v\nfrom dir:  %+v", got.Admissions, want.Admissions)
	}
	// The example's three answers, so that an empty replay on both sides cannot pass.
	var verdicts []string
	for _, a := range got.Admissions {
		verdicts = append(verdicts, fmt.Sprintf("%s:%v:%s", a.Pod, a.Admitted, a.Reason))
	}
	if w := "db:true:,wide-18:false:TopologyAffinityError,odd-3:false:SMTAlignmentError"; strings.Join(verdicts, ",") != w {
		t.Errorf("verdicts %s, want %s", strings.Join(verdicts, ","), w)
	}
	// Asked again, the node answers the same: the prepared state is not consumed.
	again, err := p.Admit(pods)
	if err != nil || !reflect.DeepEqual(again.Admissions, got.Admissions) {
		t.Errorf("a second Admit answered otherwise: %v", err)
	}
}

// FuzzDecodePublished: any bytes in a node's published ConfigMap are a state or an error, never
// a panic or a state over the caps; a state read re-encodes to one that reads the same.
func FuzzDecodePublished(f *testing.F) {
	good, err := EncodePublished(publishedExample(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(gzipped(f, []byte(`{"format":"`+PublishedFormat+`","node":"n","files":{"../x":""}}`)))
	f.Add(gzipped(f, []byte(`{"format":"`+PublishedFormat+`","node":"n","sections":{"@@nodestate-sysfs v1":"QA=="}}`)))
	f.Add(gzipped(f, []byte(`{"format":"`+PublishedFormat+`","node":"n"} {}`)))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodePublished(data)
		if err != nil {
			return
		}
		b, err := EncodePublished(s)
		if err != nil {
			t.Fatalf("a state read does not encode: %v", err)
		}
		again, err := DecodePublished(b)
		if err != nil || again.Fingerprint() != s.Fingerprint() {
			t.Fatalf("re-encoded state reads otherwise: %v", err)
		}
		// What a consumer builds on it must not panic either.
		PreparePublished(s, nil, nil)
	})
}

// fillingAdmitNode is admit-node's published state prepared, six pods of 6 CPUs that fill it,
// and its checkpoints' pod owners.
func fillingAdmitNode(t *testing.T) (*PublishedNode, []*corev1.Pod, map[string]bool) {
	t.Helper()
	p := PreparePublished(admitNodeState(t, "n"), nil, nil)
	if p.Err != nil {
		t.Fatal(p.Err)
	}
	var pods []*corev1.Pod
	for i := range 6 {
		pods = append(pods, guaranteedPod(fmt.Sprintf("p-%d", i), "", "6", "4Gi"))
	}
	owners := p.ReportedPods().uids
	if len(owners) == 0 {
		t.Fatal("admit-node's state names no pod")
	}
	return p, pods, owners
}

// TestAdmitAfterKeepsTheNodeBefore: AdmitAfter answers as AdmitAmong on the pods before and
// the pod, as the pods before grow, shrink and change, the active pods change, and the same
// pods are asked again (the node they leave is kept and reused, never changed by a pod asked
// after them).
func TestAdmitAfterKeepsTheNodeBefore(t *testing.T) {
	p, pods, owners := fillingAdmitNode(t)
	// The pods before grown, the same again, other pods as many, shrunk, none; the active pods
	// changing under the same pods before, then the pods before under the same active pods.
	befores := [][]*corev1.Pod{nil, pods[:1], pods[:3], pods[:3], pods[2:5], pods[:5], pods[1:5], pods[:2], nil}
	actives := []map[string]bool{{}, owners}
	type ask struct {
		before []*corev1.Pod
		active map[string]bool
	}
	var asks []ask
	for _, before := range befores {
		for _, active := range actives {
			asks = append(asks, ask{before, active})
		}
	}
	for _, active := range actives {
		for _, before := range befores {
			asks = append(asks, ask{before, active})
		}
	}
	asked, refused, kept := 0, 0, 0
	for i, a := range asks {
		n := len(a.before)
		for _, pod := range []*corev1.Pod{pods[5], guaranteedPod("small", "", "2", "1Gi"), pods[5]} {
			want, err := p.AdmitAmong(a.active, append(slices.Clip(a.before), pod))
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.AdmitAfter(a.active, a.before, pod)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("ask %d, active %v, after %d pods, %s: AdmitAfter %+v, AdmitAmong %+v", i, a.active, n, pod.Name, got.Admissions, want.Admissions)
			}
			asked++
			if !got.Admissions[n].Admitted {
				refused++
			}
		}
		if n > 0 && p.after != nil {
			kept++
		}
	}
	// Concurrent asks after the same pods share the kept node (go test -race).
	want, err := p.AdmitAmong(owners, append(slices.Clip(pods[:3]), pods[5]))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if got, err := p.AdmitAfter(owners, pods[:3], pods[5]); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("concurrent AdmitAfter: %v, %+v; want %+v", err, got.Admissions, want.Admissions)
			}
		})
	}
	wg.Wait()
	if refused == 0 || refused == asked || kept == 0 {
		t.Fatalf("%d of %d pods refused, %d kept nodes: the test needs both verdicts and a kept node", refused, asked, kept)
	}
}

// TestPublishedAdmitClonesTheStart: AdmitAmong and AdmitAlone, which run on copies of a start
// kept per node, answer as admit.Predict starting the kubelet for each call, whatever ran on the
// node before (admit-node: its checkpoints' pod, then pods filling it, with the owner active,
// gone, or not known).
func TestPublishedAdmitClonesTheStart(t *testing.T) {
	p, pods, owners := fillingAdmitNode(t)
	refused := false
	for round := range 2 {
		for _, active := range []map[string]bool{nil, {}, owners} {
			for n := 1; n <= len(pods); n++ {
				in := p.Input()
				in.Pods, in.ActivePods = pods[:n], active
				want, err := admit.Predict(in)
				if err != nil {
					t.Fatal(err)
				}
				got, err := p.AdmitAmong(active, pods[:n])
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d, active %v, %d pods: AdmitAmong %+v, admit.Predict %+v", round, active, n, got.Admissions, want.Admissions)
				}
				refused = refused || !got.Admissions[n-1].Admitted
			}
		}
		for _, pod := range []*corev1.Pod{pods[0], guaranteedPod("huge", "", "64", "4Gi")} {
			in := p.Input()
			in.CPU, in.Memory, in.Pods = nil, nil, []*corev1.Pod{pod}
			if in.Devices != nil {
				devices := *in.Devices
				devices.Checkpoint = nil
				in.Devices = &devices
			}
			want, err := admit.Predict(in)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := p.AdmitAlone(pod); err != nil || got != want.Admissions[0].Admitted {
				t.Fatalf("AdmitAlone(%s) = %v, %v; admit.Predict on the emptied node: %v", pod.Name, got, err, want.Admissions[0].Admitted)
			}
		}
	}
	if !refused {
		t.Fatal("no pod refused: the node was never full")
	}
}
