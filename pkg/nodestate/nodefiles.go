package nodestate

import (
	"fmt"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/doctor"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodefs"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
)

// The sections a node's read prints beside its files (fetch.StderrDump), and their names in a bundle:
// collect writes each raw beside the files, and so does the collect script run on a node, so an
// offline read finds what a live one had.
const (
	SysfsFile   = "machine.sysfs"
	SocketsFile = "device-plugins.sockets"
	CDIFile     = "cdi.specs"
	CgroupsFile = "cgroups.cpusets"
	PCIFile     = "pci.numa"
	// NVIDIAFile is the NVIDIA driver's GPUs (procfs): UUID, PCI address, minor.
	NVIDIAFile = "nvidia.gpus"
	// PodResourcesFile is the kubelet's PodResources API's answer, which only the node reader
	// (fetch.ReaderBinary) prints.
	PodResourcesFile = "kubelet.podresources"
)

// cdiDirs are the CDI spec dirs where the debug pod mounts them (read-only, fetch.HostDir).
var cdiDirs = []nodefs.CDIDir{{Node: nodefs.CDIDirs[0], Here: "/host/etc/cdi"}, {Node: nodefs.CDIDirs[1], Here: "/host/var/run/cdi"}}

func cdiHostDirs() []fetch.HostDir {
	return []fetch.HostDir{{Name: "cdi-etc", Path: cdiDirs[0].Node, MountPath: cdiDirs[0].Here},
		{Name: "cdi-run", Path: cdiDirs[1].Node, MountPath: cdiDirs[1].Here}}
}

// bundleDump is one section and its bundle file.
type bundleDump struct {
	File string
	Dump fetch.StderrDump
	// machine: asked for by Config.Machine; cgroups: by Config.Cgroups; pci: by Config.Machine
	// or Config.Admit (the devices' NUMA nodes: sysfs, and the NVIDIA driver's GPUs that map
	// the NVIDIA plugins' IDs to their PCI addresses); podResources: by Config.Admit (the devices as
	// the kubelet holds them); else by Config.NodeFiles.
	machine, cgroups, pci, podResources bool
}

// nodePaths are where the sections' scripts find the node's directories: the debug pod's
// mounts (inPod), or the node itself (the collect script, onNode).
type nodePaths struct {
	cdi     []nodefs.CDIDir
	cgroups string
}

var (
	inPod  = nodePaths{cdi: cdiDirs, cgroups: cgroup.MountPath}
	onNode = nodePaths{cdi: hostCDIDirs, cgroups: cgroup.HostPath}
)

// bundleDumps are the sections, with the node's directories where the scripts find them.
func bundleDumps(at nodePaths) []bundleDump {
	return []bundleDump{
		{File: SysfsFile, machine: true, Dump: sysfsDump},
		{File: PCIFile, pci: true, Dump: fetch.StderrDump{Header: machine.PCIHeader, End: machine.PCIEnd, Script: machine.PCIScript,
			ReaderSection: nodelocal.SectionPCI, Max: machine.MaxPCIBytes}},
		{File: NVIDIAFile, pci: true, Dump: fetch.StderrDump{Header: machine.NVIDIAHeader, End: machine.NVIDIAEnd, Script: machine.NVIDIAScript,
			ReaderSection: nodelocal.SectionNVIDIA, Max: machine.MaxNVIDIABytes}},
		{File: SocketsFile, Dump: fetch.StderrDump{Header: nodefs.SocketsHeader, End: nodefs.End, Script: nodefs.SocketsScript,
			ReaderSection: nodelocal.SectionSockets, Max: nodefs.MaxSocketsBytes}},
		{File: CDIFile, Dump: fetch.StderrDump{Header: nodefs.CDIHeader, End: nodefs.End, Script: nodefs.CDIScript(at.cdi),
			ReaderSection: nodelocal.SectionArg(nodelocal.SectionCDI, cdiHere(at.cdi)...), Max: nodefs.MaxCDIBytes}},
		{File: CgroupsFile, cgroups: true, Dump: fetch.StderrDump{Header: cgroup.Header, End: cgroup.End, Script: cgroup.Script(at.cgroups),
			ReaderSection: nodelocal.SectionArg(nodelocal.SectionCgroups, at.cgroups), Max: cgroup.MaxBytes}},
		// No script: sh cannot speak gRPC; the shell reader leaves it out, and the read says why.
		{File: PodResourcesFile, podResources: true, Dump: fetch.StderrDump{Header: machine.PodResourcesHeader, End: machine.PodResourcesEnd,
			ReaderSection: nodelocal.SectionPodResources, Max: machine.MaxPodResourcesBytes}},
	}
}

