// Package nodelocal reads the node this process runs on, for the node-local checks that the
// Node Problem Detector runs (kubectl-nodestate node-check): the kubelet root dir's checkpoint
// files, and the sections the debug pod's shell prints (cgroups, device plugin sockets, CDI
// specs, sysfs), here written by Go from the same directories, so that the plugin's image needs
// no shell, and read back by the same size-capped, fuzzed parsers. Which container runs where,
// which the debug pod learns from the API server, it reads from the container runtime's state:
// the annotations of the running containers' OCI bundles.
//
// It knows paths and section formats, not verdicts: what it returns is a fetch.Snapshot, as a
// debug pod's read is.
package nodelocal

import (
	"context"
	"fmt"
	"time"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodefs"
)

// Paths are where this process finds the node's directories: the node's own paths by default,
// or where a container mounts them read-only.
type Paths struct {
	// RootDir is the kubelet's --root-dir.
	RootDir string
	// CgroupRoot is the host's cgroup mount. Inside a container, /sys/fs/cgroup is the
	// container's own cgroup namespace: mount the host's elsewhere.
	CgroupRoot string
	// CDIDirs are the CDI spec dirs, as on the node.
	CDIDirs []string
	// SysRoot and ProcRoot are sysfs and procfs (the machine: CPUs, NUMA nodes, memory).
	SysRoot, ProcRoot string
	// Runtimes are the container runtimes' state dirs (Runtimes' defaults when nil).
	Runtimes []Runtime
}

// Defaults are the node's own paths.
func Defaults() Paths {
	return Paths{RootDir: "/var/lib/kubelet", CgroupRoot: cgroup.HostPath, CDIDirs: nodefs.CDIDirs,
		SysRoot: "/sys", ProcRoot: "/proc", Runtimes: Runtimes}
}

// Want says what to read beside the checkpoint files: a check reads only what it judges.
type Want struct {
	// Files are the checkpoint files (and config files) to read, relative to RootDir.
	Files []string
	// Cgroups, Sockets, CDI and Sysfs ask for the debug pod's sections of those names.
	Cgroups, Sockets, CDI, Sysfs bool
	// Containers reads the running containers from the runtimes' state (Snapshot.Pods).
	Containers bool
	// PCI, NVIDIA and PodResources ask for the node reader's sections of those names (the
	// devices' NUMA nodes, by PCI address and by GPU UUID, and the kubelet's own view of them).
	PCI, NVIDIA, PodResources bool
	// PodResourcesTimeout bounds the PodResources section's read (PodResourcesTimeout if 0).
	PodResourcesTimeout time.Duration
}

// Read reads the node. Only the kubelet root dir must be readable: a section whose directory
// is missing says so as the debug pod's would (an empty cgroup hierarchy, no sockets), and a
// runtime state dir that cannot be read is a warning.
func Read(p Paths, w Want) (*fetch.Snapshot, error) {
	return ReadContext(context.Background(), p, w)
}

// ReadContext is Read with ctx bounding the PodResources section's call.
func ReadContext(ctx context.Context, p Paths, w Want) (*fetch.Snapshot, error) {
	snap, err := local.Read(p.RootDir, w.Files, local.DefaultLimits)
	if err != nil {
		return nil, fmt.Errorf("kubelet root dir: %w", err)
	}
	snap.Dumps = map[string][]byte{}
	if w.Cgroups {
		snap.Dumps[cgroup.Header] = CgroupDump(p.CgroupRoot)
	}
	if w.Sockets {
		snap.Dumps[nodefs.SocketsHeader] = socketsSection(p.RootDir)
	}
	if w.CDI {
		snap.Dumps[nodefs.CDIHeader] = cdiSection(p.CDIDirs)
	}
	if w.Sysfs {
		snap.Dumps[machine.SysfsHeader] = sysfsDump(p.SysRoot, p.ProcRoot)
	}
	if w.PCI {
		snap.Dumps[machine.PCIHeader] = pciSection(p.SysRoot)
	}
	if w.NVIDIA {
		snap.Dumps[machine.NVIDIAHeader] = nvidiaSection(p.ProcRoot)
	}
	if w.PodResources {
		timeout := w.PodResourcesTimeout
		if timeout <= 0 {
			timeout = PodResourcesTimeout
		}
		snap.Dumps[machine.PodResourcesHeader] = PodResourcesSection(ReadPodResources(ctx, podResourcesSocketIn(p.RootDir), timeout))
	}
	if w.Containers {
		runtimes := p.Runtimes
		if runtimes == nil {
			runtimes = Runtimes
		}
		var warnings []string
		snap.Pods, warnings = runningContainers(runtimes)
		snap.Warnings = append(snap.Warnings, warnings...)
	}
	return snap, nil
}
