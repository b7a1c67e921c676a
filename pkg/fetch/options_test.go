package fetch

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		err  string // "" if valid
	}{
		{name: "defaults", opts: Options{}},
		{name: "everything set", opts: Options{Namespace: "kube-system", Image: "busybox:1.37", ImagePullSecret: "regcred",
			KubeletRootDir: "/var/lib/k0s/kubelet", ActiveDeadlineSeconds: 600, PodRunningTimeout: time.Minute, ExecTimeout: time.Minute}},
		{name: "bad namespace", opts: Options{Namespace: "Team_A"}, err: `namespace "Team_A"`},
		{name: "bad secret", opts: Options{ImagePullSecret: "a/b"}, err: `image pull secret "a/b"`},
		{name: "relative root dir", opts: Options{KubeletRootDir: "var/lib/kubelet"}, err: "absolute"},
		{name: "deadline too short", opts: Options{ActiveDeadlineSeconds: 60}, err: "active deadline (60s)"},
		{name: "negative", opts: Options{ExecTimeout: -time.Second}, err: "negative"},
		// The deadline follows the waits unless set: a long --pod-running-timeout alone is fine.
		{name: "long pod-running timeout", opts: Options{PodRunningTimeout: 3 * time.Minute, ExecTimeout: 3 * time.Minute}},
		{name: "long timeout, deadline set too short", opts: Options{PodRunningTimeout: 3 * time.Minute, ActiveDeadlineSeconds: 300},
			err: "active deadline (300s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("error %v, want one containing %q", err, tt.err)
			case err != nil && ReasonOf(err) != ReasonInvalid:
				t.Errorf("reason %q, want Invalid", ReasonOf(err))
			}
		})
	}
}

func TestActiveDeadlineFollowsTimeouts(t *testing.T) {
	tests := []struct {
		opts Options
		want int64
	}{
		{Options{}, 300}, // 2m + 2m + 1m
		{Options{PodRunningTimeout: 3 * time.Minute, ExecTimeout: 3 * time.Minute}, 420},
		{Options{PodRunningTimeout: 1500 * time.Millisecond, ExecTimeout: time.Second}, 63}, // rounded up
		{Options{PodRunningTimeout: time.Hour, ActiveDeadlineSeconds: 7300}, 7300},          // set: kept
	}
	for _, tt := range tests {
		if got := tt.opts.WithDefaults().ActiveDeadlineSeconds; got != tt.want {
			t.Errorf("%+v: deadline %ds, want %ds", tt.opts, got, tt.want)
		}
	}
}

func TestValidatePaths(t *testing.T) {
	if err := ValidatePaths([]string{"cpu_manager_state", "device-plugins/kubelet_internal_checkpoint", "-n"}); err != nil {
		t.Errorf("valid paths refused: %v", err)
	}
	for _, bad := range [][]string{
		nil,
		{""},
		{"."},
		{"/var/lib/kubelet/cpu_manager_state"},
		{"../etc/shadow"},
		{".."},
		{"a/../../b"},
		{"a//b"},
		{"./a"},
		{"a\nb"},
		{`a\b`},
		{"a", "a"},
	} {
		if err := ValidatePaths(bad); err == nil {
			t.Errorf("ValidatePaths(%q) accepted", bad)
		}
	}
}
