package nodestate_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/publishedtest"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

func reportedPod(name, uid, cpu string) *corev1.Pod {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + uid)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}}}
}

// A published node reports the pods its checkpoints hold (by UID), or, when it published the
// PodResources List, the pods that names (by namespace/name) and those only.
func TestPublishedReportedPods(t *testing.T) {
	example := publishedtest.Example{Root: "../.."}
	s := example.State(t, "node-a", true, "restricted", time.Now())
	p := nodestate.PreparePublished(s, nil, nil)
	if p.Err != nil {
		t.Fatal(p.Err)
	}
	holder, other := reportedPod("holder", "seed-a", "2"), reportedPod("other", "other", "2")
	r := p.ReportedPods()
	if !r.Reports(holder) || r.Reports(other) {
		t.Errorf("from the checkpoints: holder %v (want true), other %v (want false)", r.Reports(holder), r.Reports(other))
	}
	s.Sections[machine.PodResourcesHeader] = publishedtest.ReportingPods(other)
	r = nodestate.PreparePublished(s, nil, nil).ReportedPods()
	if r.Reports(holder) || !r.Reports(other) {
		t.Errorf("from PodResources: holder %v (want false), other %v (want true)", r.Reports(holder), r.Reports(other))
	}
}

// AdmitAlone replays a pod on the node emptied of pods: 14 CPUs fit NUMA node 1 once the pods
// holding CPUs there are gone, 18 fit no NUMA node whatever leaves (restricted).
func TestPublishedAdmitAlone(t *testing.T) {
	s := publishedtest.Example{Root: "../.."}.State(t, "node-a", true, "restricted", time.Now())
	p := nodestate.PreparePublished(s, nil, nil)
	filler := reportedPod("filler", "filler", "16")
	res, err := p.Admit([]*corev1.Pod{filler, reportedPod("next", "next", "14")})
	if err != nil || res.Admissions[1].Admitted {
		t.Fatalf("14 CPUs after 16 on node-a: %+v, %v", res.Admissions, err)
	}
	for cpu, want := range map[string]bool{"14": true, "18": false} {
		if got, err := p.AdmitAlone(reportedPod("alone", "alone", cpu)); err != nil || got != want {
			t.Errorf("%s CPUs alone: %v, %v; want %v", cpu, got, err, want)
		}
	}
}
