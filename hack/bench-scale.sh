#!/usr/bin/env bash
# `make bench-scale`: the plugin's `verify --all-nodes` beside the floor program
# (test/e2e/floor) on N simulated nodes (kube-apiserver + etcd + kwok, see
# test/e2e/README.md), both orders in one run, at 100, 300 and N nodes. Prints per size:
#
#   nodes=N nodestate=Xs floor=Ys ratio=X/Y baseline_extrapolated=Zs speedup=Z/X rss=MiB requests_per_node=R
#
# Environment: NODES (default 1000), SIZES (default "100 300 $NODES"), CONCURRENCY (default:
# the plugin's), ARGS (extra plugin arguments, e.g. "-o json"), BASELINE_NODES (nodes the
# kubectl loop reads, default 5), FLOOR=0 (plugin only), NODESTATE_PLUGIN (a plugin binary to
# measure instead of building this tree).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
nodes=${NODES:-1000}
export NODESTATE_BENCH_SIZES=${SIZES:-$(printf '%s\n' 100 300 "$nodes" | awk -v n="$nodes" '$1<=n' | sort -nu | tr '\n' ' ')}
export NODESTATE_BENCH_CONCURRENCY=${CONCURRENCY:-}
export NODESTATE_BENCH_ARGS=${ARGS:-}
export NODESTATE_BENCH_BASELINE_NODES=${BASELINE_NODES:-5}
export NODESTATE_BENCH_FLOOR=${FLOOR:-1}
log=$(mktemp "${TMPDIR:-/tmp}/nodestate-bench.XXXXXX")
trap 'rm -f "$log"' EXIT
plugin=${NODESTATE_PLUGIN:-}
if [ -n "$plugin" ]; then
  # hack/e2e.sh builds this tree's plugin; the harness takes NODESTATE_PLUGIN when set.
  bin=$(hack/tools/build.sh | tail -n 1)
  NODESTATE_TOOLS_BIN=$bin PATH="$(dirname "$plugin"):$bin:$PATH" \
    go test -tags e2e -count=1 -timeout 120m -v ./test/e2e/ -run '^TestBenchScale$' 2>&1 | tee "$log" >&2
else
  hack/e2e.sh -run '^TestBenchScale$' -timeout 120m 2>&1 | tee "$log" >&2
fi
grep '^BENCH ' "$log" | sed 's/^BENCH //'
