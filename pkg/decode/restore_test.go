package decode

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	state "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/cpustate"
)

// Files whose checksums are right (computed by the kubelet's own algorithm, kubeletDeepHash)
// but whose CPU sets the kubelet's restoreState cannot parse, judged by every reader era. The
// expected texts are the kubelet's (docs/restore-checks.md gives the source lines).

// cpuFileV1 is a 1.12-1.17 file: container ID -> set.
func cpuFileV1(t *testing.T, defaultSet string, entries map[string]string) []byte {
	cp := &state.CPUManagerCheckpointV1{PolicyName: "static", DefaultCPUSet: defaultSet, Entries: entries}
	cp.Checksum = 0
	sum := kubeletDeepHash(cp, "CPUManagerCheckpointV1", "CPUManagerCheckpoint")
	return withChecksum(t, cp, `"checksum":0`, fmt.Sprintf(`"checksum":%d`, sum))
}

// cpuFileV2 is a 1.18-1.36 file: pod -> container -> set.
func cpuFileV2(t *testing.T, defaultSet string, entries map[string]map[string]string) []byte {
	cp := &state.CPUManagerCheckpointV2{PolicyName: "static", DefaultCPUSet: defaultSet, Entries: entries}
	sum := kubeletDeepHash(cp, "CPUManagerCheckpointV2", "CPUManagerCheckpoint")
	return withChecksum(t, cp, `"checksum":0`, fmt.Sprintf(`"checksum":%d`, sum))
}

// cpuFileV4 is a 1.37+ file: the V2 fields (outer checksum left 0, which 1.37 never checks) and
// the data document with its dataChecksum.
func cpuFileV4(t *testing.T, data state.CPUManagerCheckpointData) []byte {
	doc, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	cp := &state.CPUManagerCheckpoint{CPUManagerCheckpointV2: state.CPUManagerCheckpointV2{PolicyName: data.PolicyName,
		DefaultCPUSet: data.DefaultCPUSet, Entries: data.Entries}, Data: string(doc)}
	sum := kubeletDeepHash(string(doc), "", "")
	return withChecksum(t, cp, `"dataChecksum":0`, fmt.Sprintf(`"dataChecksum":%d`, sum))
}

func withChecksum(t *testing.T, v any, zero, sum string) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), zero) {
		t.Fatalf("no %s in %s", zero, raw)
	}
	return []byte(strings.Replace(string(raw), zero, sum, 1))
}

const cpuPath = `"/var/lib/kubelet/cpu_manager_state"`

func wrapped117(cause string) string {
	return "could not restore state from checkpoint: " + cause + "\nPlease drain this node and delete the CPU manager checkpoint file " + cpuPath + " before restarting Kubelet."
}

func wrapped(cause string) string {
	return "could not restore state from checkpoint: " + cause + ", please drain this node and delete the CPU manager checkpoint file " + cpuPath + " before restarting Kubelet"
}

