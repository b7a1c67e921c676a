//go:build e2enode

package e2enode

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// vectorDir holds what a real kubelet said when restarted over its own state with a changed
// configuration: the cases below, written with NODESTATE_E2E_NODE_UPDATE=1. The doctor
// (predicting whether a kubelet would start) can be compared with them.
const vectorDir = "testdata/kubelet-start-real"

// restartCase changes the kubelet's configuration before a restart.
type restartCase struct {
	name, description string
	change            func(cfg map[string]any, assigned string)
}

var restartCases = []restartCase{
	{
		name:        "cpu-policy-static-to-none",
		description: "cpuManagerPolicy changed from static to none over a static state with an exclusive CPU assigned",
		change:      func(cfg map[string]any, _ string) { cfg["cpuManagerPolicy"] = "none" },
	},
	{
		name:        "reserved-cpus-onto-assigned",
		description: "reservedSystemCPUs moved onto the CPU assigned exclusively to a running container",
		change:      func(cfg map[string]any, assigned string) { cfg["reservedSystemCPUs"] = assigned },
	},
}

// startError is the kubelet's structured log value err="..." on the line that reports a
// manager's start failure.
var startErrRE = regexp.MustCompile(`err="((?:[^"\\]|\\.)*)"`)

func startError(output string) string {
	for _, line := range strings.Split(output, "\n") {
		if !strings.Contains(line, "start cpu manager error") && !strings.Contains(line, "start memory manager error") {
			continue
		}
		if m := startErrRE.FindStringSubmatch(line); m != nil {
			if s, err := strconv.Unquote(`"` + m[1] + `"`); err == nil {
				return s
			}
		}
	}
	return ""
}

