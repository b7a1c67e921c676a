package cmd_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/cmdtest"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd"
)

// readmeCommand is one `$ kubectl-nodestate ...` line of the README, the output shown under it
// and the exit status it shows: a command ending in `; echo "exit $?"` shows its status as the
// last output line, any other is shown succeeding (exit 0).
type readmeCommand struct {
	line     string
	args     []string
	want     string
	wantExit int
}

// showsExit is how a README command shows its exit status, as a shell prints it.
const showsExit = `; echo "exit $?"`

// quickStartCommands extracts the commands of the README's quick start: in its fenced blocks,
// each line `$ kubectl-nodestate ARGS` (or `$ bin/kubectl-nodestate ARGS`) and the lines up to the
// next `$ ` line or the end of the block.
func quickStartCommands(t *testing.T, readme string) []readmeCommand {
	t.Helper()
	start := strings.Index(readme, "\n## Quick start")
	if start < 0 {
		t.Fatal("README has no \"## Quick start\" section")
	}
	section := readme[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var out []readmeCommand
	var cur *readmeCommand
	inBlock := false
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			cur = nil
			continue
		}
		if !inBlock {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "$ "); ok {
			cur = nil
			rest, exitShown := strings.CutSuffix(rest, showsExit)
			fields := strings.Fields(rest)
			if len(fields) > 0 && (fields[0] == "kubectl-nodestate" || fields[0] == "bin/kubectl-nodestate") {
				out = append(out, readmeCommand{line: line, args: fields[1:], wantExit: -1})
				cur = &out[len(out)-1]
				if !exitShown {
					cur.wantExit = 0
				}
			}
			continue
		}
		if cur != nil {
			if code, ok := strings.CutPrefix(line, "exit "); ok && cur.wantExit == -1 {
				n, err := strconv.Atoi(code)
				if err != nil {
					t.Fatalf("%s: exit status %q is not a number", cur.line, code)
				}
				cur.wantExit = n
				continue
			}
			cur.want += line + "\n"
		}
	}
	for _, c := range out {
		if c.wantExit == -1 {
			t.Fatalf("%s: shows no %q line under it", c.line, "exit N")
		}
	}
	return out
}

// TestReadmeQuickStart runs every command of the README's quick start through the root command,
// as the binary does, from the repository root, and compares what it prints (stderr and stdout
// in the order a terminal shows them) and its exit status with what the README shows.
func TestReadmeQuickStart(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := quickStartCommands(t, string(raw))
	if len(cmds) < 2 {
		t.Fatalf("the quick start shows %d commands with their output; want the demo's at least", len(cmds))
	}
	t.Chdir("../..")
	for _, c := range cmds {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cmdtest.Isolate(t)
			var both bytes.Buffer
			streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &both, ErrOut: &both}
			root := cmd.NewCmdNodestate(streams)
			root.SetArgs(c.args)
			code := cmd.Execute(context.Background(), root, streams)
			if got := both.String(); got != c.want {
				t.Errorf("%s (exit %d) prints:\n%s\nthe README shows:\n%s", c.line, code, got, c.want)
			}
			if code != c.wantExit {
				t.Errorf("%s exits %d; the README shows exit %d", c.line, code, c.wantExit)
			}
		})
	}
}

// The extraction itself: commands, their output, other prompts and blocks left alone.
func TestQuickStartCommands(t *testing.T) {
	readme := "# x\n```\n$ kubectl-nodestate a\nout a\n```\n## Quick start\ntext\n```sh\nmake demo\n```\n" +
		"```\n$ bin/kubectl-nodestate verify --from-dir d\nline 1\nline 2\n$ echo hi\nhi\n$ kubectl-nodestate cpus\n\n```\n## Install\n```\n$ kubectl-nodestate z\n```\n"
	got := quickStartCommands(t, readme)
	if len(got) != 2 || strings.Join(got[0].args, " ") != "verify --from-dir d" || got[0].want != "line 1\nline 2\n" || got[0].wantExit != 0 ||
		strings.Join(got[1].args, " ") != "cpus" || got[1].want != "\n" || got[1].wantExit != 0 {
		t.Errorf("got %+v", got)
	}
	// A shown exit status: the command without the echo, the status out of the output.
	got = quickStartCommands(t, "# x\n## Quick start\n```\n$ kubectl-nodestate verify x"+showsExit+"\nbad\nexit 1\n```\n")
	if len(got) != 1 || strings.Join(got[0].args, " ") != "verify x" || got[0].want != "bad\n" || got[0].wantExit != 1 {
		t.Errorf("got %+v", got)
	}
}
