#!/usr/bin/env bash
# Restart vectors (RESTART.md, issue 44): the generated restart cases (common/restartgen.go)
# run by each release module's real managers. Per case: the node's pods (setup/seed*.json)
# admitted by the release from no checkpoint, with setup/devices.json's plugins (-mode seed),
# then a fresh kubelet starts from those checkpoints with restart.json's runtime, sources and
# plugin registrations, and re-admits pod.json, pod2.json, ... (-mode run).
# Each process runs in a private mount namespace whose /var/lib is a tmpfs (as devices.sh).
# A case whose restart.json lists an exited instance of a running container (#135485) is run
# RERUNS more times (default 40): where the release's outcome is not the same every run (before
# the fix, isContainerAlreadyRunning's containerMap.GetContainerID picks either instance, a Go
# map's order) the case is not a vector: it is moved to OUT/<release>-random/ with every run's result.
# Usage: hack/admitvec/restart.sh [release ...]   (BINDIR, JOBS, ONLY as run.sh)
#   OUT=DIR (default /tmp/restart-cases): cases written to OUT/<release>/cases/<name>/
#   PACK=1: then packed into testdata/admission/<release>-restart.vectors.jsonl (list it in SETS
#           once the replay matches it)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
outroot=${OUT:-/tmp/restart-cases}
cd "$here"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck source=lib.sh
. ./lib.sh
build_releases "$work/bin" "$@"

private() {
  unshare --mount --propagation private sh -c 'mount -t tmpfs tmpfs /var/lib && mkdir -p /var/lib/kubelet/device-plugins && exec "$0" "$@"' "$@"
}

# one_case SRC DEST BIN
one_case() {
  local src=$1 dest=$2 bin=$3
  cp -r "$src" "$dest"
  private "$bin" -devices -mode seed -case "$dest" -out "$dest/state" 2>> "$work/log.txt"
  for f in cpu_manager_state memory_manager_state device-plugins; do
    [ -e "$dest/state/$f" ] && mv "$dest/state/$f" "$dest/"
  done
  mv "$dest/state/seed-result.json" "$dest/setup/"
  # The node's pods all ran before the restart: a refused seed makes a case of another node.
  if grep -q '"admit": *false' "$dest/setup/seed-result.json"; then
    echo "$(basename "$dest")" >> "$work/seedrefused.txt"
  fi
  rm -rf "$dest/state"
  private "$bin" -devices -mode run -case "$dest" -out "$dest/expected.json" 2>> "$work/log.txt"
  if grep -q '"exited"' "$dest/restart.json"; then
    local i
    for i in $(seq 1 "${RERUNS:-40}"); do
      private "$bin" -devices -mode run -case "$dest" -out "$dest/rerun-$i.json" 2>> "$work/log.txt"
    done
    local same=1
    for i in $(seq 1 "${RERUNS:-40}"); do
      cmp -s "$dest/expected.json" "$dest/rerun-$i.json" || same=0
    done
    if [ $same = 0 ]; then
      mkdir -p "$randdir"
      mv "$dest" "$randdir/"
      return 0
    fi
    rm -f "$dest"/rerun-*.json
  fi
}
export -f one_case private
export work

for rel in "${releases[@]}"; do
  SECONDS=0
  bin=$work/bin/$rel
  out=$outroot/$rel
  export randdir=$outroot/$rel-random # OUT/<release>-random/<name>/: not vectors
  rm -rf "$out" "$randdir" "$work/in" "$work/seedrefused.txt"
  mkdir -p "$out/cases"
  "$bin" -mode restartgen -out "$work/in"
  for src in "$work/in"/*/; do
    [[ $(basename "$src") =~ ${ONLY:-.} ]] || continue
    printf '%s\0%s\0' "$src" "$out/cases/$(basename "$src")"
  done | xargs -0 -n 2 -P "${JOBS:-2}" bash -c 'one_case "$0" "$1" "'"$bin"'"' || { tail -20 "$work/log.txt" >&2; exit 1; }
  "$bin" -mode compact -cases "$out/cases"
  "$bin" -mode manifest -cases "$out/cases" -out "$out/MANIFEST.json"
  if [ -s "$work/seedrefused.txt" ]; then
    echo "$rel: seeds refused in: $(sort "$work/seedrefused.txt" | tr '\n' ' ')" >&2
  fi
  echo "$rel: $(ls "$out/cases" | wc -l) cases in ${SECONDS}s ($(ls "$randdir" 2> /dev/null | wc -l) not a vector: outcomes differ between runs), $(du -sb --apparent-size "$out" | cut -f1) bytes" >&2
  if [ -n "${PACK:-}" ]; then
    (cd "$repo" && go run ./hack/vectorpack "$out" "testdata/admission/$rel-restart.vectors.jsonl")
  fi
done
