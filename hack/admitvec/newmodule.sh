#!/usr/bin/env bash
# Creates hack/admitvec/<release>/: links to shapes/harness/*.go, to one era file and to one
# cadvisor file (see README.md; a release directory that has its links keeps them), then its
# go.mod: k8s.io/kubernetes at <release>, each staging module (k8s.io/NAME v0.0.0, replaced by
# ./staging/src/k8s.io/NAME in its go.mod) replaced by the published v0.Y.Z, extra replaces
# (MODULE=REPLACEMENT, see docs/kubelet-modules.md), then go mod tidy.
# Usage: hack/admitvec/newmodule.sh v1.37.1 [era cadvisor] [MODULE=REPLACEMENT ...]
#   era: e131 | e134 | e136 | e137 (shapes/era/<era>.go); cadvisor: info | lib (shapes/cadvisor/)
set -euo pipefail
cd "$(dirname "$0")"
rel=$1
shift
mkdir -p "$rel"
if ! compgen -G "$rel/*.go" > /dev/null; then
  era=$1 cadv=$2
  shift 2
  for f in shapes/harness/*.go shapes/era/"$era".go shapes/cadvisor/"$cadv".go; do
    ln -s "../$f" "$rel/"
  done
fi
go mod download -json "k8s.io/kubernetes@$rel" > /dev/null
mod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$rel.mod
staging=${STAGING:-v0.${rel#v1.}}
{
  echo "module github.com/kubectl-nodestate/kubectl-nodestate/hack/admitvec/$rel"
  echo
  echo "go 1.22"
  echo
  echo "require k8s.io/kubernetes $rel"
  echo
  echo "replace ("
  echo "	github.com/kubectl-nodestate/kubectl-nodestate/hack/admitvec/common => ../common"
  grep -oE 'k8s.io/[a-z0-9-]+ => \./staging/src/k8s.io/[a-z0-9-]+' "$mod" | while read -r name _ _; do
    case " ${*%%=*} " in *" $name "*) ;; *) echo "	$name => $name $staging" ;; esac
  done
  for r in "$@"; do
    echo "	${r%%=*} => ${r#*=}"
  done
  echo ")"
} > "$rel/go.mod"
(cd "$rel" && go mod tidy)
