package nodestate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
)

// KubeletConfigFile is the kubelet config kubeadm writes into the kubelet root dir; the debug
// pod already mounts that dir read-only, so reading it costs nothing more.
const KubeletConfigFile = "config.yaml"

// Where a live node's kubelet config came from (NodeResult.KubeletConfigFrom).
const (
	FromConfigz    = "configz"
	FromConfigYAML = "config.yaml"
)

// maxConfigz bounds configz's answer: a KubeletConfiguration is a few KiB.
const maxConfigz = 1 << 20

// ConfigzFunc gets /configz of a node's kubelet, through the API server's node proxy.
type ConfigzFunc func(ctx context.Context, node string) ([]byte, error)

// APIConfigz is the real ConfigzFunc: GET /api/v1/nodes/NAME/proxy/configz.
func APIConfigz(client kubernetes.Interface) ConfigzFunc {
	return func(ctx context.Context, node string) ([]byte, error) {
		b, err := client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(ctx)
		if err != nil {
			return nil, err
		}
		if len(b) > maxConfigz {
			return nil, fmt.Errorf("configz answered %d bytes, over the %d-byte limit", len(b), maxConfigz)
		}
		return b, nil
	}
}

// canProxy asks the API server whether this user may GET nodes/proxy, which is what the API
// server checks on /api/v1/nodes/NAME/proxy/configz. The kubelet's fine-grained nodes/configz
// (KubeletFineGrainedAuthz) is checked by the kubelet against its caller, which through the
// proxy is the API server, so it does not open this path. Never widened: a user without it
// gets the config.yaml fallback.
func canProxy(ctx context.Context, client kubernetes.Interface) (bool, string) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy"},
	}}
	got, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, "cannot check the nodes/proxy permission: " + err.Error()
	}
	if !got.Status.Allowed {
		return false, "no get on nodes/proxy (configz through the API server needs it)"
	}
	return true, ""
}

// withExtras asks the fetcher for what Config.Machine and Config.KubeletConfig need.
func (r *Runner) withExtras(ctx context.Context, f *fetch.Fetcher) {
	f.Dumps = r.dumps()
	if !r.cfg.KubeletConfig {
		return
	}
	f.Paths = append(slices.Clone(f.Paths), KubeletConfigFile)
	if r.configz == nil {
		return
	}
	if ok, why := canProxy(ctx, r.cfg.Client); !ok {
		r.configz, r.noConfigz = nil, why
	}
}

// sysfsDump is the machine's sysfs dump, run in the exec that reads the files.
var sysfsDump = fetch.StderrDump{Script: machine.SysfsScript, ReaderSection: nodelocal.SectionSysfs, Header: machine.SysfsHeader, End: machine.SysfsEnd, Max: machine.MaxSysfsBytes}

// addExtras moves config.yaml out of the snapshot's checkpoint files and fills in the node's
// machine and kubelet config.
func (r *Runner) addExtras(ctx context.Context, res *NodeResult) {
	s := res.Snapshot
	if s == nil {
		return
	}
	if r.cfg.Machine {
		if dump := s.Dumps[machine.SysfsHeader]; dump == nil {
			res.MachineErr = fmt.Errorf("the debug pod printed no sysfs dump")
		} else {
			res.Machine, res.MachineErr = machine.FromSysfs(dump)
		}
	}
	if !r.cfg.KubeletConfig {
		return
	}
	yaml, haveYAML := s.Files[KubeletConfigFile]
	delete(s.Files, KubeletConfigFile)
	s.Missing = slices.DeleteFunc(s.Missing, func(p string) bool { return p == KubeletConfigFile })
	var why []string
	if r.configz != nil {
		b, err := r.configz(ctx, res.Node)
		if err == nil {
			res.KubeletConfig, res.KubeletConfigFrom = b, FromConfigz
			return
		}
		why = append(why, "configz: "+configzError(res.Node, err))
	} else if r.noConfigz != "" {
		why = append(why, "configz: "+r.noConfigz)
	}
	if haveYAML {
		res.KubeletConfig, res.KubeletConfigFrom = yaml, FromConfigYAML
		res.KubeletConfigNote = joinNotes(why)
		return
	}
	why = append(why, "no "+KubeletConfigFile+" in the kubelet root dir")
	res.KubeletConfigNote = joinNotes(why)
}

// configzError says in a few words why configz failed: an HTTP status names what answered
// (kwok, for one, serves no /configz: 404), anything else is the client's error.
func configzError(node string, err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		return fmt.Sprintf("GET /api/v1/nodes/%s/proxy/configz answered HTTP %d", node, status.Status().Code)
	}
	return fetch.ExplainError(err, "").Error()
}

func joinNotes(ns []string) string {
	out := ""
	for i, n := range ns {
		if i > 0 {
			out += "; "
		}
		out += n
	}
	return out
}
