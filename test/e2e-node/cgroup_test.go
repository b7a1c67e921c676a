//go:build e2enode

package e2enode

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

func findingsOf(d doctorOut, check string) []finding {
	var out []finding
	for _, f := range d.Findings {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out
}

// TestCgroupAudit plants faults in what the node really runs and expects doctor to find each,
// in the cgroups of the real kubelet + containerd: a healthy node shows no finding; a
// container's cpuset.cpus rewritten in its cgroup is drift; a pod removed while the kubelet is
// stopped leaves its CPUs leaked, found in the bundle of the collect script run on the node.
func TestCgroupAudit(t *testing.T) {
	guaranteed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse(podMemory)}
	g := pod("audit-guaranteed", guaranteed, guaranteed)
	createPod(t, g)
	createPod(t, pod("audit-shared", nil, nil))
	g = waitPod(t, g.Name, running)
	waitPod(t, "audit-shared", running)
	uid := string(g.UID)
	assigned := cgroupCPUs(t, g, "cpuset.cpus")

	// The real tree this node's kubelet and containerd made, for pkg/cgroup's tests.
	t.Run("record the cgroup tree", func(t *testing.T) {
		recordCgroups(t, g, "audit-shared")
	})

	t.Run("healthy node: no finding", func(t *testing.T) {
		r := nodestate(t, "doctor", "-o", "json")
		d := parseDoctor(t, r)
		// Only the restart outlook, which says every pod comes back (issue 44): the node's pods
		// ask for no device.
		var others, outlook []string
		for _, f := range d.Findings {
			if f.Severity == "info" && (f.Check == "if-reboot" || f.Check == "if-kubelet-restart") && strings.HasSuffix(f.Message, " pods come back") {
				outlook = append(outlook, f.Check)
				continue
			}
			others = append(others, f.Severity+" "+f.Check+": "+f.Message)
		}
		if r.code != 0 || len(others) != 0 || len(outlook) != 2 {
			t.Errorf("want exit 0, no finding but the restart outlook's two (every pod comes back): %s", r)
		}
		for _, s := range d.Skipped {
			if strings.Contains(s, "cgroup") {
				t.Errorf("skipped %q", s)
			}
		}
		noDebugPodsLeft(t)
	})

	t.Run("cpus and memory show the cgroups' values beside the files'", func(t *testing.T) {
		r := nodestate(t, "cpus", "-o", "json")
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		var row *render.CPURow
		rows := decodeList[render.CPURow](t, r)
		for i := range rows {
			if rows[i].PodUID == uid && rows[i].Container == "main" {
				row = &rows[i]
			}
		}
		if row == nil || row.CPUs != assigned.String() || row.Cgroup != assigned.String() {
			t.Errorf("want %s/main with cpus and cgroup %s: %s", uid, assigned, r)
		}
		mem := nodestate(t, "memory", "-o", "json")
		mnodes := decodeList[render.MemoryNode](t, mem)
		found := false
		for _, n := range mnodes {
			for _, a := range n.Assignments {
				if a.PodUID == uid && a.Container == "main" && a.Type == "memory" {
					found = a.CgroupMems == cgroupCPUs(t, g, "cpuset.mems").String()
				}
			}
		}
		if !found {
			t.Errorf("want %s/main's block with its cgroup's cpuset.mems: %s", uid, mem)
		}
		wide := nodestate(t, "cpus", "-o", "wide")
		if !strings.Contains(wide.stdout, "CGROUP") {
			t.Errorf("no CGROUP column: %s", wide)
		}
		t.Logf("cpus -o wide:\n%s", wide.stdout)
		noDebugPodsLeft(t)
	})

	t.Run("cpuset.cpus rewritten in the cgroup is drift", func(t *testing.T) {
		file := filepath.Join(containerCgroup(t, cpusetRoot, g), "cpuset.cpus")
		online, err := os.ReadFile("/sys/devices/system/cpu/online")
		if err != nil {
			t.Fatal(err)
		}
		// What another node agent does: widen the exclusive container onto every CPU.
		if err := os.WriteFile(file, online, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.WriteFile(file, []byte(assigned.String()), 0o644); err != nil {
				t.Errorf("restore %s: %v", file, err)
			}
		})
		r := nodestate(t, "doctor", "-o", "json")
		drift := findingsOf(parseDoctor(t, r), "cpuset-drift")
		if r.code != 1 || len(drift) != 1 || drift[0].Entry != uid+"/main" || drift[0].Severity != "error" {
			t.Fatalf("want exit 1 and one cpuset-drift error on %s/main: %s", uid, r)
		}
		t.Logf("found: %s\n  fix: %s", drift[0].Message, drift[0].Fix)
		// The kubelet did not correct it meanwhile (reconcileState compares with its own last write).
		if now := cgroupCPUs(t, g, "cpuset.cpus"); now.Equals(assigned) {
			t.Errorf("the kubelet rewrote the cpuset to %s", now)
		}
		noDebugPodsLeft(t)
	})

	t.Run("pod removed while the kubelet is stopped leaks its CPUs", func(t *testing.T) {
		script := filepath.Join(node.Repo, "hack/e2e-node/kubelet.sh")
		if out, err := exec.Command(script, "stop").CombinedOutput(); err != nil {
			t.Fatalf("stop the kubelet: %v\n%s", err, out)
		}
		stopped := true
		t.Cleanup(func() {
			if !stopped {
				return
			}
			if out, err := exec.Command(script, "start").CombinedOutput(); err != nil {
				t.Errorf("start the kubelet again: %v\n%s", err, out)
			}
		})
		// The API forgets the pod at once (no kubelet to wait for), and the operator removes it
		// from the runtime; the kubelet's state still holds its CPU.
		if err := node.Client.CoreV1().Pods(ns).Delete(context.Background(), g.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(os.Getenv("NODESTATE_CRI_STOP"), node.CRIEndpoint, uid).CombinedOutput(); err != nil {
			t.Fatalf("remove the pod's sandbox through the CRI: %v\n%s", err, out)
		}
		// The kubelet is down: no debug pod. The collect script, run on the node, writes the
		// bundle that doctor reads.
		gen := kubectl(t, "nodestate", "collect", "--print-script")
		if gen.code != 0 {
			t.Fatalf("%s", gen)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-s")
		cmd.Stdin = strings.NewReader(gen.stdout)
		cmd.Env = append(os.Environ(), "KUBELET_ROOT_DIR="+node.KubeletRoot, "KUBELET="+filepath.Join(node.ToolsBin, "kubelet"), "NODE_NAME="+node.Name)
		var bundle, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &bundle, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("collect script: %v\n%s", err, errb.String())
		}
		file := filepath.Join(t.TempDir(), node.Name+".tar.gz")
		if err := os.WriteFile(file, bundle.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		r := kubectl(t, "nodestate", "doctor", "--from-dir", file, "-o", "json")
		d := parseDoctor(t, r)
		leaked := findingsOf(d, "cpus-leaked")
		if len(leaked) != 1 || leaked[0].Entry != "pod "+uid || !strings.Contains(leaked[0].Message, "CPUs "+assigned.String()+" ") {
			t.Fatalf("want one cpus-leaked finding for pod %s holding CPUs %s: %s", uid, assigned, r)
		}
		t.Logf("found with the kubelet down: %s\n  fix: %s", leaked[0].Message, leaked[0].Fix)

		// What the fix says: the kubelet, once it runs, frees them (at a reconcile once its
		// sources are ready). Until then the live doctor sees the leak too.
		stopped = false
		started := time.Now()
		if out, err := exec.Command(script, "start").CombinedOutput(); err != nil {
			t.Fatalf("start the kubelet again: %v\n%s", err, out)
		}
		for {
			r := nodestate(t, "doctor", "-o", "json")
			d := parseDoctor(t, r)
			if len(findingsOf(d, "cpus-leaked")) == 0 && len(findingsOf(d, "stale-pod")) == 0 {
				t.Logf("freed by the kubelet %s after its start", time.Since(started).Round(time.Second))
				break
			}
			if time.Since(started) > 90*time.Second {
				t.Fatalf("the kubelet has not freed the CPUs 90s after its start: %s", r)
			}
			t.Logf("%s after the kubelet's start, the live doctor still finds: %s", time.Since(started).Round(time.Second), findingsOf(d, "cpus-leaked"))
			time.Sleep(5 * time.Second)
		}
		noDebugPodsLeft(t)
	})
}

// recordedCgroups is where recordCgroups writes (pkg/cgroup's testdata).
const recordedCgroups = "pkg/cgroup/testdata/real/v1-cgroupfs-containerd"

// recordCgroups runs the debug pod's cgroup script on this host's /sys/fs/cgroup and, with
// NODESTATE_E2E_NODE_UPDATE=1, writes its dump and the pods' container statuses for pkg/cgroup's
// tests; otherwise it checks that the dump resolves every running container of the pods.
func recordCgroups(t *testing.T, p *corev1.Pod, others ...string) {
	t.Helper()
	out, err := exec.Command("sh", "-c", cgroup.Script(cgroup.HostPath)).Output()
	if err != nil {
		t.Fatal(err)
	}
	d, err := cgroup.Parse(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var refs []cgroup.PodRef
	for _, pod := range append([]*corev1.Pod{p}, podsNamed(t, others...)...) {
		ref := cgroup.PodRef{UID: string(pod.UID)}
		for _, cs := range pod.Status.ContainerStatuses {
			ref.Containers = append(ref.Containers, cgroup.ContainerRef{Name: cs.Name, ID: cs.ContainerID, Running: cs.State.Running != nil})
		}
		refs = append(refs, ref)
	}
	n := cgroup.Resolve(d, refs)
	if len(n.Missing) > 0 || len(n.Layouts) != 1 || n.Layouts[0] != "v1/cgroupfs/containerd" {
		t.Fatalf("layouts %v, missing %+v\n%s", n.Layouts, n.Missing, out)
	}
	t.Logf("%d directories in the dump, %d pods, layout %s", len(d.Dirs), len(n.Pods), n.Layouts[0])
	if os.Getenv("NODESTATE_E2E_NODE_UPDATE") == "" {
		return
	}
	dir := filepath.Join(node.Repo, recordedCgroups)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pods, _ := json.MarshalIndent(refs, "", "  ")
	for f, b := range map[string][]byte{"dump.txt": out, "pods.json": append(pods, '\n')} {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %s", dir)
}

func podsNamed(t *testing.T, names ...string) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for _, name := range names {
		p, err := node.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}
