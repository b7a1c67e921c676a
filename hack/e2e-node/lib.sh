# Shared by hack/e2e-node/{up,down}.sh: names and paths of the one real node. Sourced.
#
# Everything lives under $E2E_NODE_STATE and inside the network namespace $E2E_NODE_NETNS; the
# processes are recorded in $E2E_NODE_STATE/pids/NAME and stopped by those PIDs only.
E2E_NODE_STATE=${E2E_NODE_STATE:-/tmp/kubectl-nodestate-e2e-node}
E2E_NODE_NETNS=${E2E_NODE_NETNS:-nodestate-e2e}
E2E_NODE_NAME=${E2E_NODE_NAME:-e2e-node}
# The node IP: a /24 on one end of a veth pair whose both ends stay inside the namespace (this
# kernel has no dummy driver). Nothing outside the namespace sees it.
E2E_NODE_IP=10.213.0.1
E2E_NODE_PEER_IP=10.213.0.2
E2E_NODE_POD_CIDR=10.214.0.0/24
# The kubelet's cgroup root: one subtree per hierarchy, removed afterwards.
E2E_NODE_CGROUP=nodestate-e2e
# Host-wide sysctls the kubelet sets (a network namespace does not isolate them): saved before,
# restored after.
E2E_NODE_SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"
E2E_NODE_LOCK=${E2E_NODE_LOCK:-/run/lock/kubectl-nodestate-e2e-node.lock}

S=$E2E_NODE_STATE
# kubectl's discovery cache stays in the state dir, not in ~/.kube.
export KUBECACHEDIR=$S/kube-cache
NSENTER=(nsenter "--net=/run/netns/$E2E_NODE_NETNS" --)

log() { printf '[e2e-node %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# v1 hierarchies (and the unified one in hybrid mode) mounted on this host.
cgroup_mounts() {
  awk '$9 == "cgroup" || $9 == "cgroup2" { print $5 }' /proc/self/mountinfo | sort -u
}

# stop_pid NAME [GRACE_SECONDS]: TERM, wait, then KILL, the process recorded for NAME.
stop_pid() {
  local name=$1 grace=${2:-10} pidfile="$S/pids/$1" pid
  [[ -f $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  local t=$SECONDS
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 $((grace * 10))); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name (pid $pid) did not stop in ${grace}s: KILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped $name (pid $pid) in $((SECONDS - t))s"
  fi
  rm -f "$pidfile"
}

# start NAME CMD...: in the namespace, in its own process group, log to logs/NAME.log
start() {
  local name=$1
  shift
  setsid "${NSENTER[@]}" "$@" >"$S/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$S/pids/$name"
}
# wait_until NAME SECONDS CMD...: until CMD succeeds, or NAME exits, or SECONDS pass
wait_until() {
  local name=$1 secs=$2
  shift 2
  for _ in $(seq 1 $((secs * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$(cat "$S/pids/$name")" 2>/dev/null; then
      log "$name exited; last lines of $S/logs/$name.log:"
      tail -n 30 "$S/logs/$name.log" >&2
      return 1
    fi
    sleep 0.2
  done
  log "$name not ready after ${secs}s; last lines of $S/logs/$name.log:"
  tail -n 30 "$S/logs/$name.log" >&2
  return 1
}

kubectl_admin() { "${NSENTER[@]}" "$(sed -n 's/^TOOLS_BIN=//p' "$S/tools")/kubectl" --kubeconfig "$S/admin.kubeconfig" "$@"; }
