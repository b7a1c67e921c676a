#!/usr/bin/env bash
# Issue 45's side-by-side (root): the same workloads, in the same order, on the same kwok nodes
# judged by v1.37.1's real kubelet managers (make judge-loop), scheduled by three schedulers in
# one run: the stock kube-scheduler, the upstream NodeResourceTopologyMatch (hack/nrtscheduler,
# deploy/scheduler-nrt) and the nodestate-scheduler (scheduler/, deploy/scheduler). Each table:
# pods bound, bound then refused by the kubelet (per 1,000 binds), left pending, pending pods the
# kubelet would have admitted on some node (false negatives), time to bind.
# REPORTS=DIR keeps each scheduler's report as DIR/<name>.json.
set -euo pipefail
cd "$(dirname "$0")/.."
reports=${REPORTS:-$(mktemp -d)}
mkdir -p "$reports"
tools=$(NODESTATE_TOOLS="kube-scheduler nodestate-scheduler" hack/tools/build.sh | tail -n 1)
nrt=$(hack/nrtscheduler/build.sh | tail -n 1)
run() {
  local name=$1
  shift
  echo "== $name" >&2
  env "$@" NODESTATE_JUDGE_REPORT="$reports/$name.json" make -s judge-loop | grep '^JUDGELOOP'
}
run stock NODESTATE_JUDGE_SCHEDULER="$tools/kube-scheduler"
run nrt-match NODESTATE_JUDGE_SCHEDULER="$nrt" NODESTATE_JUDGE_SCHEDULER_NAME=nrt-match-scheduler \
  NODESTATE_JUDGE_SCHEDULER_CONFIG=deploy/scheduler-nrt/scheduler-config.yaml
run nodestate NODESTATE_JUDGE_SCHEDULER="$tools/nodestate-scheduler" NODESTATE_JUDGE_SCHEDULER_NAME=nodestate-scheduler \
  NODESTATE_JUDGE_SCHEDULER_CONFIG=deploy/scheduler/scheduler-config.yaml
echo "reports: $reports" >&2
