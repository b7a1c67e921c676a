//go:build e2enode

package e2enode

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// TestReaderImagePull measures what --reader=binary costs a node that does not have the
// plugin's image yet (issue 42): the image as the release builds it (hack/e2e-node.sh: the
// static binary alone, hack/tools/ociimage) is pushed to a registry on the node's loopback
// (go-containerregistry's, hack/tools/ociimage/registry: NODESTATE_E2E_REGISTRY, started and
// stopped by its PID), and the kubelet pulls it through containerd for the debug pod of the
// first `verify NODE --reader=binary --image REGISTRY/...`; a second verify finds it present.
// It checks that the node had neither the image's layer nor its unpacked snapshot before (a
// cold pull), and logs, in one PULL line, the image's sizes (the OCI tar, this platform's
// compressed layer and its content, the binary), the kubelet's own figures for the pull (its
// Pulled event: time and image size) and the wall time of verify: cold, then warm and with the
// busybox reader (its image imported, as an air-gapped node has it), interleaved, pullRounds
// times each.
func TestReaderImagePull(t *testing.T) {
	// Alone only: a cold node is one where no test imported the plugin's image, and freeing an
	// imported image's layer (removing the CRI's record by image ID with ctr) left containerd
	// 1.6's CRI blind to the next import of the same image (ErrImageNeverPull in the tests after).
	if os.Getenv("NODESTATE_E2E_COLD_PULL") == "" {
		t.Skip("a measurement on a node no test has put the plugin's image on: NODESTATE_E2E_COLD_PULL=1 hack/e2e-node.sh -test.run '^TestReaderImagePull$'")
	}
	registry := os.Getenv("NODESTATE_E2E_REGISTRY")
	if registry == "" {
		t.Skip("NODESTATE_E2E_REGISTRY is not set: make e2e-node builds the registry (hack/tools/ociimage/registry)")
	}
	var im e2eImage
	for _, e := range e2eImages(t) {
		if !strings.Contains(e.ref, "node-problem-detector") {
			im = e
		}
	}
	if im.tar == "" {
		t.Fatalf("%s/images names no plugin image", os.Getenv("NODESTATE_E2E_NPD"))
	}
	sizes := imageSizes(t, im.tar, runtime.GOARCH)
	t.Logf("the plugin's image %s: tar %d B; linux/%s: manifest %s, layer %d B compressed (%s), %d B uncompressed (%s), %d B of content (manifest, config, layer)",
		im.ref, sizes.tar, runtime.GOARCH, sizes.manifest, sizes.layer, sizes.layerDigest, sizes.unpacked, sizes.diffID, sizes.content)

	// The registry, on the node's loopback (this test runs in the node's network namespace).
	ctx := context.Background()
	reg := exec.Command(registry, "-addr", "127.0.0.1:0")
	out, err := reg.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	reg.Stderr = os.Stderr
	if err := reg.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = reg.Process.Kill() // by its PID
		_ = reg.Wait()
	})
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the registry did not say where it listens: %v", err)
	}
	addr = strings.TrimSpace(addr)
	ref := addr + "/kubectl-nodestate/kubectl-nodestate:pull"
	start := time.Now()
	if b, err := exec.Command("skopeo", "copy", "--quiet", "--all", "--dest-tls-verify=false", "oci-archive:"+im.tar, "docker://"+ref).CombinedOutput(); err != nil {
		t.Fatalf("skopeo copy to the registry: %v\n%s", err, b)
	}
	t.Logf("registry (pid %d) at %s; pushed %s in %s", reg.Process.Pid, addr, ref, time.Since(start).Round(time.Millisecond))

	// A cold node: neither the layer nor its snapshot (run alone, above).
	ctr := []string{"--address", strings.TrimPrefix(node.CRIEndpoint, "unix://"), "--namespace", "k8s.io"}
	has := func(args ...string) string {
		b, err := exec.Command("ctr", append(ctr, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	var held string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(context.Context) (bool, error) {
		held = ""
		if strings.Contains(has("content", "ls", "-q"), sizes.layerDigest) {
			held = "the layer " + sizes.layerDigest
		}
		if strings.Contains(has("snapshots", "ls"), sizes.diffID) {
			held += " the snapshot " + sizes.diffID
		}
		return held == "", nil
	})
	if err != nil {
		t.Fatalf("not a cold node: containerd holds%s\n%s", held, has("images", "ls"))
	}
	n, err := node.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	allowReaderImage(t, ref, fetch.GenerateDebugPod(n, fetch.Options{Image: ref, Reader: fetch.ReaderBinary, KubeletRootDir: node.KubeletRoot}))

	binary := []string{"--reader=binary", "--image", ref}
	since := time.Now().Add(-time.Second)
	cold := nodestate(t, "verify", binary...)
	if cold.code != 0 {
		t.Fatalf("verify --reader=binary on a cold node:\n%s", cold)
	}
	pulled := kubeletPulled(t, ref, since)
	// Only the name pulled: the CRI's record by image ID stays, for the plugin's image imported
	// by the tests after this one (TestNodeProblemDetector's ctr import of the same image was
	// not seen by containerd 1.6's CRI after that record was removed: ErrImageNeverPull).
	t.Cleanup(func() {
		ctr := []string{"--address", strings.TrimPrefix(node.CRIEndpoint, "unix://"), "--namespace", "k8s.io"}
		if out, err := exec.Command("ctr", append(ctr, "images", "rm", "--sync", ref)...).CombinedOutput(); err != nil {
			t.Errorf("ctr images rm %s: %v\n%s", ref, err, out)
		}
	})
	t.Logf("the kubelet: %s", pulled)
	// Then the two readers with their images present, interleaved: what a node pays each time.
	var warm, shell []time.Duration
	for range pullRounds {
		for _, r := range []struct {
			args []string
			took *[]time.Duration
		}{{binary, &warm}, {nil, &shell}} {
			res := nodestate(t, "verify", r.args...)
			if res.code != 0 || res.stdout != cold.stdout {
				t.Errorf("verify %s differs from the cold binary reader's:\n%s\ncold: %s", strings.Join(r.args, " "), res, cold)
			}
			*r.took = append(*r.took, res.took)
		}
	}
	m := regexp.MustCompile(`in ([0-9.]+m?s) \(([0-9.]+m?s) including waiting\)\. Image size: ([0-9]+) bytes`).FindStringSubmatch(pulled)
	if m == nil {
		t.Fatalf("the kubelet's Pulled event is not the pull's: %q", pulled)
	}
	line := fmt.Sprintf("PULL image_tar=%d layer_gzip=%d layer_tar=%d content=%d kubelet_pull=%s kubelet_pull_waiting=%s kubelet_image_size=%s verify_cold=%s verify_warm=%s (%s) verify_busybox=%s (%s)",
		sizes.tar, sizes.layer, sizes.unpacked, sizes.content, m[1], m[2], m[3], cold.took.Round(time.Millisecond),
		meanDuration(warm), durations(warm), meanDuration(shell), durations(shell))
	fmt.Println(line)
	t.Log(line)
}

// pullRounds is how many times TestReaderImagePull runs verify with each reader once the image
// is present, interleaved.
const pullRounds = 3

func meanDuration(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return (sum / time.Duration(max(len(ds), 1))).Round(time.Millisecond)
}

func durations(ds []time.Duration) string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Round(time.Millisecond).String())
	}
	return strings.Join(out, " ")
}

