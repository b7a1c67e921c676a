// Command fuzzverdict classifies one `go test -fuzz` run for hack/fuzz.sh: passed, failed (a
// finding) or flaked (Go's fuzzing coordinator raced its own -fuzztime deadline and reported a bare
// "context deadline exceeded" with nothing found, golang/go#75804, reported fixed in Go 1.27).
//
//	fuzzverdict -target FuzzX -exit 1 -output run.log -corpus pkg/x/testdata/fuzz/FuzzX -before before.txt
//
// -before lists the file names the corpus dir held before the run, one a line. The verdict is the
// exit status (0 passed, 1 failed, 3 flaked; anything else is a broken classifier, which the script
// counts as failed); stdout gets a report for the CI log: figures for a pass, and for a finding
// every reproducer kept with its path, its first bytes and the command that replays it.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Verdict of one run.
type Verdict int

const (
	Passed Verdict = iota
	Failed
	Flaked
)

func (v Verdict) String() string { return [...]string{"passed", "FAILED", "flaked"}[v] }

// exitCode is the process status that carries a verdict to the shell.
func (v Verdict) exitCode() int { return [...]int{0, 1, 3}[v] }

// Run is what one `go test -fuzz` invocation left behind.
type Run struct {
	Target    string   // FuzzX
	ExitCode  int      // of go test
	Output    string   // stdout and stderr of go test, interleaved
	CorpusDir string   // <pkg>/testdata/fuzz/<Target>, where go test writes reproducers
	Before    []string // file names in CorpusDir before the run
	After     []string // file names in CorpusDir after the run
}

// Result is the classification of a Run.
type Result struct {
	Verdict     Verdict
	Reason      string   // one line: why it failed or flaked
	Reproducers []string // CorpusDir-joined paths of the inputs this run wrote
	Execs       int64    // from the last stats line, 0 if none
	Elapsed     time.Duration
}

// benignLines is everything a run that found nothing may print (after trimming). A failed run with
// any other line is a finding, not a flake: being strict here can only turn a flake into a
// failure, never hide a finding. "fuzz: elapsed: ..., minimizing" is deliberately absent: the
// coordinator prints it only while it minimizes a crasher.
var benignLines = []*regexp.Regexp{
	regexp.MustCompile(`^$`),
	regexp.MustCompile(`^fuzz: elapsed: \S+, (execs: \d+ \(\d+/sec\), new interesting: \d+ \(total: \d+\)|gathering baseline coverage: \d+/\d+ completed(, now fuzzing with \d+ workers)?|testing seed corpus: \d+/\d+ completed(, now fuzzing with \d+ workers)?)$`),
	regexp.MustCompile(`^warning: starting with empty corpus$`),
	regexp.MustCompile(`^waiting for fuzzing process to terminate\.\.\.$`),
	regexp.MustCompile(`^(FAIL|PASS)$`),
	regexp.MustCompile(`^exit status 1$`),
	regexp.MustCompile(`^(FAIL|ok)\s+\S+\s+[0-9.]+s$`),
	// "--- FAIL: <Target> (<secs>)" and deadlineLine are matched in bareDeadline.
}

// deadlineLine is the whole message of the coordinator race: the error of its own timeout context.
var deadlineLine = regexp.MustCompile(`^context deadline exceeded$`)

var (
	failingInput = regexp.MustCompile(`Failing input written to (\S+)`)
	statsLine    = regexp.MustCompile(`^fuzz: elapsed: (\S+), execs: (\d+) `)
)

// Classify judges a run. A run passes when go test exits 0 having fuzzed. It fails on a finding: an input written to the corpus dir (even one the
// output does not mention: a crash being minimized when the deadline hits is written by a defer and
// reported only as the deadline), a "Failing input written to" line, or any failure that is not
// the bare deadline. It flakes only on the bare deadline: non-zero exit, nothing written, and
// nothing printed but progress lines, the target's "--- FAIL" header and "context deadline exceeded".
func Classify(r Run) Result {
	res := Result{}
	lines := strings.Split(strings.ReplaceAll(r.Output, "\r\n", "\n"), "\n")
	fuzzed := false // the coordinator printed progress, so it ran
	for _, l := range lines {
		fuzzed = fuzzed || strings.HasPrefix(strings.TrimSpace(l), "fuzz: elapsed: ")
		if m := statsLine.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			res.Execs, _ = strconv.ParseInt(m[2], 10, 64)
			res.Elapsed, _ = time.ParseDuration(m[1])
		}
	}

	res.Reproducers = newFiles(r)
	for _, m := range failingInput.FindAllStringSubmatch(r.Output, -1) {
		// go test prints the path relative to the package dir; the file sits in CorpusDir.
		p := filepath.Join(r.CorpusDir, filepath.Base(m[1]))
		if !contains(res.Reproducers, p) {
			res.Reproducers = append(res.Reproducers, p)
		}
	}

	switch {
	case len(res.Reproducers) > 0:
		res.Verdict, res.Reason = Failed, "finding: "+firstFailureLine(lines, r.Target)
	case r.ExitCode == 0 && !fuzzed:
		// A -fuzz pattern that matched nothing passes having fuzzed nothing.
		res.Verdict, res.Reason = Failed, "did not fuzz: "+firstFailureLine(lines, r.Target)
	case r.ExitCode == 0:
		res.Verdict = Passed
	case bareDeadline(lines, r.Target):
		res.Verdict = Flaked
		res.Reason = "bare coordinator deadline, no input written (golang/go#75804)"
	default:
		res.Verdict, res.Reason = Failed, firstFailureLine(lines, r.Target)
	}
	return res
}