// cdiHere are where the CDI dirs are read.
func cdiHere(dirs []nodefs.CDIDir) []string {
	var out []string
	for _, d := range dirs {
		out = append(out, d.Here)
	}
	return out
}

// dumps are the sections the config asks the debug pod for.
func (r *Runner) dumps() []fetch.StderrDump {
	var out []fetch.StderrDump
	for _, d := range bundleDumps(inPod) {
		switch {
		case d.machine && r.cfg.Machine, d.cgroups && r.cfg.Cgroups, d.pci && (r.cfg.Machine || r.cfg.Admit != nil),
			d.podResources && r.cfg.Admit != nil,
			!d.machine && !d.cgroups && !d.pci && !d.podResources && r.cfg.NodeFiles:
			out = append(out, d.Dump)
		}
	}
	return out
}

// NodeFiles is what the node's filesystem says beside the checkpoints (Config.NodeFiles): the
// device plugin sockets and the CDI specs, each nil with the reason in its error when not read.
type NodeFiles struct {
	Sockets    *nodefs.Sockets
	SocketsErr error
	CDI        *nodefs.Registry
	CDIErr     error
	// Claims are the prepared claims' ResourceClaims (live), or why not in ClaimsSkipped.
	Claims        map[string]doctor.ClaimStatus
	ClaimsSkipped string
}

// readNodeFiles parses the sections of s (from the debug pod, or a bundle's files).
func readNodeFiles(s *fetch.Snapshot) NodeFiles {
	var nf NodeFiles
	if b := s.Dumps[nodefs.SocketsHeader]; b == nil {
		nf.SocketsErr = fmt.Errorf("no device plugin sockets listed")
	} else if socks, err := nodefs.ParseSockets(b); err != nil {
		nf.SocketsErr = err
	} else {
		nf.Sockets = &socks
	}
	if b := s.Dumps[nodefs.CDIHeader]; b == nil {
		nf.CDIErr = fmt.Errorf("no CDI specs listed")
	} else if files, err := nodefs.ParseCDIDump(b); err != nil {
		nf.CDIErr = err
	} else {
		reg := nodefs.NewRegistry(files)
		nf.CDI = &reg
	}
	return nf
}

// bundleFiles are the files of a bundle besides the checkpoints that loadOffline reads.
func bundleFiles() []string {
	out := []string{NodeInfoFile}
	for _, d := range bundleDumps(nodePaths{}) {
		out = append(out, d.File)
	}
	return out
}

// takeBundleDumps moves a bundle's section files out of the snapshot's checkpoint files into
// its Dumps, as a live read would have them.
func takeBundleDumps(s *fetch.Snapshot) {
	for _, d := range bundleDumps(nodePaths{}) {
		b, ok := s.Files[d.File]
		if !ok {
			continue
		}
		delete(s.Files, d.File)
		if s.Dumps == nil {
			s.Dumps = map[string][]byte{}
		}
		s.Dumps[d.Dump.Header] = b
	}
}

// offlineExtras fills in what a bundle's section files say: the machine from the raw sysfs
// dump (the collect script writes no machine.json), the sockets and CDI specs.
func (r *Runner) offlineExtras(res *NodeResult) {
	s := res.Snapshot
	if s == nil {
		return
	}
	if dump := s.Dumps[machine.SysfsHeader]; dump != nil {
		res.Machine, res.MachineErr = machine.FromSysfs(dump)
	}
	if r.cfg.NodeFiles {
		res.NodeFiles = readNodeFiles(s)
		res.ClaimsSkipped = offlineClaims
	}
	if dump := s.Dumps[cgroup.Header]; dump != nil {
		res.Cgroups, res.CgroupsErr = readCgroups(dump, nil)
	}
}

// WriteDumps writes the sections of s into dir under their bundle names (mode 0600), as the
// collect script does, so the bundle holds what the read saw.
func WriteDumps(dir string, s *fetch.Snapshot) error {
	files := map[string][]byte{}
	for _, d := range bundleDumps(nodePaths{}) {
		if b, ok := s.Dumps[d.Dump.Header]; ok {
			files[d.File] = append(append([]byte(nil), b...), '\n')
		}
	}
	if len(files) == 0 {
		return nil
	}
	return fetch.WriteFiles(dir, files)
}
