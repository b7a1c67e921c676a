// Package admit is `kubectl nodestate admit`: would the kubelet of a node admit this pod, on
// which CPUs and NUMA nodes, and if not, why? The logic is pkg/admit's (on pkg/replay, the
// kubelet's resource managers); this is the glue.
package admit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

var example = cmdutil.Examples(`
	# Would the kubelet of worker-1 admit this pod as the node is now, and on which CPUs?
	kubectl nodestate admit worker-1 -f pod.yaml

	# Several pods, admitted in order on the same kubelet (their allocations stack)
	kubectl nodestate admit worker-1 -f db.yaml -f cache.yaml -o json

	# Which nodes of the pool admit it, and where
	kubectl nodestate admit --all-nodes -l pool=cpu-pinned -f pod.yaml

	# A GPU pod: its device IDs and their NUMA nodes per node, with the devices' topology
	kubectl nodestate admit --all-nodes -l pool=gpu -f gpu-pod.yaml --devices devices.json -o wide

	# Why was this pod rejected (TopologyAffinityError, SMTAlignmentError, ...), and what fits?
	kubectl nodestate admit pod/db-0 -n databases

	# Which nodes admit it, from the states the nodes publish (deploy/publish): no debug pod
	kubectl nodestate admit --all-nodes --from-published -f pod.yaml

	# Offline, on the files copied off a node (collect bundle), with the machine and config to be
	kubectl nodestate admit --from-dir ./worker-1 --machine machine.json --kubelet-config config.yaml --kubelet-version v1.37.1 -f pod.yaml`)

// maxPods bounds the pods read from -f files.
const maxPods = 1000

// Options is the admit command's state.
type Options struct {
	cmdutil.ReplayOptions
	// Pods are the -f manifests: files, directories (-R: recursively), URLs, or - for stdin.
	Pods resource.FilenameOptions
	// DevicesFile is --devices: the device plugins' devices (the device manager is replayed).
	DevicesFile string
	// FromPublished answers from the states the nodes published (deploy/publish), MaxAge the
	// oldest taken.
	FromPublished bool
	MaxAge        time.Duration

	// podName is NAME of a pod/NAME argument; podRef is that pod as read, with the status the
	// kubelet gave it.
	podName string
	podRef  *v1.Pod
}

