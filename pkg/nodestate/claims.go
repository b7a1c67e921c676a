package nodestate

import (
	"context"
	"fmt"
	"maps"
	"sort"

	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/doctor"
)

// claimGetter gets one ResourceClaim in the API version the server serves.
type claimGetter func(ctx context.Context, namespace, name string) (doctor.ClaimStatus, error)

// claimsAPI picks resource.k8s.io/v1 (Kubernetes 1.34+), else v1beta1 (1.32-1.33); nil when
// the server serves neither.
func claimsAPI(client kubernetes.Interface) (claimGetter, string) {
	served := func(gv string) bool {
		list, err := client.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			return false
		}
		for _, r := range list.APIResources {
			if r.Name == "resourceclaims" {
				return true
			}
		}
		return false
	}
	// From the API server's watch cache (resourceVersion 0), as the node's pods are listed: one
	// claim per node and per fleet run must not each cost an etcd read.
	fromCache := metav1.GetOptions{ResourceVersion: "0"}
	switch {
	case served(resourcev1.SchemeGroupVersion.String()):
		return func(ctx context.Context, ns, name string) (doctor.ClaimStatus, error) {
			c, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, name, fromCache)
			if err != nil {
				return doctor.ClaimStatus{}, err
			}
			return claimStatus(string(c.UID), c.Status.Allocation != nil, c.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) string { return string(r.UID) }), nil
		}, ""
	case served(resourcev1beta1.SchemeGroupVersion.String()):
		return func(ctx context.Context, ns, name string) (doctor.ClaimStatus, error) {
			c, err := client.ResourceV1beta1().ResourceClaims(ns).Get(ctx, name, fromCache)
			if err != nil {
				return doctor.ClaimStatus{}, err
			}
			return claimStatus(string(c.UID), c.Status.Allocation != nil, c.Status.ReservedFor, func(r resourcev1beta1.ResourceClaimConsumerReference) string { return string(r.UID) }), nil
		}, ""
	}
	return nil, "the API server serves no resource.k8s.io v1 or v1beta1 ResourceClaims"
}

func claimStatus[R any](uid string, allocated bool, reserved []R, uidOf func(R) string) doctor.ClaimStatus {
	cs := doctor.ClaimStatus{UID: uid, Allocated: allocated}
	for _, r := range reserved {
		cs.ReservedFor = append(cs.ReservedFor, uidOf(r))
	}
	sort.Strings(cs.ReservedFor)
	return cs
}

// readClaims gets the ResourceClaim of every claim the DRA checkpoint prepared, by
// "namespace/name" (absent: the API server has none). Reading claims is optional: no RBAC of
// its own is asked for, so a user who may not get them has the checks skipped, and the
// returned reason says so.
func readClaims(ctx context.Context, get claimGetter, claims []decode.DRAClaim) (map[string]doctor.ClaimStatus, string) {
	out := map[string]doctor.ClaimStatus{}
	for _, c := range claims {
		key := c.Namespace + "/" + c.ClaimName
		if _, done := out[key]; done {
			continue
		}
		cs, err := get(ctx, c.Namespace, c.ClaimName)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case apierrors.IsForbidden(err):
			return nil, fmt.Sprintf("no get on resourceclaims in namespace %s (optional: grant it to check the prepared claims against the API)", c.Namespace)
		case err != nil:
			return nil, "reading ResourceClaim " + key + ": " + err.Error()
		}
		out[key] = cs
	}
	return out, ""
}

// draClaims are the prepared claims of a node's judged DRA checkpoint.
func draClaims(reports []*decode.Report) []decode.DRAClaim {
	for _, r := range reports {
		if r == nil || r.Kind != decode.KindDRA {
			continue
		}
		if st := r.Decoded.DRA; st != nil {
			return st.Claims
		}
	}
	return nil
}

// nodeFacts is what doctor compares the files with: the node's status, sockets, CDI specs
// and the claims read from the API.
func (n *NodeResult) nodeFacts() *doctor.NodeFacts {
	f := &doctor.NodeFacts{ClaimsSkipped: n.ClaimsSkipped}
	if s := n.Snapshot; s != nil && s.Devices != nil {
		// Known: an empty status is no resource at all, not an unknown one.
		f.Capacity, f.Allocatable = map[string]int64{}, map[string]int64{}
		maps.Copy(f.Capacity, s.Devices.Capacity)
		maps.Copy(f.Allocatable, s.Devices.Allocatable)
	}
	if n.Sockets != nil {
		f.Sockets = append([]string{}, n.Sockets.Names...)
	}
	if n.CDI != nil {
		f.CDIDevices, f.CDIProblems = n.CDI.Devices, n.CDI.Problems
	}
	f.Claims = n.Claims
	return f
}

// addClaims reads the ResourceClaims of res's prepared claims (live, Config.NodeFiles). The
// API version is picked once per Reader.
func (r *Runner) addClaims(ctx context.Context, res *NodeResult) {
	var reports []*decode.Report
	for _, row := range res.Rows {
		reports = append(reports, row.Report)
	}
	claims := draClaims(reports)
	if len(claims) == 0 {
		return
	}
	r.claimsOnce.Do(func() { r.getClaim, r.noClaims = claimsAPI(r.cfg.Client) })
	if r.getClaim == nil {
		res.ClaimsSkipped = r.noClaims
		return
	}
	res.Claims, res.ClaimsSkipped = readClaims(ctx, r.getClaim, claims)
}

// offlineClaims says why a copy's claims are not checked.
const offlineClaims = "the files were read offline, and ResourceClaims are the API server's (read the node live)"

// NodeFacts is what doctor compares the node's files with (nil parts unknown).
func (n *NodeResult) NodeFacts() *doctor.NodeFacts { return n.nodeFacts() }
