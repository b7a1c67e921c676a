package replay

import (
	"errors"
	"testing"

	"k8s.io/utils/cpuset"
)

// Cases of the kubelet's own TestTakeByTopologyNUMAPacked (1.37, cpu_assignment_test.go) on its
// topoDualSocketHT, to hold the port of the accumulator to the original.
func TestTakeByTopologyAsKubelet(t *testing.T) {
	topo := &CPUTopology{NumCPUs: 12, NumSockets: 2, NumCores: 6, NumNUMANodes: 2, CPUDetails: CPUDetails{}}
	for cpu := 0; cpu < 12; cpu++ {
		core := cpu % 6
		topo.CPUDetails[cpu] = CPUInfo{CoreID: core, SocketID: core % 2, NUMANodeID: core % 2}
	}
	topo.NumUncoreCache = 1
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
		strategy := CPUSortingStrategyPacked
		if tc.spread {
			strategy = CPUSortingStrategySpread
		}
		got, _ := TakeByTopologyNUMAPacked(topo, avail, tc.n, strategy, tc.preferUncore)
		if got.String() != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

// gridTopology: sockets x NUMA nodes per socket x cores per NUMA node x threads, numbered as
// the kubelet's test topologies are: core = cpu % cores, its threads cpu, cpu + cores, ...
func gridTopology(sockets, numaPerSocket, coresPerNUMA, threads int) *CPUTopology {
	cores := sockets * numaPerSocket * coresPerNUMA
	topo := &CPUTopology{NumCPUs: cores * threads, NumSockets: sockets, NumCores: cores, NumNUMANodes: sockets * numaPerSocket, NumUncoreCache: 1, CPUDetails: CPUDetails{}}
	for cpu := 0; cpu < cores*threads; cpu++ {
		core := cpu % cores
		topo.CPUDetails[cpu] = CPUInfo{CoreID: core, SocketID: core / (numaPerSocket * coresPerNUMA), NUMANodeID: core / coresPerNUMA}
	}
	return topo
}

// topoDualSocketMultiNumaPerSocketHT of the kubelet's policy_test.go: 2 sockets, 4 NUMA nodes,
// 40 cores of 2 threads (cpu c and c+40).
func dualSocketMultiNUMA() *CPUTopology { return gridTopology(2, 2, 10, 2) }

// Cases of the kubelet's TestTakeByTopologyNUMADistributed (1.37).
func TestTakeByTopologyNUMADistributedAsKubelet(t *testing.T) {
	for _, tc := range []struct {
		name, available string
		n, group        int
		want            string
	}{
		{"allocate 13 full cores distributed across the first 2 NUMA nodes", "0-79", 26, 1, "0-6,10-16,40-45,50-55"},
		{"allocate 13 full cores distributed across the first 2 NUMA nodes (cpuGroupSize 2)", "0-79", 26, 2, "0-6,10-15,40-46,50-55"},
		{"31 cores, 1 CPU spilling over to NUMA 0, 1", "0-79", 62, 1, "0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76"},
		{"31 cores, 2 CPUs spilling over to NUMA 0, 1, 2 (cpuGroupSize 2)", "0-79", 62, 2, "0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76"},
		{"31 cores, spilling over to NUMA 2, 3 to keep balance", "0-8,10-18,20-39,40-48,50-58,60-79", 62, 1, "0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77"},
		{"31 cores, spilling over to NUMA 0, 2, 3 (cpuGroupSize 2)", "0-8,10-18,20-39,40-48,50-58,60-79", 62, 2, "0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77"},
		{"bestRemainder with NUMA nodes that have enough CPUs", "0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76", 34, 1, "0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74"},
	} {
		avail, err := cpuset.Parse(tc.available)
		if err != nil {
			t.Fatal(err)
		}
		got, err := TakeByTopologyNUMADistributed(dualSocketMultiNUMA(), avail, tc.n, tc.group, CPUSortingStrategyPacked, false)
		if err != nil || got.String() != tc.want {
			t.Errorf("%s: got %s (%v), want %s", tc.name, got, err, tc.want)
		}
	}
}

// twoSocketsFourNUMA: 2 sockets of 2 NUMA nodes, 4 cores of 2 threads per NUMA node (CPU c
// and c+16 are siblings).
func twoSocketsFourNUMA() *CPUTopology { return gridTopology(2, 2, 4, 2) }

// The kubelet's takeByTopologyNUMADistributed loops forever when the remainder NUMA nodes hold
// enough CPUs but too few whole groups (kubernetes/kubernetes#140730): the replay must say so,
// at once, and must not take that for any input that terminates in the kubelet.
func TestTakeByTopologyNUMADistributedHangs(t *testing.T) {
	avail, err := cpuset.Parse("0-8,10-14,17-22,24-25,27-29")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		group         int
		alignBySocket bool
		hangs         bool
	}{
		{"whole cores, align-by-socket", 2, true, true},
		{"whole cores", 2, false, true},
		{"single CPUs (no full-pcpus-only)", 1, true, false},
	} {
		got, err := TakeByTopologyNUMADistributed(twoSocketsFourNUMA(), avail, 22, tc.group, CPUSortingStrategyPacked, tc.alignBySocket)
		if hangs := errors.Is(err, ErrKubeletHangs); hangs != tc.hangs {
			t.Errorf("%s: got %s, %v; want hangs=%v", tc.name, got, err, tc.hangs)
		}
		if !tc.hangs && (err != nil || got.Size() != 22 || !got.IsSubsetOf(avail)) {
			t.Errorf("%s: got %s, %v; want 22 of %s", tc.name, got, err, avail)
		}
	}
}

// FuzzTakeByTopology: on any machine of up to 64 CPUs and any free set, the pickers return
// (a loop that never ends is the kubelet's only as ErrKubeletHangs), take only free CPUs, and
// take exactly as many as asked when they succeed.
func FuzzTakeByTopology(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(3), uint8(1), uint64(0x3b7e7dff), uint8(21), true, true, false) // the hang of TestTakeByTopologyNUMADistributedHangs
	f.Add(uint8(1), uint8(1), uint8(4), uint8(2), uint64(0xfe), uint8(3), false, false, true)
	f.Fuzz(func(t *testing.T, sockets, numaPerSocket, coresPerNUMA, threads uint8, free uint64, n uint8, distribute, alignOrUncore, spread bool) {
		th := int(threads%2) + 1
		topo := gridTopology(int(sockets%2)+1, int(numaPerSocket%4)+1, int(coresPerNUMA%4)+1, th)
		var ids []int
		for cpu := 0; cpu < topo.NumCPUs; cpu++ {
			if free&(1<<uint(cpu)) != 0 {
				ids = append(ids, cpu)
			}
		}
		available := cpuset.New(ids...)
		want := int(n)%(available.Size()+1) + 1
		strategy := CPUSortingStrategyPacked
		if spread {
			strategy = CPUSortingStrategySpread
		}
		var got cpuset.CPUSet
		var err error
		if distribute {
			got, err = TakeByTopologyNUMADistributed(topo, available, want, th, strategy, alignOrUncore)
		} else {
			got, err = TakeByTopologyNUMAPacked(topo, available, want, strategy, alignOrUncore)
		}
		if err != nil {
			return
		}
		if got.Size() != want || !got.IsSubsetOf(available) {
			t.Fatalf("took %s (%d) of %s, asked %d", got, got.Size(), available, want)
		}
	})
}