// bareDeadline reports whether the output is exactly the coordinator's deadline race.
func bareDeadline(lines []string, target string) bool {
	header := regexp.MustCompile(`^--- FAIL: ` + regexp.QuoteMeta(target) + ` \([0-9.]+s\)$`)
	sawHeader, sawDeadline := false, false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case header.MatchString(l):
			sawHeader = true
		case deadlineLine.MatchString(l):
			sawDeadline = true
		case !anyMatch(benignLines, l):
			return false
		}
	}
	return sawHeader && sawDeadline
}

// firstFailureLine picks the line that says what went wrong: the first one that is neither
// progress nor test-framework boilerplate.
func firstFailureLine(lines []string, target string) string {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if anyMatch(benignLines, l) || strings.HasPrefix(l, "--- FAIL: ") || strings.HasPrefix(l, "fuzz: ") {
			continue
		}
		if len(l) > 200 {
			l = l[:200] + "..."
		}
		return l
	}
	return fmt.Sprintf("%s failed without a message", target)
}

// newFiles are the corpus files that were not there before the run, as CorpusDir-joined paths.
func newFiles(r Run) []string {
	before := map[string]bool{}
	for _, n := range r.Before {
		before[n] = true
	}
	var out []string
	for _, n := range r.After {
		if !before[n] {
			out = append(out, filepath.Join(r.CorpusDir, n))
		}
	}
	sort.Strings(out)
	return out
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// hintBytes is how much of a reproducer the report shows: enough to rebuild a typical minimized
// input from the CI log when the workspace is gone.
const hintBytes = 2048

// Report writes the CI log lines for a result; pkg is the package path for the replay command.
func Report(w io.Writer, r Run, res Result, pkg string) {
	switch res.Verdict {
	case Passed:
		rate := ""
		if res.Elapsed > 0 {
			rate = fmt.Sprintf(", %.0f/s", float64(res.Execs)/res.Elapsed.Seconds())
		}
		fmt.Fprintf(w, "%s: passed (%d execs in %s%s)\n", r.Target, res.Execs, res.Elapsed, rate)
	case Flaked:
		fmt.Fprintf(w, "%s: flaked: %s\n", r.Target, res.Reason)
	case Failed:
		fmt.Fprintf(w, "%s: FAILED: %s\n", r.Target, res.Reason)
		for _, p := range res.Reproducers {
			b, err := os.ReadFile(p)
			if err != nil {
				fmt.Fprintf(w, "  reproducer %s: %v\n", p, err)
				continue
			}
			fmt.Fprintf(w, "  reproducer kept: %s (%d bytes)\n", p, len(b))
			shown := b
			if len(shown) > hintBytes {
				shown = shown[:hintBytes]
			}
			sc := bufio.NewScanner(bytes.NewReader(shown))
			sc.Buffer(make([]byte, hintBytes+1), hintBytes+1)
			for sc.Scan() {
				fmt.Fprintf(w, "  | %s\n", sc.Text())
			}
			if len(b) > hintBytes {
				fmt.Fprintf(w, "  | ... (%d more bytes)\n", len(b)-hintBytes)
			}
			fmt.Fprintf(w, "  replay: go test -run='^%s$/^%s$' %s\n", r.Target, filepath.Base(p), pkg)
		}
	}
}

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }

// realMain is main with its arguments and streams passed in, so the test can run it whole.
func realMain(args []string, stdout, stderr io.Writer) int {
	var (
		run               Run
		outputPath, bfile string
		pkg               string
	)
	fs := flag.NewFlagSet("fuzzverdict", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&run.Target, "target", "", "fuzz target name")
	fs.IntVar(&run.ExitCode, "exit", 0, "exit status of go test")
	fs.StringVar(&outputPath, "output", "", "file holding the output of go test")
	fs.StringVar(&run.CorpusDir, "corpus", "", "the target's corpus dir, <pkg dir>/testdata/fuzz/<target>")
	fs.StringVar(&bfile, "before", "", "file listing the corpus dir's file names before the run")
	fs.StringVar(&pkg, "pkg", "", "package path, for the replay command")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if run.Target == "" || outputPath == "" || run.CorpusDir == "" || bfile == "" {
		fmt.Fprintln(stderr, "usage: fuzzverdict -target T -exit N -output FILE -corpus DIR -before FILE [-pkg P]")
		return 2
	}
	out, err := os.ReadFile(outputPath)
	if err != nil {
		fmt.Fprintln(stderr, "fuzzverdict:", err)
		return 2
	}
	run.Output = string(out)
	bl, err := os.ReadFile(bfile)
	if err != nil {
		fmt.Fprintln(stderr, "fuzzverdict:", err)
		return 2
	}
	run.Before = strings.Fields(string(bl))
	if run.After, err = listDir(run.CorpusDir); err != nil {
		fmt.Fprintln(stderr, "fuzzverdict:", err)
		return 2
	}
	res := Classify(run)
	Report(stdout, run, res, pkg)
	return res.Verdict.exitCode()
}

// listDir lists the file names in dir; a missing dir is empty (no target has written there yet).
func listDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, err
}
