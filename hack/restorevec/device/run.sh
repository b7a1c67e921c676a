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

# One module per release: gogo 1.2 (1.17), gogo 1.3 without cdi_devices (1.19, 1.21), gogo with
# cdi_devices (1.33, the last gogo release), and google.golang.org/protobuf (1.35.8: the code of
# 1.34-1.36; 1.37.1; then each newer one hack/release-day.sh adds). 1.17 and 1.19 write the V1
# layout, the others V2.
# shellcheck source=../../lib/release-module.sh
. ../../lib/release-module.sh
v1releases=(v1.17.17 v1.19.16)
mapfile -t v2releases < <(releases_in . | grep -vxF -e v1.17.17 -e v1.19.16)
v1writer=${v1releases[${#v1releases[@]}-1]}
# The V2 vectors carry the name of the newest release when they were made; every release after it
# must write the same bytes (same, below) and only adds its reads.
v2writer=v1.37.1
unshare=(unshare -m)
[ "$(id -u)" = 0 ] || unshare=(unshare -Urm)

for rel in "${v1releases[@]}" "${v2releases[@]}"; do
  echo "building $rel" >&2
  tc=$(module_toolchain "$rel")
  (cd "$rel" && GOTOOLCHAIN=$tc go build -o "$work/devgen-$rel" .)
  "$work/devgen-$rel" -mode write -dir "$work/files/$rel"
done
# The releases of a layout write the same bytes (neither layout nor its checksum changed): the
# writer's files are the vectors, the others must equal them.
same() {
  local writer=$1 rel
  shift
  for rel in "$@"; do
    [ "$rel" != "$writer" ] || continue
    diff -r "$work/files/$rel" "$work/files/$writer" >/dev/null || { echo "$rel wrote other bytes than $writer" >&2; exit 1; }
    rm -r "${work:?}/files/$rel"
  done
}
same "$v1writer" "${v1releases[@]}"
same "$v2writer" "${v2releases[@]}"
reads=()
for rel in "${v1releases[@]}" "${v2releases[@]}"; do
  out="$work/read-$rel.json"
  "${unshare[@]}" sh -c 'mount -t tmpfs tmpfs /var/lib && exec "$@"' sh \
    "$work/devgen-$rel" -mode read -dir "$work/files" -label "$rel" >"$out" 2>"$work/log.txt" ||
    { cat "$work/log.txt" >&2; exit 1; }
  reads+=("$out")
done
"$work/devgen-$v2writer" -mode vectors -dir "$work/files" -reads "$(IFS=,; echo "${reads[*]}")" -out "$repo/testdata/kubelet" \
  -writers "$v2writer=dev-v2,$v1writer=dev-v1"
echo "vectors written to testdata/kubelet" >&2
"$repo/hack/vectors-manifest.sh"
