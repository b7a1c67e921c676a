#!/usr/bin/env bash
# Starts the e2e control plane (kube-apiserver + etcd + kwok on 127.0.0.1,
# plus the harness's exec mapper) in the background for manual use, and
# prints the environment to use it. Stop it with hack/e2e/cluster-down.sh.
#
#   eval "$(hack/e2e/cluster-up.sh)"   # exports KUBECONFIG and PATH
#
# It runs the e2e test binary in serve mode (NODESTATE_E2E_SERVE), so it is
# the very same setup the tests get. Nodes: see test/e2e/README.md.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
state=${NODESTATE_E2E_STATE:-${TMPDIR:-/tmp}/kubectl-nodestate-e2e-cluster}

log() { printf '[cluster-up] %s\n' "$*" >&2; }

if [[ -f "$state/env" ]]; then
  pid=$(sed -n 's/^PID=//p' "$state/env")
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    log "already running (pid $pid)"
    sed -n 's/^\(KUBECONFIG\|TOOLS_BIN\)=\(.*\)$/export \1=\2/p' "$state/env"
    exit 0
  fi
fi
mkdir -p "$state"
rm -f "$state/env"

bin=$(cd "$root" && hack/tools/build.sh | tail -n 1)
log "building the harness"
(cd "$root" && go test -c -tags e2e -o "$state/e2e.test" ./test/e2e)

log "starting the control plane (log: $state/harness.log)"
(
  cd "$root/test/e2e"
  NODESTATE_TOOLS_BIN="$bin" NODESTATE_E2E_SERVE="$state/env" \
    setsid "$state/e2e.test" >"$state/harness.log" 2>&1 </dev/null &
  echo $! >"$state/pid"
)
pid=$(cat "$state/pid")
for _ in $(seq 1 600); do
  if [[ -s "$state/env" ]]; then
    break
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    log "the harness exited; last lines of $state/harness.log:"
    tail -n 30 "$state/harness.log" >&2
    exit 1
  fi
  sleep 0.2
done
if [[ ! -s "$state/env" ]]; then
  log "timed out; see $state/harness.log"
  exit 1
fi
log "up (pid $pid); stop with hack/e2e/cluster-down.sh"
sed -n 's/^\(KUBECONFIG\|TOOLS_BIN\)=\(.*\)$/export \1=\2/p' "$state/env"
# shellcheck disable=SC2016 # $PATH is for the caller's eval
printf 'export PATH=%s:$PATH\n' "$bin"
