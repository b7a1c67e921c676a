package doctor

import (
	"testing"

	"k8s.io/utils/cpuset"
)

// Cases of the kubelet's own TestTakeByTopologyNUMAPacked (1.37, cpu_assignment_test.go) on its
// topoDualSocketHT, to hold the port of the accumulator to the original.
func TestTakeByTopologyAsKubelet(t *testing.T) {
	topo := &cpuTopology{NumCPUs: 12, NumSockets: 2, NumCores: 6, NumNUMANodes: 2, Details: map[int]cpuInfo{}}
	for cpu := 0; cpu < 12; cpu++ {
		core := cpu % 6
		topo.Details[cpu] = cpuInfo{Core: core, Socket: core % 2, NUMA: core % 2}
	}
	for _, tc := range []struct {
		name         string
		available    string
		n            int
		preferUncore bool
		want         string
		spread       bool
	}{
		{"distribute-cpus-across-cores: 2 CPUs spread over cores", "0-11", 2, false, "0,2", true},
		{"distribute-cpus-across-cores: 3 CPUs spread over cores", "0-11", 3, false, "0,2,4", true},
		{"take one cpu from dual socket with HT - core from Socket 0", "1-5,7-11", 1, false, "2", false},
		{"allocate 4 full cores with 3 coming from the first NUMA node and 1 from the second", "0-11", 8, false, "0-2,4,6-8,10", false},
		{"take one cpu from dual socket with HT - core from Socket 0, prefer uncore", "1-5,7-11", 1, true, "1", false},
	} {
		avail, err := cpuset.Parse(tc.available)
		if err != nil {
			t.Fatal(err)
		}
		got := takeByTopology(topo, avail, tc.n, tc.spread, tc.preferUncore)
		if got.String() != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}
