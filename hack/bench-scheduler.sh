#!/usr/bin/env bash
# `make bench-scheduler` (issue 45's cost): the stock kube-scheduler and the nodestate-scheduler
# (NodeStateAdmission, deploy/scheduler's profile) schedule the same Guaranteed pods on N kwok
# nodes with published states, at each size in one run (test/e2e TestBenchScheduler). Prints per
# size and scheduler:
#
#   sched NAME nodes=N pods=M bound=B wall=Xs pods_per_s=P cpu=Cs cpu_per_pod_ms=... filter_phase_per_pod_ms=... [nodestate_filter_per_node_us=...]
#   sched ratio nodes=N pods_per_s=... cpu=... filter_phase_per_pod=... (nodestate/stock)
#
# Environment: NODES (default "1000 10000"), PODS (default 500), QPS (both schedulers' client
# QPS, default 500), PROFILE=DIR (each scheduler's CPU profile, 20 s from its first pod, as
# DIR/NAME-N.pprof), NODESTATE_SCHEDULER / NODESTATE_BENCH_SCHED_STOCK (binaries to measure
# instead of the cached tools').
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
hack/tools/build.sh > /dev/null # the control plane's tools first: a cold machine has none
tools=$(NODESTATE_TOOLS="kube-scheduler nodestate-scheduler" hack/tools/build.sh | tail -n 1)
export NODESTATE_SCHEDULER=${NODESTATE_SCHEDULER:-$tools/nodestate-scheduler} # this tree's build
export NODESTATE_BENCH_SCHED_NODES=${NODES:-1000 10000}
export NODESTATE_BENCH_SCHED_PODS=${PODS:-500}
export NODESTATE_BENCH_SCHED_QPS=${QPS:-500}
export NODESTATE_BENCH_SCHED_PROFILE=${PROFILE:-}
log=$(mktemp "${TMPDIR:-/tmp}/nodestate-bench-scheduler.XXXXXX")
trap 'rm -f "$log"' EXIT
rc=0
hack/e2e.sh -run '^TestBenchScheduler$' -timeout 180m > "$log" 2>&1 || rc=$?
grep -E '^(--- |FAIL|ok|panic)|bench_scheduler_test' "$log" >&2 || true
grep '^BENCH ' "$log" | sed 's/^BENCH //'
exit "$rc"
