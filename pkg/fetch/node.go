package fetch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
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
		detail += ": " + text.OneLine(message)
	}
	return &Error{Node: node, Reason: ReasonNodeNotReady, Short: "NotReady",
		Message: "node is not Ready, its kubelet cannot run the debug pod: " + detail +
			"; read the files on the node itself with the script of `kubectl nodestate collect --print-script`, then --from-dir"}
}

// nodeOS prefers the label the scheduler uses, then what the kubelet reports.
func nodeOS(node *corev1.Node) string {
	if os := node.Labels[corev1.LabelOSStable]; os != "" {
		return os
	}
	return node.Status.NodeInfo.OperatingSystem
}

// NodeInfo is what reading a node needs of its Node object, kept instead of the object: a
// listed cluster then costs a few dozen bytes a node, and no node is read twice.
type NodeInfo struct {
	Name           string
	KubeletVersion string // status.nodeInfo.kubeletVersion: picks the format rules
	// Devices are the node's extended resources (device plugins'), as its status says.
	Devices *DeviceStatus
	// Allocatable is status.allocatable: what the kubelet's node-resource predicate admits
	// pods against.
	Allocatable corev1.ResourceList
	// Object is the node object as the kubelet's predicate admit handler reads it beyond its
	// allocatable (predicateObject), kept with Allocatable.
	Object *corev1.Node

	listed  bool  // read from the API server (else only named: Fetch reads it first)
	refused error // checkNode's verdict, when listed
}

// NodeInfoOf keeps what reading node needs.
func NodeInfoOf(node *corev1.Node) NodeInfo {
	return NodeInfo{Name: node.Name, KubeletVersion: node.Status.NodeInfo.KubeletVersion, Devices: deviceStatus(node),
		Allocatable: node.Status.Allocatable, Object: predicateObject(node),
		listed: true, refused: checkNode(node)}
}

// predicateObject is what the predicate admit handler reads of a node object beyond its
// allocatable: its name and labels (node name, affinity and selector), its taints (NoExecute)
// and its status' features (SupplementalGroupsPolicy).
func predicateObject(node *corev1.Node) *corev1.Node {
	out := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels}}
	out.Spec.Taints, out.Status.Features = node.Spec.Taints, node.Status.Features
	return out
}

// nodePageSize bounds one page of the node list, so a large cluster is never held whole.
const nodePageSize = 500

// NodeInfos returns what keeps the NodeInfo of each node of a listed fleet. A node's
// allocatable is most of its NodeInfo: it is kept only when asked for (admit weighs pods
// against it; no other read does), and then once for all the nodes that share it, as a pool's
// nodes do, so that the fleet's NodeInfos stay a few dozen bytes a node. With it goes the node
// object as the predicate reads it (its name, labels, taints, features: Object), the node's own:
// the labels the Node list decoded, referenced, not copied.
func NodeInfos(allocatable bool) func(*corev1.Node) NodeInfo {
	shared := map[string]corev1.ResourceList{}
	return func(n *corev1.Node) NodeInfo {
		info := NodeInfoOf(n)
		if !allocatable {
			info.Allocatable, info.Object = nil, nil
			return info
		}
		key := resourceKey(info.Allocatable)
		if same, ok := shared[key]; ok {
			info.Allocatable = same
		} else {
			shared[key] = info.Allocatable
		}
		return info
	}
}

// resourceKey spells a resource list in one string, the same for equal lists.
func resourceKey(rl corev1.ResourceList) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(rl)) {
		q := rl[name]
		b.WriteString(string(name))
		b.WriteByte('=')
		b.WriteString(q.String())
		b.WriteByte(',')
	}
	return b.String()
}

// ListNodes lists the nodes matching a label selector ("" for all), sorted by name, in pages,
// keeping only what info (NodeInfoOf, NodeInfos) keeps of each.
func ListNodes(ctx context.Context, client kubernetes.Interface, selector string, info func(*corev1.Node) NodeInfo) ([]NodeInfo, error) {
	var nodes []NodeInfo
	if err := EachNode(ctx, client, selector, func(n *corev1.Node) { nodes = append(nodes, info(n)) }); err != nil {
		return nil, err
	}
	slices.SortFunc(nodes, func(a, b NodeInfo) int { return strings.Compare(a.Name, b.Name) })
	return nodes, nil
}

// EachNode lists the nodes matching a label selector in pages, one LIST request a page, and
// hands each to keep, which keeps what it needs: the page is dropped after it.
func EachNode(ctx context.Context, client kubernetes.Interface, selector string, keep func(*corev1.Node)) error {
	opts := metav1.ListOptions{LabelSelector: selector, Limit: nodePageSize}
	for {
		list, err := client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return ExplainError(err, "")
		}
		for i := range list.Items {
			keep(&list.Items[i])
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

// NodeNames lists the names of the nodes matching a label selector ("" for all), sorted.
func NodeNames(ctx context.Context, client kubernetes.Interface, selector string) ([]string, error) {
	nodes, err := ListNodes(ctx, client, selector, NodeInfos(false))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return names, nil
}
