#!/usr/bin/env bash
# Starts ONE real node on this machine for make e2e-node: etcd, kube-apiserver, containerd and a
# kubelet (static CPU policy, Static memory manager), every one inside a network namespace made
# here and started with `nsenter --net=` (not `ip netns exec`, which remounts /sys and hides the
# cgroup mounts the kubelet needs). Stop it with down.sh, which undoes everything by PID.
#
#   hack/e2e-node/up.sh TOOLS_BIN PAUSE_BIN    # TOOLS_BIN holds etcd kube-apiserver kubectl kubelet
#   hack/e2e-node/up.sh TOOLS_BIN PAUSE_BIN PLUGIN   # PLUGIN prints the RBAC and admission policy
#
# Needs root and, from apt: containerd runc containernetworking-plugins busybox-static umoci
# skopeo. Writes $E2E_NODE_STATE/env (KUBECONFIG=..., NODE=..., ...) once the node is Ready.
# The caller holds the lock (hack/e2e-node.sh): the kubelet owns the machine's kubepods cgroups.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

tools=$1 pause_bin=$2 plugin=${3:-}
for b in etcd kube-apiserver kubectl kubelet; do
  [[ -x $tools/$b ]] || { log "missing $tools/$b"; exit 1; }
done
for b in containerd containerd-shim-runc-v2 runc umoci skopeo ctr busybox nsenter ip openssl; do
  command -v "$b" >/dev/null || { log "missing $b (apt-get install containerd runc containernetworking-plugins busybox-static umoci skopeo)"; exit 1; }
done
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] ||
  { log "missing CNI plugins in /usr/lib/cni (apt-get install containernetworking-plugins)"; exit 1; }
if [[ -e /run/netns/$E2E_NODE_NETNS || -d $S ]]; then
  log "a previous run was not cleaned up: running down.sh first"
  "$here/down.sh"
fi

mkdir -p "$S"/{pids,logs,pki,etcd,kubelet,pod-logs,containerd/root,containerd/state,cni/net.d,cni/data,cni/cache,images}
# What down.sh must restore or remove, recorded before anything is changed.
for k in $E2E_NODE_SYSCTLS; do
  printf '%s=%s\n' "$k" "$(sysctl -n "$k")"
done >"$S/sysctls.saved"
[[ -d /run/netns ]] || touch "$S/created-run-netns"
# The kubelet's device manager listens on the fixed /var/lib/kubelet/device-plugins/kubelet.sock.
[[ -e /var/lib/kubelet ]] || touch "$S/created-var-lib-kubelet"
# ... and keeps its checkpoint there once a device plugin registered (TestDevicePluginGone).
[[ -e /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint ]] || touch "$S/created-device-checkpoint"
# doctor's and collect's debug pods mount the CDI spec dirs (DirectoryOrCreate): the kubelet
# makes them when missing.
for d in /etc/cdi /var/run/cdi; do
  [[ -e $d ]] || echo "$d" >>"$S/created-cdi-dirs"
done

t0=$SECONDS
phase() { log "$1 ($((SECONDS - t0))s)"; }

# --- network namespace: lo, a veth pair with both ends inside -----------------------------
ip netns add "$E2E_NODE_NETNS"
ip -n "$E2E_NODE_NETNS" link set lo up
ip -n "$E2E_NODE_NETNS" link add nse0 type veth peer name nse1
ip -n "$E2E_NODE_NETNS" addr add "$E2E_NODE_IP/24" dev nse0
ip -n "$E2E_NODE_NETNS" addr add "$E2E_NODE_PEER_IP/24" dev nse1
ip -n "$E2E_NODE_NETNS" link set nse0 up
ip -n "$E2E_NODE_NETNS" link set nse1 up
ip -n "$E2E_NODE_NETNS" route add default via "$E2E_NODE_PEER_IP" dev nse0
phase "network namespace $E2E_NODE_NETNS"

# --- cgroup root for the kubelet (cpuset needs its cpus and mems filled in v1) ----------------
for m in $(cgroup_mounts); do
  mkdir -p "$m/$E2E_NODE_CGROUP"
  if [[ -f $m/cpuset.cpus ]]; then
    cat "$m/cpuset.cpus" >"$m/$E2E_NODE_CGROUP/cpuset.cpus"
    cat "$m/cpuset.mems" >"$m/$E2E_NODE_CGROUP/cpuset.mems"
  fi
