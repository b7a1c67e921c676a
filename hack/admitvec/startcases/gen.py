#!/usr/bin/env python3
"""Writes the inputs of the kubelet-start cases that tell 1.37 and 1.38 apart at start
(README.md): cases/<name>/machine.json (statevec/machine/v1), setup/write.json (the
cpu_manager_state the writer release's real state writer writes), setup/meta.json."""
import json, os, shutil, sys

here = os.path.dirname(os.path.abspath(__file__))


def machine(cores, threads, offline=(), uncore_of=None):
    """One socket, one NUMA node, `cores` cores of `threads` threads (core c: c, c+cores, ...)."""
    cpus = []
    for t in range(threads):
        for c in range(cores):
            cid = c + t * cores
            if cid in offline:
                continue
            d = {"id": cid, "core": c, "socket": 0, "numa": 0}
            if uncore_of:
                d["uncoreCache"] = uncore_of(c)
            cpus.append(d)
    cpus.sort(key=lambda d: d["id"])
    return cpus


def cpulist(ids):
    ids, out, i = sorted(ids), [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def case(name, description, tags, cpus, options, reserved, held):
    online = [c["id"] for c in cpus]
    d = os.path.join(here, "cases", name)
    os.makedirs(os.path.join(d, "setup"))
    m = {"schema": "statevec/machine/v1",
         "shape": {"sockets": 1, "numaNodes": 1, "online": cpulist(online)},
         "cpus": cpus, "numa": [{"id": 0, "memory": 17179869184}],
         "kubelet": {"cpuManagerPolicy": "static", "cpuManagerPolicyOptions": options,
                     "kubeReserved": {"cpu": str(reserved)},
                     "featureGates": {"CPUManagerPolicyAlphaOptions": True}}}
    json.dump(m, open(os.path.join(d, "machine.json"), "w"), indent=1, sort_keys=True)
    write = {"cpu": {"policyName": "static", "defaultCpuSet": cpulist(set(online) - set(held)),
                     "entries": {"pod-a": {"app": cpulist(held)}}}}
    json.dump(write, open(os.path.join(d, "setup", "write.json"), "w"), indent=1, sort_keys=True)
    scenario = name.split("__")[0]
    json.dump({"scenario": scenario, "description": description, "tags": tags},
              open(os.path.join(d, "setup", "meta.json"), "w"), indent=1, sort_keys=True)


shutil.rmtree(os.path.join(here, "cases"), ignore_errors=True)
# SpreadRoundRobinCores: 8 cores x 2 threads, CPU 11 offline (core 3 has one thread).
# distribute-cpus-across-cores reserves 2 CPUs: 1.37 "0-1" (CPU id order), 1.38 "0,3" (the
# core with the fewest free CPUs first).
off11 = machine(8, 2, offline=(11,))
dac = {"distribute-cpus-across-cores": "true"}
case("cpu-s1c8t2-off11-dac-r2-pod-holds-3__w1.37.1",
     "distribute-cpus-across-cores reserves 2 CPUs on a core-3 sibling offline; a pod holds CPU 3, which 1.38 reserves (1.37 reserves 0-1)",
     ["cpu", "reserved", "distribute-cpus-across-cores"], off11, dac, 2, [3])
case("cpu-s1c8t2-off11-dac-r2-pod-holds-1__w1.37.1",
     "distribute-cpus-across-cores reserves 2 CPUs on a core-3 sibling offline; a pod holds CPU 1, which 1.37 reserves (1.38 reserves 0,3)",
     ["cpu", "reserved", "distribute-cpus-across-cores"], off11, dac, 2, [1])
# UncoreFullFirst: 8 cores x 2 threads, uncore caches of 2 cores (0-1) and 6 cores (2-7).
# prefer-align-cpus-by-uncorecache reserves 5 CPUs: 1.37 "2-4,10-11" (a partial cache of the
# big one: 5 is under the average cache size), 1.38 "0-2,8-9" (the small cache whole first).
u26 = machine(8, 2, uncore_of=lambda c: 0 if c < 2 else 1)
uncore = {"prefer-align-cpus-by-uncorecache": "true"}
case("cpu-s1c8t2-uncore2+6-r5-pod-holds-0__w1.37.1",
     "prefer-align-cpus-by-uncorecache reserves 5 CPUs on uncore caches of 2 and 6 cores; a pod holds CPU 0, which 1.38 reserves (1.37 reserves 2-4,10-11)",
     ["cpu", "reserved", "prefer-align-cpus-by-uncorecache"], u26, uncore, 5, [0])
case("cpu-s1c8t2-uncore2+6-r5-pod-holds-3__w1.37.1",
     "prefer-align-cpus-by-uncorecache reserves 5 CPUs on uncore caches of 2 and 6 cores; a pod holds CPU 3, which 1.37 reserves (1.38 reserves 0-2,8-9)",
     ["cpu", "reserved", "prefer-align-cpus-by-uncorecache"], u26, uncore, 5, [3])
