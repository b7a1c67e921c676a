# Writes the inputs of the edge-* device cases (README.md here): machine.json, devices.json,
# pod.json (pod2.json) per case, in the layout of the shipped device cases. Inputs only: the
# real kubelet writes the expectations (devices.sh).
#   python3 hack/admitvec/devcases/edges.py hack/admitvec/devcases/cases
#   python3 hack/admitvec/devcases/edges.py DIR --reuse-holders   # item 8's case only (not a vector)
import json, os, copy, sys
root = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
# The hintnodes cases' machine (1 socket, 2 NUMA nodes of 4 cores x 2 threads), its kubelet replaced.
base = json.load(open(os.path.join(here, "cases", "s1n2c4t2__hintnodes-cpu4-n1busy__gpu-last__cpu-static__tm-best-effort-container__mem-None/machine.json")))
GPU = "nvidia.com/gpu"
NIC = "example.com/nic"

def kubelet(cpu, tm, scope):
    k = {"cpuManagerPolicy": cpu}
    if cpu == "static":
        k["reservedSystemCPUs"] = "4-7,12-13"  # node 1 keeps 14-15 only: 4 exclusive CPUs fit node 0 alone
    k.update({"memoryManagerPolicy": "None", "systemReserved": {"memory": "924Mi"},
              "topologyManagerPolicy": tm, "topologyManagerScope": scope})
    return k

def dev(i, nodes, health="Healthy"):
    d = {"ID": i, "health": health}
    if nodes is not None:
        d["topology"] = {"nodes": [{"ID": n} for n in nodes]}
    return d

def ctr(name, cpu, mem, gpus, nics=0):
    q = {"cpu": cpu, "memory": mem}
    if gpus:
        q[GPU] = str(gpus)
    if nics:
        q[NIC] = str(nics)
    return {"name": name, "image": "registry.k8s.io/pause:3.10", "resources": {"requests": dict(q), "limits": dict(q)}}

def pod(name, containers, init=None):
    spec = {"containers": containers}
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": "uid-" + name}, "spec": spec}

def write(name, cpu, tm, scope, devices, pods, nics=None):
    d = os.path.join(root, "s1n2c4t2__%s__cpu-%s__tm-%s-%s__mem-None" % (name, cpu, tm, scope))
    os.makedirs(d, exist_ok=True)
    m = copy.deepcopy(base)
    m["kubelet"] = kubelet(cpu, tm, scope)
    for f, v in [("machine.json", m), ("devices.json", {"resources": dict({GPU: devices}, **({NIC: nics} if nics else {}))})] + [(f, p) for f, p in zip(["pod.json", "pod2.json"], pods)]:
        with open(os.path.join(d, f), "w") as fh:
            json.dump(v, fh, indent=1)
            fh.write("\n")

if "--reuse-holders" in sys.argv:
    # Reusable devices with different holders: init-a takes 1 GPU, init-b reuses it and takes
    # the other, the app takes 1 of the 2 its init containers hand on. The kubelet's pick is
    # random and its outcomes differ beyond swapping alike devices: not a vector.
    write("edge-reuse-holders__gpu2n0", "none", "best-effort", "container", [dev("gpu-0", [0]), dev("gpu-1", [0])],
          [pod("p", [ctr("app", "1", "1Gi", 1)], [ctr("init-a", "1", "256Mi", 1), ctr("init-b", "1", "256Mi", 2)])])
    sys.exit(0)

# 1. Unhealthy devices count toward the narrowest mask: one healthy and one unhealthy GPU a
# node, 2 asked: a single node would hold 2 devices, so only {0,1} fits and it is not preferred.
unh = [dev("gpu-0", [0]), dev("gpu-1", [0], "Unhealthy"), dev("gpu-2", [1]), dev("gpu-3", [1], "Unhealthy")]
for tm, scope in [("restricted", "container"), ("restricted", "pod"), ("best-effort", "container")]:
    write("edge-unhealthy-narrow__gpu1pn-unh1pn", "none", tm, scope, unh, [pod("p", [ctr("app", "1", "1Gi", 2)])])

# 2. The spill past the aligned devices. A NIC on node 0 alone hints {0} only (from 1.36 the
# masks span the nodes holding the resource's devices), the 2 GPUs {0,1} only: the merged
# affinity is {0} (not preferred; best-effort keeps it), and the GPU on node 1 is taken before
# the one without topology.
nic0 = [dev("nic-0", [0])]
spill = [dev("gpu-0", [0]), dev("gpu-1", [1]), dev("gpu-x0", None)]
for tm, scope in [("best-effort", "container"), ("best-effort", "pod")]:
    write("edge-spill-order__gpu1pn-x1+nic-n0", "none", tm, scope, spill, [pod("p", [ctr("app", "1", "1Gi", 2, 1)])], nic0)

