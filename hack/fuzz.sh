#!/usr/bin/env bash
# Runs every fuzz target (go test -fuzz) for FUZZTIME each. Seeds come from the kubelet vectors,
# so `go test ./...` already replays them; this explores beyond them.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-20s}
for pkg in $(go list ./pkg/...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "== $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s "$pkg"
  done
done
