package nodestate

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// The machine and kubelet config ride on the one exec: the sysfs dump on stderr, config.yaml
// in the tar; configz is used only when the user may GET nodes/proxy, and config.yaml never
// shows up as a checkpoint.
func TestLiveMachineAndConfig(t *testing.T) {
	cpu, err := os.ReadFile(filepath.Join(repo, "examples/kubelet-root/cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	dump, err := os.ReadFile(filepath.Join(repo, "pkg/machine/testdata/sysfs/s2c2t2n2-offline.txt"))
	if err != nil {
		t.Fatal(err)
	}
	const yaml = "kind: KubeletConfiguration\ncpuManagerPolicy: static\n"
	const configz = `{"kubeletconfig":{"cpuManagerPolicy":"none"}}`

	type want struct{ from, config, note string }
	cases := []struct {
		name       string
		allowed    bool
		configzErr error
		noYAML     bool
		want       want
	}{
		{name: "configz allowed", allowed: true, want: want{FromConfigz, configz, ""}},
		{name: "denied: config.yaml", want: want{FromConfigYAML, yaml, "no get on nodes/proxy"}},
		{name: "configz fails: config.yaml", allowed: true, configzErr: errors.New("boom"), want: want{FromConfigYAML, yaml, "configz: boom"}},
		{name: "neither", noYAML: true, want: want{"", "", "no config.yaml in the kubelet root dir"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(&corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "a"},
				Status: corev1.NodeStatus{
					NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.36.4", OperatingSystem: "linux"},
					Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				},
			})
			client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				a.(clienttesting.CreateAction).GetObject().(*corev1.Pod).Status.Phase = corev1.PodRunning
				return false, nil, nil
			})
			var reviews int
			client.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
				reviews++
				r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
				if ra := r.Spec.ResourceAttributes; ra == nil || ra.Resource != "nodes" || ra.Subresource != "proxy" || ra.Verb != "get" {
					t.Errorf("review %+v", r.Spec)
				}
				r.Status.Allowed = tc.allowed
				return true, r, nil
			})
			var gotCommand []string
			exec := func(_ context.Context, _, _, _ string, cmd []string, stdout, stderr io.Writer) error {
				gotCommand = cmd
				_, _ = stderr.Write(dump)
				defer io.WriteString(stderr, fetch.CollectEnd)
				tw := tar.NewWriter(stdout)
				files := map[string]string{"./cpu_manager_state": string(cpu)}
				if !tc.noYAML {
					files["./config.yaml"] = yaml
				}
				for name, body := range files {
					if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
						return err
					}
					if _, err := io.WriteString(tw, body); err != nil {
						return err
					}
				}
				return tw.Close()
			}
			var configzCalls int
			cfg := Config{Nodes: []string{"a"}, Client: client, RESTConfig: &rest.Config{}, Exec: exec,
				Machine: true, KubeletConfig: true,
				Configz: func(_ context.Context, node string) ([]byte, error) {
					configzCalls++
					return []byte(configz), tc.configzErr
				}}
			res, err := runAll(t, cfg)
			if err != nil || len(res) != 1 || res[0].Err != nil {
				t.Fatalf("%+v %v", res, err)
			}
			n := res[0]
			if reviews != 1 {
				t.Errorf("%d access reviews, want 1 per run", reviews)
			}
			if (configzCalls > 0) != tc.allowed {
				t.Errorf("configz called %d times with allowed=%v", configzCalls, tc.allowed)
			}
			if !strings.Contains(strings.Join(gotCommand, " "), "@@nodestate-sysfs") || gotCommand[len(gotCommand)-1] != "./config.yaml" {
				t.Errorf("command %q", gotCommand)
			}
			if n.Machine == nil || n.MachineErr != nil || n.Machine.Online().String() != "0-5,7" {
				t.Errorf("machine %+v %v", n.Machine, n.MachineErr)
			}
			if n.KubeletConfigFrom != tc.want.from || string(n.KubeletConfig) != tc.want.config || !strings.Contains(n.KubeletConfigNote, tc.want.note) {
				t.Errorf("config from %q %q note %q; want %+v", n.KubeletConfigFrom, n.KubeletConfig, n.KubeletConfigNote, tc.want)
			}
			if tc.want.note == "" && n.KubeletConfigNote != "" {
				t.Errorf("note %q", n.KubeletConfigNote)
			}
			if _, ok := n.Snapshot.Files[KubeletConfigFile]; ok || strings.Contains(strings.Join(n.Snapshot.Missing, " "), KubeletConfigFile) {
				t.Errorf("config.yaml among the checkpoints: %v %q", n.Snapshot.Files, n.Snapshot.Missing)
			}
			for _, r := range n.Rows {
				if r.File() != "cpu_manager_state" {
					t.Errorf("row for %q", r.File())
				}
			}
		})
	}
}
