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
era= cadv=
if [ $# -ge 2 ] && [ "${1#*=}" = "$1" ]; then
  era=$1 cadv=$2 # not replaces: a directory with its links keeps them
  shift 2
fi
if ! compgen -G "$rel/*.go" > /dev/null; then
  [ -n "$era" ] || { echo "$rel has no links yet: give its era and cadvisor files" >&2; exit 2; }
  for f in shapes/harness/*.go shapes/era/"$era".go shapes/cadvisor/"$cadv".go; do
    ln -s "../$f" "$rel/"
  done
fi
. ../lib/release-module.sh
release_gomod admitvec "$rel" "$@"
