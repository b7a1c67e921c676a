#!/usr/bin/env bash
# Every cpu_manager_state, memory_manager_state, dra_manager_state, dra_health_state and
# kubelet_internal_checkpoint vector read by the real restore of each release module here (README.md): a reader the expectations already record must say the same (the
# proof: v1.37.1 against the shared vectors' 1.37.1 reads), one they do not is added. Then
# testdata/kubelet is checked by go test ./pkg/decode.
# Usage: hack/restorevec/readall/run.sh [release ...]   (default: every release module here)
set -euo pipefail
cd "$(dirname "$0")"
repo=$(cd ../../.. && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=../../lib/release-module.sh
. ../../lib/release-module.sh

# The readers of each file: the gates that change its restore (as the shared vectors' labels).
declare -A gates=(
  [cpu_manager_state]=" +PodLevelResourceManagers +PodLevelResourceManagers+InPlacePodVerticalScalingExclusiveCPUs"
  [memory_manager_state]=" +PodLevelResourceManagers +PodLevelResourceManagers+InPlacePodVerticalScalingExclusiveCPUs"
  [dra_manager_state]=" "
  [dra_health_state]=" "
  [kubelet_internal_checkpoint]=" "
)

releases=("$@")
[ ${#releases[@]} -gt 0 ] || mapfile -t releases < <(releases_in .)
for rel in "${releases[@]}"; do
  echo "building $rel" >&2
  tc=$(module_toolchain "$rel")
  (cd "$rel" && GOTOOLCHAIN=$tc GOWORK=off go build -o "$work/readall-$rel" .)
done
status=0
for rel in "${releases[@]}"; do
  for kind in "${!gates[@]}"; do
    # One process per reader: feature gates are process-global. "" is the reader without gates.
    for g in "" ${gates[$kind]}; do
      "$work/readall-$rel" -mode read -kind "$kind" -gates "$g" -vectors "$repo/testdata/kubelet" > "$work/reads.json" 2> "$work/log.txt" ||
        { tail -5 "$work/log.txt" >&2; exit 1; }
      "$work/readall-$rel" -mode apply -reads "$work/reads.json" -vectors "$repo/testdata/kubelet" || status=1
    done
  done
done
exit $status
