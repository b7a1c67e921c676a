//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// TestLiveAdmitDRAExtendedResource: on the real API server, a DeviceClass names an extended
// resource (KEP-5004's extendedResourceName) that no device plugin serves on the node. A pod
// asking for it, not created yet, is not judged and says DRA serves it there, naming the class;
// under the shipped roles (no list on DeviceClasses) it is not judged either, saying what is not
// known. Nothing answers "admitted".
func TestLiveAdmitDRAExtendedResource(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/cpu/online"); err != nil {
		t.Skipf("no sysfs: %v", err)
	}
	const config = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n"
	const resourceName, className = "example.com/dra-gpu", "dra-gpu.example.com"
	name := "dra-extended"
	CreateNode(t, name, decode.HomeKubelet, nil, KubeletDir(t, map[string]string{"config.yaml": config}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: className}, Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: ptr.To(resourceName)}}
	created, err := Client().ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = Client().ResourceV1().DeviceClasses().Delete(context.Background(), className, metav1.DeleteOptions{})
	})
	if created.Spec.ExtendedResourceName == nil {
		t.Skip("the API server dropped extendedResourceName (feature gate DRAExtendedResource off)")
	}
	podFile := filepath.Join(t.TempDir(), "pod.yaml")
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: train, namespace: default}\nspec:\n  containers:\n  - name: app\n" +
		"    resources:\n      limits: {cpu: \"1\", memory: 256Mi, " + resourceName + ": \"1\"}\n"
	if err := os.WriteFile(podFile, []byte(pod), 0o600); err != nil {
		t.Fatal(err)
	}
	user := UserKubeconfig(t, "e2e-dra", shippedGroup)
	for _, tc := range []struct {
		who  string
		env  []string
		want string
	}{
		{"admin", nil, "served by DRA on this node (DeviceClass " + className + " names it"},
		{"the shipped roles", Env(t, "KUBECONFIG="+user), "no device plugin serves it on this node, and DRA may: the DeviceClasses that would say so are not listed"},
	} {
		r := nodestate(t, tc.env, "admit", name, "-f", podFile, "-o", "json")
		var out struct {
			Admissions []struct {
				Verdict   string   `json:"verdict"`
				Admitted  bool     `json:"admitted"`
				NotJudged []string `json:"notJudged"`
			} `json:"admissions"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || len(out.Admissions) != 1 {
			t.Fatalf("%s: %v\n%s", tc.who, err, r)
		}
		a := out.Admissions[0]
		if r.ExitCode != 4 || a.Verdict != "notJudged" || a.Admitted || !strings.Contains(strings.Join(a.NotJudged, "\n"), tc.want) {
			t.Errorf("%s: want exit 4, not judged with %q:\n%s", tc.who, tc.want, r)
		}
		t.Logf("%s: %s", tc.who, strings.Join(a.NotJudged, "; "))
	}
}
