#!/usr/bin/env bash
# make e2e-node: kubectl-nodestate against ONE real kubelet on this machine.
#
#   hack/e2e-node.sh                     # everything
#   hack/e2e-node.sh -test.run TestFullNode   # extra args go to the test binary
#   NODESTATE_E2E_NODE_KUBE=next hack/e2e-node.sh   # the next release's kubelet (below; make e2e-node-next)
#
# NODESTATE_E2E_NODE_KUBE picks the kubelet: unset (or v1.37.1, KUBE_VERSION in
# hack/tools/build.sh) is the default; "next" (or the version pinned in hack/tools/kube-next,
# v1.38.0-beta.0) builds and caches that kubelet (NODESTATE_TOOLS=kubelet-next, Go 1.27.3 in that
# module only) and runs the same suite against it. CI runs both. The control plane (etcd, kube-apiserver,
# kubectl) stays v1.37.1 either way: 1.38.0-beta.0's kube-apiserver needs k8s.io/apiextensions-api,
# which the module proxy does not serve (docs/development.md).
#
# Phases (each timed on stderr): apt packages (installed if missing), the pinned tools
# (etcd, kube-apiserver, kubectl from hack/tools/build.sh's cache; the kubelet from
# hack/tools/kubelet, same Kubernetes version), the plugin, the Go pause, the CRI stop helper and
# the test binary; then hack/e2e-node/up.sh starts etcd, kube-apiserver, containerd and the
# kubelet inside a network namespace, the test binary runs inside it too (nsenter --net), and
# hack/e2e-node/down.sh stops everything by PID and undoes every change, even on failure.
# Needs root. Runs are serialised with flock: one real node per machine.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=e2e-node/lib.sh
. hack/e2e-node/lib.sh

if [[ $(id -u) != 0 ]]; then
  log "needs root (network namespace, cgroups, containerd)"
  exit 1
fi
start=$SECONDS
timed() { # NAME CMD...
  local name=$1 t=$SECONDS
  shift
  "$@"
  log "phase $name: $((SECONDS - t))s"
}

exec 8>"$E2E_NODE_LOCK"
if ! flock -n 8; then
  log "another e2e-node run holds $E2E_NODE_LOCK; waiting"
  flock 8
fi

apt_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
  # grep without -q reads all its input: no SIGPIPE for pipefail to report.
  [[ -x /bin/busybox ]] && busybox --list 2>/dev/null | grep -x tar >/dev/null &&
    { ldd /bin/busybox 2>&1 || true; } | grep 'not a dynamic' >/dev/null || missing+=(busybox-static)
  command -v umoci >/dev/null || missing+=(umoci)
  command -v skopeo >/dev/null || missing+=(skopeo)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v curl >/dev/null || missing+=(curl)
  if ((${#missing[@]})); then
    log "apt-get install ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}
timed apt apt_packages

kube_default=$(sed -n 's/^KUBE_VERSION=//p' hack/tools/build.sh)
kube_next=$(sed -n 's#^\(require \)\{0,1\}[[:space:]]*k8s.io/kubernetes \(v[^ ]*\).*#\2#p' hack/tools/kube-next/go.mod | head -n 1)
kubelet_version=${NODESTATE_E2E_NODE_KUBE:-$kube_default}
# "next": whatever hack/tools/kube-next pins (make e2e-node-next, CI), so a bump needs no edit here.
if [[ $kubelet_version == next ]]; then
  if [[ $kube_next == "$kube_default" ]]; then
    log "hack/tools/kube-next pins $kube_next, the default kubelet: make e2e-node runs it"
    exit 0
  fi
  kubelet_version=$kube_next
fi
case $kubelet_version in
"$kube_default") next_tool= ;;
"$kube_next") next_tool=kubelet-next ;;
*)
  log "NODESTATE_E2E_NODE_KUBE=$kubelet_version: this tree builds $kube_default (default) or $kube_next (hack/tools/kube-next)"
  exit 2
  ;;
esac
# nodestate-scheduler: TestSchedulerOnRealNode's (cached with the tools as make e2e-scheduler builds it).
tools() { bin=$(NODESTATE_TOOLS="etcd kubectl kube-apiserver kubelet node-problem-detector nodestate-scheduler $next_tool" hack/tools/build.sh | tail -n 1); }
timed tools tools
log "kubelet $kubelet_version, control plane (etcd, kube-apiserver, kubectl) $kube_default"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nodestate-e2e-node.XXXXXX")
cleanup() {
  local rc=$?
  local t=$SECONDS
  hack/e2e-node/down.sh "$tmp/cri-stop" || { log "down.sh could not undo everything"; rc=1; }
  log "phase down: $((SECONDS - t))s"
  rm -rf "$tmp"
  log "done in $((SECONDS - start))s (exit $rc)"
  exit $rc
}
trap cleanup EXIT

