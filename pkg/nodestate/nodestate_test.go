package nodestate

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

const repo = "../.."

// runningPodsClient is a fake API server holding objs, on which a created pod is Running at
// once (no kubelet runs the debug pods).
func runningPodsClient(objs ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objs...)
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		a.(clienttesting.CreateAction).GetObject().(*corev1.Pod).Status.Phase = corev1.PodRunning
		return false, nil, nil
	})
	return client
}

// runAll runs cfg and collects the results.
func runAll(t *testing.T, cfg Config) ([]*NodeResult, error) {
	t.Helper()
	r, err := New(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	var out []*NodeResult
	for n, err := range r.Results(context.Background()) {
		if err != nil {
			return out, err
		}
		out = append(out, n)
	}
	return out, nil
}

// only is the one result of r.
func only(t *testing.T, r *Runner) *NodeResult {
	t.Helper()
	var res []*NodeResult
	for n, err := range r.Results(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, n)
	}
	if len(res) != 1 {
		t.Fatalf("%d results, want 1", len(res))
	}
	return res[0]
}

func TestFromFile(t *testing.T) {
	vector := filepath.Join(repo, "testdata/kubelet/cpu_manager_state/v1.18.0/static-numa.json")
	// Named like a vector, not like the file on the node: the kind must be given.
	_, err := runAll(t, Config{FromFile: vector})
	if err == nil || !strings.Contains(err.Error(), "cannot tell which checkpoint") || !strings.Contains(err.Error(), "--kind") {
		t.Errorf("unknown name: %v", err)
	}
	res, err := runAll(t, Config{FromFile: vector, Kind: decode.KindCPU})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Node != "" || res[0].Where != vector || len(res[0].Rows) != 1 {
		t.Fatalf("results: %+v", res)
	}
	if row := res[0].Rows[0]; row.Kind() != decode.KindCPU || row.File() != vector || row.Verdict() != decode.Valid {
		t.Errorf("row: %+v", row.Report)
	}
	// The node's file name is enough, wherever it lies; Kind wins over the name.
	dir := t.TempDir()
	p := filepath.Join(dir, "memory_manager_state")
	if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res, err := runAll(t, Config{FromFile: p}); err != nil || res[0].Rows[0].Kind() != decode.KindMemory {
		t.Errorf("by name: %+v, %v", res, err)
	}
	if res, err := runAll(t, Config{FromFile: p, Kind: decode.KindDRA}); err != nil || res[0].Rows[0].Kind() != decode.KindDRA {
		t.Errorf("kind over name: %+v, %v", res, err)
	}
	if _, err := runAll(t, Config{FromFile: filepath.Join(dir, "cpu_manager_state")}); err == nil {
		t.Error("missing file: no error")
	}
}

