package decode

import (
	"encoding/json"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	state127 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/drastate127"
	state128 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/drastate128"
	state130 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/drastate130"
	state2a "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/drastatev2a"
	state2b "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/drastatev2b"
	state2c "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/drastatev2c"
	v1alpha2v029 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/drav1alpha2v029"
	v1alpha2v030 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/drav1alpha2v030"
)

// dra_manager_state (docs/checkpoint-formats.md part B §2). Six layout eras:
//   - v1a (1.27), v1b (1.28-1.29), v1c (1.30): {"version","entries","checksum"}, fnv32a over the
//     spew text of the whole checkpoint; 1.28-1.30 retry a failed checksum as the 1.27 text;
//   - v2a (1.31-1.34), v2b (1.35-1.36, Device.ShareID), v2c (1.37+, skipNodeOperations):
//     {"Data","Checksum"}, CRC-32 of Data, then Data decoded (kind/apiVersion never checked).

// DRAState is dra_manager_state: the claims the kubelet prepared, whatever the era.
type DRAState struct {
	// Version is the v1 checkpoint's "version" (kubelet 1.27-1.30; the kubelet writes "v1").
	Version string `json:"version,omitempty"`
	// Kind and APIVersion are the type of the v2 data document (kubelet 1.31+).
	Kind       string     `json:"kind,omitempty"`
	APIVersion string     `json:"apiVersion,omitempty"`
	Claims     []DRAClaim `json:"claims"`
}

// DRAClaim is one prepared ResourceClaim.
type DRAClaim struct {
	ClaimUID  string `json:"claimUID"`
	ClaimName string `json:"claimName"`
	Namespace string `json:"namespace"`
	// PodUIDs are the pods using the claim, sorted.
	PodUIDs []string `json:"podUIDs"`

	// v1 files (kubelet 1.27-1.30): one driver per claim.
	DriverName string `json:"driverName,omitempty"`
	ClassName  string `json:"className,omitempty"`
	// CDIDevices is driver name -> CDI device IDs.
	CDIDevices map[string][]string `json:"cdiDevices,omitempty"`
	// ResourceHandles are the allocation's opaque handles (1.28-1.30).
	ResourceHandles []DRAResourceHandle `json:"resourceHandles,omitempty"`

	// DriverState is driver name -> what it prepared (v2 files, kubelet 1.31+).
	DriverState map[string]DRADriverState `json:"driverState,omitempty"`
}

// DRAResourceHandle is a resource.k8s.io/v1alpha2 ResourceHandle.
type DRAResourceHandle struct {
	DriverName string `json:"driverName,omitempty"`
	Data       string `json:"data,omitempty"`
	// StructuredData is the structured-parameters allocation (1.30).
	StructuredData *DRAStructuredHandle `json:"structuredData,omitempty"`
}

// DRAStructuredHandle is a v1alpha2 StructuredResourceHandle; parameters are raw JSON.
type DRAStructuredHandle struct {
	VendorClassParameters json.RawMessage       `json:"vendorClassParameters,omitempty"`
	VendorClaimParameters json.RawMessage       `json:"vendorClaimParameters,omitempty"`
	NodeName              string                `json:"nodeName,omitempty"`
	Results               []DRAStructuredResult `json:"results"`
}

// DRAStructuredResult is one request's structured allocation.
type DRAStructuredResult struct {
	VendorRequestParameters json.RawMessage `json:"vendorRequestParameters,omitempty"`
	// NamedResource is the allocated named-resources instance, if that model was used.
	NamedResource *string `json:"namedResource,omitempty"`
}

// DRADriverState is what one driver prepared for a claim.
type DRADriverState struct {
	Devices []DRADevice `json:"devices"`
	// SkipNodeOperations are the node-local gRPC calls the kubelet skips (1.37+; "*" is all).
	SkipNodeOperations []string `json:"skipNodeOperations,omitempty"`
}

// DRADevice is one prepared device.
type DRADevice struct {
	PoolName   string `json:"poolName"`
	DeviceName string `json:"deviceName"`
	// ShareID identifies the share of a shared device (1.35+).
	ShareID      *string  `json:"shareID,omitempty"`
	RequestNames []string `json:"requestNames,omitempty"`
	CDIDeviceIDs []string `json:"cdiDeviceIDs,omitempty"`
}

