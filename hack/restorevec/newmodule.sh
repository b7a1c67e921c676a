#!/usr/bin/env bash
# Creates hack/restorevec/<release>/ for a release module: its source files are links into
# shapes/ (see README.md); a release directory without them gets the links of the newest
# release module (a release whose API is as the last one's needs nothing else; for another
# shape, make its links first: ln -s ../shapes/<shape>/<file>.go <release>/). Then its go.mod:
# k8s.io/kubernetes at <release>, each of its staging modules (k8s.io/NAME v0.0.0, replaced by
# ./staging/src/k8s.io/NAME in its go.mod) replaced by the published v0.Y.Z, extra replaces
# (see docs/kubelet-modules.md), then go mod tidy. Extra replaces are
# given as MODULE=REPLACEMENT ("vbom.ml/util=github.com/fvbommel/util v0.0.0-..."); STAGING=v0.Y.Z
# overrides the staging version (the proxy refuses some, e.g. v0.18.20).
# Usage: [STAGING=v0.Y.Z] hack/restorevec/newmodule.sh v1.27.0 [MODULE=REPLACEMENT ...]
set -euo pipefail
cd "$(dirname "$0")"
rel=$1
shift
mkdir -p "$rel"
if ! compgen -G "$rel/*.go" > /dev/null; then
  newest=$(ls -d v1.* | grep -vxF "$rel" | sort -V | tail -n 1)
  cp -P "$newest"/*.go "$rel"/
  echo "$rel: the links of $newest: $(cd "$rel" && for f in *.go; do readlink "$f"; done | tr '\n' ' ')" >&2
fi
. ../lib/release-module.sh
release_gomod restorevec "$rel" "$@"
