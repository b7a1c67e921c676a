package common

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The restart cases' inputs (RESTART.md): -mode restartgen -out DIR writes DIR/<case>/ with
// machine.json, devices.json, restart.json, pod.json, pod2.json, ..., setup/seed*.json (the
// node's pods as the kubelet admitted them before the restart), setup/devices.json (the
// plugins then), setup/drop-registered.json (plugins gone past their grace period before the
// restart) and setup/meta.json. restart.sh seeds the checkpoints with the release, then runs it.

const (
	gpu = "nvidia.com/gpu"
	nic = "example.com/nic"
)

// rctr is a container of a restart case's pod: Guaranteed (cpu, memory), devices as extended
// resources (requests = limits).
type rctr struct {
	name           string
	cpu, memory    string
	gpus, nics     int
	init, sidecars bool
}

// rpod is a pod created at minute created of the case's clock (HandlePodAdditions' order).
func rpod(name string, created int, ctrs ...rctr) *v1.Pod {
	p := &v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}
	p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
	p.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, created, 0, 0, time.UTC))
	for _, c := range ctrs {
		rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(c.cpu), v1.ResourceMemory: resource.MustParse(c.memory)}
		if c.gpus > 0 {
			rl[gpu] = *resource.NewQuantity(int64(c.gpus), resource.DecimalSI)
		}
		if c.nics > 0 {
			rl[nic] = *resource.NewQuantity(int64(c.nics), resource.DecimalSI)
		}
		ctr := v1.Container{Name: c.name, Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}
		if c.sidecars {
			makeSidecar(&ctr)
		}
		if c.init || c.sidecars {
			p.Spec.InitContainers = append(p.Spec.InitContainers, ctr)
		} else {
			p.Spec.Containers = append(p.Spec.Containers, ctr)
		}
	}
	return p
}

func app(cpu string, gpus, nics int) rctr {
	return rctr{name: "app", cpu: cpu, memory: "1Gi", gpus: gpus, nics: nics}
}

// restartDevices: 2 GPUs and a NIC a NUMA node; unhealthy lists the IDs reported Unhealthy.
func restartDevices(withNIC bool, unhealthy ...string) map[string][]Device {
	bad := map[string]bool{}
	for _, id := range unhealthy {
		bad[id] = true
	}
	dev := func(id string, node int64) Device {
		d := Device{ID: id, Health: "Healthy"}
		if bad[id] {
			d.Health = "Unhealthy"
		}
		d.Topology = &struct {
			Nodes []struct {
				ID int64 `json:"ID"`
			} `json:"nodes"`
		}{Nodes: []struct {
			ID int64 `json:"ID"`
		}{{ID: node}}}
		return d
	}
	out := map[string][]Device{gpu: {dev("gpu-0", 0), dev("gpu-1", 0), dev("gpu-2", 1), dev("gpu-3", 1)}}
	if withNIC {
		out[nic] = []Device{dev("nic-0", 0), dev("nic-1", 1)}
	}
	return out
}

// restartConfig is the kubelet's configuration, before and after the restart.
type restartConfig struct {
	short         string
	policy, scope string
	memStatic     bool
}

var restartConfigs = []restartConfig{
	{"tm-none-container__mem-None", "none", "container", false},
	{"tm-restricted-container__mem-Static", "restricted", "container", true},
	{"tm-single-numa-node-pod__mem-Static", "single-numa-node", "pod", true},
}

// restartVariant is one restart.json (and what changed in between).
type restartVariant struct {
	short string
	spec  RestartSpec
}

// running lists "<uid>/<container>" of these pods' containers.
func running(ctrs ...string) []string {
	var out []string
	for _, c := range ctrs {
		pod, name, _ := strings.Cut(c, "/")
		out = append(out, "uid-"+pod+"/"+name)
	}
	return out
}

func reg(resource string, after int) []PluginRegistration {
	return []PluginRegistration{{Resource: resource, AfterPods: after}}
}

// never is an afterPods past every case's pods.
const never = 99

func reboot(short string, register []PluginRegistration) restartVariant {
	return restartVariant{short: "reboot-" + short, spec: RestartSpec{Kind: "reboot", Running: []string{}, Register: register}}
}

func kubeletRestart(short string, ready bool, run []string, register []PluginRegistration) restartVariant {
	s := "restart-" + short
	if ready {
		s += "-ready"
	}
	return restartVariant{short: s, spec: RestartSpec{Kind: "kubelet-restart", Running: run, SourcesReady: ready, Register: register}}
}

