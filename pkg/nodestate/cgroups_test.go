package nodestate

import (
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

func TestReadCgroups(t *testing.T) {
	dump := []byte(cgroup.Header + "\n@hierarchy 1\n=./kubepods\n=./kubepods/podu1\n=./kubepods/podu1/c1\n./kubepods/podu1/c1/cpuset.cpus:3\n" + cgroup.End + "\n")
	pods := &fetch.PodIndex{Statuses: map[string][]fetch.ContainerStatus{"u1": {{Name: "app", ID: "containerd://c1", Running: true}}}}
	n, err := readCgroups(dump, pods)
	if err != nil || n.Containers["u1"]["app"] == nil || n.Containers["u1"]["app"].CPUs.Raw != "3" {
		t.Fatalf("%+v %v", n, err)
	}
	// Offline: the pods' directories only.
	if n, err := readCgroups(dump, nil); err != nil || n.Pods["u1"] == nil || len(n.Containers) != 0 {
		t.Errorf("%+v %v", n, err)
	}
	if _, err := readCgroups(nil, pods); err == nil || !strings.Contains(err.Error(), "no cgroup dump") {
		t.Errorf("%v", err)
	}
}
