package cmd

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/pflag"
)

// profiling is kubectl's hidden --profile / --profile-output (k8s.io/kubectl/pkg/cmd/profiling.go),
// for measuring the plugin where it runs (docs/performance.md): cpu and trace run for the whole
// command, any other runtime/pprof profile (heap, allocs, goroutine, block, mutex) is written
// at the end. Unlike kubectl's it installs no signal handler: Ctrl-C must still delete the
// debug pods, and the profile is flushed when the command returns.
type profiling struct {
	name, output string
	file         *os.File
}

// running is the profile the command started (one process, one command), flushed by Execute
// whether the command succeeded or not.
var running *profiling

func (p *profiling) addFlags(flags *pflag.FlagSet) {
	flags.StringVar(&p.name, "profile", "none", "Name of profile to capture. One of (none|cpu|heap|allocs|goroutine|threadcreate|block|mutex|trace)")
	flags.StringVar(&p.output, "profile-output", "profile.pprof", "Name of the file to write the profile to")
	_ = flags.MarkHidden("profile")
	_ = flags.MarkHidden("profile-output")
}

func (p *profiling) start() error {
	var err error
	switch p.name {
	case "none":
		return nil
	case "cpu", "trace":
		if p.file, err = os.Create(p.output); err != nil {
			return err
		}
		if p.name == "cpu" {
			err = pprof.StartCPUProfile(p.file)
		} else {
			err = trace.Start(p.file)
		}
		if err != nil {
			_ = p.file.Close()
			p.file = nil
		}
		return err
	case "block":
		runtime.SetBlockProfileRate(1)
	case "mutex":
		runtime.SetMutexProfileFraction(1)
	}
	if pprof.Lookup(p.name) == nil {
		return fmt.Errorf("unknown profile %q", p.name)
	}
	return nil
}

// stop writes the profile; a no-op when none was started.
func (p *profiling) stop() error {
	switch {
	case p.name == "none":
		return nil
	case p.file != nil:
		if p.name == "cpu" {
			pprof.StopCPUProfile()
		} else {
			trace.Stop()
		}
		err := p.file.Close()
		p.file = nil
		return err
	case p.name == "cpu" || p.name == "trace":
		return nil // start failed
	}
	if p.name == "heap" {
		runtime.GC()
	}
	prof := pprof.Lookup(p.name)
	if prof == nil {
		return nil
	}
	f, err := os.Create(p.output)
	if err != nil {
		return err
	}
	if err := prof.WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
