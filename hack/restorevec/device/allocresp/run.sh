#!/usr/bin/env bash
# Records what each era's real device plugin API code returns when the device manager's restore
# unmarshals an AllocResp, on a corpus made to pin every boundary of the rules, into
# testdata/allocresp/corpus.txt (see ../README.md). Imports only k8s.io/kubelet's
# deviceplugin/v1beta1, not the kubelet: seconds, not the device modules' minutes.
# Usage: hack/restorevec/device/allocresp/run.sh
set -euo pipefail
cd "$(dirname "$0")"
repo=$(cd ../../../.. && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One module per rule of pkg/decode's rows (files[KindDevices].Restore): gogo/protobuf 1.2
# generated code (1.17); gogo 1.3 without cdi_devices, generated before 1.3.2's map-entry skip
# check (1.20.5: 1.18.0-1.18.18, 1.19.0-1.19.9, 1.20.0-1.20.5) and after it (1.21.14: the rest of
# 1.18-1.27); with cdi_devices (1.33.6: 1.28-1.33); google.golang.org/protobuf's
# proto.Unmarshal (1.37.1: 1.34+).
releases=(v1.17.17 v1.20.5 v1.21.14 v1.33.6 v1.37.1)

(cd corpus && go run . -mode inputs -vectors "$repo/testdata/kubelet/kubelet_internal_checkpoint/v1.37.1" -out "$work/inputs.txt")
results=()
for rel in "${releases[@]}"; do
  (cd "$rel" && go build -o "$work/oracle-$rel" .)
  "$work/oracle-$rel" "$work/inputs.txt" >"$work/$rel.txt"
  results+=("$rel=$work/$rel.txt")
done
mkdir -p "$repo/testdata/allocresp"
(cd corpus && go run . -mode merge -inputs "$work/inputs.txt" -results "$(IFS=,; echo "${results[*]}")" \
  -out "$repo/testdata/allocresp/corpus.txt")
echo "wrote testdata/allocresp/corpus.txt ($(wc -l <"$work/inputs.txt") inputs)" >&2