// TestKubeletRestartRefusesChangedConfig stops the kubelet, changes its configuration over the
// state it wrote while a Guaranteed pod holds an exclusive CPU, starts it again, and records how
// it refuses to start.
func TestKubeletRestartRefusesChangedConfig(t *testing.T) {
	guaranteed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse(podMemory)}
	p := pod("restart-guaranteed", guaranteed, guaranteed)
	createPod(t, p)
	p = waitPod(t, p.Name, running)
	assigned := cgroupCPUs(t, p, "cpuset.cpus").String()

	orig, err := os.ReadFile(node.KubeletConfig)
	if err != nil {
		t.Fatal(err)
	}
	// The changed configurations, and what doctor predicts for each while the kubelet still
	// runs (the live doctor reads the node's state, machine and version through its debug pod).
	changedConfig := map[string][]byte{}
	predicted := map[string]doctorStart{}
	for _, tc := range restartCases {
		file, changed := writeKubeletConfig(t, orig, tc.name, func(cfg map[string]any) { tc.change(cfg, assigned) })
		changedConfig[tc.name] = changed
		predicted[tc.name] = predictStart(t, file)
	}

	script := filepath.Join(node.Repo, "hack/e2e-node/kubelet.sh")
	if out, err := exec.Command(script, "stop").CombinedOutput(); err != nil {
		t.Fatalf("stop the kubelet: %v\n%s", err, out)
	}
	// Whatever happens, the kubelet runs again with its own configuration afterwards.
	t.Cleanup(func() {
		if out, err := exec.Command(script, "start").CombinedOutput(); err != nil {
			t.Errorf("restart the kubelet with its configuration: %v\n%s", err, out)
		}
	})
	state := map[string][]byte{}
	for _, f := range []string{"cpu_manager_state", "memory_manager_state"} {
		if state[f], err = os.ReadFile(filepath.Join(node.KubeletRoot, f)); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range restartCases {
		t.Run(tc.name, func(t *testing.T) {
			changed := changedConfig[tc.name]
			file := filepath.Join(node.State, "kubelet-"+tc.name+".yaml")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, script, "run", file)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			code := cmd.ProcessState.ExitCode()
			if ctx.Err() != nil {
				t.Fatalf("the kubelet did not exit within 60s with the changed configuration")
			}
			if err == nil || code == 0 {
				t.Fatalf("the kubelet exited 0; want a refusal")
			}
			msg := startError(out.String())
			if msg == "" {
				t.Fatalf("exit %d after %s, no manager start error found in:\n%s", code, took, lastLines(out.String(), 30))
			}
			t.Logf("exit %d after %s: %s", code, took.Round(10*time.Millisecond), msg)
			// The same words on any machine: the state path as on a default node.
			normal := strings.ReplaceAll(msg, node.KubeletRoot, "/var/lib/kubelet")
			checkVector(t, tc, normal, code, changed, state, assigned)
			// Doctor said so before the restart, in the kubelet's words (the kubelet prefixes
			// a manager's Start error with "start cpu manager error: ").
			p := predicted[tc.name]
			wantErr := strings.TrimPrefix(strings.TrimPrefix(normal, "start cpu manager error: "), "start memory manager error: ")
			gotErr := strings.ReplaceAll(p.Error, node.KubeletRoot, "/var/lib/kubelet")
			if p.Starts || gotErr != wantErr {
				t.Errorf("doctor predicted starts=%v error:\n  %s\nthe real kubelet said:\n  %s", p.Starts, gotErr, wantErr)
			}
		})
	}
	// Restarting with its own configuration must work again (t.Cleanup also covers failures).
	if err := os.WriteFile(node.KubeletConfig, orig, 0o600); err != nil {
		t.Fatal(err)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// vector is result.json of one case.
type vector struct {
	Kubelet     string `json:"kubelet"`
	Description string `json:"description"`
	Starts      bool   `json:"starts"`
	ExitCode    int    `json:"exitCode"`
	// Error is the err value the kubelet logged, with its root dir written as /var/lib/kubelet.
	Error string `json:"error"`
	// Online is the machine's online CPUs: the error names CPUs, so only a machine with the
	// same CPUs can expect the same words.
	Online   string `json:"online"`
	Assigned string `json:"assigned"`
}

func checkVector(t *testing.T, tc restartCase, msg string, code int, cfg []byte, state map[string][]byte, assigned string) {
	t.Helper()
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.Client.CoreV1().Nodes().Get(context.Background(), node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := vector{Kubelet: n.Status.NodeInfo.KubeletVersion, Description: tc.description, ExitCode: code, Error: msg,
		Online: strings.TrimSpace(string(online)), Assigned: assigned}
	dir := filepath.Join(node.Repo, vectorDir, tc.name)
	if os.Getenv("NODESTATE_E2E_NODE_UPDATE") != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := json.MarshalIndent(got, "", "  ")
		files := map[string][]byte{"result.json": append(b, '\n'), "kubelet.yaml": cfg}
		for f, data := range state {
			files[f] = data
		}
		for f, data := range files {
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote %s", dir)
		return
	}
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatalf("no recorded vector (run with NODESTATE_E2E_NODE_UPDATE=1 to write it): %v", err)
	}
	var want vector
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if want.Online != got.Online || want.Assigned != got.Assigned || want.Kubelet != got.Kubelet {
		t.Logf("recorded on another machine or kubelet (%s, CPUs %s, assigned %s); not compared", want.Kubelet, want.Online, want.Assigned)
		return
	}
	if got.Error != want.Error || got.ExitCode != want.ExitCode {
		t.Errorf("the kubelet now says (exit %d):\n  %s\nrecorded (exit %d):\n  %s", got.ExitCode, got.Error, want.ExitCode, want.Error)
	}
}

// doctorStart is the kubeletStart doctor prints.
type doctorStart struct {
	Starts bool   `json:"starts"`
	Error  string `json:"error"`
	Phase  string `json:"phase"`
}

// predictStart runs the live doctor on the node with config as the configuration about to be
// rolled out, and returns its start prediction.
func predictStart(t *testing.T, config string) doctorStart {
	t.Helper()
	r := nodestate(t, "doctor", "--kubelet-config", config, "-o", "json")
	if r.code != 0 && r.code != 1 {
		t.Fatalf("doctor: %s", r)
	}
	var one struct {
		KubeletStart *doctorStart `json:"kubeletStart"`
		Items        []struct {
			KubeletStart *doctorStart `json:"kubeletStart"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &one); err != nil {
		t.Fatalf("doctor -o json: %v\n%s", err, r)
	}
	if one.KubeletStart == nil && len(one.Items) == 1 {
		one.KubeletStart = one.Items[0].KubeletStart
	}
	if one.KubeletStart == nil {
		t.Fatalf("doctor printed no kubeletStart:\n%s", r)
	}
	return *one.KubeletStart
}
