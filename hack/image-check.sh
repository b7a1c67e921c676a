#!/usr/bin/env bash
# Checks the release's images (hack/image.sh): written twice from the same binaries they are the
# same bytes and digests; each holds only its binary, for linux amd64 and arm64, as its
# entrypoint; each is named as deploy/ names it (deploy/npd, deploy/publish, deploy/scheduler: the
# same registry, one tag for all).
#
#   hack/image-check.sh DIST   goreleaser's dist (make release-check); the images are left there
#   hack/image-check.sh        a fake dist of tiny binaries, in a temp dir: CI's cheap check of
#                              the image writer and of deploy/'s names, without a release build
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'image-check: %s\n' "$*" >&2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ $# -gt 0 ]]; then
  dist=$(realpath "$1")
else
  dist=$tmp/dist
  mkdir -p "$dist"
  echo '{"tag":"v0.0.0-image-check"}' >"$dist/metadata.json"
  for b in unix_linux_amd64_v1/kubectl-nodestate unix_linux_arm64_v8.0/kubectl-nodestate \
    scheduler_linux_amd64_v1/kube-scheduler scheduler_linux_arm64_v8.0/kube-scheduler; do
    mkdir -p "$dist/$(dirname "$b")"
    printf 'not a binary: %s\n' "$b" >"$dist/$b"
  done
fi
(cd hack/tools/ociimage && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -o "$tmp/ociimage" .)
OCIIMAGE="$tmp/ociimage" hack/image.sh "$dist" >"$tmp/digests1"
mkdir "$tmp/first"
while read -r tar _; do mv "$dist/$tar" "$tmp/first/"; done <"$tmp/digests1"
OCIIMAGE="$tmp/ociimage" hack/image.sh "$dist" >"$tmp/digests2"
cmp -s "$tmp/digests1" "$tmp/digests2" || { say "FAIL the images are not reproducible: $(paste -d' ' "$tmp/digests1" "$tmp/digests2")"; exit 1; }
images=()
while read -r tar digest; do
  cmp -s "$tmp/first/$tar" "$dist/$tar" || { say "FAIL $tar: the same digest $digest, other bytes"; exit 1; }
  images+=("$dist/$tar")
done <"$tmp/digests1"
[[ ${#images[@]} -eq 2 ]] || { say "FAIL want 2 images, got: $(cat "$tmp/digests1")"; exit 1; }
python3 - "${images[@]}" <<'PY' || { say "FAIL an image holds more than its binary, or deploy/ names another"; exit 1; }
import gzip, io, json, re, sys, tarfile
binaries = {"kubectl-nodestate": "kubectl-nodestate", "nodestate-scheduler": "kube-scheduler"}
deployed = set()
for f in ["deploy/npd/daemonset.yaml", "deploy/publish/daemonset.yaml", "deploy/scheduler/deployment.yaml"]:
    deployed |= set(re.findall(r"image: (ghcr\.io/kubectl-nodestate/[^:\s]+):(\S+)", open(f).read()))
assert len({tag for _, tag in deployed}) == 1, ("deploy/ names the images with different tags", deployed)
assert {repo for repo, _ in deployed} == {"ghcr.io/kubectl-nodestate/" + n for n in binaries}, deployed
for path in sys.argv[1:]:
    outer = tarfile.open(path)
    blob = lambda d: outer.extractfile("blobs/" + d.replace(":", "/")).read()
    top = json.load(outer.extractfile("index.json"))
    ref = top["manifests"][0]["annotations"]["io.containerd.image.name"]
    repo, tag = ref.rsplit(":", 1)
    name = repo.rsplit("/", 1)[1]
    assert repo == "ghcr.io/kubectl-nodestate/" + name and name in binaries, ref
    assert path.endswith("/%s_%s_image.tar" % (name, tag)), (path, ref)
    index = json.loads(blob(top["manifests"][0]["digest"]))
    plats = sorted(m["platform"]["architecture"] for m in index["manifests"])
    assert plats == ["amd64", "arm64"], plats
    for m in index["manifests"]:
        man = json.loads(blob(m["digest"]))
        assert len(man["layers"]) == 1, man
        layer = tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob(man["layers"][0]["digest"]))))
        assert layer.getnames() == [binaries[name]], layer.getnames()
        cfg = json.loads(blob(man["config"]["digest"]))
        assert cfg["config"]["Entrypoint"] == ["/" + binaries[name]], cfg
        assert cfg["architecture"] == m["platform"]["architecture"], cfg
PY
while read -r tar digest; do
  say "ok   $tar: only its static binary (linux amd64, arm64), named as deploy/ names it, written twice: same digest $digest"
done <"$tmp/digests1"
