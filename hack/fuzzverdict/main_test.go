package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The captures under testdata are real `go test -run '^$' -fuzz ... -fuzzminimizetime 2s` outputs
// (stdout and stderr together, as hack/fuzz.sh records them):
//   - pass.txt: FuzzDecodeMemory, -fuzztime 8s, on the loaded shared 2-core machine, exit 0;
//   - deadline.txt: FuzzDecodeMemory, -fuzztime 8s, failed by the coordinator deadline race
//     (golang/go#75804), exit 1, nothing written; provoked with testdata/provoke-deadline, which
//     holds the cancelling thread where a loaded machine preempts it;
//   - deadline-natural.txt: the same race met unprovoked, by FuzzReadArchive in the 5th of ten
//     `FUZZTIME=8s hack/fuzz.sh` runs on the loaded machine (its retry passed);
//   - crasher.txt: a throwaway module whose FuzzCrashy panics on a 0xff byte, exit 1; the input it
//     wrote is crasher-corpus/FuzzCrashy/e3443030b91d09bb;
//   - nofuzz.txt: the same module fuzzed with -fuzz '^FuzzNope$', which matches no target, exit 0.
func capture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const crasherCorpus = "testdata/crasher-corpus/FuzzCrashy"

func TestClassify(t *testing.T) {
	pass := capture(t, "pass.txt")
	deadline := capture(t, "deadline.txt")
	crasher := capture(t, "crasher.txt")
	deadlineTarget := targetOf(t, deadline)
	reproducer := filepath.Join(crasherCorpus, "e3443030b91d09bb")

	tests := []struct {
		name string
		run  Run
		want Result
	}{{
		name: "pass",
		run:  Run{Target: "FuzzDecodeMemory", ExitCode: 0, Output: pass, CorpusDir: "none"},
		want: Result{Verdict: Passed, Execs: 1076, Elapsed: 9 * time.Second},
	}, {
		name: "bare deadline, nothing written: flake",
		run:  Run{Target: deadlineTarget, ExitCode: 1, Output: deadline, CorpusDir: "none"},
		want: Result{Verdict: Flaked, Reason: "bare coordinator deadline, no input written (golang/go#75804)",
			Execs: statsOf(t, deadline).Execs, Elapsed: statsOf(t, deadline).Elapsed},
	}, {
		name: "bare deadline met unprovoked on the loaded machine: flake",
		run:  Run{Target: "FuzzReadArchive", ExitCode: 1, Output: capture(t, "deadline-natural.txt"), CorpusDir: "none"},
		want: Result{Verdict: Flaked, Reason: "bare coordinator deadline, no input written (golang/go#75804)",
			Execs: 61826, Elapsed: 9 * time.Second},
	}, {
		// A crash being minimized when the deadline hits is written by a deferred write and
		// reported only as the deadline: the new file is what shows it.
		name: "deadline output but an input was written: finding",
		run: Run{Target: deadlineTarget, ExitCode: 1, Output: deadline, CorpusDir: crasherCorpus,
			Before: []string{"seed1"}, After: []string{"seed1", "e3443030b91d09bb"}},
		want: Result{Verdict: Failed, Reason: "finding: context deadline exceeded", Reproducers: []string{reproducer},
			Execs: statsOf(t, deadline).Execs, Elapsed: statsOf(t, deadline).Elapsed},
	}, {
		name: "deadline while minimizing a crasher: finding",
		run: Run{Target: deadlineTarget, ExitCode: 1, CorpusDir: "none",
			Output: strings.Replace(deadline, "--- FAIL", "fuzz: minimizing 42-byte failing input file\nfuzz: elapsed: 8s, minimizing\n--- FAIL", 1)},
		want: Result{Verdict: Failed, Reason: "context deadline exceeded",
			Execs: statsOf(t, deadline).Execs, Elapsed: statsOf(t, deadline).Elapsed},
	}, {
		// The stats line the coordinator prints while it minimizes a crasher, alone.
		name: "deadline with a minimizing stats line: finding",
		run: Run{Target: deadlineTarget, ExitCode: 1, CorpusDir: "none",
			Output: strings.Replace(deadline, "--- FAIL", "fuzz: elapsed: 8s, minimizing\n--- FAIL", 1)},
		want: Result{Verdict: Failed, Reason: "context deadline exceeded",
			Execs: statsOf(t, deadline).Execs, Elapsed: statsOf(t, deadline).Elapsed},
	}, {
		name: "deadline message without the target's FAIL header: not the bare race",
		run: Run{Target: deadlineTarget, ExitCode: 1, CorpusDir: "none",
			Output: strings.Replace(deadline, "--- FAIL: "+deadlineTarget+" (9.48s)\n", "", 1)},
		want: Result{Verdict: Failed, Reason: "context deadline exceeded",
			Execs: statsOf(t, deadline).Execs, Elapsed: statsOf(t, deadline).Elapsed},
	}, {
		name: "deadline header of another target: not the bare race",
		run:  Run{Target: "FuzzOther", ExitCode: 1, Output: deadline, CorpusDir: "none"},
		want: Result{Verdict: Failed, Reason: "context deadline exceeded",
			Execs: statsOf(t, deadline).Execs, Elapsed: statsOf(t, deadline).Elapsed},
	}, {
		name: "crasher written by this run",
		run: Run{Target: "FuzzCrashy", ExitCode: 1, Output: crasher, CorpusDir: crasherCorpus,
			After: []string{"e3443030b91d09bb"}},
		want: Result{Verdict: Failed, Reason: "finding: testing.go:1927: panic: planted bug: 0xff byte",
			Reproducers: []string{reproducer}},
	}, {
		// The same input name existed before (say a rerun over an uncommitted reproducer): the
		// output still names it.
		name: "crasher whose file was already there",
		run: Run{Target: "FuzzCrashy", ExitCode: 1, Output: crasher, CorpusDir: crasherCorpus,
			Before: []string{"e3443030b91d09bb"}, After: []string{"e3443030b91d09bb"}},
		want: Result{Verdict: Failed, Reason: "finding: testing.go:1927: panic: planted bug: 0xff byte",
			Reproducers: []string{reproducer}},
	}, {
		name: "a new corpus file fails even with exit 0",
		run: Run{Target: "FuzzDecodeMemory", ExitCode: 0, Output: pass, CorpusDir: crasherCorpus,
			After: []string{"e3443030b91d09bb"}},
		want: Result{Verdict: Failed, Reason: "finding: FuzzDecodeMemory failed without a message",
			Reproducers: []string{reproducer}, Execs: 1076, Elapsed: 9 * time.Second},
	}, {
		name: "failing seed corpus entry (no new file): fails",
		run: Run{Target: "FuzzCrashy", ExitCode: 1, CorpusDir: "none", Output: "" +
			"failure while testing seed corpus entry: FuzzCrashy/e3443030b91d09bb\n" +
			"fuzz: elapsed: 0s, gathering baseline coverage: 0/2 completed\n" +
			"--- FAIL: FuzzCrashy (0.02s)\n    --- FAIL: FuzzCrashy (0.00s)\n" +
			"        testing.go:1927: panic: planted bug: 0xff byte\nFAIL\nexit status 1\n" +
			"FAIL\texample.com/fuzzscratch\t0.030s\n"},
		want: Result{Verdict: Failed, Reason: "failure while testing seed corpus entry: FuzzCrashy/e3443030b91d09bb"},
	}, {
		// The OOM killer's SIGKILL: no input is recorded, but a decoder that allocates from an
		// unchecked length does exactly this, so it is not excused as a flake.
		name: "worker killed by a signal: fails",
		run: Run{Target: "FuzzX", ExitCode: 1, CorpusDir: "none", Output: "" +
			"fuzz: elapsed: 3s, execs: 100 (33/sec), new interesting: 0 (total: 3)\n" +
			"--- FAIL: FuzzX (3.10s)\n" +
			"    fuzzing process terminated by unexpected signal; no crash will be recorded: signal: killed\n" +
			"FAIL\nexit status 1\nFAIL\texample.com/x\t3.2s\n"},
		want: Result{Verdict: Failed, Execs: 100, Elapsed: 3 * time.Second,
			Reason: "fuzzing process terminated by unexpected signal; no crash will be recorded: signal: killed"},
	}, {
		name: "build failure: fails",
		run: Run{Target: "FuzzX", ExitCode: 1, CorpusDir: "none", Output: "" +
			"# example.com/x [example.com/x.test]\n./x_test.go:9:2: undefined: Nope\n" +
			"FAIL\texample.com/x [build failed]\n"},
		want: Result{Verdict: Failed, Reason: "# example.com/x [example.com/x.test]"},
	}, {
		name: "exit 0 without fuzzing (the -fuzz pattern matched nothing): fails",
		run:  Run{Target: "FuzzNope", ExitCode: 0, Output: capture(t, "nofuzz.txt"), CorpusDir: "none"},
		want: Result{Verdict: Failed, Reason: "did not fuzz: testing: warning: no fuzz tests to fuzz"},
	}, {
		name: "non-zero exit with nothing printed: fails",
		run:  Run{Target: "FuzzX", ExitCode: 2, CorpusDir: "none"},
		want: Result{Verdict: Failed, Reason: "FuzzX failed without a message"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Classify(tt.run)); diff != "" {
				t.Errorf("Classify (-want +got):\n%s", diff)
			}
		})
	}
}

