// Command ociimage writes kubectl-nodestate's container image: nothing but the static binary
// (no shell, no base image), one layer per platform, as an OCI image layout in one tar that an
// air-gapped node loads with `ctr -n k8s.io images import` or `docker load`. Built with
// go-containerregistry, reproducibly: every timestamp is -created (the commit's), the tar's
// entries are sorted with fixed owners and times, so the same binaries give the same digests.
//
//	ociimage -name ghcr.io/kubectl-nodestate/kubectl-nodestate:v1.2.3 -created 2026-11-27T00:00:00Z \
//	    -out dist/image.tar linux/amd64=dist/unix_linux_amd64_v1/kubectl-nodestate linux/arm64=...
//
// It prints the image index's digest. -binary and -source name another static binary's image the
// same way (make e2e-node's Node Problem Detector image: -binary node-problem-detector).
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// binaryPath is where the image holds the binary, and its entrypoint; source is where it is built from.
var (
	binaryPath = "kubectl-nodestate"
	source     = "https://github.com/kubectl-nodestate/kubectl-nodestate"
)

func main() {
	name := flag.String("name", "", "the image reference the loaded image is named by (io.containerd.image.name)")
	created := flag.String("created", "", "the image's creation time and every file's (RFC 3339; the commit's)")
	out := flag.String("out", "", "the tar to write")
	flag.StringVar(&binaryPath, "binary", binaryPath, "the binary's name in the image's root, and its entrypoint")
	flag.StringVar(&source, "source", source, "the image's org.opencontainers.image.source label")
	flag.Parse()
	if err := run(*name, *created, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(name, created, out string, platforms []string) error {
	if name == "" || out == "" || len(platforms) == 0 {
		return fmt.Errorf("usage: ociimage -name REF -created TIME -out FILE.tar OS/ARCH=BINARY...")
	}
	when, err := time.Parse(time.RFC3339, created)
	if err != nil {
		return fmt.Errorf("-created: %w", err)
	}
	when = when.UTC()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		plat, bin, ok := strings.Cut(p, "=")
		osName, arch, ok2 := strings.Cut(plat, "/")
		if !ok || !ok2 {
			return fmt.Errorf("%q: want OS/ARCH=BINARY", p)
		}
		img, err := image(bin, osName, arch, when)
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}}})
	}
	dir, err := os.MkdirTemp("", "ociimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	tag := name[strings.LastIndex(name, ":")+1:]
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          name,
		"org.opencontainers.image.ref.name": tag,
	})); err != nil {
		return err
	}
	if err := tarDir(dir, out, when); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Println(d)
	return nil
}

// image is one platform's image: a layer holding the binary, its entrypoint, every time when.
func image(bin, osName, arch string, when time.Time) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	if err := tw.WriteHeader(&tar.Header{Name: binaryPath, Mode: 0o755, Size: int64(len(data)), ModTime: when, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: when}, CreatedBy: "ociimage: " + binaryPath}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = osName, arch
	cfg.Created = v1.Time{Time: when}
	cfg.Config.Entrypoint = []string{"/" + binaryPath}
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.source": source}
	return mutate.ConfigFile(img, cfg)
}

// tarDir writes dir's files into a tar at out, sorted, owned by root, every time when.
func tarDir(dir, out string, when time.Time) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	dirs := map[string]bool{}
	for _, p := range files {
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		for d := pathDir(rel); d != "" && !dirs[d]; d = pathDir(d) {
			dirs[d] = true
		}
	}
	var names []string
	for d := range dirs {
		names = append(names, d+"/")
	}
	for _, p := range files {
		rel, _ := filepath.Rel(dir, p)
		names = append(names, filepath.ToSlash(rel))
	}
	sort.Strings(names)
	for _, n := range names {
		hdr := &tar.Header{Name: n, ModTime: when, Format: tar.FormatPAX, Mode: 0o644, Typeflag: tar.TypeReg}
		var data []byte
		if strings.HasSuffix(n, "/") {
			hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o755
		} else if data, err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(n))); err != nil {
			return err
		}
		hdr.Size = int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

func pathDir(p string) string {
	i := strings.LastIndex(p, "/")
	if i < 0 {
		return ""
	}
	return p[:i]
}
