#!/usr/bin/env bash
# Writes the release's container images from a goreleaser dist dir, each nothing but one static
# linux binary goreleaser built (amd64, arm64), one layer each, as an OCI image layout in one tar
# (dist/<image>_<tag>_image.tar), with go-containerregistry (pinned in hack/tools/ociimage):
#
#   kubectl-nodestate     the plugin (deploy/npd, deploy/publish, --reader=binary)
#   nodestate-scheduler   kube-scheduler with NodeStateAdmission (deploy/scheduler)
#
# named REGISTRY/<image>:<tag>, the names deploy/ gives them. Every timestamp is the commit's, so
# the same binaries give the same digests. Prints "<tar> <image index digest>", one image a line.
# Load them where nodes cannot pull:
#   ctr -n k8s.io images import kubectl-nodestate_<tag>_image.tar     (containerd)
#   docker load -i kubectl-nodestate_<tag>_image.tar                   (Docker 25+)
#
#   hack/image.sh DIST [REGISTRY]     (REGISTRY default ghcr.io/kubectl-nodestate; or: make images)
set -euo pipefail
dist=$(realpath "$1")
registry=${2:-ghcr.io/kubectl-nodestate}
here=$(cd "$(dirname "$0")" && pwd)
tag=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["tag"])' "$dist/metadata.json")
created=$(git -C "$here/.." log -1 --format=%cI HEAD)
tool=${OCIIMAGE:-}
if [[ -z $tool ]]; then
  tool=$(mktemp -d)/ociimage
  (cd "$here/tools/ociimage" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -o "$tool" .)
fi
# image NAME BUILD_ID BINARY: goreleaser's build BUILD_ID of BINARY (.goreleaser.yaml), as NAME.
image() {
  local name=$1 build=$2 binary=$3 arch bin platforms=() digest
  for arch in amd64 arm64; do
    bin=$(ls "$dist"/"$build"_linux_"$arch"*/"$binary")
    platforms+=("linux/$arch=$bin")
  done
  digest=$("$tool" -name "$registry/$name:$tag" -created "$created" -binary "$binary" \
    -out "$dist/${name}_${tag}_image.tar" "${platforms[@]}")
  printf '%s %s\n' "${name}_${tag}_image.tar" "$digest"
}
image kubectl-nodestate unix kubectl-nodestate
image nodestate-scheduler scheduler kube-scheduler