// NewCmdAdmit returns the admit command.
func NewCmdAdmit(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{ReplayOptions: cmdutil.NewReplayOptions(flags, streams)}
	cmd := &cobra.Command{
		Use:   "admit (NODE... | --all-nodes | --from-dir DIR) -f POD.yaml... | pod/NAME",
		Short: "Say whether the kubelet admits a pod, on which CPUs and NUMA nodes, and why not",
		Long: cmdutil.LongDesc(`
			Admit replays, for the node's kubelet release, the kubelet's admission of a pod: its
			topology manager with the CPU and memory managers as hint providers (every policy and
			option of that release), on the node's checkpoints, machine and config as they are,
			then the node-resource predicate (OutOfcpu, OutOfmemory, OutOfpods) on live nodes.
			It prints whether the pod is admitted, the kubelet's Reason and Message word for word,
			each container's CPU set and memory NUMA nodes, and for a refusal the policy or
			option that forbade it with the free CPUs per NUMA node, socket and core.

			With several -f, the pods are admitted in that order on the same kubelet. pod/NAME
			takes a pod the kubelet rejected, replays its admission on its node now and says
			the largest exclusive CPU request that node admits under its options.

			With --devices (the devices each device plugin advertises, with their NUMA nodes) the
			device manager is replayed too, first of the hint providers as in the kubelet, on the
			node's device checkpoint: each container's device IDs and the NUMA nodes they sit on
			(a DEVICES column), and whether they were the only possible pick or the kubelet's
			default one among several (marked * when equivalent, ~ when they differ; a plugin's
			GetPreferredAllocation may choose others, admission does not depend on it). A refused
			pod is told the free devices per NUMA node, and pod/NAME what would fit: the most
			devices the node admits with the pod's CPUs. On a live node, a device held in the
			checkpoint by a pod the API server no longer has is named when it is the cause
			(replayed without it, the pod is admitted). Without --devices, and for DRA, the
			result names the hint providers not replayed, and pods asking for devices say so.

			With --from-published, live nodes are answered from the states they publish
			(node-publish, deploy/publish): one LIST of their ConfigMaps, no debug pod, each node's
			lines with the state's AGE; a node that publishes none, or one older than --max-age
			(its publisher stopped), says so and is not judged. A published state holds no pod
			list: a named node's pods are listed (one LIST each); with --all-nodes only where they
			decide an answer (one the replay with the checkpoints' owners gone gives otherwise), and
			elsewhere every owner counts running and the node-resource predicate is not replayed.

			-o wide adds each container's CPUs' NUMA nodes and the DEVICES column; with
			--all-nodes the last line names the nodes that admit every pod, with the NUMA nodes
			they put them on.

			A pod is admitted (yes), refused (no), or not judged: it asks for device-plugin
			devices whose devices were not replayed (no --devices offline; a resource whose
			devices' NUMA nodes are not known on a live node), or it follows such a pod on the same
			node. The notes say why, and what the replay without those devices said.

			Exit status: 0 when every pod is admitted, 1 when one is refused (or the kubelet would
			not start), 4 when one is not judged and none refused, 2 when a node could not be read,
			3 on a usage error; 3 before 2 before 1 before 4.`),
		Example:           example,
		ValidArgsFunction: cmdutil.CompleteNodeNames(flags),
		RunE:              cmdutil.RunE(o),
	}
	o.ReplayOptions.AddFlags(cmd)
	cmd.Flags().StringArrayVarP(&o.Pods.Filenames, "filename", "f", nil, "Pod manifests (YAML or JSON, several documents allowed): a file, a directory, a URL, or - for stdin; repeat for more pods, admitted in order")
	cmd.Flags().BoolVarP(&o.Pods.Recursive, "recursive", "R", false, "Read the directories given with -f recursively")
	cmd.Flags().StringVar(&o.DevicesFile, "devices", "", `The node's device plugins' devices, per resource, each the device plugin API's Device message as JSON: {"resources": {"example.com/gpu": [{"ID": "gpu-0", "health": "Healthy", "topology": {"nodes": [{"ID": 0}]}}]}}; replays the device manager (with the node's device checkpoint)`)
	cmd.Flags().BoolVar(&o.FromPublished, "from-published", false, "Answer live nodes from the states they publish (deploy/publish), without debug pods")
	cmd.Flags().DurationVar(&o.MaxAge, "max-age", nodestate.DefaultMaxPublishedAge, "With --from-published: the oldest state judged (older: its publisher stopped, the node is not judged)")
	_ = cmd.MarkFlagFilename("devices", "json")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

// Complete reads the pods (-f, or pod/NAME from the API), the machine and the config.
func (o *Options) Complete(args []string) error {
	var nodes []string
	var ref string
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "pod/"); ok {
			ref = name
		} else if name, ok := strings.CutPrefix(a, "pods/"); ok {
			ref = name
		} else {
			nodes = append(nodes, a)
		}
	}
	if err := o.CompleteInputs(nodes); err != nil {
		return err
	}
	cfg := o.Inputs
	pods, err := readPods(&o.Pods)
	if err != nil {
		return err
	}
	if ref != "" && (len(pods) > 0 || len(nodes) > 0) {
		return errors.New("pod/NAME takes no node and no -f: it is read from the API and replayed on its node")
	}
	o.podName = ref
	if o.FromPublished {
		o.Published = &nodestate.PublishedRead{MaxAge: o.MaxAge}
	}
	for i, p := range pods {
		// The managers key their state by UID: a manifest has none, so each pod gets its own.
		if p.UID == "" {
			p.UID = types.UID(fmt.Sprintf("nodestate-admit-%d", i))
		}
	}
	o.Engines.Admit = &nodestate.AdmitConfig{Machine: cfg.Machine, KubeletConfig: cfg.KubeletConfig, Pods: pods, Largest: ref != "" && !o.Live.AllNodes}
	if o.DevicesFile != "" {
		devices, err := nodestate.ReadDevicePlugins(o.DevicesFile)
		if err != nil {
			return err
		}
		o.Engines.Admit.Devices = devices
	}
	return nil
}

// readPodRef reads pod/NAME and admits it anew on its node (or on the nodes asked for).
func (o *Options) readPodRef() error {
	pod, err := o.getPod(o.podName)
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUnreadable, Message: err.Error()}
	}
	o.podRef = pod
	p := pod.DeepCopy()
	// Admitted anew, as if placed on each node judged: the kubelet's predicate refuses a pod
	// bound to another node's name.
	p.Status, p.Spec.NodeName = v1.PodStatus{}, ""
	o.Engines.Admit.Pods = []*v1.Pod{p}
	if o.Live.AllNodes {
		return nil
	}
	if pod.Spec.NodeName == "" {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Message: fmt.Sprintf("pod %s/%s is not bound to a node: no kubelet saw it (the scheduler placed it nowhere); try --all-nodes", p.Namespace, p.Name)}
	}
	o.Nodes = []string{pod.Spec.NodeName}
	return nil
}

