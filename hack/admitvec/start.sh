#!/usr/bin/env bash
# Kubelet-start vectors from the real CPU and memory managers of each release module (-mode
# start, common/start.go): for every case of a kubelet-start set (machine.json, schema
# statevec/machine/v1, and its checkpoints), whether that release's NewManager and Start let the
# kubelet start, and the exact error (testdata/kubelet-start/README.md).
# Usage: hack/admitvec/start.sh release ...
#   IN=FILE|DIR   the cases: a packed kubelet-start set (default testdata/kubelet-start/start.vectors.jsonl),
#                 or a directory cases/<name>/ of machine.json and setup/write.json, whose
#                 cpu_manager_state WRITER's real state writer writes (-mode seed; startcases/)
#   WRITER=REL    the release writing a directory's checkpoints (default the first release given)
#   OUT=FILE      write the releases' results as a set (MANIFEST schema statevec/manifest/v1,
#                 generator hack/admitvec -mode start), packed by hack/vectorpack
#   CHECK=1       compare each release's results with IN's results for that release, case by
#                 case (the proof: IN's own generator is not in this repository); exit 1 on a difference
#   BINDIR=DIR    reuse binaries DIR/<release> instead of building them
#   JOBS=N        cases run at once (default 2)
set -euo pipefail
in=${IN:+$(realpath "$IN")}
out=${OUT:+$(realpath -m "$OUT")}
cd "$(dirname "$0")"
repo=$(cd ../.. && pwd)
in=${in:-$repo/testdata/kubelet-start/start.vectors.jsonl}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ $# -gt 0 ] || { echo "usage: $0 release ..." >&2; exit 2; }

# shellcheck source=lib.sh
. ./lib.sh
build_releases "$work/bin" "$@"
if [ -d "$in" ]; then
  writer=${WRITER:-${releases[0]}}
  [ -x "$work/bin/$writer" ] || { echo "WRITER $writer is not among the releases given" >&2; exit 2; }
  mkdir -p "$work/in/cases"
  for src in "$in"/cases/*/; do
    name=$(basename "$src")
    dest=$work/in/cases/$name
    mkdir -p "$dest"
    cp "$src/machine.json" "$dest/"
    if [ -f "$src/setup/write.json" ]; then
      "$work/bin/$writer" -mode seed -case "$src" -out "$dest" 2>> "$work/log.txt"
    fi
  done
else
  (cd "$repo" && go run ./hack/vectorpack -unpack "$in" "$work/in") > /dev/null
fi

for rel in "${releases[@]}"; do
  SECONDS=0
  mkdir -p "$work/out/$rel"
  # One process per case: feature gates are process-global.
  ls "$work/in/cases" | xargs -P "${JOBS:-2}" -I{} \
    "$work/bin/$rel" -mode start -case "$work/in/cases/{}" -out "$work/out/$rel/{}.json" 2>> "$work/log.txt"
  echo "$rel: $(ls "$work/out/$rel" | wc -l) cases in ${SECONDS}s" >&2
done

python3 - "$work" "$in" "${CHECK:-}" "${out:-}" "${releases[@]}" << 'EOF'
import json, os, shutil, sys
work, packed, check, out, releases = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
cases = sorted(os.listdir(f"{work}/in/cases"))
results = {c: {r: json.load(open(f"{work}/out/{r}/{c}.json")) for r in releases} for c in cases}
bad = 0
if check:
    for r in releases:
        same = diff = absent = 0
        for c in cases:
            exp = f"{work}/in/cases/{c}/expected.json"
            shipped = json.load(open(exp)).get(r) if os.path.exists(exp) else None
            if shipped is None:
                absent += 1
            elif shipped == results[c][r]:
                same += 1
            else:
                diff += 1
                print(f"{c} @ {r}:\n  shipped {json.dumps(shipped, sort_keys=True)}\n  got     {json.dumps(results[c][r], sort_keys=True)}", file=sys.stderr)
        print(f"{r}: {same} of {len(cases)} equal to the set's, {diff} different, {absent} not in the set", file=sys.stderr)
        bad += diff
if out:
    set_dir = f"{work}/set"
    for c in cases:
        os.makedirs(f"{set_dir}/cases/{c}")
        for f in os.listdir(f"{work}/in/cases/{c}"):
            if f != "expected.json":
                shutil.copy(f"{work}/in/cases/{c}/{f}", f"{set_dir}/cases/{c}/{f}")
    info = {}
    if os.path.isdir(packed):
        for c in cases:
            m = json.load(open(f"{packed}/cases/{c}/setup/meta.json"))
            info[c] = {k: m[k] for k in ("scenario", "description", "tags") if k in m}
            if os.path.exists(f"{set_dir}/cases/{c}/cpu_manager_state"):
                info[c]["writer"] = os.environ.get("WRITER") or releases[0]
    json.dump({"schema": "statevec/manifest/v1", "versions": releases,
               "generator": "hack/admitvec -mode start (real k8s.io/kubernetes cpumanager + memorymanager NewManager/Start)",
               "cases": {c: dict(info.get(c, {}), results=results[c]) for c in cases}},
              open(f"{set_dir}/MANIFEST.json", "w"), indent=1, sort_keys=True)
sys.exit(1 if bad else 0)
EOF
if [ -n "${out:-}" ]; then
  (cd "$repo" && go run ./hack/vectorpack "$work/set" "$out")
fi
