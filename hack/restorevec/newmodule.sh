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
go mod download -json "k8s.io/kubernetes@$rel" > /dev/null
mod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$rel.mod
staging=${STAGING:-v0.${rel#v1.}}
{
  echo "module github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/$rel"
  echo
  echo "go 1.22"
  echo
  echo "require k8s.io/kubernetes $rel"
  echo
  echo "replace ("
  echo "	github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common => ../common"
  grep -oE 'k8s.io/[a-z0-9-]+ => \./staging/src/k8s.io/[a-z0-9-]+' "$mod" | while read -r name _ _; do
    # An extra replace of a staging module wins.
    case " ${*%%=*} " in *" $name "*) ;; *) echo "	$name => $name $staging" ;; esac
  done
  for r in "$@"; do
    echo "	${r%%=*} => ${r#*=}"
  done
  echo ")"
} > "$rel/go.mod"
(cd "$rel" && go mod tidy)
