#!/usr/bin/env bash
# Writes the restore-check vectors with the real kubelet code and records how the real restore
# of each reader judges them (see README.md). Usage: hack/restorevec/run.sh
set -euo pipefail
cd "$(dirname "$0")"
repo=$(cd ../.. && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Releases built here, and the readers each runs (label, feature gates). Gates are
# process-global, so each reader is one process.
release=v1.37.1
readers=(
  "v1.37.1|"
  "v1.37.1+PodLevelResourceManagers|PodLevelResourceManagers=true"
  "v1.37.1+PodLevelResourceManagers+InPlacePodVerticalScalingExclusiveCPUs|PodLevelResourceManagers=true,InPlacePodVerticalScalingExclusiveCPUs=true"
)

(cd "$release" && go build -o "$work/restorevec" .)
"$work/restorevec" -mode write -cases cases.json -dir "$work/files"
reads=()
for r in "${readers[@]}"; do
  label=${r%%|*} gates=${r#*|}
  out="$work/read-${#reads[@]}.json"
  "$work/restorevec" -mode read -dir "$work/files" -label "$label" -gates "$gates" > "$out" 2> "$work/log.txt" || { cat "$work/log.txt" >&2; exit 1; }
  reads+=("$out")
done
"$work/restorevec" -mode vectors -cases cases.json -dir "$work/files" -reads "$(IFS=,; echo "${reads[*]}")" \
  -out "$repo/testdata/kubelet" -writer "$release"
echo "wrote $(jq length cases.json 2>/dev/null || grep -c '"name"' cases.json) vectors of $release to testdata/kubelet" >&2
