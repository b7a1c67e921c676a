package nodelocal

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// The node reader (kubectl-nodestate node-read) is the debug pod's read when its image is the
// plugin's own, which holds the static binary and nothing else: no sh, no tar. It speaks the
// collect script's protocol (fetch.CollectCommand): a tar of the requested files on stdout,
// the requested sections on stderr, then fetch.CollectEnd, last, on stderr. The sections are
// this package's Go printers, the ones node-check reads with, which tests hold equal to the
// shell's; and one the shell cannot print, the kubelet's PodResources API.

// The sections the node reader prints, by the name fetch.StderrDump.ReaderSection gives.
const (
	SectionSysfs        = "sysfs"   // machine.SysfsScript's, from SysRoot and ProcRoot
	SectionPCI          = "pci"     // machine.PCIScript's, from SysRoot
	SectionNVIDIA       = "nvidia"  // machine.NVIDIAScript's, from ProcRoot
	SectionSockets      = "sockets" // nodefs.SocketsScript's, from the kubelet root dir
	SectionCDI          = "cdi"     // nodefs.CDIScript's, from the section's dirs
	SectionCgroups      = "cgroups" // cgroup.Script's, from the section's one dir
	SectionPodResources = "podresources"
)

// SectionArg is a section's request as the node reader takes it: NAME, or NAME=DIR[,DIR...]
// for a section read from directories the debug pod mounts.
func SectionArg(name string, dirs ...string) string {
	if len(dirs) == 0 {
		return name
	}
	return name + "=" + strings.Join(dirs, ",")
}

// NodeRead is one read by the node reader.
type NodeRead struct {
	// RootDir is the kubelet root dir (the debug pod's working directory): the files are read
	// under it and never outside.
	RootDir string
	// SysRoot and ProcRoot are sysfs and procfs as the container sees them (the host's
	// devices and NUMA nodes: sysfs is not namespaced for them).
	SysRoot, ProcRoot string
	// Sections are SectionArg values, printed in order.
	Sections []string
	// Files are the paths to tar, relative to RootDir.
	Files []string
	// PodResourcesTimeout bounds the PodResources section's read.
	PodResourcesTimeout time.Duration
}

// Validate refuses what the reader would not know how to print, before anything is written.
func (r NodeRead) Validate() error {
	for _, s := range r.Sections {
		name, dirs, err := parseSectionArg(s)
		if err != nil {
			return err
		}
		switch {
		case name == SectionCDI && len(dirs) == 0:
			return fmt.Errorf("section %s needs its dirs (%s=DIR,...)", name, name)
		case name == SectionCgroups && len(dirs) != 1:
			return fmt.Errorf("section %s needs one dir (%s=DIR)", name, name)
		}
	}
	for _, f := range r.Files {
		if f == "" || path.IsAbs(f) || path.Clean(f) != f || f == ".." || strings.HasPrefix(f, "../") {
			return fmt.Errorf("file %q is not a clean path relative to the kubelet root dir", f)
		}
	}
	return nil
}

func parseSectionArg(s string) (string, []string, error) {
	name, list, hasDirs := strings.Cut(s, "=")
	var dirs []string
	if hasDirs {
		for _, d := range strings.Split(list, ",") {
			if !filepath.IsAbs(d) {
				return "", nil, fmt.Errorf("section %s: dir %q is not absolute", name, d)
			}
			dirs = append(dirs, d)
		}
	}
	switch name {
	case SectionSysfs, SectionPCI, SectionNVIDIA, SectionSockets, SectionPodResources:
		if hasDirs {
			return "", nil, fmt.Errorf("section %s takes no dirs", name)
		}
	case SectionCDI, SectionCgroups:
	default:
		return "", nil, fmt.Errorf("unknown section %q (this reader knows %s)", name,
			strings.Join([]string{SectionSysfs, SectionPCI, SectionNVIDIA, SectionSockets, SectionCDI, SectionCgroups, SectionPodResources}, ", "))
	}
	return name, dirs, nil
}

// Run prints the sections on stderr, the files' tar on stdout, then the end marker on stderr.
// It writes nothing anywhere else. An error is a stream that could not be written (the exec
// gone): the marker is then not written, and the client refuses the read as cut.
func (r NodeRead) Run(ctx context.Context, stdout, stderr io.Writer) error {
	if err := r.Validate(); err != nil {
		return err
	}
	for _, s := range r.Sections {
		if _, err := stderr.Write(r.section(ctx, s)); err != nil {
			return err
		}
	}
	warnings, err := WriteTar(stdout, r.RootDir, r.Files)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		if _, err := io.WriteString(stderr, "kubectl-nodestate: "+w+"\n"); err != nil {
			return err
		}
	}
	_, err = io.WriteString(stderr, fetch.CollectEnd)
	return err
}

