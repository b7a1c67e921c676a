#!/usr/bin/env bash
# The proof: the v1.37.1 module, run over the INPUTS of every shipped case in
# ../shared/testdata/admission (machine.json, its checkpoints, pod.json, pod2.json), must write
# every shipped expected.json byte for byte. Also re-seeds each case from setup/ and compares
# the checkpoints it writes with the shipped ones.
# Usage: hack/admitvec/check.sh [SHIPPED_DIR]
set -euo pipefail
cd "$(dirname "$0")"
shipped=$(cd "${1:-../../../shared/testdata/admission}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${BIN:-}" ]; then cp "$BIN" "$work/bin"; else (cd v1.37.1 && go build -o "$work/bin" .); fi
same=0 differ=0 seeded=0 seeddiffer=0
for dir in "$shipped"/cases/*/; do
  name=$(basename "$dir")
  "$work/bin" -mode run -case "$dir" -out "$work/out.json" 2> "$work/log.txt" || { cat "$work/log.txt" >&2; exit 1; }
  if cmp -s "$work/out.json" "$dir/expected.json"; then
    same=$((same + 1))
  else
    differ=$((differ + 1))
    echo "DIFFERS: $name" >&2
    diff "$dir/expected.json" "$work/out.json" | head -${DIFFLINES:-20} >&2 || true
  fi
  if [ -d "$dir/setup" ]; then
    rm -rf "$work/state"
    "$work/bin" -mode seed -case "$dir" -out "$work/state" 2> "$work/log.txt" || { cat "$work/log.txt" >&2; exit 1; }
    for f in cpu_manager_state memory_manager_state; do
      if [ -f "$dir/$f" ] || [ -f "$work/state/$f" ]; then
        seeded=$((seeded + 1))
        cmp -s "$dir/$f" "$work/state/$f" || { seeddiffer=$((seeddiffer + 1)); echo "SEED DIFFERS: $name/$f" >&2; }
      fi
    done
  fi
done
echo "expected.json: $same equal, $differ differ; checkpoints re-seeded: $seeded, $seeddiffer differ"
[ "$differ" -eq 0 ] && [ "$seeddiffer" -eq 0 ]
