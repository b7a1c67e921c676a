#!/usr/bin/env bash
# Writes the V2 allocation checkpoint vectors with the real kubelet code of the newest release
# below, and records how each release's real allocation state restores every allocation vector
# (the new files and those already in testdata/kubelet). See README.md.
# Usage: hack/restorevec/alloc/run.sh     (WRITER=RELEASE: the writer, default the newest module)
set -euo pipefail
cd "$(dirname "$0")"
repo=$(cd ../../.. && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck source=../../lib/release-module.sh
. ../../lib/release-module.sh
# The readers: every release module here (hack/release-day.sh modules adds one); the writer (a
# V2 writer: 1.38+), the newest unless WRITER names it. Each is built with the Go its kubelet is
# built with (1.38: Go 1.27, whose encoding/json is json/v2's, and words its errors).
mapfile -t readers < <(releases_in .)
writer=${WRITER:-${readers[-1]}}

for rel in "${readers[@]}"; do
  echo "building $rel" >&2
  tc=$(module_toolchain "$rel")
  (cd "$rel" && GOTOOLCHAIN=$tc nice -n 10 go build -o "$work/allocgen-$rel" .)
done
mkdir -p "$work/written"
"$work/allocgen-$writer" -mode write -dir "$work/written"
# What is judged: the writer's files (at the path they get as vectors) and every allocation
# vector of the other writers.
(cd "$repo/testdata/kubelet" && find allocated_pods_state actuated_pods_state -name '*.json' -not -path "*/$writer/*" \
  -exec cp --parents {} "$work/written/files/" \;)
reads=()
for rel in "${readers[@]}"; do
  "$work/allocgen-$rel" -mode read -dir "$work/written/files" -out "$work/read-$rel.json"
  reads+=("$rel=$work/read-$rel.json")
done
"$work/allocgen-$writer" -mode vectors -dir "$work/written" -out "$repo/testdata/kubelet" -reads "$(IFS=,; echo "${reads[*]}")"
echo "vectors written to testdata/kubelet" >&2
"$repo/hack/vectors-manifest.sh"
