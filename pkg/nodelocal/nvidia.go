package nodelocal

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// nvidiaSection prints machine.NVIDIAScript's section from procRoot (the host's /proc: its
// driver entries are not namespaced): for each GPU's information file, in the shell's glob
// order, the lines that start with one of machine.NVIDIAKeys, "address/information:line".
func nvidiaSection(procRoot string) []byte {
	var b bytes.Buffer
	b.WriteString(machine.NVIDIAHeader + "\n")
	grepLines(&b, filepath.Join(procRoot, "driver", "nvidia", "gpus"), "*/information", "", func(line string) bool {
		return slices.ContainsFunc(machine.NVIDIAKeys, func(k string) bool { return strings.HasPrefix(line, k) })
	})
	b.WriteString(machine.NVIDIAEnd + "\n")
	return b.Bytes()
}
