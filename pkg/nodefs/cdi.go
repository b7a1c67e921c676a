package nodefs

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// CDI section: the CDI spec files of the spec dirs, each framed by its byte count (a spec is
// YAML or JSON text, which may hold any line):
//
//	@@nodestate-cdi v1
//	@@file /var/run/cdi/example.com-gpu.yaml 312
//	<312 bytes>
//	@@big /etc/cdi/huge.json 99999999        (over MaxSpecBytes: named, not printed)
//	@@end
const (
	CDIHeader = "@@nodestate-cdi v1"
	// MaxSpecBytes bounds one spec file; MaxSpecs the files; MaxCDIBytes the section.
	MaxSpecBytes = 4 << 20
	MaxSpecs     = 1024
	MaxCDIBytes  = 16 << 20
)

// CDIDirs are the spec dirs a container runtime reads by default (the CDI spec's
// DefaultStaticDir and DefaultDynamicDir); on the node and, mounted read-only, in the debug pod.
var CDIDirs = []string{"/etc/cdi", "/var/run/cdi"}

// CDIDir is one spec dir: its path on the node, and where the script finds it (the same path
// on the node, a mount in the debug pod), as a shell word that may expand a variable.
type CDIDir struct {
	Node, Here string
}

// CDIScript prints the section for dirs. Only *.json and *.yaml files count, as the CDI
// registry reads them.
func CDIScript(dirs []CDIDir) string {
	var b strings.Builder
	b.WriteString(`echo "` + CDIHeader + `"; `)
	for _, d := range dirs {
		fmt.Fprintf(&b, `for f in %s/*.json %s/*.yaml; do [ -f "$f" ] || continue; n=$((0 + $(wc -c <"$f"))); `+
			`if [ "$n" -gt %d ]; then echo "@@big %s/${f##*/} $n"; else echo "@@file %s/${f##*/} $n"; cat "$f"; echo; fi; done; `,
			d.Here, d.Here, MaxSpecBytes, d.Node, d.Node)
	}
	b.WriteString(`echo "` + End + `"`)
	return b.String()
}

// SpecFile is one spec file of the section.
type SpecFile struct {
	Path string
	Data []byte
	// Size is the file's size; over MaxSpecBytes its Data is nil.
	Size int64
}

// ParseCDIDump reads the CDI section into its files, in their order.
func ParseCDIDump(b []byte) ([]SpecFile, error) {
	if len(b) > MaxCDIBytes {
		return nil, fmt.Errorf("CDI section: %d bytes, over the %d-byte limit", len(b), MaxCDIBytes)
	}
	text := string(b)
	i := strings.Index(text, CDIHeader+"\n")
	if i < 0 {
		return nil, fmt.Errorf("no %q header", CDIHeader)
	}
	rest := text[i+len(CDIHeader)+1:]
	var files []SpecFile
	for {
		line, after, ok := strings.Cut(rest, "\n")
		if !ok && line != End {
			return nil, fmt.Errorf("CDI section: cut short (no %q)", End)
		}
		if line == End {
			return files, nil
		}
		if len(files) == MaxSpecs {
			return nil, fmt.Errorf("CDI section: over %d spec files", MaxSpecs)
		}
		kind, f, err := specLine(line)
		if err != nil {
			return nil, err
		}
		rest = after
		if kind == "@@file" {
			if int64(len(rest)) < f.Size+1 || rest[f.Size] != '\n' {
				return nil, fmt.Errorf("CDI section: %s: not the %d bytes announced", f.Path, f.Size)
			}
			f.Data, rest = []byte(rest[:f.Size]), rest[f.Size+1:]
		}
		files = append(files, f)
	}
}

