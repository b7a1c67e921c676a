package replay

import (
	"errors"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// numaInfo is topologymanager.NUMAInfo: the nodes and, with prefer-closest-numa-nodes, their
// distances.
type numaInfo struct {
	nodes     []int
	distances map[int][]uint64
}

func newNUMAInfo(m *machine.Machine, opts TopologyPolicyOptions) (*numaInfo, error) {
	n := &numaInfo{distances: map[int][]uint64{}}
	for _, id := range m.NodeIDs() {
		n.nodes = append(n.nodes, id)
		if !opts.PreferClosestNUMA {
			continue
		}
		node, _ := m.Node(id)
		if node.Distances == nil {
			return nil, errors.New("error getting NUMA distances from cadvisor")
		}
		n.distances[id] = node.Distances
	}
	return n, nil
}

func (n *numaInfo) defaultAffinityMask() BitMask {
	m, _ := NewBitMask(n.nodes...)
	return m
}

func (n *numaInfo) narrowest(m1, m2 BitMask) BitMask {
	if m1.IsNarrowerThan(m2) {
		return m1
	}
	return m2
}

func (n *numaInfo) averageDistance(m BitMask) float64 {
	if m.Count() == 0 {
		return 0
	}
	var sum, count float64
	for _, a := range m.GetBits() {
		for _, b := range m.GetBits() {
			if row := n.distances[a]; b < len(row) {
				sum += float64(row[b])
			}
			count++
		}
	}
	return sum / count
}

func (n *numaInfo) closest(m1, m2 BitMask) BitMask {
	if m1.Count() != m2.Count() {
		return n.narrowest(m1, m2)
	}
	d1, d2 := n.averageDistance(m1), n.averageDistance(m2)
	if d1 == d2 {
		if m1 < m2 {
			return m1
		}
		return m2
	}
	if d1 < d2 {
		return m1
	}
	return m2
}