var (
	draV1aLayout = layoutOf(layoutSpec[state127.DRAManagerCheckpoint, noData]{
		New: state127.NewDRAManagerCheckpoint,
		Model: func(cp *state127.DRAManagerCheckpoint, _ *noData) any {
			return draV1Model(cp.Version, cp.Entries, func(e state127.ClaimInfoState) DRAClaim {
				return draV1Claim(string(e.ClaimUID), e.ClaimName, e.Namespace, e.PodUIDs, e.DriverName, e.ClassName, e.CDIDevices, nil)
			})
		},
	})
	draV1bLayout = layoutOf(layoutSpec[state128.DRAManagerCheckpoint, noData]{
		New: state128.NewDRAManagerCheckpoint,
		Model: func(cp *state128.DRAManagerCheckpoint, _ *noData) any {
			return draV1Model(cp.Version, cp.Entries, func(e state128.ClaimInfoState) DRAClaim {
				return draV1Claim(string(e.ClaimUID), e.ClaimName, e.Namespace, e.PodUIDs, e.DriverName, e.ClassName, e.CDIDevices,
					mapSlice(e.ResourceHandles, draHandleV029))
			})
		},
	})
	draV1cLayout = layoutOf(layoutSpec[state130.DRAManagerCheckpoint, noData]{
		New: state130.NewDRAManagerCheckpoint,
		Model: func(cp *state130.DRAManagerCheckpoint, _ *noData) any {
			return draV1Model(cp.Version, cp.Entries, func(e state130.ClaimInfoState) DRAClaim {
				return draV1Claim(string(e.ClaimUID), e.ClaimName, e.Namespace, e.PodUIDs, e.DriverName, e.ClassName, e.CDIDevices,
					mapSlice(e.ResourceHandles, draHandleV030))
			})
		},
	})

	// The v2 sub-eras differ only in fields their data document added: one model reads the
	// newest type, into which an older document re-encodes without loss (what the older layout
	// dropped stays absent).
	draV2aLayout = draV2Layout[state2a.Checkpoint, state2a.CheckpointData](state2a.NewCheckpoint, func(cp *state2a.Checkpoint) string { return cp.Data })
	draV2bLayout = draV2Layout[state2b.Checkpoint, state2b.CheckpointData](state2b.NewCheckpoint, func(cp *state2b.Checkpoint) string { return cp.Data })
	draV2cLayout = draV2Layout[state2c.Checkpoint, state2c.CheckpointData](state2c.NewCheckpoint, func(cp *state2c.Checkpoint) string { return cp.Data })
)

// draV2Layout is a v2 layout: the envelope T, its data document P decoded only once the
// checkpoint loaded, its error returned as is.
func draV2Layout[T, P any](newCheckpoint func() *T, data func(*T) string) *layout {
	return layoutOf(layoutSpec[T, P]{New: newCheckpoint, Data: data, DataError: "%w", AfterVerify: true,
		Model: func(_ *T, d *P) any { return draV2Model(reencode[state2c.CheckpointData](d)) }})
}

func draV2Model(d *state2c.CheckpointData) *DRAState {
	out := &DRAState{Kind: d.Kind, APIVersion: d.APIVersion, Claims: make([]DRAClaim, 0, len(d.ClaimInfoStateList))}
	for _, e := range d.ClaimInfoStateList {
		c := draV2Claim(string(e.ClaimUID), e.ClaimName, e.Namespace, e.PodUIDs)
		for name, ds := range e.DriverState {
			s := DRADriverState{Devices: make([]DRADevice, 0, len(ds.Devices))}
			for _, dev := range ds.Devices {
				s.Devices = append(s.Devices, DRADevice{PoolName: dev.PoolName, DeviceName: dev.DeviceName,
					ShareID: uidString(dev.ShareID), RequestNames: dev.RequestNames, CDIDeviceIDs: dev.CDIDeviceIDs})
			}
			for _, op := range ds.SkipNodeOperations {
				s.SkipNodeOperations = append(s.SkipNodeOperations, string(op))
			}
			c.DriverState[name] = s
		}
		out.Claims = append(out.Claims, c)
	}
	return out
}

func draV1Model[E any](version string, entries []E, claim func(E) DRAClaim) *DRAState {
	out := &DRAState{Version: version, Claims: make([]DRAClaim, 0, len(entries))}
	for _, e := range entries {
		out.Claims = append(out.Claims, claim(e))
	}
	return out
}

// The typed accessors of the era table: stored checksums and data strings.
func draV1aSum(cp *state127.DRAManagerCheckpoint) *checksumField { return &cp.Checksum }
func draV1bSum(cp *state128.DRAManagerCheckpoint) *checksumField { return &cp.Checksum }
func draV1cSum(cp *state130.DRAManagerCheckpoint) *checksumField { return &cp.Checksum }
func draV2aEnvelope(cp *state2a.Checkpoint) (string, uint64)     { return cp.Data, uint64(cp.Checksum) }
func draV2bEnvelope(cp *state2b.Checkpoint) (string, uint64)     { return cp.Data, uint64(cp.Checksum) }
func draV2cEnvelope(cp *state2c.Checkpoint) (string, uint64)     { return cp.Data, uint64(cp.Checksum) }

// The 1.28-1.30 fallback hashes the decoded checkpoint rebuilt as the 1.27 layout, its two type
// names rewritten once each.
func draV1bWithoutHandles(cp *state128.DRAManagerCheckpoint) any { return cp.WithoutResourceHandles() }
func draV1cWithoutHandles(cp *state130.DRAManagerCheckpoint) any { return cp.WithoutResourceHandles() }

