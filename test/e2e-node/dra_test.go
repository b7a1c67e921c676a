//go:build e2enode

package e2enode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// TestDRACDISpecDeleted runs a real DRA driver on the node (hack/tools/kubelet/dra-driver, a
// kubelet plugin registered through the kubelet's plugins_registry), allocates a claim for it by
// hand (the node runs no scheduler), and has a pod use it: the kubelet prepares the claim, the
// driver writes the claim's CDI spec into /var/run/cdi, and dra_manager_state records its CDI
// device ID. Doctor finds nothing; with the spec file deleted (as after a reboot that emptied
// /var/run/cdi) it finds dra-cdi-missing.
func TestDRACDISpecDeleted(t *testing.T) {
	bin := os.Getenv("NODESTATE_E2E_DRA_DRIVER")
	if bin == "" {
		t.Fatal("NODESTATE_E2E_DRA_DRIVER is not set (hack/e2e-node.sh builds it)")
	}
	ctx := context.Background()
	driverName := fmt.Sprintf("dra-%d.nodestate-e2e.example.com", os.Getpid())
	cmd := exec.Command(bin, "-driver", driverName, "-node", node.Name, "-kubeconfig", node.Kubeconfig,
		"-registry", filepath.Join(node.KubeletRoot, "plugins_registry"), "-data", filepath.Join(node.KubeletRoot, "plugins", driverName))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopDevicePlugin(t, cmd) }) // SIGTERM by PID, as for the device plugin

	rc := node.Client.ResourceV1()
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: driverName}}
	if _, err := rc.DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create DeviceClass (is resource.k8s.io/v1 served?): %v", err)
	}
	t.Cleanup(func() { _ = rc.DeviceClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{}) })
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-claim", Namespace: ns},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "widget", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class.Name}}}}},
	}
	claim, err := rc.ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.ResourceClaims(ns).Delete(context.Background(), claim.Name, metav1.DeleteOptions{}) })

	p := pod("widget-dra", nil, nil)
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "w", ResourceClaimName: ptr.To(claim.Name)}}
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "w"}}
	created, err := node.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Deleted while the driver still runs, so the kubelet can unprepare the claim.
		_ = node.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		_ = wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := node.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			return err != nil, nil
		})
	})
	// What the scheduler and the resourceclaim controller would write: the allocation, and
	// the reservation for the pod.
	claim.Status = resourcev1.ResourceClaimStatus{
		Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
			Request: "widget", Driver: driverName, Pool: node.Name, Device: "widget-0"}}}},
		ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: created.Name, UID: created.UID}},
	}
	if _, err := rc.ResourceClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, p.Name, running)

	spec := filepath.Join("/var/run/cdi", driverName+"-"+string(claim.UID)+".json")
	if _, err := os.Stat(spec); err != nil {
		t.Fatalf("the driver wrote no CDI spec: %v", err)
	}
	draFindings := func(d doctorOut) []string {
		var out []string
		for _, f := range d.Findings {
			if f.File == "dra_manager_state" || strings.HasPrefix(f.Check, "dra-") || strings.HasPrefix(f.Check, "cdi-") {
				out = append(out, f.Severity+" "+f.Check+" "+f.Entry+": "+f.Message)
			}
		}
		return out
	}
	r := nodestate(t, "doctor", "-o", "json")
	healthy := parseDoctor(t, r)
	if got := draFindings(healthy); len(got) != 0 {
		t.Errorf("healthy node: DRA findings %q\n%s", got, r)
	}
	for _, s := range healthy.Skipped {
		if strings.Contains(s, "claim") || strings.Contains(s, "CDI") {
			t.Errorf("skipped %q", s)
		}
	}
	claims := nodestate(t, "claims")
	if !strings.Contains(claims.stdout, claim.Name) {
		t.Errorf("claims does not show %s:\n%s", claim.Name, claims)
	}

	if err := os.Remove(spec); err != nil {
		t.Fatal(err)
	}
	r = nodestate(t, "doctor", "-o", "json")
	got := draFindings(parseDoctor(t, r))
	t.Logf("DRA findings: %q", got)
	if !hasAll(got, "error dra-cdi-missing claim "+ns+"/"+claim.Name) || r.code != 1 {
		t.Errorf("CDI spec deleted: findings %q, exit %d\n%s", got, r.code, r)
	}
	noDebugPodsLeft(t)
}