// getPod reads pod/NAME in the namespace of the flags.
func (o *Options) getPod(name string) (*v1.Pod, error) {
	flags := o.Live.ConfigFlags
	config, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	return client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// readPods reads the -f manifests as kubectl does (resource.Builder, locally: no server is
// asked), in order: every object must be a Pod with a name; a pod without a namespace is in
// "default".
func readPods(files *resource.FilenameOptions) ([]*v1.Pod, error) {
	if len(files.Filenames) == 0 {
		return nil, nil
	}
	infos, err := resource.NewLocalBuilder().
		WithScheme(scheme.Scheme, scheme.Scheme.PrioritizedVersionsAllGroups()...).
		FilenameParam(false, files).
		Flatten().
		Do().Infos()
	if err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, fmt.Errorf("no pod in %s", strings.Join(files.Filenames, ", "))
	}
	var out []*v1.Pod
	for _, info := range infos {
		p, ok := info.Object.(*v1.Pod)
		if !ok {
			return nil, fmt.Errorf("%s: kind %q: want Pod", info.Source, info.Object.GetObjectKind().GroupVersionKind().Kind)
		}
		if p.Name == "" {
			return nil, fmt.Errorf("%s: a pod without metadata.name", info.Source)
		}
		if p.Namespace == "" {
			p.Namespace = metav1.NamespaceDefault
		}
		out = append(out, p)
		if len(out) > maxPods {
			return nil, fmt.Errorf("over %d pods in %s", maxPods, strings.Join(files.Filenames, ", "))
		}
	}
	return out, nil
}

// Validate checks the flags together.
func (o *Options) Validate() error {
	switch {
	case o.FromPublished && o.Source.Offline():
		return errors.New("--from-published answers live nodes: not with --from-dir")
	case o.MaxAge <= 0:
		return errors.New("--max-age must be positive")
	}
	if o.podName != "" {
		if o.Source.Offline() {
			return errors.New("pod/NAME is read from the API: it replays on live nodes only")
		}
		return nil // its node is known once it is read
	}
	if err := o.ReadOptions.Validate(); err != nil {
		return err
	}
	if len(o.Engines.Admit.Pods) == 0 {
		return errors.New("no pod to admit: give -f POD.yaml, or pod/NAME")
	}
	if o.Source.FromFile != "" {
		return errors.New("admit reads a node's checkpoints together: use --from-dir, not --from-file")
	}
	return nil
}

