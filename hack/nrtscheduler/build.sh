#!/usr/bin/env bash
# Builds the baseline scheduler: kube-scheduler with the upstream NodeResourceTopologyMatch plugin
# (this module; the pinned upstream source in third_party/), into the e2e tools' cache OUTSIDE the
# clone, keyed by the Kubernetes version and a hash of every file of this module (go.mod, go.sum,
# main.go, third_party/, the recipe below), and prints the binary's path as the LAST line of stdout:
#
#   SCHED=$(hack/nrtscheduler/build.sh | tail -n 1)
#
# A warm run builds nothing and takes well under a second. Progress goes to stderr. Environment:
#   NODESTATE_TOOLS_CACHE  cache root (default $HOME/.cache/kubectl-nodestate/tools), as hack/tools/build.sh
#
# The flags are hack/tools/build.sh's (static, -trimpath, no VCS stamp, the version stamped the
# way Kubernetes' own build does), so a machine that built another v1.37.2 binary with them
# shares most of the Go build cache.
set -euo pipefail

# Bump when the build flags below change, so the cached binary is rebuilt.
RECIPE=1

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${NODESTATE_TOOLS_CACHE:-$HOME/.cache/kubectl-nodestate/tools}
log() { printf '[nrt-scheduler] %s\n' "$*" >&2; }

KUBE_VERSION=$(sed -n 's#^[[:space:]]*k8s.io/kubernetes \(v[^ ]*\)$#\1#p' "$here/go.mod" | head -n 1)
[[ -n "$KUBE_VERSION" ]] || { log "no k8s.io/kubernetes version in $here/go.mod"; exit 1; }
key=$(
  cd "$here"
  { printf 'recipe %s\n' "$RECIPE"; find . -type f ! -name '*.md' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; } |
    sha256sum | cut -c1-12
)
dir="$cache_root/nrt-scheduler/$KUBE_VERSION-$key"
out="$dir/kube-scheduler-nrt"
mkdir -p "$dir"

# Serialise concurrent builders of the same key on one machine.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$dir/.lock"
  flock 9
fi

if [[ ! -x "$out" ]]; then
  major=${KUBE_VERSION#v}; major=${major%%.*}
  minor=${KUBE_VERSION#v*.}; minor=${minor%%.*}
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitCommit=0000000000000000000000000000000000000000 -X $pkg.gitTreeState=clean"
    ldflags+=" -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  log "building kube-scheduler $KUBE_VERSION + NodeResourceTopologyMatch ..."
  start=$SECONDS
  tmp="$dir/.kube-scheduler-nrt.tmp.$$"
  # Reproducible from the committed go.sum: never edit it, never consult a go.work, no C toolchain.
  (cd "$here" && GOWORK=off CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false -trimpath" \
    go build -ldflags "$ldflags" -o "$tmp" .) || { rm -f "$tmp"; log "FAILED"; exit 1; }
  mv -f "$tmp" "$out"
  log "built in $((SECONDS - start))s"
fi
log "kube-scheduler $KUBE_VERSION with NodeResourceTopologyMatch: $out"
printf '%s\n' "$out"