// restartScenario is the node's pods (seeded, then re-admitted) and what the restart changes.
type restartScenario struct {
	short       string
	description string
	seeds       []*v1.Pod // admitted before the restart, in this order
	again       []*v1.Pod // re-admitted (same UIDs, maybe changed), then any new pod
	seedDevices map[string][]Device
	devices     map[string][]Device // the plugins after the restart
	drop        []string            // resources dropped from the checkpoint's registered devices
	variants    []restartVariant
	// bestEffort: also under topology best-effort/container (memory None), where the device
	// manager's hints are asked and a refusal comes from its Allocate.
	bestEffort bool
}

func restartScenarios() []restartScenario {
	a := rpod("a", 0, app("2", 1, 0))
	b := rpod("b", 1, app("2", 1, 0))
	c := rpod("c", 2, app("2", 0, 0))
	n := rpod("n", 3, app("2", 1, 0))
	allApps := running("a/app", "b/app", "c/app")
	var out []restartScenario

	out = append(out, restartScenario{
		short:       "gpu-pods",
		description: "pods a and b hold a GPU each, c CPUs and memory only; a new pod n asks a GPU",
		seeds:       []*v1.Pod{a, b, c}, again: []*v1.Pod{a, b, c, n},
		seedDevices: restartDevices(false), devices: restartDevices(false),
		variants: []restartVariant{
			reboot("plugin-never", reg(gpu, never)),
			reboot("plugin-first", reg(gpu, 0)),
			reboot("plugin-after-1", reg(gpu, 1)),
			reboot("plugin-after-all", reg(gpu, 4)),
			kubeletRestart("running-plugin-never", false, allApps, reg(gpu, never)),
			kubeletRestart("running-plugin-never", true, allApps, reg(gpu, never)),
			kubeletRestart("a-running-plugin-never", false, running("a/app", "c/app"), reg(gpu, never)),
			kubeletRestart("running-plugin-after-2", false, allApps, reg(gpu, 2)),
			kubeletRestart("running-plugin-first", false, allApps, reg(gpu, 0)),
			kubeletRestart("running-plugin-first", true, allApps, reg(gpu, 0)),
			// The runtime down at the kubelet's start (#118559's remark, #137919): no container
			// reported running, though they run.
			kubeletRestart("runtime-down-plugin-never", false, []string{}, reg(gpu, never)),
			kubeletRestart("runtime-down-plugin-first", false, []string{}, reg(gpu, 0)),
			// #135485: a restarted before the kubelet did; the runtime lists its old instance too.
			{short: "restart-a-restarted-plugin-never", spec: RestartSpec{Kind: "kubelet-restart", Running: allApps,
				Exited: running("a/app"), Register: reg(gpu, never)}},
		},
	})

	// k/k #138446: an init container and the app container both ask for a GPU; the app reuses
	// the init container's (both hold it in the checkpoint); after a kubelet restart only the
	// app runs.
	// ib first: its app's 2 GPUs (one reused from its init container) fit one NUMA node.
	ib := rpod("ib", 0, rctr{name: "init", cpu: "1", memory: "256Mi", gpus: 1, init: true}, app("2", 2, 0))
	ia := rpod("ia", 1, rctr{name: "init", cpu: "1", memory: "256Mi", gpus: 1, init: true}, app("2", 1, 0))
	out = append(out, restartScenario{
		short:       "init-app",
		description: "pod ib's init container asks 1 GPU and its app 2 (one reused from the init container), ia's init and app 1 each (the app reuses the init container's); c CPUs only",
		seeds:       []*v1.Pod{ib, ia, c}, again: []*v1.Pod{ib, ia, c},
		seedDevices: restartDevices(false), devices: restartDevices(false),
		variants: []restartVariant{
			reboot("plugin-never", reg(gpu, never)),
			reboot("plugin-first", reg(gpu, 0)),
			kubeletRestart("apps-running-plugin-never", false, running("ia/app", "ib/app", "c/app"), reg(gpu, never)),
			kubeletRestart("apps-running-plugin-first", false, running("ia/app", "ib/app", "c/app"), reg(gpu, 0)),
			kubeletRestart("all-running-plugin-never", false, running("ia/init", "ia/app", "ib/init", "ib/app", "c/app"), reg(gpu, never)),
		},
	})

	// A restartable sidecar and the app, each with a GPU of its own; both run. Not for a
	// release without sidecars (1.27: its k8s.io/api has no Container.RestartPolicy, the
	// sidecar would be a plain init container, another scenario).
	if hasSidecars {
		sc := rpod("s", 0, rctr{name: "sidecar", cpu: "1", memory: "256Mi", gpus: 1, sidecars: true}, app("2", 1, 0))
		out = append(out, restartScenario{
			short:       "sidecar-app",
			description: "pod s's restartable sidecar and app container hold a GPU each",
			seeds:       []*v1.Pod{sc, c}, again: []*v1.Pod{sc, c},
			seedDevices: restartDevices(false), devices: restartDevices(false),
			variants: []restartVariant{
				reboot("plugin-never", reg(gpu, never)),
				kubeletRestart("running-plugin-never", false, running("s/sidecar", "s/app", "c/app"), reg(gpu, never)),
				kubeletRestart("app-running-plugin-never", false, running("s/app", "c/app"), reg(gpu, never)),
			},
		})
	}

	// The GPU a holds is unhealthy after the restart. Before it, only gpu-0 was healthy, so a
	// holds gpu-0.
	out = append(out, restartScenario{
		short:       "held-unhealthy",
		description: "pod a holds gpu-0, which the plugin reports Unhealthy after the restart; c CPUs only; a new pod n asks a GPU",
		seeds:       []*v1.Pod{a, c}, again: []*v1.Pod{a, c, n},
		seedDevices: restartDevices(false, "gpu-1", "gpu-2", "gpu-3"), devices: restartDevices(false, "gpu-0"),
		bestEffort: true,
		variants: []restartVariant{
			reboot("plugin-first", reg(gpu, 0)),
			reboot("plugin-never", reg(gpu, never)),
			kubeletRestart("running-plugin-first", false, running("a/app", "c/app"), reg(gpu, 0)),
			kubeletRestart("running-plugin-first", true, running("a/app", "c/app"), reg(gpu, 0)),
		},
	})

	// a's spec asks 2 GPUs after the restart while the checkpoint holds 1 for it.
	a2 := rpod("a", 0, app("2", 2, 0))
	out = append(out, restartScenario{
		short:       "changed-request",
		description: "pod a holds 1 GPU but asks 2 after the restart; b holds 1 and asks 1; c CPUs only",
		seeds:       []*v1.Pod{a, b, c}, again: []*v1.Pod{a2, b, c},
		bestEffort:  true,
		seedDevices: restartDevices(false), devices: restartDevices(false),
		variants: []restartVariant{
			reboot("plugin-first", reg(gpu, 0)),
			kubeletRestart("running-plugin-first", false, allApps, reg(gpu, 0)),
			kubeletRestart("running-plugin-never", false, allApps, reg(gpu, never)),
		},
	})

	// The other way: a held 2 GPUs and asks 1 after the restart. The hints asked of held
	// devices are [] for any other count (topology_hints.go:56-59), where a hint built over the
	// held devices would fit the one asked: restricted and single-numa-node refuse with
	// TopologyAffinityError, not with Allocate's "changed request".
	aTwo := rpod("a", 0, app("2", 2, 0))
	out = append(out, restartScenario{
		short:       "shrunk-request",
		description: "pod a holds 2 GPUs but asks 1 after the restart; b holds 1 and asks 1; c CPUs only",
		seeds:       []*v1.Pod{aTwo, b, c}, again: []*v1.Pod{a, b, c},
		bestEffort:  true,
		seedDevices: restartDevices(false), devices: restartDevices(false),
		variants: []restartVariant{
			reboot("plugin-first", reg(gpu, 0)),
			kubeletRestart("running-plugin-first", false, allApps, reg(gpu, 0)),
		},
	})

	// The GPU plugin was gone past its 5-minute grace period before the restart: the checkpoint
	// keeps a's and b's entries but no longer registers the resource.
	out = append(out, restartScenario{
		short:       "plugin-gone",
		description: "the GPU plugin left past its grace period before the restart (the checkpoint registers no GPU; a and b still hold theirs); c CPUs only; a new pod n asks a GPU",
		seeds:       []*v1.Pod{a, b, c}, again: []*v1.Pod{a, b, c, n},
		seedDevices: restartDevices(false), devices: restartDevices(false), drop: []string{gpu},
		variants: []restartVariant{
			reboot("plugin-never", reg(gpu, never)),
			reboot("plugin-first", reg(gpu, 0)),
			reboot("plugin-after-2", reg(gpu, 2)),
			kubeletRestart("running-plugin-never", false, allApps, reg(gpu, never)),
		},
	})

	// Two plugins: a holds a GPU, b a NIC, d both; the NIC plugin comes later.
	bn := rpod("b", 1, app("2", 0, 1))
	d := rpod("d", 2, app("2", 1, 1))
	out = append(out, restartScenario{
		short:       "gpu-nic",
		description: "pod a holds a GPU, b a NIC, d one of each",
		seeds:       []*v1.Pod{a, bn, d}, again: []*v1.Pod{a, bn, d},
		seedDevices: restartDevices(true), devices: restartDevices(true),
		variants: []restartVariant{
			reboot("gpu-first-nic-after-1", []PluginRegistration{{gpu, 0}, {nic, 1}}),
			reboot("gpu-first-nic-never", []PluginRegistration{{gpu, 0}, {nic, never}}),
			reboot("nic-first-gpu-after-2", []PluginRegistration{{gpu, 2}, {nic, 0}}),
			kubeletRestart("a-d-running-nic-never", false, running("a/app", "d/app"), []PluginRegistration{{gpu, 0}, {nic, never}}),
		},
	})
	return out
}

