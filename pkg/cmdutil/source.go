package cmdutil

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

// SourceOptions are the flags every reading command shares: where the files come from and which
// kubelet to judge them for.
type SourceOptions struct {
	FromDir        string
	FromFile       string
	Kind           string
	KubeletVersion string
	FeatureGates   string
	KubeletRootDir string
	Output         string
	NoHeaders      bool

	// Set by Complete.
	Kubelet *decode.Kubelet
	Format  render.Format
}

// AddFlags registers the shared flags.
func (o *SourceOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.FromDir, "from-dir", "", "Read files copied off a node: a directory laid out like the kubelet root dir, or a tar/tar.gz of one")
	f.StringVar(&o.FromFile, "from-file", "", "Read one checkpoint file (its kind is taken from its name unless --kind is given)")
	f.StringVar(&o.Kind, "kind", "", "Kind of the --from-file file: "+strings.Join(kindNames(), ", "))
	f.StringVar(&o.KubeletVersion, "kubelet-version", "", "Judge the files as this kubelet version would on restart (e.g. v1.36.4); default: the node's version; offline, the version collect recorded, else the newest release that could have written all the files")
	f.StringVar(&o.FeatureGates, "feature-gates", "", "Feature gates of that kubelet, e.g. PodLevelResourceManagers=true")
	f.StringVar(&o.KubeletRootDir, "kubelet-root-dir", decode.DefaultRootDir, "The kubelet's --root-dir on the node")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: one of "+strings.Join(render.Formats, "|"))
	f.BoolVar(&o.NoHeaders, "no-headers", false, "Don't print headers")
	_ = cmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions(kindNames(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(render.Formats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagDirname("from-dir")
}

func kindNames() []string {
	var out []string
	for _, f := range decode.Files {
		out = append(out, string(f.Kind))
	}
	return out
}

// Complete parses the flags into a reader and an output format.
func (o *SourceOptions) Complete() error {
	format, err := render.ParseFormat(o.Output)
	if err != nil {
		return err
	}
	o.Format = format
	gates, err := ParseFeatureGates(o.FeatureGates)
	if err != nil {
		return err
	}
	if o.KubeletVersion != "" {
		k, err := decode.ParseKubelet(o.KubeletVersion, gates)
		if err != nil {
			return err
		}
		o.Kubelet = &k
	}
	return nil
}

// Validate checks that the source flags make sense together.
func (o *SourceOptions) Validate(nodes []string, allNodes bool) error {
	offline := o.FromDir != "" || o.FromFile != ""
	switch {
	case o.FromDir != "" && o.FromFile != "":
		return fmt.Errorf("--from-dir and --from-file cannot be used together")
	case offline && (len(nodes) > 0 || allNodes):
		return fmt.Errorf("node names and --all-nodes read live nodes; they cannot be combined with --from-dir or --from-file")
	case !offline && len(nodes) == 0 && !allNodes:
		return fmt.Errorf("you must name a node (or use --all-nodes), or read copied files with --from-dir or --from-file")
	case o.Kind != "" && o.FromFile == "":
		return fmt.Errorf("--kind only applies to --from-file")
	case o.FeatureGates != "" && o.KubeletVersion == "":
		return fmt.Errorf("--feature-gates needs --kubelet-version: gates only matter for the kubelet they belong to")
	}
	if o.Kind != "" {
		if _, ok := decode.ParseKind(o.Kind); !ok {
			return fmt.Errorf("unknown --kind %q: want one of %s", o.Kind, strings.Join(kindNames(), ", "))
		}
	}
	return nil
}

// Offline reports whether the files come from disk.
func (o *SourceOptions) Offline() bool { return o.FromDir != "" || o.FromFile != "" }

// ParseFeatureGates parses "A=true,B=false".
func ParseFeatureGates(s string) (map[string]bool, error) {
	gates := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		name, val, ok := strings.Cut(kv, "=")
		name = strings.TrimSpace(name)
		on, err := strconv.ParseBool(strings.TrimSpace(val))
		if !ok || err != nil || name == "" {
			return nil, fmt.Errorf("invalid --feature-gates entry %q: want Name=true|false", kv)
		}
		gates[name] = on
	}
	return gates, nil
}

// Snapshot is the checkpoint files of one node (or one copied directory).
type Snapshot struct {
	Node string
	// KubeletVersion is the node's status.nodeInfo.kubeletVersion (live nodes only).
	KubeletVersion string
	// Files maps a path relative to the kubelet root dir (or a --from-file path) to its bytes.
	Files map[string][]byte
	// Kinds maps --from-file paths to their kind (root-relative paths are known by name).
	Kinds     map[string]decode.Kind
	TempFiles []string
	Oversized []string
	Names     render.PodNames
	// Warnings are non-fatal problems reading the node.
	Warnings []string
	// Err is why the node could not be read at all.
	Err error
	// KubeletVersionFrom says where an offline KubeletVersion came from (a collect bundle).
	KubeletVersionFrom string

	// Set by Decode: which kubelet judged the files and why (one line), and the files no kubelet
	// writes beside the others (one line each).
	Judged   string
	Findings []string
}

// NodeInfoFile is what collect writes beside a node's files: the node and its kubelet version,
// so that a later --from-dir judges them by that kubelet.
const NodeInfoFile = "nodestate-node.json"

// NodeInfo is the content of NodeInfoFile.
type NodeInfo struct {
	Node           string `json:"node"`
	KubeletVersion string `json:"kubeletVersion,omitempty"`
}

// LoadOffline reads --from-dir or --from-file.
func (o *SourceOptions) LoadOffline() (*Snapshot, error) {
	if o.FromFile != "" {
		kindName := o.Kind
		if kindName == "" {
			kindName = path.Base(o.FromFile)
		}
		kind, ok := decode.ParseKind(kindName)
		if !ok {
			return nil, fmt.Errorf("cannot tell which checkpoint %s is: give the file its name on the node (e.g. cpu_manager_state) or pass --kind", o.FromFile)
		}
		b, err := local.ReadFile(o.FromFile, local.DefaultLimits)
		if err != nil {
			return nil, err
		}
		return &Snapshot{Files: map[string][]byte{o.FromFile: b}, Kinds: map[string]decode.Kind{o.FromFile: kind}}, nil
	}
	snap, err := local.Read(o.FromDir, append(decode.Paths(), NodeInfoFile), local.DefaultLimits)
	if err != nil {
		return nil, err
	}
	out := &Snapshot{Files: snap.Files, TempFiles: snap.TempFiles, Oversized: snap.Oversized}
	if b, ok := out.Files[NodeInfoFile]; ok {
		delete(out.Files, NodeInfoFile)
		var info NodeInfo
		if err := json.Unmarshal(b, &info); err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s is not what collect writes (%v): ignored", NodeInfoFile, err))
		} else if info.KubeletVersion != "" {
			out.KubeletVersion = info.KubeletVersion
			out.KubeletVersionFrom = fmt.Sprintf("node %s's version, recorded by collect in %s", info.Node, NodeInfoFile)
		}
	}
	return out, nil
}

