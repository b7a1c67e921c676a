package fetch

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// checkNode refuses nodes a debug pod cannot read, before creating anything on them.
func checkNode(node *corev1.Node) error {
	if os := nodeOS(node); os != "" && os != "linux" {
		return &Error{Node: node.Name, Reason: ReasonUnsupportedOS, Short: "not supported yet, skipped",
			Message: fmt.Sprintf("%s nodes are not supported yet, skipped", os)}
	}
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return nil
		}
		return notReady(node.Name, fmt.Sprintf("Ready=%s", c.Status), c.Reason, c.Message)
	}
	return notReady(node.Name, "no Ready condition", "", "")
}

func notReady(node, state, reason, message string) *Error {
	detail := state
	if reason != "" {
		detail += " (" + reason + ")"
	}
	if message != "" {
		detail += ": " + oneLine(message)
	}
	return &Error{Node: node, Reason: ReasonNodeNotReady, Short: "NotReady",
		Message: "node is not Ready, its kubelet cannot run the debug pod: " + detail +
			"; read the files copied off the node with --from-dir instead"}
}

// nodeOS prefers the label the scheduler uses, then what the kubelet reports.
func nodeOS(node *corev1.Node) string {
	if os := node.Labels[corev1.LabelOSStable]; os != "" {
		return os
	}
	return node.Status.NodeInfo.OperatingSystem
}

// NodeNames lists the nodes matching a label selector ("" for all), sorted, for --all-nodes
// and -l.
func NodeNames(ctx context.Context, client kubernetes.Interface, selector string) ([]string, error) {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, ExplainError(err, "")
	}
	names := make([]string, 0, len(list.Items))
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return names, nil
}