# 3. A device on several NUMA nodes listed in descending order. (a) [0,1] and [1,0] are the same
# to the kubelet: one class, 1 asked. (b) [1,0] beside [1], affinity {0}: [1,0] is aligned.
desc = [dev("gpu-0", [0, 1]), dev("gpu-1", [1, 0])]
for tm, scope in [("best-effort", "container"), ("restricted", "container")]:
    write("edge-desc-same__gpu-span-desc", "none", tm, scope, desc, [pod("p", [ctr("app", "1", "1Gi", 1)])])
desc_al = [dev("gpu-0", [1]), dev("gpu-1", [1, 0])]
for tm, scope in [("best-effort", "container"), ("restricted", "container")]:
    write("edge-desc-aligned__gpu-n1-span-desc", "static", tm, scope, desc_al, [pod("p", [ctr("app", "4", "1Gi", 1)])])

# 4. NUMA nodes the machine lacks. (a) GPUs on node 2 of a 2-node machine: no mask holds them.
n2 = [dev("gpu-0", [2]), dev("gpu-1", [2])]
for tm, scope in [("restricted", "container"), ("best-effort", "container"), ("restricted", "pod")]:
    write("edge-unknown-node__gpu-n2", "none", tm, scope, n2, [pod("p", [ctr("app", "1", "1Gi", 1)])])
# (b) one GPU on node 0, one on node 2, 2 asked: only {0} is a mask (a mask {0,2}, merged with
# the machine's nodes, would become {0}, preferred).
mixed = [dev("gpu-0", [0]), dev("gpu-1", [2])]
for tm, scope in [("restricted", "container"), ("best-effort", "container")]:
    write("edge-unknown-node-mixed__gpu-n0-n2", "none", tm, scope, mixed, [pod("p", [ctr("app", "1", "1Gi", 2)])])
# (c) a Topology of node -1 (as AMD's plugin sends): in no mask, and taken after the devices on
# other real nodes (filterByAffinity's fake node -1).
neg = [dev("gpu-a", [-1]), dev("gpu-b", [1]), dev("gpu-c", [0])]
for tm, scope in [("best-effort", "container"), ("best-effort", "pod")]:
    write("edge-node-minus1__gpu-m1-n1-n0+nic-n0", "none", tm, scope, neg, [pod("p", [ctr("app", "1", "1Gi", 2, 1)])], nic0)
# All three asked: the node -1 GPU is taken too, and recorded as without topology.
write("edge-node-minus1-all__gpu-m1-n1-n0+nic-n0", "none", "best-effort", "container", neg, [pod("p", [ctr("app", "1", "1Gi", 3, 1)])], nic0)

# 5. "Requested: N" after an init container's device is reused: 3 GPUs, the init container takes
# 1, the app asks 4: it reuses 1 and still needs 3 of the 2 free.
three = [dev("gpu-0", [0]), dev("gpu-1", [0]), dev("gpu-2", [1])]
for tm, scope in [("none", "container"), ("best-effort", "container")]:
    write("edge-init-reuse-short__gpu2n0-1n1", "none", tm, scope, three,
          [pod("p", [ctr("app", "1", "1Gi", 4)], [ctr("init", "1", "256Mi", 1)])])
# Pod scope: the pod's 4 do not fit, so the affinity is every node and the init container takes
# any GPU; on two nodes that pick would differ beyond swapping alike devices: all on node 0.
write("edge-init-reuse-short__gpu3n0", "none", "best-effort", "pod", [dev("gpu-0", [0]), dev("gpu-1", [0]), dev("gpu-2", [0])],
      [pod("p", [ctr("app", "1", "1Gi", 4)], [ctr("init", "1", "256Mi", 1)])])

# 7. What would fit: 0. Every GPU unhealthy: the pod asking 1 is refused, the same pod asking
# none (pod2.json) is admitted.
allunh = [dev("gpu-0", [0], "Unhealthy"), dev("gpu-1", [1], "Unhealthy")]
for tm, scope in [("none", "container"), ("restricted", "container")]:
    write("edge-fit-zero__gpu-allunh", "none", tm, scope, allunh,
          [pod("p", [ctr("app", "1", "1Gi", 1)]), pod("p-cut", [ctr("app", "1", "1Gi", 0)])])
