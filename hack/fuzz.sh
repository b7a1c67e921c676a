#!/usr/bin/env bash
# Runs every fuzz target (go test -fuzz) under FUZZPKGS (default ./pkg/... and the vector sets'
# reader ./internal/vectorpack) for FUZZTIME each
# (default 20s; a count such as 50000x works too). Seeds come from the kubelet vectors, so
# `go test ./...` already replays them; this explores beyond them.
#
# Every target runs, whatever the others did. hack/fuzzverdict judges each run: it fails only on a
# finding (an input written under testdata/fuzz/<Target>/, a panic, any failure but the one below),
# and the reproducer is kept in place and shown in the log. A bare "context deadline exceeded" with
# nothing written is Go's coordinator racing its own -fuzztime deadline (golang/go#75804, reported
# fixed in Go 1.27): that run is retried once and, if it happens again, counted as flaked, not failed.
# Ends with `fuzz: passed=N failed=N flaked=N`; exits non-zero only when failed > 0.
set -uo pipefail # no -e: a failing target must not stop the ones after it
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-20s}
pkgs=${FUZZPKGS:-./pkg/... ./internal/vectorpack}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
go build -o "$work/fuzzverdict" ./hack/fuzzverdict || { echo "fuzz: cannot build hack/fuzzverdict"; exit 1; }

passed=0 failed=0 flaked=0
problems=()

# fuzz_once PKG CORPUS TARGET: one go test -fuzz run; returns fuzzverdict's status
# (0 passed, 1 failed, 3 flaked, anything else a broken classifier).
fuzz_once() {
  local pkg=$1 corpus=$2 target=$3 rc
  ls -1A "$corpus" >"$work/before" 2>/dev/null || : >"$work/before"
  go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s "$pkg" 2>&1 |
    tee "$work/out"
  rc=${PIPESTATUS[0]}
  "$work/fuzzverdict" -target "$target" -exit "$rc" -output "$work/out" -corpus "$corpus" \
    -before "$work/before" -pkg "$pkg" | tee "$work/verdict"
  return "${PIPESTATUS[0]}"
}

list=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' $pkgs) || { echo "fuzz: go list $pkgs failed"; exit 1; }
mapfile -t entries < <(grep . <<<"$list")
total=0
for entry in "${entries[@]}"; do
  pkg=${entry%% *} dir=${entry#* }
  if ! targets=$(go test -list '^Fuzz' "$pkg" 2>&1); then
    echo "$targets"
    failed=$((failed + 1)) problems+=("$pkg: go test -list failed")
    continue
  fi
  for target in $(grep '^Fuzz' <<<"$targets"); do
    total=$((total + 1))
    corpus="${dir#"$PWD"/}/testdata/fuzz/$target"
    echo "== $pkg $target ($fuzztime)"
    fuzz_once "$pkg" "$corpus" "$target"
    v=$?
    if [ "$v" -eq 3 ]; then
      echo "== $pkg $target: retrying once after a bare coordinator deadline"
      fuzz_once "$pkg" "$corpus" "$target"
      v=$?
    fi
    case $v in
    0) passed=$((passed + 1)) ;;
    3) flaked=$((flaked + 1)) problems+=("$target: flaked twice (bare coordinator deadline, nothing found)") ;;
    *)
      failed=$((failed + 1))
      [ "$v" -eq 1 ] || problems+=("$target: FAILED (fuzzverdict exited $v)")
      # the verdict's headline and reproducer paths again, so the end of the log says it all
      mapfile -t report < <(grep -e "^$target: FAILED" -e '^  reproducer kept: ' "$work/verdict")
      problems+=(${report[@]+"${report[@]}"})
      ;;
    esac
  done
done

if [ "$total" -eq 0 ]; then
  echo "fuzz: no fuzz targets found under $pkgs"
  failed=$((failed + 1))
fi
for p in ${problems[@]+"${problems[@]}"}; do echo "fuzz: $p"; done
echo "fuzz: passed=$passed failed=$failed flaked=$flaked"
[ "$failed" -eq 0 ]
