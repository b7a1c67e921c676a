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

// docCommand is one `$ kubectl-nodestate ...` line of the docs, the output shown under it and
// the exit status it shows: a command ending in `; echo "exit $?"` shows its status as the last
// output line, any other is shown succeeding (exit 0).
type docCommand struct {
	line     string
	args     []string
	want     string
	wantExit int
}

// showsExit is how a doc's command shows its exit status, as a shell prints it.
const showsExit = `; echo "exit $?"`

// quickStartCommands extracts the commands of the README's quick start (see commandsIn).
func quickStartCommands(t *testing.T, readme string) []docCommand {
	t.Helper()
	start := strings.Index(readme, "\n## Quick start")
	if start < 0 {
		t.Fatal("README has no \"## Quick start\" section")
	}
	section := readme[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	return commandsIn(t, section)
}

// commandsIn extracts, in text's fenced blocks, each line `$ kubectl-nodestate ARGS` (or
// `$ bin/kubectl-nodestate ARGS`) and the lines up to the next `$ ` line or the end of the block.
func commandsIn(t *testing.T, text string) []docCommand {
	t.Helper()
	var out []docCommand
	var cur *docCommand
	inBlock := false
	for _, line := range strings.Split(text, "\n") {
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
				out = append(out, docCommand{line: line, args: fields[1:], wantExit: -1})
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

// TestDocCommands runs every command of the README's quick start and of docs/output.md through
// the root command, as the binary does, from the repository root, and compares what it prints
// (stderr and stdout in the order a terminal shows them) and its exit status with what the doc
// shows.
func TestDocCommands(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	output, err := os.ReadFile("../../docs/output.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := []struct {
		name string
		cmds []docCommand
		min  int
	}{
		{"README.md quick start", quickStartCommands(t, string(readme)), 2}, // the demo's
		{"docs/output.md", commandsIn(t, string(output)), 2},                // the broken example's
	}
	t.Chdir("../..")
	for _, d := range docs {
		if len(d.cmds) < d.min {
			t.Errorf("%s shows %d commands with their output; want %d at least", d.name, len(d.cmds), d.min)
		}
		for _, c := range d.cmds {
			t.Run(d.name+"/"+strings.Join(c.args, " "), func(t *testing.T) {
				cmdtest.Isolate(t)
				var both bytes.Buffer
				streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &both, ErrOut: &both}
				root := cmd.NewCmdNodestate(streams)
				root.SetArgs(c.args)
				code := cmd.Execute(context.Background(), root, streams)
				if got := both.String(); got != c.want {
					t.Errorf("%s (exit %d) prints:\n%s\n%s shows:\n%s", c.line, code, got, d.name, c.want)
				}
				if code != c.wantExit {
					t.Errorf("%s exits %d; %s shows exit %d", c.line, code, d.name, c.wantExit)
				}
			})
		}
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