// kubeletPulled waits for the kubelet's Pulled event of image on a debug pod since then, and
// returns its message (`Successfully pulled image "..." in X (Y including waiting). Image size:
// N bytes.`).
func kubeletPulled(t *testing.T, image string, since time.Time) string {
	t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := node.Client.CoreV1().Events(fetch.DefaultNamespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=Pulled"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Pod" && eventTime(e).After(since) && strings.Contains(e.Message, `"`+image+`"`) && strings.HasPrefix(e.Message, "Successfully pulled") {
				msg = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Pulled event for %s since %s: %v", image, since.Format(time.RFC3339), err)
	}
	return msg
}

func eventTime(e corev1.Event) time.Time {
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	return e.FirstTimestamp.Time
}

// ociSizes are an OCI image tar's sizes for one platform.
type ociSizes struct {
	tar                 int64  // the whole tar (every platform's)
	manifest            string // the platform's manifest digest
	layer, unpacked     int64  // its one layer, compressed and not
	layerDigest, diffID string // the layer's digest and its uncompressed digest (its snapshot's chain ID)
	content             int64  // manifest, config and layer: what a node of the platform stores
}

// imageSizes reads the OCI image layout tar (index, then the platform's manifest of one layer).
func imageSizes(t *testing.T, path, arch string) ociSizes {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blobs := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		blobs[strings.TrimPrefix(strings.Replace(h.Name, "blobs/sha256/", "sha256:", 1), "./")] = b
	}
	var s ociSizes
	if fi, err := f.Stat(); err == nil {
		s.tar = fi.Size()
	}
	type desc struct {
		Digest   string `json:"digest"`
		Size     int64  `json:"size"`
		Platform *struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
		} `json:"platform"`
	}
	var doc struct {
		Manifests []desc `json:"manifests"`
		Config    desc   `json:"config"`
		Layers    []desc `json:"layers"`
	}
	decode := func(digest string) {
		doc.Manifests, doc.Layers = nil, nil
		if err := json.Unmarshal(blobs[digest], &doc); err != nil {
			t.Fatalf("%s in %s: %v", digest, path, err)
		}
	}
	if err := json.Unmarshal(blobs["index.json"], &doc); err != nil || len(doc.Manifests) != 1 {
		t.Fatalf("index.json of %s: %v (want one image index)", path, err)
	}
	decode(doc.Manifests[0].Digest)
	for _, m := range doc.Manifests {
		if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == arch {
			s.manifest, s.content = m.Digest, m.Size
		}
	}
	if s.manifest == "" {
		t.Fatalf("%s has no linux/%s image", path, arch)
	}
	decode(s.manifest)
	if len(doc.Layers) != 1 {
		t.Fatalf("linux/%s of %s: %d layers, want 1", arch, path, len(doc.Layers))
	}
	s.layer, s.layerDigest = doc.Layers[0].Size, doc.Layers[0].Digest
	s.content += doc.Config.Size + s.layer
	zr, err := gzip.NewReader(bytes.NewReader(blobs[s.layerDigest]))
	if err != nil {
		t.Fatalf("the layer %s: %v", s.layerDigest, err)
	}
	h := sha256.New()
	if s.unpacked, err = io.Copy(h, zr); err != nil {
		t.Fatalf("the layer %s: %v", s.layerDigest, err)
	}
	s.diffID = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return s
}
