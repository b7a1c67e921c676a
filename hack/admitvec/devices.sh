#!/usr/bin/env bash
# Device admission vectors (README.md, "The device vectors"): the shipped device cases' inputs
# (../shared/testdata/admission-devices) run by each release module's real device manager, CPU,
# memory and topology managers, with a real device plugin per resource registered over the
# kubelet's gRPC socket. Written to testdata/admission/<release>-devices/ (v1.37.1:
# v1.37.1-gen-devices/, the shipped copy being v1.37.1-devices/). Seeded cases are re-seeded from
# setup/ by the release itself (v1.37.1: the shipped checkpoints, its own run being the proof);
# a case whose setup stops a plugin for the kubelet's 5-minute grace period is not re-seeded
# (left out, counted).
# Each process runs in a private mount namespace whose /var/lib is a tmpfs: the plugin
# sockets and the checkpoint live in its /var/lib/kubelet/device-plugins, nothing on the host.
# Usage: hack/admitvec/devices.sh [release ...]   (BINDIR, JOBS, ONLY as run.sh)
# Our own device cases (devcases/README.md), the same way into <release>-hintnodes-devices/:
#   SHIPPED=hack/admitvec/devcases SET=hintnodes-devices hack/admitvec/devices.sh [release ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
shipped=$(cd "${SHIPPED:-$repo/../shared/testdata/admission-devices}" && pwd) # from the caller's directory
cd "$here"
set_name=${SET:-devices}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck source=lib.sh
. ./lib.sh
build_releases "$work/bin" "$@"

# private BIN ARGS...: BIN in its own mount namespace with a fresh /var/lib.
private() {
  unshare --mount --propagation private sh -c 'mount -t tmpfs tmpfs /var/lib && mkdir -p /var/lib/kubelet/device-plugins && exec "$0" "$@"' "$@"
}

# one_case SRC DEST BIN REL
one_case() {
  local src=$1 dest=$2 bin=$3 rel=$4
  mkdir -p "$dest/setup"
  for f in machine.json devices.json pod.json pod2.json; do
    [ -f "$src/$f" ] && cp "$src/$f" "$dest/"
  done
  for f in "$src"/setup/seed[0-9]*.json "$src"/setup/machine.json "$src"/setup/devices.json "$src"/setup/stop-plugins.json; do
    [ -f "$f" ] && cp "$f" "$dest/setup/"
  done
  if [ "$rel" != v1.37.1 ] && compgen -G "$src/setup/seed[0-9]*.json" > /dev/null; then
    if [ -f "$src/setup/stop-plugins.json" ]; then
      echo "$(basename "$dest")" >> "$work/skipped.txt"
      rm -rf "$dest"
      return 0
    fi
    private "$bin" -devices -mode seed -case "$dest" -out "$dest/state" 2>> "$work/log.txt"
    for f in cpu_manager_state memory_manager_state device-plugins; do
      [ -e "$dest/state/$f" ] && mv "$dest/state/$f" "$dest/"
    done
    [ -f "$dest/state/seed-result.json" ] && mv "$dest/state/seed-result.json" "$dest/setup/"
    rm -rf "$dest/state"
  else
    for f in cpu_manager_state memory_manager_state device-plugins; do
      [ -e "$src/$f" ] && cp -r "$src/$f" "$dest/"
    done
  fi
  private "$bin" -devices -mode run -case "$dest" -out "$dest/expected.json" 2>> "$work/log.txt"
}
export -f one_case private
export work

for rel in "${releases[@]}"; do
  SECONDS=0
  bin=$work/bin/$rel
  out=$repo/testdata/admission/$rel-$set_name
  [ "$rel" = v1.37.1 ] && [ "$set_name" = devices ] && out=$repo/testdata/admission/v1.37.1-gen-devices
  rm -rf "$out" "$work/skipped.txt"
  mkdir -p "$out/cases"
  for src in "$shipped"/cases/*/; do
    [[ $(basename "$src") =~ ${ONLY:-.} ]] || continue
    printf '%s\0%s\0' "$src" "$out/cases/$(basename "$src")"
  done | xargs -0 -n 2 -P "${JOBS:-2}" bash -c 'one_case "$0" "$1" "'"$bin"'" "'"$rel"'"' || { tail -20 "$work/log.txt" >&2; exit 1; }
  "$bin" -mode compact -cases "$out/cases"
  "$bin" -mode manifest -cases "$out/cases" -out "$out/MANIFEST.json"
  echo "$rel: $(ls "$out/cases" | wc -l) cases in ${SECONDS}s ($(cat "$work/skipped.txt" 2> /dev/null | wc -l) left out: a plugin gone for 5 minutes), $(du -sb --apparent-size "$out" | cut -f1) bytes" >&2
done
