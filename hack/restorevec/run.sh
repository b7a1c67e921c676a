#!/usr/bin/env bash
# Writes the restore-check vectors with the real kubelet code of each release below and records
# how the real restore of every reader judges every file (see README.md).
# Usage: hack/restorevec/run.sh
set -euo pipefail
cd "$(dirname "$0")"
repo=$(cd ../.. && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Releases (one module each), the format of the files each writes, and their readers
# (label|feature gates). Gates are process-global, so each reader is one process.
releases=(v1.35.8 v1.37.1)
formats="v1.35.8=cpu-v2,v1.37.1=cpu-v4"
declare -A readers=(
  [v1.35.8]="v1.35.8|"
  [v1.37.1]="v1.37.1| v1.37.1+PodLevelResourceManagers|PodLevelResourceManagers=true v1.37.1+PodLevelResourceManagers+InPlacePodVerticalScalingExclusiveCPUs|PodLevelResourceManagers=true,InPlacePodVerticalScalingExclusiveCPUs=true"
)

for rel in "${releases[@]}"; do
  echo "building $rel" >&2
  (cd "$rel" && go build -o "$work/restorevec-$rel" .)
  "$work/restorevec-$rel" -mode write -cases cases.json -dir "$work/files/$rel"
done
reads=()
for rel in "${releases[@]}"; do
  for r in ${readers[$rel]}; do
    label=${r%%|*} gates=${r#*|}
    out="$work/read-${#reads[@]}.json"
    "$work/restorevec-$rel" -mode read -dir "$work/files" -label "$label" -gates "$gates" > "$out" 2> "$work/log.txt" ||
      { cat "$work/log.txt" >&2; exit 1; }
    reads+=("$out")
  done
done
newest=${releases[${#releases[@]}-1]}
"$work/restorevec-$newest" -mode vectors -cases cases.json -dir "$work/files" -reads "$(IFS=,; echo "${reads[*]}")" \
  -out "$repo/testdata/kubelet" -formats "$formats"
echo "vectors written to testdata/kubelet" >&2