var draLegacyRewrites = []rewrite{{From: "DRAManagerCheckpointWithoutResourceHandles", To: "DRAManagerCheckpoint"},
	{From: "ClaimInfoStateListWithoutResourceHandles", To: "ClaimInfoStateList"}}

func draV1Claim(uid, name, ns string, pods sets.Set[string], driver, class string, cdi map[string][]string, handles []DRAResourceHandle) DRAClaim {
	return DRAClaim{ClaimUID: uid, ClaimName: name, Namespace: ns, PodUIDs: sortedPods(pods),
		DriverName: driver, ClassName: class, CDIDevices: cdi, ResourceHandles: handles}
}

func draV2Claim(uid, name, ns string, pods sets.Set[string]) DRAClaim {
	return DRAClaim{ClaimUID: uid, ClaimName: name, Namespace: ns, PodUIDs: sortedPods(pods), DriverState: map[string]DRADriverState{}}
}

func sortedPods(pods sets.Set[string]) []string {
	out := make([]string, 0, len(pods))
	for uid := range pods {
		out = append(out, uid)
	}
	sort.Strings(out)
	return out
}

func uidString[T ~string](p *T) *string {
	if p == nil {
		return nil
	}
	s := string(*p)
	return &s
}

func draHandleV029(h v1alpha2v029.ResourceHandle) DRAResourceHandle {
	return DRAResourceHandle{DriverName: h.DriverName, Data: h.Data}
}

func draHandleV030(h v1alpha2v030.ResourceHandle) DRAResourceHandle {
	out := DRAResourceHandle{DriverName: h.DriverName, Data: h.Data}
	if sd := h.StructuredData; sd != nil {
		out.StructuredData = &DRAStructuredHandle{VendorClassParameters: rawJSON(sd.VendorClassParameters.Raw),
			VendorClaimParameters: rawJSON(sd.VendorClaimParameters.Raw), NodeName: sd.NodeName,
			Results: make([]DRAStructuredResult, 0, len(sd.Results))}
		for _, r := range sd.Results {
			res := DRAStructuredResult{VendorRequestParameters: rawJSON(r.VendorRequestParameters.Raw)}
			if r.NamedResources != nil {
				name := r.NamedResources.Name
				res.NamedResource = &name
			}
			out.StructuredData.Results = append(out.StructuredData.Results, res)
		}
	}
	return out
}

// rawJSON keeps a RawExtension's bytes (a JSON value the decoder already checked) as raw JSON.
func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return json.RawMessage(b)
}

// Format marks. Sub-eras are named by the oldest layout that holds everything the file has: a
// file without the newer fields is byte-identical to the older sub-era's.

// draDataHasKey: the v2 data document (Go's JSON matching is case-insensitive) has key in any
// DriverState (level "driver") or Device (level "device").
func draDataHasKey(level, key string) func(*shapeDoc) bool {
	return func(d *shapeDoc) bool {
		objects := d.draDrivers.get(d.draDriverStates)
		if level == "device" {
			objects = d.draDevices.get(d.draDeviceList)
		}
		for _, o := range objects {
			if lookupFold(o, key) != nil {
				return true
			}
		}
		return false
	}
}

// draDriverStates is every DriverState of every claim in the v2 data document.
func (d *shapeDoc) draDriverStates() []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	for _, claim := range objectList(lookupFold(d.dataDocument(), "ClaimInfoStateList"), true) {
		for _, ds := range objectMap(lookupFold(claim, "DriverState"), true) {
			out = append(out, ds)
		}
	}
	return out
}

// draDeviceList is every Device of every DriverState in the v2 data document.
func (d *shapeDoc) draDeviceList() []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	for _, ds := range d.draDrivers.get(d.draDriverStates) {
		out = append(out, objectList(lookupFold(ds, "Devices"), true)...)
	}
	return out
}

// draV1HandleHasKey: a v1 entry's ResourceHandles element has key (1.30's structuredData).
func draV1HandleHasKey(key string) func(*shapeDoc) bool {
	return func(d *shapeDoc) bool {
		for _, entry := range objectList(d.top["entries"], d.topValid()) {
			for _, h := range objectList(lookupFold(entry, "ResourceHandles"), d.topValid()) {
				if lookupFold(h, key) != nil {
					return true
				}
			}
		}
		return false
	}
}

// checksumOnly is the shape of a format that carries no marks of its own: only its checksum
// tells it from the fallback of the same JSON shape (1.28-1.29 vs 1.30 handles).
func checksumOnly(*shapeDoc) bool { return false }

// lookupFold finds key in obj as encoding/json does: exact match first, else case-insensitive.
func lookupFold(obj map[string]json.RawMessage, key string) json.RawMessage {
	if v, ok := obj[key]; ok {
		return v
	}
	for k, v := range obj {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}
