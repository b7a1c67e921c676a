#!/usr/bin/env bash
# Mutation testing with gremlins (pinned in hack/tools/gremlins, built from its module into the
# tools cache outside the clone): for each package of MUTATE_PKGS, every covered mutant (a flipped
# condition, a boundary, an arithmetic operator...) is applied and the package's tests run; a
# mutant the tests do not fail "lived". Prints the efficacy (killed / (killed + lived)) per
# package and keeps each run's JSON under MUTATE_OUT. Not in CI: on 2 shared cores it takes tens
# of minutes a package. docs/mutation.md records the figures and the living mutants explained.
#
#   make mutate                                  # the packages below
#   MUTATE_PKGS=./pkg/doctor make mutate         # one package
#   MUTATE_WORKERS=1 MUTATE_TIMEOUT_COEFFICIENT=20 make mutate   # a busier machine
set -euo pipefail
cd "$(dirname "$0")/.."
# The engines whose rules the vectors check: the decoder, doctor, and the admission replay once
# it exists.
default_pkgs=(./pkg/decode ./pkg/doctor)
for p in ./pkg/replay ./pkg/admit; do
  [[ -d $p ]] && default_pkgs+=("$p")
done
read -r -a pkgs <<<"${MUTATE_PKGS:-${default_pkgs[*]}}"
workers=${MUTATE_WORKERS:-2}
coefficient=${MUTATE_TIMEOUT_COEFFICIENT:-10}
out=${MUTATE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/nodestate-mutate.XXXXXX")}
mkdir -p "$out"
bin=$(NODESTATE_TOOLS=gremlins hack/tools/build.sh | tail -n 1)
# gremlins copies the whole module (testdata and .git: about 420 MB) into a gremlins-* dir of
# TMPDIR for each worker, and when a copy fails (a full disk) it panics without removing them.
# Its TMPDIR is ours, removed on every exit.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/nodestate-gremlins.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export TMPDIR=$scratch
"$bin/gremlins" --version 2>/dev/null || true
summary=()
for p in "${pkgs[@]}"; do
  name=$(basename "$p")
  echo "==> $p ($(date -u +%H:%M:%S))" >&2
  start=$SECONDS
  # Each mutant runs the package's own tests (MUTATE_WORKERS at once); the timeout is the
  # coverage run's time times the coefficient, loose on a loaded machine. No --test-cpu:
  # gremlins v0.6.0 hands `go test` "-cpu N" as ONE argument, go test fails at setup (exit 1)
  # and every mutant is reported KILLED.
  "$bin/gremlins" unleash --workers "$workers" --timeout-coefficient "$coefficient" \
    -o "$out/$name.json" "$p" | tee "$out/$name.log" | grep -E 'LIVED|TIMED OUT|Killed:|Efficacy|Mutator coverage' || true
  summary+=("$p: $(grep -E '^Killed:' "$out/$name.log" | head -1); $(grep -E 'Test efficacy' "$out/$name.log" | head -1) ($((SECONDS - start))s)")
done
echo "results in $out"
printf '%s\n' "${summary[@]}"
