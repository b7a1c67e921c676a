#!/usr/bin/env bash
# The plugin image as an air-gapped node gets it (root; containerd and runc from apt, as make
# e2e-node): a private containerd (its own root, state and socket under a temp dir, no CRI)
# imports the OCI tar with `ctr -n k8s.io images import`, then runs the image as deploy/npd's
# init container does (node-check --install-to into a bind-mounted dir) and a check from the
# image over the bundled example kubelet dir; the image has no shell. Everything it starts is
# stopped by PID and the temp dir removed.
#
#   hack/image-load.sh IMAGE.tar REF     (REF: the name the tar carries, e.g. from hack/image.sh)
set -euo pipefail
tar=$(realpath "$1") ref=$2
cd "$(dirname "$0")/.."
say() { printf 'image-load: %s\n' "$*" >&2; }
[[ $(id -u) == 0 ]] || { say "needs root (containerd)"; exit 1; }
command -v containerd >/dev/null && command -v ctr >/dev/null || { say "needs containerd and ctr (apt-get install containerd)"; exit 1; }
tmp=$(mktemp -d)
pid=
cleanup() {
  if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  grep -o " $tmp[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
printf 'version = 2\nroot = "%s/root"\nstate = "%s/state"\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "%s/containerd.sock"\n' "$tmp" "$tmp" "$tmp" >"$tmp/config.toml"
containerd --config "$tmp/config.toml" >"$tmp/containerd.log" 2>&1 &
pid=$!
ctr=(ctr --address "$tmp/containerd.sock" -n k8s.io)
for _ in $(seq 50); do "${ctr[@]}" version >/dev/null 2>&1 && break; sleep 0.2; done
"${ctr[@]}" images import "$tar" >/dev/null
"${ctr[@]}" images ls -q | grep -Fqx "$ref" || { say "FAIL the import names no $ref"; exit 1; }
say "ok   ctr images import: $ref"
mkdir -p "$tmp/plugin"
"${ctr[@]}" run --rm --mount "type=bind,src=$tmp/plugin,dst=/plugin,options=rbind:rw" "$ref" install /kubectl-nodestate node-check --install-to /plugin
line=$("$tmp/plugin/kubectl-nodestate" node-check checkpoints --kubelet-root-dir examples/kubelet-root --kubelet-version v1.37.1)
[[ $line == "7 checkpoint files valid for kubelet v1.37.1" ]] || { say "FAIL the installed binary: $line"; exit 1; }
say "ok   node-check --install-to from the image (the DaemonSet's init container), and the copy runs"
line=$("${ctr[@]}" run --rm --mount "type=bind,src=$PWD/examples/kubelet-root,dst=/var/lib/kubelet,options=rbind:ro" "$ref" check /kubectl-nodestate node-check checkpoints --kubelet-version v1.37.1)
[[ $line == "7 checkpoint files valid for kubelet v1.37.1" ]] || { say "FAIL node-check in the image: $line"; exit 1; }
say "ok   node-check checkpoints in the image over a read-only kubelet dir"
if "${ctr[@]}" run --rm "$ref" shell /bin/sh -c true 2>/dev/null; then say "FAIL the image has a shell"; exit 1; fi
say "ok   no /bin/sh in the image"
say PASS
