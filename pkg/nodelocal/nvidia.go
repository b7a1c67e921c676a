package nodelocal

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// nvidiaSection prints machine.NVIDIAScript's section from procRoot (the host's /proc: its
// driver entries are not namespaced): for each GPU's information file, in the shell's glob
// order, the lines that start with one of machine.NVIDIAKeys, "address/information:line".
func nvidiaSection(procRoot string) []byte {
	var b bytes.Buffer
	b.WriteString(machine.NVIDIAHeader + "\n")
	dir := filepath.Join(procRoot, "driver", "nvidia", "gpus")
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "information"))
	for _, m := range matches {
		rel, err := filepath.Rel(dir, m)
		if err != nil {
			continue
		}
		f, err := os.Open(m)
		if err != nil {
			continue
		}
		data, _ := io.ReadAll(io.LimitReader(f, maxSysfsFile))
		f.Close()
		for _, line := range strings.Split(string(data), "\n") {
			for _, k := range machine.NVIDIAKeys {
				if strings.HasPrefix(line, k) {
					b.WriteString(filepath.ToSlash(rel) + ":" + line + "\n")
					break
				}
			}
		}
	}
	b.WriteString(machine.NVIDIAEnd + "\n")
	return b.Bytes()
}