# The next release's kubelet: the cached tools dir with its kubelet swapped in (links only), so
# up.sh, kubelet.sh and the tests (TOOLS_BIN) see one tools dir as on the default run.
if [[ -n $next_tool ]]; then
  mkdir -p "$tmp/tools"
  for f in "$bin"/*; do ln -s "$(readlink -f "$f")" "$tmp/tools/$(basename "$f")"; done
  ln -sfn "$(readlink -f "$bin/kubelet-$kubelet_version")" "$tmp/tools/kubelet"
  bin=$tmp/tools
fi

# Default build settings (as make e2e builds the plugin), so the shared build cache serves them.
# pause imports no cgo package, so it links statically as the image needs.
# NODESTATE_E2E_NODE_PLUGIN=BIN tests another build of the plugin (e.g. an older commit's).
binaries() {
  if [[ -n ${NODESTATE_E2E_NODE_PLUGIN:-} ]]; then
    mkdir -p "$tmp/plugin" && cp "$NODESTATE_E2E_NODE_PLUGIN" "$tmp/plugin/kubectl-nodestate"
  else
    make -s build BIN="$tmp/plugin/kubectl-nodestate" # as users get it: static, stripped
  fi
  mkdir -p "$tmp/pause"
  go build -ldflags '-s -w' -o "$tmp/pause/pause" ./hack/e2e-node/pause
  (cd hack/tools/kubelet && GOWORK=off GOFLAGS=-mod=readonly go build -o "$tmp/cri-stop" ./cri-stop &&
    GOWORK=off GOFLAGS=-mod=readonly go build -o "$tmp/device-plugin" ./device-plugin &&
    GOWORK=off GOFLAGS=-mod=readonly go build -o "$tmp/dra-driver" ./dra-driver)
  go test -c -tags e2enode -o "$tmp/e2e-node.test" ./test/e2e-node
}
timed binaries binaries

# The Node Problem Detector test's images (TestNodeProblemDetector, and TestReaderImagePull's,
# which pushes the plugin's to a registry on the node's loopback: hack/tools/ociimage/registry,
# built here from the same pinned module): the plugin's as the release
# builds it (the static binary alone, hack/tools/ociimage) and NPD's, built from its module at the
# pin (hack/tools/npd) the same way; NODESTATE_E2E_NPD/images lists them as REF TAR.
npd_images() {
  local dir=$tmp/npd created
  mkdir -p "$dir"
  created=$(git log -1 --format=%cI HEAD 2>/dev/null || echo 1970-01-01T00:00:00Z)
  # goreleaser's flags for the release binaries: release-check's linux/amd64 build (later in CI)
  # then finds these packages compiled.
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$dir/static/kubectl-nodestate" ./cmd/kubectl-nodestate
  (cd hack/tools/ociimage && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -o "$dir/ociimage" . &&
    GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -o "$tmp/registry" ./registry)
  local plat npd_version
  plat=linux/$(go env GOARCH)
  npd_version=$(basename "$(readlink "$bin/node-problem-detector")")
  npd_version=${npd_version#node-problem-detector-}
  local plugin_ref=localhost/kubectl-nodestate/kubectl-nodestate:e2e
  local npd_ref=localhost/kubectl-nodestate/node-problem-detector:$npd_version
  "$dir/ociimage" -name "$plugin_ref" -created "$created" -out "$dir/plugin.tar" "$plat=$dir/static/kubectl-nodestate" >/dev/null
  "$dir/ociimage" -name "$npd_ref" -created "$created" -binary node-problem-detector \
    -source https://github.com/kubernetes/node-problem-detector -out "$dir/npd.tar" "$plat=$bin/node-problem-detector" >/dev/null
  printf '%s %s\n' "$plugin_ref" "$dir/plugin.tar" "$npd_ref" "$dir/npd.tar" >"$dir/images"
}
timed npd-images npd_images

timed up hack/e2e-node/up.sh "$bin" "$tmp/pause/pause" "$tmp/plugin/kubectl-nodestate"

run_tests() {
  (cd test/e2e-node && NODESTATE_E2E_NODE_ENV="$S/env" NODESTATE_PLUGIN="$tmp/plugin/kubectl-nodestate" NODESTATE_CRI_STOP="$tmp/cri-stop" \
    NODESTATE_E2E_DEVICE_PLUGIN="$tmp/device-plugin" NODESTATE_E2E_DRA_DRIVER="$tmp/dra-driver" NODESTATE_E2E_NPD="$tmp/npd" \
    NODESTATE_E2E_REGISTRY="$tmp/registry" NODESTATE_E2E_SCHEDULER="$bin/nodestate-scheduler" \
    NODESTATE_REPO="$root" "${NSENTER[@]}" "$tmp/e2e-node.test" -test.v -test.count=1 -test.timeout=20m "$@")
}
timed tests run_tests "$@"
