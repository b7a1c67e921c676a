#!/usr/bin/env bash
# Writes the plugin's container image from a goreleaser dist dir: nothing but the static linux
# binaries (amd64, arm64) goreleaser built, one layer each, as an OCI image layout in one tar
# (dist/kubectl-nodestate_<tag>_image.tar), with go-containerregistry (pinned in
# hack/tools/ociimage). Every timestamp is the commit's, so the same binaries give the same
# digest. Prints the image index's digest. Load it where nodes cannot pull:
#   ctr -n k8s.io images import kubectl-nodestate_<tag>_image.tar     (containerd)
#   docker load -i kubectl-nodestate_<tag>_image.tar                   (Docker 25+)
#
#   hack/image.sh DIST [IMAGE_REPO]     (IMAGE_REPO default ghcr.io/kubectl-nodestate/kubectl-nodestate)
set -euo pipefail
dist=$(realpath "$1")
repo=${2:-ghcr.io/kubectl-nodestate/kubectl-nodestate}
here=$(cd "$(dirname "$0")" && pwd)
tag=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["tag"])' "$dist/metadata.json")
created=$(git -C "$here/.." log -1 --format=%cI HEAD)
tool=${OCIIMAGE:-}
if [[ -z $tool ]]; then
  tool=$(mktemp -d)/ociimage
  (cd "$here/tools/ociimage" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -o "$tool" .)
fi
platforms=()
for arch in amd64 arm64; do
  bin=$(ls "$dist"/unix_linux_"$arch"*/kubectl-nodestate)
  platforms+=("linux/$arch=$bin")
done
"$tool" -name "$repo:$tag" -created "$created" -out "$dist/kubectl-nodestate_${tag}_image.tar" "${platforms[@]}"