// targetOf is the fuzz target a capture's "--- FAIL: FuzzX (...)" header names.
func targetOf(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "---" && f[1] == "FAIL:" {
			return f[2]
		}
	}
	t.Fatal("capture has no --- FAIL header")
	return ""
}

// statsOf reads a capture's last stats line independently of Classify.
func statsOf(t *testing.T, out string) Result {
	t.Helper()
	var r Result
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l) // fuzz: elapsed: 8s, execs: 1234 (150/sec), ...
		if len(f) > 4 && f[0] == "fuzz:" && f[3] == "execs:" {
			r.Elapsed, _ = time.ParseDuration(strings.TrimSuffix(f[2], ","))
			r.Execs, _ = strconv.ParseInt(f[4], 10, 64)
		}
	}
	if r.Elapsed == 0 {
		t.Fatal("capture has no stats line")
	}
	return r
}

// TestRealMain runs the command whole as hack/fuzz.sh does: flags, files, report and exit status.
func TestRealMain(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := write("before", "")
	tests := []struct {
		name, capture, target, exit, corpus string
		wantCode                            int
		wantOut                             []string
	}{
		{"pass", "pass.txt", "FuzzDecodeMemory", "0", filepath.Join(dir, "missing"), 0,
			[]string{"FuzzDecodeMemory: passed (1076 execs in 9s, 120/s)\n"}},
		{"deadline", "deadline.txt", "", "1", filepath.Join(dir, "missing"), 3,
			[]string{": flaked: bare coordinator deadline, no input written (golang/go#75804)\n"}},
		{"crasher", "crasher.txt", "FuzzCrashy", "1", crasherCorpus, 1, []string{
			"FuzzCrashy: FAILED: finding: testing.go:1927: panic: planted bug: 0xff byte\n",
			"  reproducer kept: testdata/crasher-corpus/FuzzCrashy/e3443030b91d09bb (31 bytes)\n",
			"  | go test fuzz v1\n  | []byte(\"\\xff\")\n",
			"  replay: go test -run='^FuzzCrashy$/^e3443030b91d09bb$' example.com/fuzzscratch\n",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := tt.target
			if target == "" {
				target = targetOf(t, capture(t, tt.capture))
			}
			var stdout, stderr bytes.Buffer
			code := realMain([]string{"-target", target, "-exit", tt.exit,
				"-output", filepath.Join("testdata", tt.capture), "-corpus", tt.corpus,
				"-before", before, "-pkg", "example.com/fuzzscratch"}, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d; stderr %q", code, tt.wantCode, stderr.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}

	t.Run("usage", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := realMain([]string{"-target", "FuzzX"}, &stdout, &stderr); code != 2 {
			t.Errorf("exit status %d, want 2", code)
		}
	})
}

func TestReportTruncatesLargeReproducers(t *testing.T) {
	dir := t.TempDir()
	big := "go test fuzz v1\n[]byte(\"" + strings.Repeat("A", 5000) + "\")\n"
	if err := os.WriteFile(filepath.Join(dir, "abc"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	Report(&out, Run{Target: "FuzzX", CorpusDir: dir}, Result{Verdict: Failed, Reason: "finding: x",
		Reproducers: []string{filepath.Join(dir, "abc")}}, "example.com/x")
	if !strings.Contains(out.String(), "(5027 bytes)") || !strings.Contains(out.String(), "... (2979 more bytes)") {
		t.Errorf("report:\n%s", out.String())
	}
	if out.Len() > hintBytes+500 {
		t.Errorf("report is %d bytes, want the reproducer cut to %d", out.Len(), hintBytes)
	}
}