// Decode judges every file of the snapshot, in the kubelet's file order, plus a row for each
// leftover temp file and each file over the size cap.
func (o *SourceOptions) Decode(s *Snapshot) ([]render.FileResult, error) {
	reader := o.Kubelet
	var versionNote string
	if reader == nil && s.KubeletVersion != "" {
		if k, err := decode.ParseKubelet(s.KubeletVersion, nil); err == nil {
			reader = &k
		} else {
			versionNote = fmt.Sprintf("the node reports kubelet version %q, which names no release: judged by the file's own format instead (see --kubelet-version)", s.KubeletVersion)
		}
	}
	why := ""
	switch {
	case o.Kubelet != nil:
		why = "--kubelet-version"
	case reader != nil && s.KubeletVersionFrom != "":
		why = s.KubeletVersionFrom
	case reader != nil:
		why = "the node's own kubelet version"
	}
	out := o.decodeFiles(s, reader, versionNote)
	// One node runs one kubelet: with none known, the newest that could have written the files
	// together judges them all; files no such kubelet writes are a finding either way.
	var formats []decode.FileFormat
	for _, r := range out {
		formats = append(formats, decode.FileFormat{File: r.File, Kind: r.Kind, Format: r.Format})
	}
	if judge, ok := decode.ChooseJudge(formats); ok {
		if reader == nil {
			reader, why = &judge.Kubelet, judge.Why()
			out = o.decodeFiles(s, reader, versionNote)
		}
		s.Findings = apartFindings(out, judge)
	}
	if reader != nil {
		s.Judged = fmt.Sprintf("Judged by kubelet %s: %s.", reader, why)
	}
	for _, p := range s.Oversized {
		// The kind lets the show commands warn about (and count) an oversized file of theirs.
		kind, _ := decode.ParseKind(p)
		msg := fmt.Sprintf("larger than the %d MiB cap for a checkpoint; not read", decode.MaxFileSize>>20)
		out = append(out, render.FileResult{Node: s.Node, Report: &decode.Report{File: p, Kind: kind, Verdict: decode.Unreadable,
			Error: msg, Cause: fmt.Sprintf("over the %d MiB cap; not read", decode.MaxFileSize>>20)}})
	}
	for _, p := range s.TempFiles {
		out = append(out, render.FileResult{Node: s.Node, Report: &decode.Report{File: p, Verdict: decode.NotRead,
			Error: "leftover temp file of an interrupted kubelet write; the kubelet ignores it and it is safe to delete",
			Cause: "temp file of an interrupted write; safe to delete"}})
	}
	return out, nil
}