func TestFromDir(t *testing.T) {
	dir := filepath.Join(repo, "examples/broken-node")
	res, err := runAll(t, Config{FromDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Where != dir || res[0].Names != nil || len(res[0].Snapshot.Files) != 4 {
		t.Fatalf("results: %+v", res)
	}
	last := res[0].Rows[len(res[0].Rows)-1]
	if last.File() != ".482910377" || last.NotDecoded == nil || last.NotDecoded.Reason != TempFile || last.Verdict() != decode.NotRead {
		t.Errorf("temp row: %+v", last)
	}
}

func TestJudgeRowsAndOrder(t *testing.T) {
	root := filepath.Join(repo, "examples/kubelet-root")
	files := map[string][]byte{}
	for _, f := range decode.Files {
		if b, err := os.ReadFile(filepath.Join(root, f.Path)); err == nil {
			files[f.Path] = b
		}
	}
	s := &fetch.Snapshot{Files: files, Oversized: []string{"pod_status_manager_state"}, TempFiles: []string{".123", "device-plugins/.9"}}
	rs, _ := JudgeFiles(s, byName, nil, "")
	var got []string
	for _, r := range rs {
		got = append(got, r.File()+"="+string(r.Verdict()))
	}
	want := []string{
		"cpu_manager_state=valid", "memory_manager_state=valid", "device-plugins/kubelet_internal_checkpoint=valid",
		"dra_manager_state=valid", "dra_health_state=valid", "allocated_pods_state=valid", "actuated_pods_state=valid",
		"pod_status_manager_state=unreadable", ".123=not-read", "device-plugins/.9=not-read",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n got %q\nwant %q", got, want)
	}
	// The oversized row carries its kind (so the show commands count it) and a cause; no
	// report is made up for it.
	over := rs[7]
	if over.Report != nil || over.Kind() != decode.KindPodStatus || over.NotDecoded.Reason != Oversized || over.Why() != CauseOversized {
		t.Errorf("oversized row: %+v", over.NotDecoded)
	}
	if rs[8].Report != nil || rs[8].Kind() != "" || rs[8].Why() != CauseTempFile {
		t.Errorf("temp row: %+v", rs[8].NotDecoded)
	}
	for _, r := range rs[:7] {
		if r.Kind() == "" || r.Kubelet() == "" {
			t.Errorf("%s: kind %q reader %q", r.File(), r.Kind(), r.Kubelet())
		}
	}
}

func byName(p string) decode.Kind { k, _ := decode.ParseKind(p); return k }

func TestJudgeFilesKubelet(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repo, "examples/kubelet-root/cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	snap := func(version string) *fetch.Snapshot {
		return &fetch.Snapshot{Node: "n1", KubeletVersion: version, Files: map[string][]byte{"cpu_manager_state": raw}}
	}
	// No version known: the newest release writing the file.
	if rs, j := JudgeFiles(snap(""), byName, nil, ""); rs[0].Kubelet() != decode.HomeKubelet || j.Basis != BasisFiles || j.Kubelet.String() != decode.HomeKubelet {
		t.Errorf("offline reader: %q, judgement %+v", rs[0].Kubelet(), j)
	}
	// Live: the node's own kubelet version.
	if rs, j := JudgeFiles(snap("v1.36.4"), byName, nil, ""); rs[0].Kubelet() != "v1.36.4" || rs[0].Node != "n1" || j.Basis != BasisNode {
		t.Errorf("node reader: %+v, judgement %+v", rs[0].Report, j)
	}
	// Copies: the version collect recorded, said so.
	rec := snap("v1.35.8")
	rec.KubeletVersionFrom = "recorded"
	if rs, j := JudgeFiles(rec, byName, nil, ""); rs[0].Kubelet() != "v1.35.8" || j.Basis != BasisRecorded || j.Why != "recorded" {
		t.Errorf("recorded reader: %+v, judgement %+v", rs[0].Report, j)
	}
	// An explicit kubelet wins over the node's version.
	k, err := decode.ParseKubelet("v1.35.8", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rs, j := JudgeFiles(snap("v1.36.4"), byName, &k, ""); rs[0].Kubelet() != "v1.35.8" || j.Basis != BasisConfig {
		t.Errorf("explicit reader: %+v", rs[0].Report)
	}
	// A build no vector was made by (a release day's node) is judged, and its warnings say by
	// whose rules; a checked release, or one chosen from the files, says nothing.
	warnings := func(s *fetch.Snapshot, reader *decode.Kubelet) []string {
		_, j := JudgeFiles(s, byName, reader, "")
		return (&NodeResult{Snapshot: s, Judged: j}).Warnings()
	}
	later, err := decode.ParseKubelet("v1.99.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]string{"node": warnings(snap("v1.99.0"), nil), "asked": warnings(snap("v1.36.4"), &later)} {
		if len(got) != 1 || !strings.HasPrefix(got[0], "kubelet v1.99.0 is newer than every build this plugin was checked against") {
			t.Errorf("%s v1.99.0: warnings %q", name, got)
		}
	}
	if got := append(warnings(snap("v1.36.4"), nil), warnings(snap(""), nil)...); len(got) != 0 {
		t.Errorf("checked or chosen from the files: warnings %q", got)
	}

	// A version naming no release does not stop the read: the format's own rules judge, and the
	// report says why.
	rs, _ := JudgeFiles(snap("garbage"), byName, nil, "")
	if notes := rs[0].Report.Notes; rs[0].Kubelet() == "" || len(notes) == 0 || !strings.Contains(notes[len(notes)-1], `"garbage"`) {
		t.Errorf("bad node version: %+v", rs[0].Report)
	}
}

// Live nodes stream through the production fetch path (a fake API server whose pods run at
// once, and a fake exec answering with a tar): each node's result arrives judged for its own
// kubelet, with its pods' names; a node that cannot be read arrives as one failure row.
func TestLive(t *testing.T) {
	node := func(name string, ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "x"}},
			Status: corev1.NodeStatus{
				NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.36.4", OperatingSystem: "linux"},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}},
			},
		}
	}
	client := runningPodsClient(node("a", corev1.ConditionTrue), node("b", corev1.ConditionFalse))
	cpu, err := os.ReadFile(filepath.Join(repo, "examples/kubelet-root/cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	exec := func(_ context.Context, _, _, _ string, _ []string, stdout, stderr io.Writer) error {
		defer io.WriteString(stderr, fetch.CollectEnd)
		tw := tar.NewWriter(stdout)
		if err := tw.WriteHeader(&tar.Header{Name: "cpu_manager_state", Mode: 0o600, Size: int64(len(cpu)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(cpu); err != nil {
			return err
		}
		return tw.Close()
	}
	cfg := Config{AllNodes: true, Selector: "pool=x", Client: client, RESTConfig: &rest.Config{}, Concurrency: 2, Exec: exec, PodNames: true}
	r, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Nodes(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("nodes %q", got)
	}
	got := map[string]*NodeResult{}
	for n, err := range r.Results(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		got[n.Node] = n
	}
	if len(got) != 2 {
		t.Fatalf("%d results", len(got))
	}
	a := got["a"]
	if a.Err != nil || a.Where != "node a" || a.Names == nil || len(a.Rows) != 1 {
		t.Fatalf("node a: %+v", a)
	}
	if row := a.Rows[0]; row.Node != "a" || row.File() != "cpu_manager_state" || row.Verdict() != decode.Valid || row.Kubelet() != "v1.36.4" {
		t.Errorf("node a row: %+v", row.Report)
	}
	b := got["b"]
	if b.Err == nil || b.Snapshot != nil || len(b.Rows) != 1 || b.Rows[0].File() != "-" || b.Rows[0].Verdict() != decode.Unreadable ||
		b.Rows[0].NotDecoded.Reason != NodeUnreadable || b.Rows[0].Why() == "" {
		t.Errorf("node b: err %v, rows %+v", b.Err, b.Rows)
	}
	// Stopping the range stops the reporting, and leaves no debug pod.
	calls := 0
	for range r.Results(context.Background()) {
		calls++
		break
	}
	if pods, err := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); calls != 1 || err != nil || len(pods.Items) != 0 {
		t.Errorf("stopped after %d results: pods left %v, %v", calls, pods, err)
	}
	// Cancelled before the start: every node is reported cancelled, and the sequence ends
	// interrupted.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	var last error
	for res, err := range r.Results(ctx) {
		if err != nil {
			last = err
			continue
		}
		if fetch.ReasonOf(res.Err) != fetch.ReasonCanceled {
			t.Errorf("%s: %v, want cancelled", res.Node, res.Err)
		}
		n++
	}
	if last != ErrInterrupted || n != 2 {
		t.Errorf("cancelled: %v, %d results", last, n)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(context.Background(), Config{FromDir: "d", FromFile: "f"}); err == nil {
		t.Error("dir and file: no error")
	}
	if _, err := New(context.Background(), Config{Nodes: []string{"a"}}); err == nil {
		t.Error("live without a client: no error")
	}
	client := fake.NewClientset()
	if _, err := New(context.Background(), Config{AllNodes: true, Selector: "none=here", Client: client, RESTConfig: &rest.Config{}}); err == nil || !strings.Contains(err.Error(), `no nodes match "none=here"`) {
		t.Errorf("no nodes: %v", err)
	}
}

// A live snapshot's names tell the renderers which pods are the plugin's own debug pods.
func TestJudgeMarksDebugPods(t *testing.T) {
	ix := fetch.NewPodIndex(nil)
	ix.Debug["uid-debug"] = true
	res := &NodeResult{Node: "n1", Snapshot: &fetch.Snapshot{Node: "n1", Pods: ix}}
	(&Runner{}).judge(res)
	d, ok := res.Names.(DebugPods)
	if !ok || !d.DebugPod("uid-debug") || d.DebugPod("uid-app") {
		t.Errorf("result names %#v do not mark exactly the debug pod", res.Names)
	}
}

// A node runs one kubelet: with no version known, the broken example's 1.19 device file and 1.30
// DRA file beside 1.37 files are judged by 1.37 too, and are findings; a collect bundle's
// recorded version judges the copies.
func TestOfflineJudgement(t *testing.T) {
	read := func(cfg Config) *NodeResult { return readOne(t, cfg) }
	broken := read(Config{FromDir: filepath.Join(repo, "examples/broken-node")})
	j := broken.Judged
	if j.Basis != BasisFiles || j.Kubelet.String() != decode.HomeKubelet || len(j.Apart) != 2 ||
		j.Apart[0].File != "device-plugins/kubelet_internal_checkpoint" || j.Apart[0].WrittenBy != "1.11-1.19" {
		t.Fatalf("judgement %+v", j)
	}
	want := "device-plugins/kubelet_internal_checkpoint (dev-v1) is written only by kubelet 1.11-1.19, never by the kubelet that wrote cpu_manager_state and memory_manager_state: another kubelet left it, and none has rewritten it since."
	if got := j.Apart[0].Sentence(); got != want {
		t.Errorf("finding:\n got %q\nwant %q", got, want)
	}
	for _, r := range broken.Rows {
		if r.Report == nil {
			continue
		}
		apart := r.File() == "device-plugins/kubelet_internal_checkpoint" || r.File() == "dra_manager_state"
		if r.Kubelet() != decode.HomeKubelet || r.Report.Apart != apart {
			t.Errorf("%s: reader %s, apart %v", r.File(), r.Kubelet(), r.Report.Apart)
		}
	}

	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(repo, "examples/kubelet-root/cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu_manager_state"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, NodeInfoFile), []byte(`{"schema":"kubectl-nodestate/node/v1","node":"w9","kubeletVersion":"v1.36.4"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	res := read(Config{FromDir: dir})
	if res.Judged.Basis != BasisRecorded || res.Judged.Sentence() != "Judged by kubelet v1.36.4: node w9's version, recorded by collect in node.json." ||
		len(res.Rows) != 1 || res.Rows[0].Kubelet() != "v1.36.4" {
		t.Errorf("recorded: %+v, rows %d", res.Judged, len(res.Rows))
	}
	// The config's kubelet wins, with the caller's why.
	k := homeKubelet(t)
	res = read(Config{FromDir: dir, Kubelet: &k, KubeletWhy: "--kubelet-version"})
	if res.Judged.Sentence() != "Judged by kubelet "+decode.HomeKubelet+": --kubelet-version." || res.Rows[0].Kubelet() != decode.HomeKubelet {
		t.Errorf("config: %+v", res.Judged)
	}
}

// readOne runs an offline config and returns its one result.
func readOne(t *testing.T, cfg Config) *NodeResult {
	t.Helper()
	r, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return only(t, r)
}

func homeKubelet(t *testing.T) decode.Kubelet {
	t.Helper()
	k, err := decode.ParseKubelet(decode.HomeKubelet, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The fan-out reads at most Concurrency nodes at once, and several at once; each node's
// result comes once; no debug pod is left.
func TestResultsBoundConcurrency(t *testing.T) {
	const nodes, limit = 30, 4
	var objs []runtime.Object
	for i := range nodes {
		objs = append(objs, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%02d", i)},
			Status: corev1.NodeStatus{
				NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.36.4", OperatingSystem: "linux"},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		})
	}
	client := runningPodsClient(objs...)
	var inFlight, most atomic.Int32
	exec := func(_ context.Context, _, _, _ string, _ []string, stdout, stderr io.Writer) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		defer io.WriteString(stderr, fetch.CollectEnd)
		return tar.NewWriter(stdout).Close()
	}
	res, err := runAll(t, Config{AllNodes: true, Client: client, RESTConfig: &rest.Config{}, Concurrency: limit, Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, n := range res {
		if n.Err != nil {
			t.Errorf("%s: %v", n.Node, n.Err)
		}
		seen[n.Node]++
	}
	if len(res) != nodes || len(seen) != nodes {
		t.Errorf("%d results for %d nodes, want %d", len(res), len(seen), nodes)
	}
	if m := most.Load(); m > limit || m < 2 {
		t.Errorf("at most %d nodes read at once, want 2..%d", m, limit)
	}
	if pods, err := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
		t.Errorf("pods left: %v, %v", pods, err)
	}
}