done

# --- PKI --------------------------------------------------------------------------------------
pki=$S/pki
ossl() { openssl "$@" 2>>"$S/logs/openssl.log"; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=e2e-node-ca" \
  -keyout "$pki/ca.key" -out "$pki/ca.crt"
# issue NAME SUBJECT [SAN]
issue() {
  local name=$1 subj=$2 san=${3:-}
  ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$subj" -keyout "$pki/$name.key" -out "$pki/$name.csr"
  local ext="$pki/$name.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [[ -n $san ]]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$san"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$ext"
  ossl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 2 -extfile "$ext" -out "$pki/$name.crt"
}
issue apiserver "/CN=kube-apiserver" "IP:$E2E_NODE_IP,IP:127.0.0.1,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
issue admin "/O=system:masters/CN=e2e-admin"
issue apiserver-kubelet "/O=system:masters/CN=kube-apiserver-kubelet-client"
issue kubelet-client "/O=system:nodes/CN=system:node:$E2E_NODE_NAME"
issue kubelet-serving "/O=system:nodes/CN=system:node:$E2E_NODE_NAME" "IP:$E2E_NODE_IP,DNS:$E2E_NODE_NAME"
ossl genrsa -out "$pki/sa.key" 2048
ossl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub"

kubeconfig() { # FILE USER
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e-node
  cluster: {server: "https://$E2E_NODE_IP:6443", certificate-authority: "$pki/ca.crt"}
users:
- name: $2
  user: {client-certificate: "$pki/$2.crt", client-key: "$pki/$2.key"}
contexts:
- name: e2e-node
  context: {cluster: e2e-node, user: $2, namespace: default}
current-context: e2e-node
EOF
}
kubeconfig "$S/admin.kubeconfig" admin
kubeconfig "$S/kubelet.kubeconfig" kubelet-client
phase "PKI"
echo "TOOLS_BIN=$tools" >"$S/tools"

# --- etcd and kube-apiserver ------------------------------------------------------------------
start etcd "$tools/etcd" --name default --data-dir "$S/etcd" --unsafe-no-fsync \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster default=http://127.0.0.1:2380 --listen-metrics-urls ''
start kube-apiserver "$tools/kube-apiserver" \
  --etcd-servers=http://127.0.0.1:2379 --bind-address="$E2E_NODE_IP" --advertise-address="$E2E_NODE_IP" --secure-port=6443 \
  --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" --client-ca-file="$pki/ca.crt" \
  --kubelet-client-certificate="$pki/apiserver-kubelet.crt" --kubelet-client-key="$pki/apiserver-kubelet.key" \
  --kubelet-certificate-authority="$pki/ca.crt" --kubelet-preferred-address-types=InternalIP,Hostname \
  --authorization-mode=Node,RBAC --allow-privileged=true --endpoint-reconciler-type=none \
  --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$pki/sa.pub" \
  --service-account-signing-key-file="$pki/sa.key" --service-cluster-ip-range=10.96.0.0/24
kubectl=("${NSENTER[@]}" "$tools/kubectl" --kubeconfig "$S/admin.kubeconfig")
wait_until kube-apiserver 120 "${kubectl[@]}" get --raw /readyz
phase "kube-apiserver ready"

# --- containerd, with its own root, state, socket and CNI config -----------------------------
sock=$S/containerd/containerd.sock
cat >"$S/containerd/config.toml" <<EOF
version = 2
root = "$S/containerd/root"
state = "$S/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$S/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$S/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  # root here lacks CAP_SYS_RESOURCE: runc's write of -998 to oom_score_adj would kill every sandbox
  restrict_oom_score_adj = true
  enable_selinux = false
  # pod network namespaces are bind-mounted here, not in the host's /run/netns
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$S/cni/net.d"
EOF
cat >"$S/cni/net.d/10-e2e-node.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "nodestate-e2e",
  "plugins": [
    {"type": "bridge", "bridge": "nse-cni0", "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "dataDir": "$S/cni/data", "ranges": [[{"subnet": "$E2E_NODE_POD_CIDR"}]]}},
    {"type": "loopback"}
  ]
}
EOF
start containerd containerd --config "$S/containerd/config.toml"
ctr=("${NSENTER[@]}" ctr --address "$sock" --namespace k8s.io)
wait_until containerd 30 "${ctr[@]}" version
phase "containerd ready"

# --- images, built locally: busybox (static, from apt) and the Go pause ---------------------
# image DIR REF ENTRYPOINT FILE...: an OCI layout with FILEs in /bin (busybox applets linked),
# copied into containerd under REF.
image() {
  local dir=$S/images/$1 ref=$2 entry=$3
  shift 3
  umoci init --layout "$dir/oci"
  umoci new --image "$dir/oci:img"
  umoci unpack --rootless --image "$dir/oci:img" "$dir/bundle" >/dev/null
  mkdir -p "$dir/bundle/rootfs/bin"
  local f
  for f in "$@"; do cp "$f" "$dir/bundle/rootfs/bin/"; done
  if [[ -x $dir/bundle/rootfs/bin/busybox ]]; then
    for a in sh tar sleep cat ls; do ln -s busybox "$dir/bundle/rootfs/bin/$a"; done
  fi
  umoci repack --image "$dir/oci:img" "$dir/bundle"
  umoci config --image "$dir/oci:img" --config.entrypoint "$entry" --config.workingdir / \
    --config.env PATH=/bin --architecture "$(dpkg --print-architecture)" --os linux
  skopeo copy --quiet "oci:$dir/oci:img" "docker-archive:$dir/image.tar:$ref"
  "${ctr[@]}" images import "$dir/image.tar" >/dev/null
}
image busybox docker.io/library/busybox:1.37 /bin/sh /bin/busybox
image pause registry.k8s.io/pause:3.10 /bin/pause "$pause_bin"
phase "images imported"

# --- the kubelet --------------------------------------------------------------------------------
cat >"$S/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /$E2E_NODE_CGROUP
failSwapOn: false
failCgroupV1: false
protectKernelDefaults: false
address: $E2E_NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$pki/ca.crt"}
authorization:
  mode: Webhook
tlsCertFile: "$pki/kubelet-serving.crt"
tlsPrivateKeyFile: "$pki/kubelet-serving.key"
podCIDR: $E2E_NODE_POD_CIDR
podLogsDir: "$S/pod-logs"
cpuManagerPolicy: static
reservedSystemCPUs: "0"
memoryManagerPolicy: Static
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
reservedMemory:
- numaNode: 0
  limits: {memory: 100Mi}
# The images are built locally and exist nowhere else: never garbage-collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
registerNode: true
EOF
"$here/kubelet.sh" start
phase "node $E2E_NODE_NAME Ready"

# No kube-controller-manager: the default ServiceAccount must be made by hand, or the apiserver
# refuses every pod in the namespace.
"${kubectl[@]}" create serviceaccount default -n default >/dev/null 2>&1 || true
# The plugin's own namespace (its default for the debug pods), Role and ClusterRole, and the
# admission policy that admits only the debug pod's shape there, as installed from its README:
# printed by the plugin for this node's kubelet root dir (the real kubelet then runs the pod the
# policy admitted), else deploy/ (the default root dir). The default root dir is allowed too (the
# device-plugin tests read /var/lib/kubelet/device-plugins, the kubelet's fixed plugin dir), and
# one that does not exist, so that the wrong-root-dir test reaches the kubelet's own hostPath check.
if [[ -n $plugin ]]; then
  "$plugin" rbac --kubelet-root-dir "$S/kubelet" --kubelet-root-dir /var/lib/kubelet --kubelet-root-dir /nonexistent/kubelet |
    "${kubectl[@]}" apply -f - >/dev/null
else
  "${kubectl[@]}" apply -f "$here/../../deploy/" >/dev/null
fi
"${kubectl[@]}" create serviceaccount default -n kubectl-nodestate >/dev/null 2>&1 || true

cat >"$S/env" <<EOF
KUBECONFIG=$S/admin.kubeconfig
NODE=$E2E_NODE_NAME
NETNS=$E2E_NODE_NETNS
STATE=$S
KUBELET_ROOT=$S/kubelet
KUBELET_CONFIG=$S/kubelet.yaml
CGROUP_ROOT=$E2E_NODE_CGROUP
CRI_ENDPOINT=unix://$sock
TOOLS_BIN=$tools
EOF
phase "up"
