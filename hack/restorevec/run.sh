#!/usr/bin/env bash
# Writes the restore-check vectors with the real kubelet code of each release below, records how
# every release's real restore (each gate setting) judges every file, and replaces
# testdata/kubelet/{,expected/}cpu_manager_state/*/restore-*.json with the result (see README.md).
# Usage: hack/restorevec/run.sh [release ...]   (default: every release module)
set -euo pipefail
cd "$(dirname "$0")"
repo=$(cd ../.. && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck source=../lib/release-module.sh
. ../lib/release-module.sh
releases=("$@")
if [ ${#releases[@]} -eq 0 ]; then
  mapfile -t releases < <(releases_in .)
fi
for rel in "${releases[@]}"; do
  echo "building $rel" >&2
  tc=$(module_toolchain "$rel")
  (cd "$rel" && GOTOOLCHAIN=$tc go build -o "$work/bin/$rel" .)
done
echo "built ${#releases[@]} modules in ${SECONDS}s" >&2
SECONDS=0
# Every release writes its files, then every reader of every release restores all of them.
# klog's lines go to a log, shown only on failure.
for mode in write read; do
  for rel in "${releases[@]}"; do
    "$work/bin/$rel" -mode "$mode" -cases cases.json -dir "$work" 2> "$work/log.txt" ||
      { cat "$work/log.txt" >&2; exit 1; }
  done
done
echo "wrote and restored every file in ${SECONDS}s" >&2
rm -f "$repo"/testdata/kubelet/cpu_manager_state/*/restore-*.json "$repo"/testdata/kubelet/expected/cpu_manager_state/*/restore-*.json
"$work/bin/${releases[0]}" -mode vectors -cases cases.json -dir "$work" -out "$repo/testdata/kubelet"
"$repo/hack/vectors-manifest.sh"
