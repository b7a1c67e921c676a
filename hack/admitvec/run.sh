#!/usr/bin/env bash
# Writes admission vectors with the real kubelet managers of each release module (README.md):
# testdata/admission/<release>.vectors.jsonl for every release but v1.37.1 (the shipped cases'
# inputs, their checkpoints re-seeded by that release, plus the generated cases), and
# testdata/admission/v1.37.1-gen.vectors.jsonl (the generated cases; v1.37.1.vectors.jsonl is
# the shipped copy). Each set is written as directories (cases/<name>/, MANIFEST.json) in a
# scratch directory, then packed by hack/vectorpack. One process per case: feature gates are
# process-global.
# Usage: hack/admitvec/run.sh [release ...]     (default: every release module)
#   SHIPPED=DIR   the shipped vectors (default ../shared/testdata/admission beside the repo)
#   BINDIR=DIR    reuse binaries DIR/<release> instead of building them
#   JOBS=N        cases run at once (default 2)
#   ONLY=REGEX    only the generated cases whose name matches (e.g. '^[^p]': no picker cases)
#   SKIP=REGEX    not the generated cases whose name matches; the releases before v1.37.1 were
#                 run with SKIP='^pick__.*__(fpo|dan|abs|uncore|dac)$' (MANIFEST.json under 1 MB)
#   SET=NAME      write testdata/admission/<release>-NAME.vectors.jsonl instead, the generated cases only
#                 (ONLY picks them): the shapes set was run with
#                 SET=shapes ONLY='^abs__|^gate__|^pickx__|^pick__s[0-9n]+c[0-9]+t[0-9]q?x__'
#                 and the podlevel set with SET=podlevel ONLY='^plr__|^absb__' (v1.37.1, v1.36.4),
#                 SKIP='__plrm-on__' added for v1.34.10 and v1.31.14 (an unknown gate there)
#                 and the readmit set with SET=readmit ONLY='^readmit__' (every release)
#                 and the memory set with SET=memory ONLY='^mem__' (SKIP='__plr-' for v1.34.10, v1.31.14)
#                 and the hang set with SET=hang ONLY='^hang__' HANG_AFTER=10s
#                 and the plrmem set with SET=plrmem ONLY='^plrmem__' (v1.37.1, v1.36.4)
#                 and the ties set with SET=ties ONLY='^tie__' (every release)
#                 and the pickmut set with SET=pickmut ONLY='^pickm__' JOBS=1 (v1.37.1, v1.34.10)
#                 and the predicate set with SET=predicate ONLY='^pred__' (every release)
#                 and v1.33.6's sets with SET=uncore ONLY='uncore', SET=scenarios ONLY='^s[0-9]',
#                 memory, readmit, hang and topogates as above
#   NAMES=FILE    only the cases (shipped or generated) named in FILE, one a line: a release's
#                 own set kept to the names of the release before it (hack/release-day.sh)
#   HANG_AFTER=D  the watchdog's limit on one admission (-hang-after; default 20s): a pod whose
#                 admission has not returned by then is recorded "hangs" (each costs D)
set -euo pipefail
cd "$(dirname "$0")"
repo=$(cd ../.. && pwd)
shipped=$(cd "${SHIPPED:-$repo/../shared/testdata/admission}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck source=lib.sh
. ./lib.sh
build_releases "$work/bin" "$@"
"$work/bin/${releases[0]}" -mode gen -out "$work/gen"

# case SRC DEST BIN: DEST gets SRC's inputs (checkpoints re-seeded from setup/ when it has
# one, else SRC's own), then the release's expected.json.
one_case() {
  local src=$1 dest=$2 bin=$3
  mkdir -p "$dest/setup"
  for f in machine.json pod.json pod2.json node.json; do
    [ -f "$src/$f" ] && cp "$src/$f" "$dest/"
  done
  for f in "$src"/setup/seed[0-9]*.json "$src"/setup/write.json "$src"/setup/seed-gates.json "$src"/setup/seed-kubelet.json "$src"/setup/meta.json; do
    [ -f "$f" ] && cp "$f" "$dest/setup/"
  done
  if compgen -G "$src/setup/seed[0-9]*.json" > /dev/null || [ -f "$src/setup/write.json" ]; then
    "$bin" -mode seed -case "$dest" -out "$dest/state" 2>> "$work/log.txt"
    for f in cpu_manager_state memory_manager_state; do
      [ -f "$dest/state/$f" ] && mv "$dest/state/$f" "$dest/"
    done
    [ -f "$dest/state/seed-result.json" ] && mv "$dest/state/seed-result.json" "$dest/setup/"
    rm -rf "$dest/state"
  else
    for f in cpu_manager_state memory_manager_state; do
      [ -f "$src/$f" ] && cp "$src/$f" "$dest/"
    done
  fi
  "$bin" -mode run -case "$dest" -out "$dest/expected.json" ${HANG_AFTER:+-hang-after "$HANG_AFTER"} 2>> "$work/log.txt"
  rmdir "$dest/setup" 2> /dev/null || true
}
export -f one_case
export work

# named CASE: CASE is one of NAMES's (every case without NAMES).
declare -A names=()
if [ -n "${NAMES:-}" ]; then
  while read -r n; do names[$n]=1; done < "$NAMES"
fi
named() { [ -z "${NAMES:-}" ] || [ -n "${names[$1]:-}" ]; }

for rel in "${releases[@]}"; do
  SECONDS=0
  bin=$work/bin/$rel
  name=$rel
  if [ -n "${SET:-}" ]; then
    name=$rel-$SET
  elif [ "$rel" = v1.37.1 ]; then
    name=v1.37.1-gen
  fi
  out=$work/sets/$name
  rm -rf "$out"
  mkdir -p "$out/cases"
  {
    if [ "$rel" != v1.37.1 ] && [ -z "${SET:-}" ]; then
      for src in "$shipped"/cases/*/; do
        named "$(basename "$src")" || continue
        printf '%s\0%s\0' "$src" "$out/cases/$(basename "$src")"
      done
    fi
    for src in "$work"/gen/*/; do
      [[ $(basename "$src") =~ ${ONLY:-.} ]] || continue
      [ -n "${SKIP:-}" ] && [[ $(basename "$src") =~ $SKIP ]] && continue
      named "$(basename "$src")" || continue
      dest=$out/cases/$(basename "$src")
      [ -e "$shipped/cases/$(basename "$src")" ] && { echo "case name $(basename "$src") is taken by a shipped case" >&2; exit 1; }
      printf '%s\0%s\0' "$src" "$dest"
    done
  } | xargs -0 -n 2 -P "${JOBS:-2}" bash -c 'one_case "$0" "$1" "'"$bin"'"' || { tail -20 "$work/log.txt" >&2; exit 1; }
  "$bin" -mode compact -cases "$out/cases"
  "$bin" -mode manifest -cases "$out/cases" -out "$out/MANIFEST.json"
  (cd "$repo" && go run ./hack/vectorpack "$out" "testdata/admission/$name.vectors.jsonl")
  echo "$rel: $(ls "$out/cases" | wc -l) cases in ${SECONDS}s" >&2
done
