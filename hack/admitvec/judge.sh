#!/usr/bin/env bash
# One judgement by a release's real kubelet managers (README.md, "Judge mode"): admit POD on the
# node directory NODE and write OUT/verdict.json, plus the checkpoints after an admission.
# Without POD, only the managers' garbage collection of deleted pods (checkpoints written).
# The device manager runs in a private mount namespace whose /var/lib is a tmpfs (as devices.sh).
#   hack/admitvec/judge.sh v1.37.1 NODE POD.json OUT
#   hack/admitvec/judge.sh v1.37.1 NODE '' OUT
# BINDIR (default $TMPDIR/admitvec-judge) holds the release binary, built when missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rel=$1 node=$2 pod=$3 out=$4
bindir=${BINDIR:-${TMPDIR:-/tmp}/admitvec-judge}
if [ ! -x "$bindir/$rel" ]; then
  cd "$here"
  # shellcheck source=lib.sh
  . ./lib.sh
  BINDIR='' build_releases "$bindir" "$rel"
fi
exec unshare --mount --propagation private sh -c 'mount -t tmpfs tmpfs /var/lib && mkdir -p /var/lib/kubelet/device-plugins && exec "$0" "$@"' \
  "$bindir/$rel" -devices -mode judge -case "$node" ${pod:+-pod "$pod"} -out "$out"
