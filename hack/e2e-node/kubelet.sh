#!/usr/bin/env bash
# The kubelet of the e2e node (see up.sh), on its own so a test can stop it, change its
# configuration and start it again.
#
#   kubelet.sh start [CONFIG]   # in the background; waits for the node to be Ready
#   kubelet.sh stop             # by its recorded PID
#   kubelet.sh run CONFIG       # in the foreground: the kubelet's exit code and output pass
#                               # through (a kubelet that refuses its state exits at once)
#
# E2E_KUBELET_KUBECONFIG replaces the kubelet's kubeconfig for start and run
# (TestRestartPodFates points it at a gate on the loopback that holds the API server back
# until a device plugin has registered).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

tools=$(sed -n 's/^TOOLS_BIN=//p' "$S/tools")
args() {
  printf '%s\n' "$tools/kubelet" --config "$1" --kubeconfig "${E2E_KUBELET_KUBECONFIG:-$S/kubelet.kubeconfig}" \
    --root-dir "$S/kubelet" --container-runtime-endpoint "unix://$S/containerd/containerd.sock" \
    --node-ip "$E2E_NODE_IP" --hostname-override "$E2E_NODE_NAME" --cert-dir "$S/kubelet/pki" -v 2
}
# Ready as reported by THIS kubelet: its healthz answers (after a restart the node's old status
# may still say Ready), and the node's Ready condition is True.
node_ready() {
  "${NSENTER[@]}" curl -fsS --max-time 2 http://127.0.0.1:10248/healthz >/dev/null &&
    [[ $(kubectl_admin get node "$E2E_NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

case ${1:-} in
start)
  mapfile -t cmd < <(args "${2:-$S/kubelet.yaml}")
  start kubelet "${cmd[@]}"
  wait_until kubelet 120 node_ready && exit 0
  # This machine's NUMA memory can grow under load (memory plugged in while the tests run): the
  # memory manager then refuses the state it wrote minutes ago, as the kubelet does on any node
  # whose memory changed. Drain-and-remove is the kubelet's own advice; the harness takes it
  # once, says so, and fails on any other refusal.
  grep -q "the expected machine state is different from the real one" "$S/logs/kubelet.log" || exit 1
  log "the machine's memory changed since the memory manager wrote its state: memory_manager_state removed, kubelet started again"
  rm -f "$S/kubelet/memory_manager_state"
  start kubelet "${cmd[@]}"
  wait_until kubelet 120 node_ready
  ;;
stop)
  stop_pid kubelet 15
  ;;
run)
  mapfile -t cmd < <(args "$2")
  exec "${NSENTER[@]}" "${cmd[@]}"
  ;;
*)
  echo "usage: kubelet.sh start [CONFIG] | stop | run CONFIG" >&2
  exit 2
  ;;
esac