// restartCase is one case's inputs.
type restartCase struct {
	name string
	sc   *restartScenario
	v    restartVariant
	m    *Machine
	tags []string
	desc string
}

func restartCases() []*restartCase {
	s := Shape{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"}
	var out []*restartCase
	scs := restartScenarios()
	for i := range scs {
		sc := &scs[i]
		configs := restartConfigs
		if sc.bestEffort {
			configs = append(append([]restartConfig(nil), configs...), restartConfig{"tm-best-effort-container__mem-None", "best-effort", "container", false})
		}
		for _, v := range sc.variants {
			for _, cfg := range configs {
				m := readmitMachine(s, cfg.policy, cfg.scope, false, cfg.memStatic)
				ready := "sources-not-ready"
				if v.spec.SourcesReady {
					ready = "sources-ready"
				}
				c := &restartCase{
					name: fmt.Sprintf("restart__%s__%s__%s__%s", s.Name(), sc.short, v.short, cfg.short),
					sc:   sc, v: v, m: m,
					tags: []string{"restart", v.spec.Kind, ready, sc.short, "tm-" + cfg.policy + "-" + cfg.scope, onOff(cfg.memStatic, "mem-Static", "mem-None")},
					desc: fmt.Sprintf("%s: %s; %s", v.spec.Kind, sc.description, v.short),
				}
				if len(v.spec.Exited) > 0 {
					c.tags = append(c.tags, "exited-instance")
				}
				out = append(out, c)
			}
		}
	}
	return out
}

func (c *restartCase) writeTo(dir string) error {
	d := filepath.Join(dir, c.name)
	write := func(name string, v any) error { return WriteJSON(filepath.Join(d, name), v) }
	if err := write("machine.json", c.m); err != nil {
		return err
	}
	if err := write("devices.json", map[string]any{"resources": c.sc.devices}); err != nil {
		return err
	}
	if err := write("restart.json", c.v.spec); err != nil {
		return err
	}
	for i, p := range c.sc.again {
		name := "pod.json"
		if i > 0 {
			name = fmt.Sprintf("pod%d.json", i+1)
		}
		if err := writePod(filepath.Join(d, name), p); err != nil {
			return err
		}
	}
	for i, p := range c.sc.seeds {
		if err := writePod(filepath.Join(d, "setup", fmt.Sprintf("seed%d.json", i)), p); err != nil {
			return err
		}
	}
	if err := write("setup/devices.json", map[string]any{"resources": c.sc.seedDevices}); err != nil {
		return err
	}
	if c.sc.drop != nil {
		if err := write("setup/drop-registered.json", c.sc.drop); err != nil {
			return err
		}
	}
	return write("setup/meta.json", Meta{Description: c.desc, Tags: SortedTags(c.tags...)})
}

// GenerateRestart writes the restart cases' inputs under out.
func GenerateRestart(out string) error {
	seen := map[string]bool{}
	cases := restartCases()
	for _, c := range cases {
		if seen[c.name] {
			return fmt.Errorf("case %s generated twice", c.name)
		}
		seen[c.name] = true
		if err := c.writeTo(out); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "generated %d restart cases\n", len(cases))
	return nil
}
