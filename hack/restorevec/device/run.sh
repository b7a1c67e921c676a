#!/usr/bin/env bash
# Writes the device manager restore vectors with the real kubelet code of each release below and
# records how each release's real restore judges every file (see README.md). Needs root (or
# unshare's user namespaces): the device manager keeps its checkpoint in the fixed
# /var/lib/kubelet/device-plugins, so each read runs in a private mount namespace with a tmpfs
# on /var/lib.
# Usage: hack/restorevec/device/run.sh
set -euo pipefail
cd "$(dirname "$0")"
repo=$(cd ../../.. && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One module per release: gogo 1.3 without CDI, gogo with CDI (the last gogo release), and
# google.golang.org/protobuf (1.35.8: the 1.34-1.36 code; 1.37.1: the newest).
releases=(v1.21.14 v1.33.0 v1.35.8 v1.37.1)
newest=${releases[${#releases[@]}-1]}
unshare=(unshare -m)
[ "$(id -u)" = 0 ] || unshare=(unshare -Urm)

for rel in "${releases[@]}"; do
  echo "building $rel" >&2
  (cd "$rel" && go build -o "$work/devgen-$rel" .)
  "$work/devgen-$rel" -mode write -dir "$work/files/$rel"
done
# Every release writes the same bytes (the V2 layout and its checksum did not change): the
# newest release's files are the vectors, the others must equal them.
for rel in "${releases[@]}"; do
  diff -r "$work/files/$rel" "$work/files/$newest" >/dev/null || { echo "$rel wrote other bytes than $newest" >&2; exit 1; }
  [ "$rel" = "$newest" ] || rm -r "${work:?}/files/$rel"
done
reads=()
for rel in "${releases[@]}"; do
  out="$work/read-$rel.json"
  "${unshare[@]}" sh -c 'mount -t tmpfs tmpfs /var/lib && exec "$@"' sh \
    "$work/devgen-$rel" -mode read -dir "$work/files" -label "$rel" >"$out" 2>"$work/log.txt" ||
    { cat "$work/log.txt" >&2; exit 1; }
  reads+=("$out")
done
"$work/devgen-$newest" -mode vectors -dir "$work/files" -reads "$(IFS=,; echo "${reads[*]}")" -out "$repo/testdata/kubelet" -writer "$newest"
echo "vectors written to testdata/kubelet" >&2