func TestCPURestoreChecks(t *testing.T) {
	pod := "6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f"
	v1 := func(def, set string) func(*testing.T) []byte {
		return func(t *testing.T) []byte { return cpuFileV1(t, def, map[string]string{"c1": set}) }
	}
	v2 := func(def, set string) func(*testing.T) []byte {
		return func(t *testing.T) []byte { return cpuFileV2(t, def, map[string]map[string]string{pod: {"app": set}}) }
	}
	v4 := func(def, set, baseline string) func(*testing.T) []byte {
		return func(t *testing.T) []byte {
			d := state.CPUManagerCheckpointData{PolicyName: "static", DefaultCPUSet: def, Entries: map[string]map[string]string{pod: {"app": set}}}
			if baseline != "" {
				d.Baselines = map[string]map[string]state.ContainerCPUs{pod: {"app": {Baseline: baseline}}}
			}
			return cpuFileV4(t, d)
		}
	}
	atoi := func(s string) string { return fmt.Sprintf("strconv.Atoi: parsing %q: invalid syntax", s) }
	cases := []struct {
		name, reader string
		file         func(*testing.T) []byte
		want         string // "" for valid
	}{
		// 1.12-1.17: V1, entries by container ID, no range check.
		{"v1 default", "v1.17.17", v1("2,x", "3"), wrapped117(`could not parse default cpu set "2,x": ` + atoi("x"))},
		{"v1 entry", "v1.17.17", v1("0-1", "seven"), wrapped117(`could not parse cpuset "seven" for container id "c1": ` + atoi("seven"))},
		{"v1 reversed range accepted", "v1.17.17", v1("5-3", "3"), ""},
		{"v1 three-part range skipped", "v1.17.17", v1("1-2-3", "3"), ""},
		{"v1 empty sets", "v1.17.17", v1("", ""), ""},
		// 1.18-1.21: V2, same parser.
		{"v2 default 1.18", "v1.18.20", v2("2,x", "3"), wrapped(`could not parse default cpu set "2,x": ` + atoi("x"))},
		{"v2 entry 1.21", "v1.21.14", v2("0-1", "seven"), wrapped(`could not parse cpuset "seven" for container "app" in pod "` + pod + `": ` + atoi("seven"))},
		{"v2 reversed 1.21", "v1.21.14", v2("0-1", "5-3"), ""},
		{"v2 trailing comma 1.20", "v1.20.15", v2("2,", "3"), wrapped(`could not parse default cpu set "2,": ` + atoi(""))},
		// A V1 file read by 1.18+: migrated through the runtime, whose names the file lacks.
		{"v1 read by 1.19", "v1.19.16", v1("0-1", "x"), wrapped(`could not parse cpuset "x" for container "<name of container c1>" in pod "<UID of the pod of container c1>": ` + atoi("x"))},
		// 1.22-1.26: SplitN and "(a >= b)".
		{"v2 reversed 1.22", "v1.22.5", v2("5-3", "3"), wrapped(`could not parse default cpu set "5-3": invalid range "5-3" (5 >= 3)`)},
		{"v2 three-part 1.25", "v1.25.16", v2("0-1", "1-2-3"), wrapped(`could not parse cpuset "1-2-3" for container "app" in pod "` + pod + `": ` + atoi("2-3"))},
		// "3-3" is one CPU for every release (each checks start > end; 1.22-1.26 only word it ">=").
		{"v1 equal range 1.17", "v1.17.17", v1("3-3", "3-3"), ""},
		{"v2 equal range 1.26", "v1.26.0", v2("3-3", "3-3"), ""},
		{"v2 equal range 1.27", "v1.27.0", v2("3-3", "3-3"), ""},
		{"v4 equal range 1.37", HomeKubelet, v4("3-3", "3-3", ""), ""},
		{"v2 reversed 1.26", "v1.26.0", v2("0-1", "5-3"), wrapped(`could not parse cpuset "5-3" for container "app" in pod "` + pod + `": invalid range "5-3" (5 >= 3)`)},
		// 1.27-1.36: "(a > b)".
		{"v2 reversed 1.27", "v1.27.0", v2("5-3", "3"), wrapped(`could not parse default cpu set "5-3": invalid range "5-3" (5 > 3)`)},
		{"v2 reversed 1.28", "v1.28.15", v2("0-1", "9-4"), wrapped(`could not parse cpuset "9-4" for container "app" in pod "` + pod + `": invalid range "9-4" (9 > 4)`)},
		{"v2 default 1.35", "v1.35.8", v2("seven", "3"), wrapped(`could not parse default cpu set "seven": ` + atoi("seven"))},
		{"v2 default 1.36", "v1.36.4", v2("2,x", "3"), wrapped(`could not parse default cpu set "2,x": ` + atoi("x"))},
		{"v2 entry 1.36 gate on", "v1.36.4+PodLevelResourceManagers", v2("0-1", "x-1"), wrapped(`could not parse cpuset "x-1" for container "app" in pod "` + pod + `": ` + atoi("x"))},
		// 1.37+: the data document, "default CPU set", baselines with their gate.
		{"v4 default", HomeKubelet, v4("2,x", "3", ""), wrapped(`could not parse default CPU set "2,x": ` + atoi("x"))},
		{"v4 entry", "v1.38.0-alpha.0", v4("0-1", "seven", ""), wrapped(`could not parse cpuset "seven" for container "app" in pod "` + pod + `": ` + atoi("seven"))},
		{"v4 baseline, gate off", HomeKubelet, v4("0-1", "3", "x"), ""},
		{"v4 baseline, gate on", HomeKubelet + "+InPlacePodVerticalScalingExclusiveCPUs", v4("0-1", "3", "x"),
			wrapped(`could not parse Baseline cpuset "x" for container "app" in pod "` + pod + `": ` + atoi("x"))},
		{"v2 read by 1.37", HomeKubelet, v2("2,x", "3"), wrapped(`could not parse default CPU set "2,x": ` + atoi("x"))},
		{"v4 read by 1.36 through V2", "v1.36.4", v4("2,x", "3", ""), wrapped(`could not parse default cpu set "2,x": ` + atoi("x"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := c.file(t)
			k := mustParseKubelet(c.reader)
			rep := Decode(KindCPU, raw, Options{Kubelet: &k})
			if c.want == "" {
				if rep.Verdict != Valid {
					t.Fatalf("%s: verdict %s (%s), want valid", c.reader, rep.Verdict, rep.Error)
				}
				return
			}
			if rep.Verdict != Unreadable || rep.Error != c.want {
				t.Fatalf("%s: %s\n got %q\nwant %q", c.reader, rep.Verdict, rep.Error, c.want)
			}
			for _, cs := range rep.Checksums {
				if cs.Field == "checksum" && cs.Stored == 0 {
					continue // the V4 outer checksum, left 0
				}
				if !cs.Match {
					t.Errorf("%s does not match: the test file is wrong", cs.Field)
				}
			}
			if len(rep.Notes) == 0 || !strings.Contains(strings.Join(rep.Notes, "\n"), "restore refuses its content") {
				t.Errorf("notes %q: want the restore note", rep.Notes)
			}
		})
	}
}

// Several bad sets: the kubelet's map order is random, ours names the first in sorted order.
func TestCPURestoreChecksDeterministic(t *testing.T) {
	raw := cpuFileV2(t, "0-1", map[string]map[string]string{"b": {"z": "y", "a": "x"}, "a": {"c": "w"}})
	for i := 0; i < 20; i++ {
		rep := judge(t, KindCPU, raw, "v1.35.8")
		if !strings.Contains(rep.Error, `cpuset "w" for container "c" in pod "a"`) {
			t.Fatalf("run %d: %s", i, rep.Error)
		}
	}
}

// The parser never builds the set: a huge range is only checked.
func TestCPUSetParserHugeRange(t *testing.T) {
	if err := cpusetGT.parse("0-2000000000"); err != nil {
		t.Fatal(err)
	}
	if err := cpusetGT.parse("99999999999999999999"); err == nil || !strings.Contains(err.Error(), "value out of range") {
		t.Fatalf("got %v", err)
	}
}

// kubeletParse is the kubelet's cpuset.Parse loop as written (strings.Split, then Split or
// SplitN), minus building the set: the reference the allocation-free parser must equal.
func kubeletParse(p cpusetParser, s string) error {
	if s == "" {
		return nil
	}
	for _, r := range strings.Split(s, ",") {
		bounds := strings.SplitN(r, "-", 2)
		if p.splitAll {
			bounds = strings.Split(r, "-")
		}
		if len(bounds) == 1 {
			if _, err := strconv.Atoi(bounds[0]); err != nil {
				return err
			}
		} else if len(bounds) == 2 {
			start, err := strconv.Atoi(bounds[0])
			if err != nil {
				return err
			}
			end, err := strconv.Atoi(bounds[1])
			if err != nil {
				return err
			}
			if start > end && p.reversed != "" {
				return fmt.Errorf(p.reversed, r, start, end)
			}
		}
	}
	return nil
}

func TestCPUSetParserMatchesKubelet(t *testing.T) {
	alphabet := []string{"0", "1", "7", "12", "-", ",", "x", "+", " ", "99999999999999999999"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.IntN(7); n >= 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		for _, p := range []cpusetParser{cpusetUnchecked, cpusetGE, cpusetGT} {
			got, want := fmt.Sprint(p.parse(s)), fmt.Sprint(kubeletParse(p, s))
			if got != want {
				t.Fatalf("%+v on %q: %s, kubelet %s", p, s, got, want)
			}
		}
	}
}

func FuzzCPUSetParser(f *testing.F) {
	for _, s := range []string{"", "0-3,7", "2,x", "5-3", "1-2-3", "--", "0-1,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range []cpusetParser{cpusetUnchecked, cpusetGE, cpusetGT} {
			if got, want := fmt.Sprint(p.parse(s)), fmt.Sprint(kubeletParse(p, s)); got != want {
				t.Fatalf("%+v on %q: %s, kubelet %s", p, s, got, want)
			}
		}
	})
}

