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
	for i, p := range preReleases {
		if p.GreaterThan(newest) {
			newest = p
		}
		// The release of p's minor is judged by its newest pre-release checked; a build
		// before the first, by the rules the tables hold for it.
		ga := fmt.Sprintf("v%d.%d.0", p.Major(), p.Minor())
		last := i == len(preReleases)-1 || preReleases[i+1].Minor() != p.Minor()
		for _, build := range []string{ga, ga + "-eks-1234", ga + "+k3s1"} { // a vendor's build is the release's
			if got, want := unchecked(build), fmt.Sprintf("kubelet %s is not a build this plugin was checked against: judged by the rules of v%s, the nearest earlier", ga, p); last && !strings.HasPrefix(got, want) {
				t.Errorf("%s: got %q, want %q...", build, got, want)
			}
		}
		alpha := fmt.Sprintf("v%d.%d.0-alpha.0", p.Major(), p.Minor())
		firstOfMinor := i == 0 || preReleases[i-1].Minor() != p.Minor()
		if got, want := unchecked(alpha), fmt.Sprintf("kubelet %s is an earlier %d.%d build than v%s, the first", alpha, p.Major(), p.Minor(), p); firstOfMinor && p.PreRelease() != "alpha.0" && !strings.HasPrefix(got, want) {
			t.Errorf("%s: got %q, want %q", alpha, got, want)
		}
	}
	next := fmt.Sprintf("v%d.%d.0", newest.Major(), newest.Minor()+1)
	if got, want := unchecked(next+"+"+GatePodLevelResourceManagers), fmt.Sprintf("kubelet %s is newer than every build this plugin was checked against: judged by the rules of the newest, v%s", next, newest); got != want {
		t.Errorf("%s: got %q, want %q", next, got, want)
	}
}

// Unchecked keeps its answers for a bounded number of builds: a node can report a new version
// at every heartbeat, and the plugin (a scheduler) runs for months. Past the bound the answers
// are still given, and still right.
func TestUncheckedKeepsBoundedAnswers(t *testing.T) {
	const builds = 3 * maxUncheckedKept
	for i := range builds {
		k, err := ParseKubelet(fmt.Sprintf("v1.99.%d", i), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := k.Unchecked(); !strings.Contains(got, fmt.Sprintf("kubelet v1.99.%d is newer than every build", i)) {
			t.Fatalf("v1.99.%d: %q", i, got)
		}
	}
	kept := 0
	uncheckedSaid.Range(func(_, _ any) bool { kept++; return true })
	if kept == 0 || kept > maxUncheckedKept {
		t.Errorf("%d answers kept after %d builds, want 1 to %d", kept, builds, maxUncheckedKept)
	}
}
