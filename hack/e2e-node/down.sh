#!/usr/bin/env bash
# Stops the e2e node (see up.sh) and undoes what it changed, by PID and by recorded path only:
# the kubelet first (it would restart pods), then every pod through the CRI (a containerd
# stopped with pods up leaves their shims running), containerd, kube-apiserver, etcd; then the
# mounts under the state dir, the cgroup subtrees, the network namespace, the sysctls, the files.
# Safe to run twice, and after a failed or partial up.sh.
#
#   hack/e2e-node/down.sh [CRI_STOP_BIN]    # KEEP=1 keeps the state dir (logs) for a look
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
cri_stop=${1:-${CRI_STOP:-}}
status=0

stop_pid kubelet 15
if [[ -n $cri_stop && -S $S/containerd/containerd.sock && -f $S/pids/containerd ]]; then
  "${NSENTER[@]}" "$cri_stop" "unix://$S/containerd/containerd.sock" >&2 || { log "cri-stop failed"; status=1; }
fi
stop_pid containerd 15
stop_pid kube-apiserver 15
stop_pid etcd 10

# Shims of containers the CRI could not stop: found by their -address under our state dir.
for p in /proc/[0-9]*; do
  if { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q -- "-address $S/containerd/containerd.sock"; then
    log "left-over shim ${p#/proc/}: killing it"
    kill -KILL "${p#/proc/}" 2>/dev/null || true
    status=1
  fi
done

# Mounts under the state dir (container rootfs, sandbox shm, the kubelet's bind of its root
# dir), deepest first.
if [[ -d $S ]]; then
  for _ in 1 2 3; do
    mapfile -t mnts < <(awk -v s="$S/" 'index($5, s) == 1 || $5 == substr(s, 1, length(s) - 1) { print $5 }' /proc/self/mountinfo | sort -r)
    [[ ${#mnts[@]} -eq 0 ]] && break
    for m in "${mnts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  done
  if awk -v s="$S/" 'index($5, s) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    log "mounts left under $S"
    status=1
  fi
fi

# Cgroup subtrees: depth first; a cgroup with a process left in it cannot be removed.
for m in $(cgroup_mounts); do
  [[ -d $m/$E2E_NODE_CGROUP ]] || continue
  find "$m/$E2E_NODE_CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null
  if [[ -d $m/$E2E_NODE_CGROUP ]]; then
    log "cgroup $m/$E2E_NODE_CGROUP not removed (processes left?)"
    status=1
  fi
done

# The network namespace (its veths, the CNI bridge and the kubelet's iptables go with it) and
# the /run/netns mount `ip netns add` made, if it made it.
if [[ -e /run/netns/$E2E_NODE_NETNS ]]; then
  ip netns delete "$E2E_NODE_NETNS" || status=1
fi
if [[ -f $S/created-run-netns && -d /run/netns ]] && [[ -z $(ls -A /run/netns) ]]; then
  umount /run/netns 2>/dev/null || true
  rmdir /run/netns 2>/dev/null || true
fi

if [[ -f $S/sysctls.saved ]]; then
  while IFS='=' read -r k v; do
    [[ $(sysctl -n "$k") == "$v" ]] || sysctl -q -w "$k=$v" || status=1
  done <"$S/sysctls.saved"
fi

# The kubelet links every container log in /var/log/containers (a fixed path): ours point into
# the state dir.
for l in /var/log/containers/*; do
  [[ -L $l && $(readlink "$l") == "$S/"* ]] && rm -f "$l"
done

# The kubelet's pod-resources dir bind-mounted at /var/lib/kubelet/pod-resources by
# TestAdmitGPUShapedDevicesBinaryReader (it undoes it itself; this is for a test binary that died).
if [[ -f $S/pod-resources-bind ]]; then
  d=$(cat "$S/pod-resources-bind")
  ! mountpoint -q "$d" || umount "$d" || { log "umount $d failed"; status=1; }
  [[ -f $S/created-pod-resources-dir ]] && { rmdir "$d" 2>/dev/null || { log "$d not empty: left"; status=1; }; }
fi

# The sample device plugin's sockets (it removes its own on SIGTERM; a killed one leaves it),
# and the device checkpoint the kubelet wrote for it.
rm -f /var/lib/kubelet/device-plugins/nodestate-e2e-*.sock
[[ -f $S/created-device-checkpoint ]] && rm -f /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint

if [[ -f $S/created-cdi-dirs ]]; then
  while read -r d; do
    rmdir "$d" 2>/dev/null || { [[ -e $d ]] && { log "$d not empty: left"; status=1; }; }
  done <"$S/created-cdi-dirs"
fi

if [[ -f $S/created-var-lib-kubelet ]]; then
  rm -f /var/lib/kubelet/device-plugins/kubelet.sock
  rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet 2>/dev/null || { log "/var/lib/kubelet not empty: left"; status=1; }
fi

if [[ -d $S && -z ${KEEP:-} ]]; then
  rm -rf "$S" || status=1
fi
exit $status
