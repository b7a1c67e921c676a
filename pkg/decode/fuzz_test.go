package decode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzReaders are the kubelets each fuzz input is also judged for.
var fuzzReaders = []string{"v1.17.17", "v1.20.15", "v1.35.8", "v1.36.4", "v1.36.4+PodLevelResourceManagers", "v1.37.1"}

// seedFuzz adds every vector of a kind as a seed.
func seedFuzz(f *testing.F, kind Kind) {
	err := filepath.WalkDir(filepath.Join(vectorsDir, string(kind)), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
}

func fuzzDecode(f *testing.F, kind Kind) {
	seedFuzz(f, kind)
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkReport(t, Decode(kind, raw, Options{}))
		for _, label := range fuzzReaders {
			k := MustParseKubelet(label)
			checkReport(t, Decode(kind, raw, Options{Kubelet: &k}))
		}
		HashedText(kind, raw)
	})
}

func FuzzDecodeCPU(f *testing.F)     { fuzzDecode(f, KindCPU) }
func FuzzDecodeMemory(f *testing.F)  { fuzzDecode(f, KindMemory) }
func FuzzDecodeDevices(f *testing.F) { fuzzDecode(f, KindDevices) }