// decodeFiles judges every file of the snapshot for reader (nil: each file's own era).
func (o *SourceOptions) decodeFiles(s *Snapshot, reader *decode.Kubelet, versionNote string) []render.FileResult {
	opts := decode.Options{Kubelet: reader, RootDir: o.KubeletRootDir}
	var out []render.FileResult
	for _, p := range sortedPaths(s) {
		kind, ok := s.Kinds[p]
		if !ok {
			kind, _ = decode.ParseKind(p)
		}
		rep := decode.Decode(kind, s.Files[p], opts)
		rep.File = p
		if versionNote != "" {
			rep.Notes = append(rep.Notes, versionNote)
		}
		out = append(out, render.FileResult{Node: s.Node, Report: rep})
	}
	return out
}

// apartFindings marks the files the judge's writers never write beside the others, and says
// each in one line.
func apartFindings(out []render.FileResult, judge decode.Judge) []string {
	var lines []string
	var others []string
	for _, f := range judge.Writes {
		others = append(others, f.File)
	}
	for _, f := range judge.Apart {
		for _, r := range out {
			if r.File == f.File {
				r.Apart = true
			}
		}
		lines = append(lines, fmt.Sprintf("Finding: %s (%s) is written only by kubelet %s, never by the kubelet that wrote %s: another kubelet left it, and none has rewritten it since.",
			f.File, f.Format, decode.WrittenBy(f.Kind, f.Format), joinAnd(others)))
	}
	return lines
}

// joinAnd lists names: "a", "a and b", "a, b and c".
func joinAnd(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// sortedPaths orders files as decode.Files lists them, then any --from-file path.
func sortedPaths(s *Snapshot) []string {
	rank := map[string]int{}
	for i, f := range decode.Files {
		rank[f.Path] = i
	}
	paths := make([]string, 0, len(s.Files))
	for p := range s.Files {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool {
		ri, iok := rank[paths[i]]
		rj, jok := rank[paths[j]]
		if iok != jok {
			return iok
		}
		if ri != rj {
			return ri < rj
		}
		return paths[i] < paths[j]
	})
	return paths
}