// section prints one section (Validate has checked its request).
func (r NodeRead) section(ctx context.Context, s string) []byte {
	name, dirs, _ := parseSectionArg(s)
	switch name {
	case SectionSysfs:
		return sysfsDump(r.SysRoot, r.ProcRoot)
	case SectionPCI:
		return pciSection(r.SysRoot)
	case SectionNVIDIA:
		return nvidiaSection(r.ProcRoot)
	case SectionSockets:
		return socketsSection(r.RootDir)
	case SectionCDI:
		return cdiSection(dirs)
	case SectionCgroups:
		return CgroupDump(dirs[0])
	default: // SectionPodResources
		timeout := r.PodResourcesTimeout
		if timeout <= 0 {
			timeout = PodResourcesTimeout
		}
		return PodResourcesSection(ReadPodResources(ctx, podResourcesSocketIn(r.RootDir), timeout))
	}
}

// WriteTar writes a tar of the files under root that are regular files, as the collect script
// does ([ -f ] keeps them, tar archives them): a path that is absent or not a regular file is
// left out (the client lists it as missing), and so is one that cannot be opened, with a
// warning, as tar warns and goes on. Unlike the script it never leaves root: a path whose
// directories lead out of it (.., a symlink pointing out) is left out with a warning. A file
// that is itself a symlink (to a regular file within root) is archived as the link, as tar
// archives it, and the client refuses the archive as it refuses the script's. It returns the
// warnings, and an error only when w failed.
func WriteTar(w io.Writer, root string, files []string) ([]string, error) {
	var warnings []string
	dir, err := os.OpenRoot(root)
	if err != nil {
		// No file can be read: every one is missing, as for a script whose cd failed.
		return []string{fmt.Sprintf("kubelet root dir: %v", err)}, nil
	}
	defer dir.Close()
	tw := tar.NewWriter(w)
	for _, name := range files {
		warn, err := writeEntry(tw, dir, name)
		if err != nil {
			return warnings, err
		}
		if warn != "" {
			warnings = append(warnings, warn)
		}
	}
	if len(files) == 0 {
		// The script sends nothing for nothing; an empty archive reads the same, but this is
		// byte for byte the script's answer.
		return warnings, nil
	}
	return warnings, tw.Close()
}

// writeEntry archives one file, or returns why it did not (a warning) or that w failed.
func writeEntry(tw *tar.Writer, dir *os.Root, name string) (string, error) {
	fi, err := dir.Stat(name) // follows links within dir, as [ -f ] does
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return fmt.Sprintf("%s: %v", name, err), nil
	case !fi.Mode().IsRegular():
		return "", nil
	}
	if li, err := dir.Lstat(name); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		target, err := dir.Readlink(name)
		if err != nil {
			return fmt.Sprintf("%s: %v", name, err), nil
		}
		return "", tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target,
			Mode: int64(li.Mode().Perm()), ModTime: li.ModTime()})
	}
	f, err := dir.Open(name)
	if err != nil {
		return fmt.Sprintf("%s: %v", name, err), nil
	}
	defer f.Close()
	fi, err = f.Stat()
	if err != nil {
		return fmt.Sprintf("%s: %v", name, err), nil
	}
	if !fi.Mode().IsRegular() { // replaced since the Stat above
		return "", nil
	}
	hdr := &tar.Header{Name: name, Typeflag: tar.TypeReg, Size: fi.Size(), Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime()}
	if err := tw.WriteHeader(hdr); err != nil {
		return "", err
	}
	src := &readErrors{r: io.LimitReader(f, hdr.Size)}
	n, err := io.Copy(tw, src)
	if err != nil && src.err == nil {
		return "", err // writing: the exec is gone
	}
	if n < hdr.Size {
		// Shrunk under us (the kubelet replaces its files by rename, so this is not one of
		// its writes): pad, as GNU tar does, and say so; the archive stays whole.
		if _, err := tw.Write(make([]byte, hdr.Size-n)); err != nil {
			return "", err
		}
		why := fmt.Sprintf("shrank by %d bytes", hdr.Size-n)
		if src.err != nil {
			why = src.err.Error()
		}
		return fmt.Sprintf("%s: %s while read; padded with zeros", name, why), nil
	}
	return "", nil
}

// readErrors keeps the error reading the file, to tell it from one writing the archive.
type readErrors struct {
	r   io.Reader
	err error
}

func (e *readErrors) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}