// Run reads each node, replays the admissions and prints.
func (o *Options) Run(ctx context.Context) error {
	run := o.StartReplay()
	if o.podName != "" {
		if err := o.readPodRef(); err != nil {
			return err
		}
	}
	if p := o.podRef; p != nil {
		fmt.Fprintf(o.ErrOut, "pod %s/%s on node %s: phase %s, reason %q, message %q\n", p.Namespace, p.Name, orNone(p.Spec.NodeName), p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	ro := o.RenderOptions()
	ro.Devices = nodestate.PodsAskDevices(o.Engines.Admit.Pods)
	ro.Sources = o.Published != nil
	// Live nodes print as each is replayed (in the order they complete), so a fleet's answers
	// are not held until the end; one node named prints its object (the JSON contract), as
	// kubectl get NAME prints an object and a selector a list.
	one := !o.Live.AllNodes && len(o.Nodes) == 1
	results := cmdutil.NewResults(&o.Live, o.Out, ro, render.AdmitListKind, render.Admit, !o.Source.Offline() && !one)
	var sum admitSummary
	notJudged := false
	add := func(r render.AdmitResult) {
		sum.add(r)
		results.Add(r)
	}
	for n, read := range run.Nodes(ctx) {
		if !read {
			add(render.AdmitResult{Node: n.Node, Error: n.Err.Error(), Source: n.Source})
			continue
		}
		a := n.Admit
		for _, note := range a.Notes {
			run.Notes.Addf(n.Node, "%s: %s", n.Where, note)
		}
		if a.Err != nil {
			// Said once for the nodes that share it (no kubelet config on 1,000 nodes).
			run.Notes.Addf(n.Node, "error: %s: %v", n.Where, a.Err)
			run.Worst = max(run.Worst, cmdutil.ExitUnreadable)
			add(render.AdmitResult{Node: n.Node, Error: a.Err.Error(), Source: n.Source})
			continue
		}
		if !a.KubeletStart.Starts {
			run.Worst = max(run.Worst, cmdutil.ExitNotValid)
		}
		for _, adm := range a.Admissions {
			switch adm.Verdict {
			case nodestate.AdmissionRefused:
				run.Worst = max(run.Worst, cmdutil.ExitNotValid)
			case nodestate.AdmissionNotJudged:
				notJudged = true
			}
		}
		add(render.AdmitResult{Node: n.Node, AdmitPrediction: a.Result, LargestCPURequest: a.Largest, LargestDeviceRequest: a.LargestDevices, Source: n.Source})
	}
	err := run.Done()
	if err != nil && !cmdutil.Interrupted(err) {
		return err
	}
	if perr := results.Close(func(held []render.AdmitResult) error {
		if one && (ro.Format == render.JSON || ro.Format == render.YAML) {
			ro.ShowNode = false
		}
		return render.Admit(o.Out, ro, held)
	}); perr != nil {
		return perr
	}
	if sum.nodes > 1 && ro.Format == render.Table {
		fmt.Fprintln(o.Out, sum)
	}
	if err != nil {
		return err
	}
	return cmdutil.Exit(exitCode(run.Worst, notJudged))
}

// exitCode is the worst exit status seen, or ExitNotJudged when that is ExitOK and a pod was not
// judged: "not judged" never hides a refusal or a node not read.
func exitCode(worst int, notJudged bool) int {
	if worst == cmdutil.ExitOK && notJudged {
		return cmdutil.ExitNotJudged
	}
	return worst
}

// admitSummary counts, as they come, the nodes that admit every pod (and where), those that
// refuse one (or whose kubelet would not start), those that could not judge one and refuse none,
// and those not read. unweighed are the nodes of yes whose node-resource predicate was not
// replayed (their pods not known): their yes is the resource managers' alone.
type admitSummary struct {
	nodes                     int
	yes, notJudged, unweighed []string
	refuses, notRead          int
}

func (s *admitSummary) add(r render.AdmitResult) {
	s.nodes++
	switch {
	case r.Error != "":
		s.notRead++
		return
	case !r.KubeletStart.Starts:
		s.refuses++
		return
	}
	judged := true
	for _, a := range r.Admissions {
		switch a.Verdict {
		case nodestate.AdmissionRefused:
			s.refuses++
			return
		case nodestate.AdmissionNotJudged:
			judged = false
		}
	}
	if !judged {
		s.notJudged = append(s.notJudged, r.Node)
		return
	}
	if !r.NodeResourcesChecked {
		s.unweighed = append(s.unweighed, r.Node)
	}
	if where := render.AdmitWhere(r); where != "" {
		s.yes = append(s.yes, r.Node+" ("+where+")")
		return
	}
	s.yes = append(s.yes, r.Node)
}

// String says which nodes admit every pod, then how many refuse, which could not judge, and how
// many were not read.
func (s admitSummary) String() string {
	var b strings.Builder
	if len(s.yes) == 0 {
		fmt.Fprintf(&b, "no node of %d admits the pods", s.nodes)
	} else {
		sort.Strings(s.yes)
		fmt.Fprintf(&b, "%d of %d nodes admit the pods", len(s.yes), s.nodes)
		if len(s.unweighed) == len(s.yes) {
			b.WriteString(" (their resource managers; the node-resource predicate not replayed)")
		}
		fmt.Fprintf(&b, ": %s", strings.Join(s.yes, ", "))
		if n := len(s.unweighed); n > 0 && n < len(s.yes) {
			sort.Strings(s.unweighed)
			fmt.Fprintf(&b, " (the node-resource predicate not replayed on %s)", strings.Join(s.unweighed, ", "))
		}
	}
	if s.refuses > 0 {
		fmt.Fprintf(&b, "; %d %s", s.refuses, map[bool]string{true: "refuses", false: "refuse"}[s.refuses == 1])
	}
	if len(s.notJudged) > 0 {
		sort.Strings(s.notJudged)
		fmt.Fprintf(&b, "; %d could not judge: %s", len(s.notJudged), strings.Join(s.notJudged, ", "))
	}
	if s.notRead > 0 {
		fmt.Fprintf(&b, "; %d not read", s.notRead)
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
