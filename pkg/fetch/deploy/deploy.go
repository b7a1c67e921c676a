// Package deploy writes the manifests that set a cluster up for kubectl-nodestate: its
// namespace, the Role and ClusterRole granting exactly the API calls the plugin makes, and the
// ValidatingAdmissionPolicies that admit in that namespace only the debug pod's shape and let
// exec reach only debug pods. deploy/*.yaml in the repository is its default output; `kubectl
// nodestate rbac` prints it for another namespace, image or kubelet root dir. The files sort
// in the order they apply (`kubectl apply -f deploy/`): the namespace before the policy's
// ConfigMap in it.
package deploy

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// The admission policies' names; their bindings add the namespace.
const (
	PodPolicy  = "kubectl-nodestate-debug-pod"
	ExecPolicy = "kubectl-nodestate-exec"
	// ParamsName is the ConfigMap in the plugin's namespace holding the policy's parameters.
	ParamsName = fetch.ParamsConfigMap
)

// Config is what the manifests are made for. Zero fields take the plugin's defaults.
type Config struct {
	Namespace       string   // the debug pods' namespace (fetch.DefaultNamespace)
	Images          []string // the debug pod images allowed (fetch.DefaultImage)
	KubeletRootDirs []string // the kubelet root dirs allowed (fetch.DefaultKubeletRootDir)
	// HostDirs are every node dir beside the kubelet's the plugin may mount (nodestate knows them).
	HostDirs []fetch.HostDir
	// Reads are every exec the debug pods' reads run (nodestate knows them): the exec policy
	// admits only these.
	Reads fetch.ReadAllowlist
	// MaxActiveDeadlineSeconds bounds the debug pod's life (DefaultMaxActiveDeadlineSeconds).
	MaxActiveDeadlineSeconds int64
	// Args is how the command that made them was called, recorded in the headers ("" for the
	// defaults).
	Args string
}

// DefaultMaxActiveDeadlineSeconds is the longest a debug pod may live: 4 hours, far above the
// default 300 s and what long --pod-running-timeout / --exec-timeout need, and still a bound.
const DefaultMaxActiveDeadlineSeconds int64 = 4 * 3600

// WithDefaults fills the zero fields and cleans the paths.
func (c Config) WithDefaults() Config {
	if c.MaxActiveDeadlineSeconds == 0 {
		c.MaxActiveDeadlineSeconds = DefaultMaxActiveDeadlineSeconds
	}
	if c.Namespace == "" {
		c.Namespace = fetch.DefaultNamespace
	}
	if len(c.Images) == 0 {
		c.Images = []string{fetch.DefaultImage}
	}
	if len(c.KubeletRootDirs) == 0 {
		c.KubeletRootDirs = []string{fetch.DefaultKubeletRootDir}
	}
	dirs := make([]string, len(c.KubeletRootDirs))
	for i, d := range c.KubeletRootDirs {
		dirs[i] = path.Clean(d)
	}
	c.KubeletRootDirs = dirs
	return c
}

// reserved namespaces hold other pods: the policy would refuse every one of them.
var reserved = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// Validate checks c after defaults, with messages a user can act on.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if errs := content.IsDNS1123Label(c.Namespace); len(errs) > 0 {
		return fmt.Errorf("namespace %q is not a valid namespace name: %s", c.Namespace, strings.Join(errs, "; "))
	}
	if slices.Contains(reserved, c.Namespace) {
		return fmt.Errorf("namespace %q holds other pods, which the policy would refuse: pick a namespace of the plugin's own (default %s)",
			c.Namespace, fetch.DefaultNamespace)
	}
	for _, img := range c.Images {
		// The ConfigMap lists them comma-separated; an image reference has neither commas nor spaces.
		if img == "" || strings.ContainsAny(img, ", \t\n'\"\\") {
			return fmt.Errorf("image %q is not an image reference", img)
		}
	}
	for _, d := range c.KubeletRootDirs {
		if !path.IsAbs(d) || strings.ContainsAny(d, ",\n'\"\\") {
			return fmt.Errorf("kubelet root dir %q must be an absolute path without commas or quotes", d)
		}
	}
	if c.MaxActiveDeadlineSeconds < 0 {
		return fmt.Errorf("the debug pod's longest life (%d s) must be positive", c.MaxActiveDeadlineSeconds)
	}
	// The ConfigMap lists the reads' words space-separated.
	for _, w := range slices.Concat(c.Reads.Sections, c.Reads.Paths) {
		if w == "" || strings.ContainsAny(w, " \t\n") {
			return fmt.Errorf("read argument %q: empty or with white space", w)
		}
	}
	for _, d := range c.HostDirs {
		if strings.ContainsAny(d.Name+d.Path+d.MountPath, "'\"\\\n") {
			return fmt.Errorf("host dir %q: quotes in its name or paths", d.Name)
		}
	}
	return nil
}

