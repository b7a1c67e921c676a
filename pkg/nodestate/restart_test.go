package nodestate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
)

// Doctor on a live GPU node says what a reboot and a kubelet restart do to its pods: the
// trainer (a ReplicaSet's, holding 3 GPUs in the device checkpoint, running) waits on
// its plugins after a reboot and comes back after a kubelet restart; a pod without devices
// (bare) comes back either way. One finding a restart.
func TestDoctorRestartOutlookLive(t *testing.T) {
	dc, _ := admitNode(t)
	cp, node := gpuRestartNode(t)
	yes := true
	// Its VF's NUMA node needs sysfs, which doctor does not read here: it asks the GPUs only.
	devices := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("3")}
	trainer := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: "ml", UID: types.UID("6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f"),
		CreationTimestamp: metav1.Unix(100, 0), OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "trainer-1", Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: "a", Containers: []corev1.Container{{Name: "trainer", Resources: corev1.ResourceRequirements{Requests: devices, Limits: devices}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "trainer", ContainerID: "containerd://t1",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", CreationTimestamp: metav1.Unix(50, 0)},
		Spec:   corev1.PodSpec{NodeName: "a", Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	exec := fakeNodeExec(map[string][]byte{"device-plugins/kubelet_internal_checkpoint": cp}, nil)
	r, err := New(context.Background(), Config{AllNodes: true, Client: runningPodsClient(node, trainer, web), RESTConfig: &rest.Config{}, Exec: exec,
		Engines: Engines{Doctor: dc}})
	if err != nil {
		t.Fatal(err)
	}
	res := only(t, r)
	if res.Doctor == nil || !res.Doctor.KubeletStart.Starts || len(res.Doctor.Restart) != 2 {
		t.Fatalf("doctor: %+v", res.Doctor)
	}
	reboot, restart := res.Doctor.Restart[0], res.Doctor.Restart[1]
	if reboot.Kind != admit.RestartReboot || reboot.Pods != 2 || len(reboot.AtRisk) != 1 {
		t.Fatalf("reboot: %+v", reboot)
	}
	if p := reboot.AtRisk[0]; p.Pod != "ml/trainer" || p.Owner != "ReplicaSet" || !slices.Equal(p.WaitsOn, []string{"nvidia.com/gpu"}) || p.Reason != "UnexpectedAdmissionError" {
		t.Errorf("reboot: trainer %+v, want it waiting on nvidia.com/gpu", p)
	}
	// The pod's status.message is the event's message behind 1.37's rejectPod prefix.
	if p := reboot.AtRisk[0]; p.Message == "" || p.StatusMessage != "Pod was rejected: "+p.Message {
		t.Errorf("reboot: trainer message %q, status message %q", p.Message, p.StatusMessage)
	}
	if restart.Kind != admit.RestartKubelet || len(restart.AtRisk) != 0 {
		t.Errorf("kubelet restart: %+v, want every pod back (the trainer runs)", restart)
	}
	var lines []string
	for _, f := range res.Doctor.Findings {
		if f.Check == CheckIfReboot || f.Check == CheckIfKubeletRestart {
			lines = append(lines, string(f.Severity)+" "+f.Check+": "+f.Message+" | "+f.Fix)
		}
	}
	t.Logf("%s", strings.Join(lines, "\n"))
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "warning if-reboot: if this node reboots") || !strings.Contains(lines[0], "ml/trainer waits on") ||
		!strings.Contains(lines[0], "its ReplicaSet makes a new one") || !strings.HasPrefix(lines[1], "info if-kubelet-restart: ") || !strings.Contains(lines[1], "all 2 pods come back") {
		t.Errorf("findings:\n%s", strings.Join(lines, "\n"))
	}
	// node-check restart: the kubelet starts, but a reboot would refuse the trainer.
	cr := CheckResult{Check: CheckRestart}
	judgeRestart(&cr, res, nil, nil)
	if cr.Status != CheckProblem || !strings.Contains(cr.Summary, "would start with its config and files, but if this node reboots") || len(cr.Problems) != 1 {
		t.Errorf("node-check restart: %+v", cr)
	}
}

// A pod refused either way says both refusals in the outlook's line: without its plugin, and
// with it registered first (a held device no longer healthy).
func TestRestartOutlookFindingIfRegistered(t *testing.T) {
	unhealthy := "Allocate failed due to previously allocated devices are no longer healthy; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected"
	o := RestartOutlook{Kind: admit.RestartReboot, Pods: 2, AtRisk: []PodAtRisk{{Pod: "ml/seed", Reason: "UnexpectedAdmissionError",
		Message:      "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected",
		IfRegistered: &admit.Refusal{Reason: "UnexpectedAdmissionError", Message: unhealthy}}}}
	f := o.Finding()
	want := "ml/seed refused: UnexpectedAdmissionError: Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected, and with its plugins registered: UnexpectedAdmissionError: " + unhealthy + " (bare: stays Failed, nothing makes it again)"
	if f.Severity != "warning" || !strings.HasSuffix(f.Message, want) {
		t.Errorf("finding %s: %s\nwant it to end %s", f.Severity, f.Message, want)
	}
}

// An outlook with no pod at risk counts the pods that come back: those judged, not those whose
// devices (live) or files (rebuilt) did not tell, which it names apart.
func TestRestartOutlookFindingComesBack(t *testing.T) {
	for _, tt := range []struct {
		o    RestartOutlook
		want string
	}{
		{RestartOutlook{Kind: admit.RestartKubelet, Pods: 3, NotJudged: []string{"ml/x"}},
			"if the kubelet restarts (the containers running now stay running; device plugins not yet registered): all 2 pods come back; not judged (devices not known): ml/x"},
		{RestartOutlook{Kind: admit.RestartReboot, Pods: 2, NotJudged: []string{"pod u1 (gone)"}, FromFiles: true},
			"if this node reboots (no container running; device plugins not yet registered): its 1 pod comes back; not judged (the files do not tell): pod u1 (gone) [pods rebuilt from the node's files]"},
		{RestartOutlook{Kind: admit.RestartReboot, FromFiles: true},
			"if this node reboots (no container running; device plugins not yet registered): no pod in the node's files holds devices, exclusive CPUs or memory blocks: none for the resource managers to refuse [pods rebuilt from the node's files]"},
	} {
		if f := tt.o.Finding(); f.Severity != "info" || f.Message != tt.want || f.Fix != "" {
			t.Errorf("%+v: %s %q (fix %q)\nwant info %q", tt.o, f.Severity, f.Message, f.Fix, tt.want)
		}
	}
	// A pod whose owner the files do not name may be bare: the fix says to drain first.
	o := RestartOutlook{Kind: admit.RestartReboot, Pods: 1, FromFiles: true, AtRisk: []PodAtRisk{{Pod: "pod u2", WaitsOn: []string{"nvidia.com/gpu"},
		Reason: "UnexpectedAdmissionError", Message: "no healthy devices", OwnerNotKnown: true}}}
	if f := o.Finding(); f.Severity != "warning" || !strings.Contains(f.Message, ": 1 of 1 pods refused: pod u2 waits on nvidia.com/gpu") ||
		f.Fix != "have the nvidia.com/gpu plugin register before the kubelet re-admits its pods, or drain the node first: a refused bare pod is lost" {
		t.Errorf("finding %s: %q, fix %q", f.Severity, f.Message, f.Fix)
	}
}

// gpuRestartNode is the restart outlook's GPU node: v1.37.1's device checkpoint with GPUs and
// VFs (multi-resource.json), and a Ready node whose status counts them.
func gpuRestartNode(t *testing.T) ([]byte, *corev1.Node) {
	t.Helper()
	cp, err := os.ReadFile(filepath.Join(repo, "testdata/kubelet/kubelet_internal_checkpoint/v1.37.1/multi-resource.json"))
	if err != nil {
		t.Fatal(err)
	}
	counts := corev1.ResourceList{"intel.com/sriov_netdevice": resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("4"),
		corev1.ResourceCPU: resource.MustParse("30"), corev1.ResourceMemory: resource.MustParse("60Gi"), corev1.ResourcePods: resource.MustParse("110")}
	return cp, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NodeStatus{
		NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", OperatingSystem: "linux"},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Capacity:   counts, Allocatable: counts,
	}}
}

