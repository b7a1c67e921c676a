package nodelocal

import (
	"bytes"
	"path/filepath"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// pciSection prints machine.PCIScript's section from sysRoot (the host's /sys): each PCI
// function's numa_node, "address/numa_node:node", in the shell's glob order.
func pciSection(sysRoot string) []byte {
	var b bytes.Buffer
	b.WriteString(machine.PCIHeader + "\n")
	grepGlob(&b, filepath.Join(sysRoot, "bus", "pci", "devices"), "*/numa_node", "", "")
	b.WriteString(machine.PCIEnd + "\n")
	return b.Bytes()
}
