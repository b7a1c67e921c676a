package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// AdmitResult is admit's answer for one node, as `admit -o json|yaml` prints it: "admissions"
// (one per pod, in order) and "kubeletStart" ("starts": false and no admission when the
// kubelet would not start).
type AdmitResult struct {
	Node string `json:"node,omitempty"`
	nodestate.AdmitPrediction
	// LargestCPURequest is, for a refused pod, the most exclusive CPUs a pod like it is admitted
	// with on this node now (admit pod/NAME).
	LargestCPURequest map[string]int `json:"largestCPURequest,omitempty"`
	// Error is why the node could not be read or predicted (then nothing else is known).
	Error string `json:"error,omitempty"`
}

// AdmitListKind is the kind of admit's json/yaml list.
const AdmitListKind = "AdmitResultList"

// Admit prints one row per container of an admitted pod and one per refused pod, then, for
// each refusal, why; json and yaml print the result itself for one node, a list for several.
func Admit(w io.Writer, o Options, results []AdmitResult) error {
	if len(results) == 1 && !o.ShowNode && (o.Format == JSON || o.Format == YAML) {
		return printOne(w, o.Format, results[0])
	}
	if done, err := printStructured(w, o, AdmitListKind, results); done {
		return err
	}
	t := newTable(w, o, "POD", "ADMITTED", "CONTAINER", "CPUS", "MEMORY-NUMA", "REASON", "MESSAGE").fixedWidths(24, 8, 16, 16, 11, 22, 70)
	var why []string
	for _, r := range results {
		switch s := r.KubeletStart; {
		case r.Error != "":
			t.add(r.Node, "", "error", "", "", "", "", text.OneLine(r.Error))
			continue
		case !s.Starts:
			t.add(r.Node, "", "no", "", "", "", "KubeletStart", text.OneLine(fmt.Sprintf("kubelet %s would not start (%s): %s", r.Kubelet, s.Phase, s.Error)))
			continue
		}
		for _, a := range r.Admissions {
			name := admittedPod(a)
			if !a.Admitted {
				admitted, reason := "no", a.Reason
				switch {
				case a.Hangs:
					admitted, reason = "hangs", "KubeletHangs"
				case a.NotReached:
					admitted = "waits"
				}
				t.add(r.Node, name, admitted, "", "", "", reason, text.OneLine(a.Message))
				where := name
				if r.Node != "" {
					where += " on " + r.Node
				}
				for _, line := range a.Why {
					why = append(why, where+": "+line)
				}
				if n, ok := r.LargestCPURequest[a.Pod]; ok {
					why = append(why, fmt.Sprintf("%s: the largest exclusive CPU request this node admits now under these options: %d", where, n))
				}
				continue
			}
			for _, c := range a.Containers {
				cpus := c.CPUs
				switch {
				case cpus == "":
					cpus = "(not pinned)"
				case !c.Exclusive:
					cpus += " (shared)"
				}
				t.add(r.Node, name, "yes", containerLabel(c), cpus, numaText(c.MemoryNUMANodes), "", "")
			}
			for _, u := range a.Unreplayed {
				why = append(why, name+": "+u)
			}
		}
	}
	t.render()
	for _, line := range why {
		fmt.Fprintln(w, line)
	}
	return nil
}

func admittedPod(a nodestate.Admission) string {
	if a.Namespace != "" {
		return a.Namespace + "/" + a.Pod
	}
	return a.Pod
}

func containerLabel(c nodestate.AdmittedContainer) string {
	switch {
	case c.Sidecar:
		return c.Name + " (sidecar)"
	case c.Init:
		return c.Name + " (init)"
	}
	return c.Name
}

func numaText(nodes []int) string {
	if len(nodes) == 0 {
		return "-"
	}
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ",")
}