// The recorded vectors (hack/restorevec: files written and judged by each release's real code)
// must exercise every row of the CPU restore table, each of its texts and its parser's
// behaviour, through a real reader of that row: a row or text no real restore confirms fails
// here, so a new era needs its vectors.
func TestCPURestoreRowsConfirmedByRecordedVectors(t *testing.T) {
	type judgement struct {
		reader    Kubelet
		file      string
		valid     bool
		errorText string
	}
	var reads []judgement
	for _, e := range loadManifest(t) {
		if e.Component != string(KindCPU) || !strings.HasPrefix(e.Case, "restore-") {
			continue
		}
		for label, r := range e.Reads {
			j := judgement{reader: mustParseKubelet(label), file: e.File, valid: r.Verdict == Valid}
			if r.Error != nil {
				j.errorText = *r.Error
			}
			reads = append(reads, j)
		}
	}
	rules := files[KindCPU].Restore
	for i, rule := range rules {
		c := rule.Check.(cpuRestore)
		// The readers whose restore this row is (the first row holding them).
		var mine []judgement
		for _, j := range reads {
			for k, r := range rules {
				if r.By.has(j.reader) {
					if k == i {
						mine = append(mine, j)
					}
					break
				}
			}
		}
		name := fmt.Sprintf("row %d [%v, %v)", i, rule.By.since, rule.By.until)
		if len(mine) == 0 {
			t.Errorf("%s: no recorded reader", name)
			continue
		}
		some := func(what string, ok func(judgement) bool) {
			t.Helper()
			for _, j := range mine {
				if ok(j) {
					return
				}
			}
			t.Errorf("%s: no recorded real restore %s", name, what)
		}
		texts := map[string]string{"Default": c.Default, "ByContainerID": c.ByContainerID, "Entry": c.Entry, "Baseline": c.Baseline, "reversed": c.Parse.reversed}
		for field, text := range texts {
			if text == "" {
				continue
			}
			re := formatRegexp(text)
			some(field+" "+strconv.Quote(text), func(j judgement) bool { return re.MatchString(j.errorText) })
		}
		if c.Parse.reversed == "" {
			some("accepting a reversed range", func(j judgement) bool { return j.valid && strings.Contains(j.file, "reversed") })
		}
		if c.Parse.splitAll {
			some("skipping a three-part range", func(j judgement) bool { return j.valid && strings.Contains(j.file, "three-part") })
		} else {
			some("refusing a three-part range", func(j judgement) bool {
				return strings.Contains(j.file, "three-part") && strings.Contains(j.errorText, `parsing "2-3"`)
			})
		}
		some(`accepting "3-3"`, func(j judgement) bool { return j.valid && strings.Contains(j.file, "equal-range") })
	}
}

// formatRegexp matches what a Sprintf of format can print: its verbs match anything.
func formatRegexp(format string) *regexp.Regexp {
	parts := regexp.MustCompile(`%[-+# 0-9.\[\]]*[a-zA-Z]`).Split(format, -1)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(strings.Join(parts, ".*"))
}
