package nodestate

import (
	"context"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
)

// draExtendedResources lists the DeviceClasses once per run and maps each extendedResourceName
// (KEP-5004) to its class: where no device plugin serves such a resource, DRA does. As the
// scheduler picks among classes naming the same resource, the one created last wins, and among
// those created at once the name sorted first. Listing them is optional: no RBAC of its own is
// asked for; nil and why when the user may not list them. An API server that serves no
// resource.k8s.io/v1 DeviceClasses has none (an empty map).
func draExtendedResources(ctx context.Context, client kubernetes.Interface) (map[string]string, string) {
	// From the API server's watch cache (resourceVersion 0), as the node's pods are listed.
	list, err := client.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	switch {
	case apierrors.IsNotFound(err):
		return map[string]string{}, ""
	case apierrors.IsForbidden(err):
		return nil, "the DeviceClasses that would say so are not listed (no list on deviceclasses.resource.k8s.io; grant it to judge such pods)"
	case err != nil:
		return nil, "the DeviceClasses that would say so are not listed: " + text.OneLine(err.Error())
	}
	picked := map[string]*resourcev1.DeviceClass{}
	for i := range list.Items {
		c := &list.Items[i]
		if c.Spec.ExtendedResourceName == nil || *c.Spec.ExtendedResourceName == "" {
			continue
		}
		name := *c.Spec.ExtendedResourceName
		if p := picked[name]; p == nil || c.CreationTimestamp.After(p.CreationTimestamp.Time) ||
			c.CreationTimestamp.Equal(&p.CreationTimestamp) && c.Name < p.Name {
			picked[name] = c
		}
	}
	out := make(map[string]string, len(picked))
	for name, c := range picked {
		out[name] = c.Name
	}
	return out, ""
}
