#!/usr/bin/env bash
# Stops the control plane started by hack/e2e/cluster-up.sh: SIGTERM to the
# harness (which stops kwok, kube-apiserver and etcd by PID), SIGKILL after
# 30 s, then removes its temp dir.
set -euo pipefail

state=${NODESTATE_E2E_STATE:-${TMPDIR:-/tmp}/kubectl-nodestate-e2e-cluster}

log() { printf '[cluster-down] %s\n' "$*" >&2; }

if [[ ! -f "$state/pid" ]]; then
  log "not running (no $state/pid)"
  exit 0
fi
pid=$(cat "$state/pid")
kubeconfig=""
if [[ -f "$state/env" ]]; then
  kubeconfig=$(sed -n 's/^KUBECONFIG=//p' "$state/env")
fi
if kill -0 "$pid" 2>/dev/null; then
  kill -TERM "$pid"
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "pid $pid still running after 30s: SIGKILL (its children die with it)"
    kill -KILL "$pid" || true
  fi
fi
# The harness's temp dir (data, logs, kubeconfig) is the kubeconfig's dir.
if [[ -n "$kubeconfig" && "$(basename "$(dirname "$kubeconfig")")" == nodestate-e2e-* ]]; then
  rm -rf "$(dirname "$kubeconfig")"
fi
rm -f "$state/env" "$state/pid"
log "stopped (pid $pid)"
