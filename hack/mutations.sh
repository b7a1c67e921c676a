#!/usr/bin/env bash
# Applies, one at a time, each mutation that issues 21 and 30 found the suite missed (and the deletions
# it must notice) to a temporary copy of the tree, runs `go test` there, and reports whether the
# suite caught it (go test failed). Code is found by pattern, not by file or line, so the table
# survives files moving between packages. Exits 1 if any mutation survives.
#
#   hack/mutations.sh                # every mutation, `go test ./...` each (one copy, warm cache)
#   PKGS=./pkg/doctor/... hack/mutations.sh
#   ONLY=numa-first hack/mutations.sh
#   ONLY='pod-level-.*|socket-aligned-.*' PKGS=./pkg/admit hack/mutations.sh   # a regex
#   RUN=TestAdmissionConformance ONLY='restart-.*' PKGS=./pkg/admit hack/mutations.sh
#                                    # only those tests (go test -run): which vectors catch it;
#                                    # a conformance failure names its sets
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=${PKGS:-./...}
work=$(mktemp -d "${TMPDIR:-/tmp}/nodestate-mutations.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
tree="$work/tree"
mkdir -p "$tree"
# The working tree as it is (tracked and new files), not build output.
repo=$(pwd)
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$tree"

# NAME :: FIXED-STRING that locates the code (in non-test .go files under pkg/) :: perl substitution
mutations=(
  'fix-verified-always :: fix.Verified = fix.Verified || ok :: s/fix\.Verified = fix\.Verified \|\| ok/fix.Verified = true/'
  'propose-fix-stub :: func proposeFix( :: s/(func proposeFix\([^)]*\) \*Fix \{\n)/$1\treturn \&Fix{Text: "x"}\n/'
  'picker-no-full-cores :: steps = append(steps, acc.takeFullCores) :: s/\n[ \t]*steps = append\(steps, acc\.takeFullCores\)//'
  'align-by-socket-text :: Align by socket is not compatible :: s/Align by socket is not compatible/Align by socket is incompatible/'
  'numa-first :: numaFirst: topo.NumSockets >= topo.NumNUMANodes :: s/numaFirst: topo\.NumSockets >= topo\.NumNUMANodes/numaFirst: topo.NumSockets > topo.NumNUMANodes/'
  # Pod-level resources and align-by-socket's minimum sockets: killed by the podlevel vectors.
  'pod-level-budget-integral :: ok && q.Value()*1000 == q.MilliValue() :: s/ok && q\.Value\(\)\*1000 == q\.MilliValue\(\)/ok \&\& q.Value()*1000 != q.MilliValue()/'
  'pod-level-shared-pool :: if shared && exclusive >= total { :: s/if shared && exclusive >= total \{/if shared \&\& exclusive > total {/'
  'pod-level-restore-cpu :: if e.release.has(PodLevelEntries) && e.gate(decode.GatePodLevelResourceManagers) { :: s/if e\.release\.has\(PodLevelEntries\) && e\.gate/if e.release.has(PodLevelEntries) || e.gate/'
  'pod-level-release-cpu :: isPodLevel && p.gates.levelManagers { :: s/isPodLevel && p\.gates\.levelManagers/isPodLevel \&\& !p.gates.levelManagers/'
  'pod-level-memory-state :: podLevel := e.release.has(PodLevelEntries) && e.gate( :: s/podLevel := e\.release\.has\(PodLevelEntries\) && e\.gate/podLevel := e.release.has(PodLevelEntries) \&\& !e.gate/'
  'socket-aligned-per-socket :: perSocket := p.topo.NumNUMANodes / p.topo.NumSockets :: s/perSocket := p\.topo\.NumNUMANodes \/ p\.topo\.NumSockets/perSocket := p.topo.NumNUMANodes * p.topo.NumSockets/'
  'socket-aligned-min-sockets :: (minAffinitySize + perSocket - 1) / perSocket :: s/\(minAffinitySize \+ perSocket - 1\)/(minAffinitySize - perSocket - 1)/'
  # Issue 30's survivors: a pod the predicate refuses after the managers allocated keeps its
  # CPUs (killed by the predicate vectors), a shrunk cpuset, v2's empty cpuset.cpus, a tar
  # stream cut after the marker's first zero block.
  'predicate-refused-keeps-cpus :: node.Forget(pod) :: s/\n[ \t]*node\.Forget\(pod\)//'
  'cgroup-shrunk-cpuset :: if !c.runs.Equals(want) { :: s/if !c\.runs\.Equals\(want\) \{/if !c.runs.IsSubsetOf(want) {/'
  'cgroup-v2-empty-cpuset :: c.CPUs.Set.Size() > 0: :: s/c\.CPUs\.Set\.Size\(\) > 0:/c.CPUs.Set.Size() >= 0:/'
  'tar-one-zero-block :: counted.n < entriesEnd+2*tarBlock :: s/counted\.n < entriesEnd\+2\*tarBlock/counted.n < entriesEnd+tarBlock/'
  # Issue 42's device behaviours no test held (testdata/admission/<release>-edges-devices, from
  # hack/admitvec/devcases edge-*; the unit tests named in docs/mutation.md): unhealthy devices
  # left out of the narrowest mask, devices without topology before those on other NUMA nodes,
  # NUMA nodes taken in the order listed, NUMA nodes the machine lacks hinted, a node -1
  # topology taken as a real node, "Requested" not less the reused devices, a checkpoint above
  # the status counts judged, what would fit never 0, reusable devices' holders not told apart.
  'device-hints-healthy-only :: inMask++ :: s/if anySet\(mask, d\.numaIDs\(\)\) \{(\s*)inMask\+\+/if m.healthy[resource].Has(d.ID) \&\& anySet(mask, d.numaIDs()) {$1inMask++/'
  'device-spill-no-topology-first :: []sets.Set[string]{aligned, unaligned, noAffinity} :: s/\{aligned, unaligned, noAffinity\}/{aligned, noAffinity, unaligned}/'
  'device-pick-numa-order :: sig += fmt.Sprint(slices.Sorted(slices.Values( :: s/fmt\.Sprint\(slices\.Sorted\(slices\.Values\((m\.allDevices\[resource\]\[id\]\.numaIDs\(\))\)\)\)/fmt.Sprint($1)/'
  'device-aligned-first-node :: case slices.ContainsFunc(nodes, hint.NUMANodeAffinity.IsSet): :: s/case slices\.ContainsFunc\(nodes, hint\.NUMANodeAffinity\.IsSet\):/case len(nodes) > 0 \&\& hint.NUMANodeAffinity.IsSet(nodes[0]):/'
  'device-hints-unknown-nodes :: return sets.List(with.Intersection(sets.New(m.numaNodes...))) :: s/return sets\.List\(with\.Intersection\(sets\.New\(m\.numaNodes\.\.\.\)\)\)/return sets.List(with)/'
  'device-node-minus1-unaligned :: return n != nodeWithoutTopology :: s/return n != nodeWithoutTopology/return true/'
  'device-requested-after-reuse :: Requested: %d, Available: %d", resource, needed, available.Len()) :: s/resource, needed, available\.Len\(\)\)/resource, required, available.Len())/'
  'join-checkpoint-above-status :: if healthy != len(ids) { :: s/if healthy != len\(ids\) \{/if healthy > len(ids) {/'
  'largest-device-request-zero :: for n := asked - 1; n >= 0; n-- { :: s/for n := asked - 1; n >= 0; n-- \{/for n := asked - 1; n > 0; n-- {/'
  'device-pick-holders-held :: sig := fmt.Sprint(m.healthy[resource].Has(id), holders[id]) :: s/Has\(id\), holders\[id\]\)/Has(id), len(holders[id]) > 0)/'
  # Issue 42's device sources (pkg/nodestate/devicetopology.go): PodResources not the first
  # source, a GPU whose numa_node is -1 placed on node -1, the checkpoint's -1 taken as "no
  # topology" for any plugin, a healthy device PodResources leaves out taken as no topology.
  'join-podresources-ignored :: if x.pr != nil && d.Health == replay.DeviceHealthy { :: s/if x\.pr != nil && d\.Health == replay\.DeviceHealthy \{/if false \&\& x.pr != nil \&\& d.Health == replay.DeviceHealthy {/'
  'join-nvidia-minus1-a-node :: if node == machine.NoNUMANode { :: s/if node == machine\.NoNUMANode \{/if node == machine.NoNUMANode \&\& false {/'
  'join-checkpoint-minus1-any-plugin :: case isNVIDIA: :: s/case isNVIDIA:/case isNVIDIA || true:/'
  'join-podresources-zero-nodes-none :: topology: topologyOf([]int64{})}, TopologyFromPodResources :: s/topology: topologyOf\(\[\]int64\{\}\)\}, TopologyFromPodResources/topology: nil}, TopologyFromPodResources/'
  # Issue 42's third answer (admit): a pod not judged printed yes, admitted in the JSON, exit 0;
  # the pods after it judged; a refusal taken as proof though a device container came first.
  'not-judged-prints-yes :: []string{name, NotJudged, "", ""} :: s/\[\]string\{name, NotJudged, /[]string{name, "yes", /'
  'not-judged-admitted :: Verdict: VerdictNotJudged, NotJudged: reasons :: s/Verdict: VerdictNotJudged, NotJudged: reasons/Admitted: true, Verdict: VerdictNotJudged, NotJudged: reasons/'
  'not-judged-exit-ok :: worst == cmdutil.ExitOK && notJudged :: s/worst == cmdutil\.ExitOK && notJudged/false \&\& notJudged/'
  'not-judged-after-dropped :: if afterNotJudged != "" { :: s/if afterNotJudged != "" \{/if false {/'
  'not-judged-any-container :: refused >= 0 && refused <= firstDevice :: s/refused >= 0 && refused <= firstDevice/refused >= 0/'
  # Issue 44's restart path (testdata/admission/<release>-restart; pkg/admit/restart_test.go):
  # the two checks no test held (devices held but no longer healthy; a held container's changed
  # request, in the allocation and in the hints), then the running-container skip, its sources
  # gate, the any-instance rule by release, the plugin check before the count, and the
  # managers' stale state kept while the sources are not ready.
  'restart-held-unhealthy-unchecked :: case !healthy.IsSuperset(held): :: s/case !healthy\.IsSuperset\(held\):/case false:/'
  'restart-changed-request-unchecked :: changed request for resource %q from %d to %d :: s/needed -= held\.Len\(\)(\s*)if needed != 0 \{/needed -= held.Len()$1if false {/'
  'restart-changed-request-hinted :: case held.Len() > 0 && held.Len() != requested: :: s/case held\.Len\(\) > 0 && held\.Len\(\) != requested:/case false:/'
  'restart-running-not-skipped :: && m.isContainerAlreadyRunning(podUID, ctr) { :: s/&& m\.isContainerAlreadyRunning\(podUID, ctr\) \{/\&\& false {/'
  'restart-skip-sources-ready :: m.release.has(DeviceSkipsRunning) && !m.sourcesReady() :: s/m\.release\.has\(DeviceSkipsRunning\) && !m\.sourcesReady\(\)/m.release.has(DeviceSkipsRunning)/'
  'restart-any-instance-always :: return c.Running > 0 && c.Exited == 0 :: s/return c\.Running > 0 && c\.Exited == 0/return c.Running > 0/'
  'restart-count-before-plugin :: if !m.release.has(DeviceHealthChecks) { :: s/if !m\.release\.has\(DeviceHealthChecks\) \{/if true {/'
  'restart-gc-not-ready :: if !m.sourcesReady() { :: s/if !m\.sourcesReady\(\) \{/if false {/'
  # The two rows' 1.27 bounds, held by the real 1.27.1 and 1.27.5 (their restart sets): the
  # health checks a patch early or late, the running-container skip a patch early.
  'restart-health-checks-from-1.27.0 :: {Behaviour: DeviceHealthChecks, Since: decode.Release("1.27.2")} :: s/DeviceHealthChecks, Since: decode\.Release\("1\.27\.2"\)/DeviceHealthChecks, Since: decode.Release("1.27.0")/'
  'restart-health-checks-from-1.27.6 :: {Behaviour: DeviceHealthChecks, Since: decode.Release("1.27.2")} :: s/DeviceHealthChecks, Since: decode\.Release\("1\.27\.2"\)/DeviceHealthChecks, Since: decode.Release("1.27.6")/'
  'restart-skip-running-from-1.27.0 :: {Behaviour: DeviceSkipsRunning, Since: decode.Release("1.27.6")} :: s/DeviceSkipsRunning, Since: decode\.Release\("1\.27\.6"\)/DeviceSkipsRunning, Since: decode.Release("1.27.0")/'
)
# NAME :: what to delete (a shell snippet run in the copy's root)
deletions=(
  'delete-one-vector :: rm "$(sed -n "/^[^#]/{s/ .*//p;q}" testdata/kubelet/MANIFEST | sed "s|^|testdata/kubelet/|")"'
  'delete-one-expectation :: rm "$(find testdata/kubelet/expected -name "*.json" | sort | sed -n 7p)"'
  'delete-one-hashed-text :: rm "$(find testdata/kubelet/expected -name "*.hashed.txt" | sort | sed -n 3p)"'
  'delete-one-start-case :: delete_line testdata/kubelet-start/start.vectors.jsonl case 12'
  'delete-one-start-result :: edit_case testdata/kubelet-start/start.vectors.jsonl 24 "c[\"expected\"].pop(sorted(c[\"expected\"])[0])"'
  'delete-one-start-file :: delete_line testdata/kubelet-start/start.vectors.jsonl blob 42'
  'delete-start-admitvec-set :: rm testdata/kubelet-start/start-admitvec.vectors.jsonl'
  'delete-one-start-rows-result :: edit_case testdata/kubelet-start/start-rows.vectors.jsonl 2 "c[\"expected\"].pop(\"v1.38.0-beta.0\")"'
  'delete-one-admission-case :: delete_line testdata/admission/v1.37.1-shapes.vectors.jsonl case 17'
  'delete-one-admission-expected :: edit_case testdata/admission/v1.36.4.vectors.jsonl 101 "del c[\"expected\"]"'
  'delete-one-admission-file :: delete_line testdata/admission/v1.37.1-gen.vectors.jsonl blob 6'
  'delete-one-admission-set :: rm testdata/admission/v1.33.6-hang.vectors.jsonl'
)

# The packed vector sets (internal/vectorpack): one line a case, then one line a distinct file.
# delete_line SET case|blob N: deletes the Nth case or file line.
delete_line() {
  local n
  n=$(grep -n "^{\"$2\":" "$1" | sed -n "$3p" | cut -d: -f1)
  [[ -n "$n" ]] || { echo "mutations: $1 has no $2 line $3" >&2; return 1; }
  sed -i "${n}d" "$1"
}
# edit_case SET N PYTHON: runs PYTHON on the Nth case line, parsed as c, and writes it back.
edit_case() {
  python3 - "$@" <<'PY'
import json, sys
path, n, code = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = open(path).read().split("\n")
i = [k for k, l in enumerate(lines) if l.startswith('{"case":')][n - 1]
c = json.loads(lines[i])
exec(code)
lines[i] = json.dumps(c, separators=(",", ":"), ensure_ascii=False)
open(path, "w").write("\n".join(lines))
PY
}

caught=0 survived=0 broken=0
report() { printf '%-26s %s\n' "$1" "$2"; }
# failed names the packages and tests that failed, from go test's output.
failed() {
  printf '%s ' $(grep -oE '^FAIL[[:space:]]+[^[:space:]]+' "$work/out" | awk '{print $2}' | sed 's|.*/kubectl-nodestate/||' | sort -u)
  grep -oE -- '--- FAIL: [A-Za-z0-9_]+' "$work/out" | sed 's/--- FAIL: //' | sort -u | head -4 | tr '\n' ' '
  # The vector sets a conformance test found wrong, with their cases wrong ("set: n").
  grep -oE '^[[:space:]]+conformance_test\.go:[0-9]+: v1\.[^ ]+ ' "$work/out" | awk '{print $2}' | sort | uniq -c | awk '{printf "%s: %s  ", $2, $1}'
}
run_tests() { (cd "$tree" && go test -count=1 ${RUN:+-run "$RUN"} $pkgs >"$work/out" 2>&1); }
# judge runs the tests on the mutated copy and counts the mutation caught or survived.
judge() {
  if run_tests; then
    report "$1" "SURVIVED $2: go test $pkgs passes"
    survived=$((survived + 1))
  else
    report "$1" "caught $2: $(failed)"
    caught=$((caught + 1))
  fi
}
restore() { cp -- "$repo/$1" "$tree/$1"; } # put back the file the mutation touched
snapshot() { cp -a "$tree/testdata" "$work/testdata.orig"; }
unsnapshot() { rm -rf "$tree/testdata" && mv "$work/testdata.orig" "$tree/testdata"; }

for m in "${mutations[@]}"; do
  name=${m%% :: *} rest=${m#* :: }
  where=${rest%% :: *} subst=${rest#* :: }
  [[ -n "${ONLY:-}" && ! "$name" =~ ^($ONLY)$ ]] && continue
  mapfile -t files < <(cd "$tree" && grep -rlF --include='*.go' --exclude='*_test.go' -- "$where" pkg || true)
  if [[ ${#files[@]} -ne 1 ]]; then
    report "$name" "NOT APPLIED: '$where' found in ${#files[@]} files (${files[*]:-none})"
    broken=$((broken + 1))
    continue
  fi
  f=${files[0]}
  perl -0pi -e "$subst" "$tree/$f"
  if cmp -s "$f" "$tree/$f"; then
    report "$name" "NOT APPLIED: the substitution changed nothing in $f"
    broken=$((broken + 1))
    continue
  fi
  judge "$name" "($f)"
  restore "$f"
done

for d in "${deletions[@]}"; do
  name=${d%% :: *} how=${d#* :: }
  [[ -n "${ONLY:-}" && ! "$name" =~ ^($ONLY)$ ]] && continue
  snapshot
  (cd "$tree" && eval "$how")
  judge "$name" ""
  unsnapshot
done

echo "mutations: $caught caught, $survived survived, $broken not applied"
[[ $survived -eq 0 && $broken -eq 0 ]]