var (
	//go:embed rbac.yaml.tmpl
	rbacTemplate string
	//go:embed policy.yaml.tmpl
	policyTemplate string

	templates = template.Must(template.New("rbac").Funcs(template.FuncMap{"quoted": quoted, "json": jsonString,
		"join": func(words []string) string { return strings.Join(words, " ") }}).Parse(rbacTemplate))
	_ = template.Must(templates.New("policy").Parse(policyTemplate))
)

// Manifests holds the two files: the namespace and RBAC (deploy/rbac.yaml), the admission
// policies and their parameters (deploy/shape-policy.yaml).
type Manifests struct {
	RBAC, Policy []byte
}

// All is both files as one YAML stream, for `kubectl apply -f -`: the namespace first, since
// the policy's ConfigMap lives in it.
func (m Manifests) All() []byte {
	return slices.Concat(m.RBAC, []byte("---\n"), m.Policy)
}

// Generate renders the manifests for c.
func Generate(c Config) (Manifests, error) {
	if err := c.Validate(); err != nil {
		return Manifests{}, err
	}
	c = c.WithDefaults()
	d := data{
		Namespace:       c.Namespace,
		Args:            c.Args,
		ParamsName:      ParamsName,
		Images:          strings.Join(c.Images, ","),
		KubeletRootDirs: strings.Join(c.KubeletRootDirs, ","),
		PodPolicy:       PodPolicy,
		PodBinding:      PodPolicy + "." + c.Namespace,
		ExecPolicy:      ExecPolicy,
		ExecBinding:     ExecPolicy + "." + c.Namespace,
		LabelManagedBy:  fetch.LabelManagedBy,
		ManagedBy:       fetch.ManagedBy,
		LabelNode:       fetch.LabelNode,
		NamePrefix:      fetch.PodNamePrefix,
		ContainerName:   fetch.ContainerName,
		KubeletVolume:   fetch.VolumeName,
		KubeletMount:    fetch.MountPath,
		HostDirsCEL:     hostDirsCEL(c.HostDirs),
		HostDirsText:    hostDirsText(c.HostDirs),
		Reads:           c.Reads,
		ReaderPath:      fetch.ReaderPath,
		NodeReadVerb:    fetch.NodeReadVerb,

		MaxActiveDeadlineSeconds: strconv.FormatInt(c.MaxActiveDeadlineSeconds, 10),
	}
	var m Manifests
	for name, out := range map[string]*[]byte{"rbac": &m.RBAC, "policy": &m.Policy} {
		var b bytes.Buffer
		if err := templates.ExecuteTemplate(&b, name, d); err != nil {
			return Manifests{}, err
		}
		*out = b.Bytes()
	}
	return m, nil
}

type data struct {
	Namespace, Args, ParamsName, Images, KubeletRootDirs string
	PodPolicy, PodBinding, ExecPolicy, ExecBinding       string
	LabelManagedBy, ManagedBy, LabelNode, NamePrefix     string
	ContainerName, KubeletVolume, KubeletMount           string
	HostDirsCEL, HostDirsText                            string
	Reads                                                fetch.ReadAllowlist
	ReaderPath, NodeReadVerb, MaxActiveDeadlineSeconds   string
}

// hostDirsCEL is the CEL map of the host dirs: volume name -> [node path, mount path, type].
// Validate keeps quotes out of them.
func hostDirsCEL(dirs []fetch.HostDir) string {
	parts := make([]string, len(dirs))
	for i, d := range dirs {
		v := fetch.HostDirVolume(d)
		parts[i] = fmt.Sprintf("'%s': ['%s', '%s', '%s']", d.Name, v.HostPath.Path, d.MountPath, *v.HostPath.Type)
	}
	// One entry a line, at the folded scalar's indentation in the template.
	return "{" + strings.Join(parts, ",\n        ") + "}"
}

// hostDirsText names the host dirs for the volumes rule's message.
func hostDirsText(dirs []fetch.HostDir) string {
	if len(dirs) == 0 {
		return "no other"
	}
	parts := make([]string, len(dirs))
	for i, d := range dirs {
		parts[i] = d.Name + "=" + fetch.HostDirVolume(d).HostPath.Path
	}
	return strings.Join(parts, ", ")
}

// jsonString writes s as a JSON string, which YAML reads as a double-quoted scalar: the shell
// reader's script holds quotes, backslashes and "$".
func jsonString(s string) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "2>/dev/null" reads as written
	err := enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n"), err
}

// quoted quotes s for a YAML scalar when it needs it (an image "a:1" would read as a map).
func quoted(s string) string {
	return `"` + s + `"`
}
