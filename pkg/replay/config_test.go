package replay

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

func TestParseKubeletConfig(t *testing.T) {
	yamlCfg := `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
kubeReserved:
  cpu: 1
  memory: 1Gi
evictionHard: {}
reservedMemory:
- numaNode: 0
  limits:
    memory: 1124Mi
featureGates:
  CPUManagerPolicyAlphaOptions: true
`
	configz := `{"kubeletconfig":{"cpuManagerPolicy":"static","memoryManagerPolicy":"Static","systemReserved":{"memory":"1Gi"}}}`
	for _, tc := range []struct {
		name, in string
		check    func(*KubeletConfig) bool
	}{
		{"yaml, numbers as quantities", yamlCfg, func(c *KubeletConfig) bool {
			return c.CPUPolicy() == "static" && c.KubeReserved["cpu"] == "1" && c.EvictionHard != nil && len(*c.EvictionHard) == 0 &&
				quantityText(c.ReservedMemory[0].Limits["memory"]) == "1124Mi" && c.FeatureGates[decode.GateCPUManagerPolicyAlphaOptions] && c.MemoryPolicy() == "None"
		}},
		{"configz", configz, func(c *KubeletConfig) bool {
			return c.MemoryPolicy() == "Static" && c.SystemReserved["memory"] == "1Gi" && c.EvictionHardOrDefault()["memory.available"] == "100Mi"
		}},
		{"empty means defaults", `{}`, func(c *KubeletConfig) bool {
			return c.CPUPolicy() == "none" && c.MemoryPolicy() == "None" && c.TopologyPolicy() == "none"
		}},
	} {
		c, err := ParseKubeletConfig([]byte(tc.in))
		if err != nil || !tc.check(c) {
			t.Errorf("%s: %+v %v", tc.name, c, err)
		}
	}
	for _, bad := range []string{`kind: Pod`, `apiVersion: v1`, `[1,2]`, `cpuManagerPolicy: [x]`} {
		if _, err := ParseKubeletConfig([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestDeepCopySharesNothing: every field of a config with all of them set is copied, equal, and
// no map, slice or pointer of the copy is the original's (a fix tried on the copy must leave
// the user's config alone). A field added to KubeletConfig fails the first check until it is
// set here.
func TestDeepCopySharesNothing(t *testing.T) {
	c, err := ParseKubeletConfig([]byte(`kind: KubeletConfiguration
apiVersion: kubelet.config.k8s.io/v1beta1
cpuManagerPolicy: static
cpuManagerPolicyOptions: {full-pcpus-only: "true"}
reservedSystemCPUs: "0"
kubeReserved: {cpu: 1}
systemReserved: {memory: 1Gi}
evictionHard: {memory.available: 100Mi}
memoryManagerPolicy: Static
reservedMemory: [{numaNode: 0, limits: {memory: 1124Mi}}]
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
topologyManagerPolicyOptions: {prefer-closest-numa-nodes: "true"}
featureGates: {CPUManagerPolicyAlphaOptions: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	orig := reflect.ValueOf(c).Elem()
	for i := range orig.NumField() {
		if orig.Field(i).IsZero() {
			t.Fatalf("the fixture leaves %s unset", orig.Type().Field(i).Name)
		}
	}
	cp := c.DeepCopy()
	if !equality.Semantic.DeepEqual(c, cp) {
		t.Fatalf("copy differs:\n%+v\n%+v", c, cp)
	}
	var shared func(path string, a, b reflect.Value)
	shared = func(path string, a, b reflect.Value) {
		switch a.Kind() {
		case reflect.Map, reflect.Slice, reflect.Pointer:
			if !a.IsNil() && a.Pointer() == b.Pointer() {
				t.Errorf("%s: the copy shares the original's %s", path, a.Kind())
			}
		}
		switch a.Kind() {
		case reflect.Pointer:
			if !a.IsNil() {
				shared(path, a.Elem(), b.Elem())
			}
		case reflect.Struct:
			for i := range a.NumField() {
				shared(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
			}
		case reflect.Slice:
			for i := range a.Len() {
				shared(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i))
			}
		case reflect.Map:
			for _, k := range a.MapKeys() {
				shared(fmt.Sprintf("%s[%v]", path, k), a.MapIndex(k), b.MapIndex(k))
			}
		}
	}
	shared("config", orig, reflect.ValueOf(cp).Elem())
}

func TestMachineParse(t *testing.T) {
	if _, err := machine.Parse([]byte(`{"schema":"other","cpus":[]}`)); err == nil {
		t.Error("wrong schema accepted")
	}
	if _, err := machine.Parse([]byte(`{"schema":"statevec/machine/v1","cpus":[{"id":1},{"id":1}]}`)); err == nil {
		t.Error("a CPU listed twice accepted")
	}
	m, err := machine.Parse([]byte(`{"schema":"statevec/machine/v1","cpus":[{"id":0,"numa":0},{"id":1,"numa":1,"socket":1}],"numa":[{"id":0,"memory":10},{"id":2,"memory":5}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Online().String() != "0-1" || m.Sockets() != 2 || m.MemoryCapacity() != 15 || len(m.NodeIDs()) != 3 {
		t.Errorf("machine %s: %v", m.Summary(), m.NodeIDs())
	}
}

// smallNode is a 4-CPU machine with a static CPU manager and no files.
func smallNode(t *testing.T, version string, cfg string) StartInput {
	t.Helper()
	m, err := machine.Parse([]byte(`{"schema":"statevec/machine/v1","cpus":[{"id":0},{"id":1,"core":1},{"id":2,"core":2},{"id":3,"core":3}],"numa":[{"id":0,"memory":8589934592}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseKubeletConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	k, err := decode.ParseKubelet(version, nil)
	if err != nil {
		t.Fatal(err)
	}
	return StartInput{Machine: m, Config: c, Kubelet: k}
}

func TestFeatureGatesAtStart(t *testing.T) {
	for _, tc := range []struct {
		version, cfg, phase, err string
	}{
		{"v1.34.10", `{"featureGates":{"PodLevelResourceManagers":true}}`, PhaseFeatureGates, "unrecognized feature gate: PodLevelResourceManagers"},
		{decode.HomeKubelet, `{"featureGates":{"PodLevelResourceManagers":true}}`, PhaseOK, ""},
		{"v1.33.0", `{"featureGates":{"MemoryManager":false}}`, PhaseFeatureGates, "cannot set feature gate MemoryManager to false, feature is locked to true"},
		{decode.HomeKubelet, `{"featureGates":{"MemoryManager":false}}`, PhaseFeatureGates, "unrecognized feature gate: MemoryManager"},
		// 1.25: the CPU manager's gate off makes it the kubelet's fake, which checks nothing.
		{"v1.25.16", `{"cpuManagerPolicy":"bogus","featureGates":{"CPUManager":false}}`, PhaseOK, ""},
		{"v1.25.16", `{"cpuManagerPolicy":"bogus"}`, PhaseCPUNew, `unknown policy: "bogus"`},
		{"v1.31.14", `{"cpuManagerPolicy":"static","kubeReserved":{"cpu":"1"},"cpuManagerPolicyOptions":{"full-pcpus-only":"yes"}}`, PhaseCPUNew,
			`new static policy error: bad value for option "full-pcpus-only": strconv.ParseBool: parsing "yes": invalid syntax`},
		{"v1.31.14", `{"cpuManagerPolicy":"static","kubeReserved":{"cpu":"1"},"featureGates":{"CPUManagerPolicyAlphaOptions":true},"cpuManagerPolicyOptions":{"full-pcpus-only":"true","distribute-cpus-across-cores":"true"}}`, PhaseCPUNew,
			"new static policy error: static policy options full-pcpus-only and distribute-cpus-across-cores can not be used at the same time"},
		{decode.HomeKubelet, `{"cpuManagerPolicy":"none","cpuManagerPolicyOptions":{"full-pcpus-only":"true"}}`, PhaseCPUNew,
			"new none policy error: None policy: received unsupported options=map[full-pcpus-only:true]"},
		{decode.HomeKubelet, `{"memoryManagerPolicy":"BestEffort"}`, PhaseMemoryNew, `policy "BestEffort" is not available for platform "linux"`},
		{"v1.31.14", `{"memoryManagerPolicy":"BestEffort"}`, PhaseMemoryNew, `unknown policy: "BestEffort"`},
		{decode.HomeKubelet, `{"evictionHard":{"memory.available":"5%"},"memoryManagerPolicy":"Static","reservedMemory":[{"numaNode":0,"limits":{"memory":"409Mi"}}]}`, PhaseMemoryNew,
			`the total amount "409Mi" of type "memory" is not equal to the value "429496736" determined by Node Allocatable feature`}, // 5% as float32: 0.050000001
	} {
		p, err := PredictStart(smallNode(t, tc.version, tc.cfg))
		if err != nil || p.Phase != tc.phase || p.Error != tc.err {
			t.Errorf("%s %s: got %s %q (%v), want %s %q", tc.version, tc.cfg, p.Phase, p.Error, err, tc.phase, tc.err)
		}
	}
	if _, err := PredictStart(smallNode(t, "v1.24.0", `{}`)); err == nil || !strings.Contains(err.Error(), "predates") {
		t.Errorf("1.24: %v", err)
	}
}

func quantityText(q resource.Quantity) string { return q.String() }
