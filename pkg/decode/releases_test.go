package decode

import (
	"fmt"
	"strings"
	"testing"
)

// TestUnchecked derives its cases from the tables, so that a release day that names a build
// keeps them true: the builds checked say nothing, the others name the build whose rules judge
// them.
func TestUnchecked(t *testing.T) {
	unchecked := func(v string) string {
		t.Helper()
		k, err := ParseKubelet(v, nil)
		if err != nil {
			t.Fatal(err)
		}
		return k.Unchecked()
	}
	checked := []string{HomeKubelet, "v1.30.2-eks-1234", "v1.29.3+k3s1"}
	for _, r := range releases {
		checked = append(checked, fmt.Sprintf("v%d.%d.0", r.Major(), r.Minor()), fmt.Sprintf("v%d.%d.%d", r.Major(), r.Minor(), r.Patch()+5))
	}
	for _, p := range preReleases {
		checked = append(checked, "v"+p.String())
	}
	for _, v := range checked {
		if got := unchecked(v); got != "" {
			t.Errorf("%s is checked, got %q", v, got)
		}
	}

	newest := releases[len(releases)-1]
	for _, p := range preReleases {
		if p.GreaterThan(newest) {
			newest = p
		}
		ga := fmt.Sprintf("v%d.%d.0", p.Major(), p.Minor())
		if got, want := unchecked(ga), fmt.Sprintf("kubelet %s is not a build this plugin was checked against: judged by the rules of v%s, the newest", ga, p); !strings.HasPrefix(got, want) {
			t.Errorf("%s: got %q, want %q...", ga, got, want)
		}
		alpha := fmt.Sprintf("v%d.%d.0-alpha.0", p.Major(), p.Minor())
		if p.PreRelease() != "alpha.0" {
			if got, want := unchecked(alpha), fmt.Sprintf("kubelet %s is an earlier %d.%d build than v%s", alpha, p.Major(), p.Minor(), p); !strings.HasPrefix(got, want) {
				t.Errorf("%s: got %q, want %q", alpha, got, want)
			}
		}
	}
	next := fmt.Sprintf("v%d.%d.0", newest.Major(), newest.Minor()+1)
	if got, want := unchecked(next+"+"+GatePodLevelResourceManagers), fmt.Sprintf("kubelet %s is newer than every build this plugin was checked against: judged by the rules of the newest, v%s", next, newest); got != want {
		t.Errorf("%s: got %q, want %q", next, got, want)
	}
}
