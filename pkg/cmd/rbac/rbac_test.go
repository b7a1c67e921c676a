package rbac

import (
	"os"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	flags := genericclioptions.NewConfigFlags(true)
	cmd := NewCmdRBAC(flags, streams)
	flags.AddFlags(cmd.Flags())
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), err
}

// With no flags the command prints deploy/rbac.yaml then deploy/shape-policy.yaml, the files
// `kubectl apply -f deploy/` applies in that order.
func TestDefaultOutputIsDeploy(t *testing.T) {
	got, err := run(t)
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for i, f := range []string{"../../../deploy/rbac.yaml", "../../../deploy/shape-policy.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			want += "---\n"
		}
		want += string(b)
	}
	if got != want {
		t.Error("kubectl nodestate rbac does not print deploy/rbac.yaml and deploy/shape-policy.yaml")
	}
}

func TestFlags(t *testing.T) {
	got, err := run(t, "-n", "team-ns", "--image", "mirror.example/busybox:1.37", "--image", "busybox:1.37", "--kubelet-root-dir", "/data/kubelet")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`kubectl nodestate rbac --namespace team-ns --image mirror.example/busybox:1.37 --image busybox:1.37 --kubelet-root-dir /data/kubelet`",
		"  name: team-ns\n", `images: "mirror.example/busybox:1.37,busybox:1.37"`, `kubeletRootDirs: "/data/kubelet"`,
		"name: kubectl-nodestate-debug-pod.team-ns"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if _, err := run(t, "-n", "kube-system"); err == nil || !strings.Contains(err.Error(), "holds other pods") {
		t.Errorf("kube-system: %v", err)
	}
	if _, err := run(t, "extra"); err == nil {
		t.Error("an argument was accepted")
	}
}