// A live node whose pods could not be listed (LIST forbidden) has its outlook from its files,
// and the kubelet restart's is skipped for what it lacks: the pods' running containers, which
// the API server would have given, not a runtime's state.
func TestDoctorRestartOutlookLivePodsUnlisted(t *testing.T) {
	dc, _ := admitNode(t)
	cp, node := gpuRestartNode(t)
	exec := fakeNodeExec(map[string][]byte{"device-plugins/kubelet_internal_checkpoint": cp}, nil)
	client := runningPodsClient(node)
	client.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("RBAC"))
	})
	r, err := New(context.Background(), Config{AllNodes: true, Client: client, RESTConfig: &rest.Config{}, Exec: exec, Engines: Engines{Doctor: dc}})
	if err != nil {
		t.Fatal(err)
	}
	res := only(t, r)
	if res.Doctor == nil || !res.Doctor.KubeletStart.Starts {
		t.Fatalf("doctor: %+v", res.Doctor)
	}
	if len(res.Doctor.Restart) != 1 || res.Doctor.Restart[0].Kind != admit.RestartReboot || !res.Doctor.Restart[0].FromFiles {
		t.Errorf("outlook %+v, want the reboot's from the files", res.Doctor.Restart)
	}
	var skipped []string
	for _, s := range res.Doctor.Result.Skipped {
		if strings.Contains(s, CheckIfKubeletRestart) {
			skipped = append(skipped, s)
		}
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "the node's pods could not be listed") || strings.Contains(skipped[0], "runtime") {
		t.Errorf("skipped %q, want the kubelet restart's outlook skipped for the failed pod list", skipped)
	}
}
