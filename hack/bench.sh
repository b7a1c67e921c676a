#!/usr/bin/env bash
# Runs the decoder benchmarks COUNT times, ours beside the kubelet's own algorithm in the same
# run, and prints the median ns/op of each and their ratio (machines here are noisy: compare
# only numbers from one run).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench '5000' -benchmem -count "$count" ./pkg/decode/ | tee "$out"
echo
awk '
  /^Benchmark/ { name=$1; sub(/-[0-9]+$/, "", name); v[name]=v[name] " " $3 }
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    for (name in v) if (name ~ /\/kubelet$/) {
      base = name; sub(/\/kubelet$/, "", base)
      k = median(v[name]); n = median(v[base "/nodestate"])
      printf "%-22s kubelet %12.0f ns/op   nodestate %12.0f ns/op   nodestate/kubelet %.2f\n", base, k, n, n / k
    }
  }' "$out"