// specLine parses "@@file PATH SIZE" or "@@big PATH SIZE".
func specLine(line string) (string, SpecFile, error) {
	kind, rest, _ := strings.Cut(line, " ")
	i := strings.LastIndexByte(rest, ' ')
	if (kind != "@@file" && kind != "@@big") || i < 0 {
		return "", SpecFile{}, fmt.Errorf("CDI section: unexpected %q", truncate(line))
	}
	p := rest[:i]
	size, err := strconv.ParseInt(strings.TrimSpace(rest[i+1:]), 10, 64)
	switch {
	case err != nil || size < 0:
		return "", SpecFile{}, fmt.Errorf("CDI section: %q: bad size", truncate(line))
	case kind == "@@file" && size > MaxSpecBytes:
		return "", SpecFile{}, fmt.Errorf("CDI section: %s: %d bytes, over the %d-byte limit", truncate(p), size, MaxSpecBytes)
	case !path.IsAbs(p) || path.Clean(p) != p:
		return "", SpecFile{}, fmt.Errorf("CDI section: %q is not a clean absolute path", truncate(p))
	}
	return kind, SpecFile{Path: p, Size: size}, nil
}

// Spec is what doctor needs of a CDI spec: its kind ("vendor.com/class") and device names.
type Spec struct {
	Version string   `json:"cdiVersion"`
	Kind    string   `json:"kind"`
	Devices []string `json:"-"`
}

// ParseSpec reads a CDI spec (YAML or JSON). It checks the kind and device names as the CDI
// registry does before it resolves a device: "vendor/class", names of letters, digits, "-",
// "_", "." and ":".
func ParseSpec(data []byte) (*Spec, error) {
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("%d bytes, over the %d-byte limit", len(data), MaxSpecBytes)
	}
	var raw struct {
		Version string `json:"cdiVersion"`
		Kind    string `json:"kind"`
		Devices []struct {
			Name string `json:"name"`
		} `json:"devices"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if raw.Version == "" {
		return nil, fmt.Errorf("no cdiVersion")
	}
	if err := checkKind(raw.Kind); err != nil {
		return nil, err
	}
	spec := &Spec{Version: raw.Version, Kind: raw.Kind}
	for _, d := range raw.Devices {
		if err := checkName(d.Name); err != nil {
			return nil, fmt.Errorf("device %q: %w", truncate(d.Name), err)
		}
		spec.Devices = append(spec.Devices, d.Name)
	}
	if len(spec.Devices) == 0 {
		return nil, fmt.Errorf("no devices")
	}
	return spec, nil
}

// checkKind: "vendor/class", the vendor a domain-like name, the class a name.
func checkKind(kind string) error {
	vendor, class, ok := strings.Cut(kind, "/")
	if !ok || vendor == "" || class == "" {
		return fmt.Errorf("kind %q is not vendor/class", truncate(kind))
	}
	for _, r := range vendor {
		if !isAlnum(r) && r != '.' && r != '-' && r != '_' {
			return fmt.Errorf("kind %q: invalid vendor", truncate(kind))
		}
	}
	for _, r := range class {
		if !isAlnum(r) && r != '-' && r != '_' {
			return fmt.Errorf("kind %q: invalid class", truncate(kind))
		}
	}
	return nil
}

func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("empty device name")
	}
	for _, r := range name {
		if !isAlnum(r) && !strings.ContainsRune("-_.:", r) {
			return fmt.Errorf("invalid device name")
		}
	}
	return nil
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// Registry is the qualified CDI device names ("vendor.com/class=name") the spec files define,
// each with the file defining it, and the files that could not be read.
type Registry struct {
	Devices map[string]string
	// Problems are "FILE: why" for spec files the runtime would skip.
	Problems []string
}

// NewRegistry reads spec files as a runtime's CDI cache would: a device defined in two files
// resolves to the later dir's (/var/run/cdi over /etc/cdi, in the order given).
func NewRegistry(files []SpecFile) Registry {
	reg := Registry{Devices: map[string]string{}}
	for _, f := range files {
		if f.Data == nil {
			reg.Problems = append(reg.Problems, fmt.Sprintf("%s: %d bytes, not read (over %d)", f.Path, f.Size, MaxSpecBytes))
			continue
		}
		spec, err := ParseSpec(f.Data)
		if err != nil {
			reg.Problems = append(reg.Problems, fmt.Sprintf("%s: %v", f.Path, err))
			continue
		}
		for _, d := range spec.Devices {
			reg.Devices[spec.Kind+"="+d] = f.Path
		}
	}
	sort.Strings(reg.Problems)
	return reg
}
