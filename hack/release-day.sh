#!/usr/bin/env bash
# Release day (docs/adding-a-kubelet-release.md, "Release day"): a new Kubernetes build (an rc, a
# GA, a patch) gets every ground truth its predecessor has, from the same generators, one pinned
# version each. Four steps, each safe to re-run:
#
#   hack/release-day.sh sources FROM TO   the kubelet sources the plugin decodes or replays
#                                         (hack/release-day/watched.tsv) that TO changed: what to
#                                         read for rows and mirrors; needs no module step
#   hack/release-day.sh modules FROM TO   clone FROM's release modules to TO and resolve them
#                                         (hack/admitvec/FROM, hack/restorevec{,/device,/alloc,/readall}/FROM
#                                         and hack/tools/kube-next when it pins FROM); says whether
#                                         TO's kube-apiserver resolves
#   hack/release-day.sh vectors FROM TO [SET...]
#                                         every admission set FROM has (testdata/admission/SETS),
#                                         for TO, by its recipe (hack/release-day/recipes.tsv),
#                                         packed and listed in SETS; the kubelet-start set (SET
#                                         "start"); the checkpoint readers' verdicts (SET
#                                         "readers": hack/restorevec, its device/, alloc/, readall/)
#   hack/release-day.sh compare FROM TO   per admission set, the cases TO judged otherwise than
#                                         FROM on the same inputs (each a release row to write, or
#                                         a random pick); then the conformance tests
#
# BINDIR, JOBS pass on to the generators. DRYRUN=1 prints what vectors would run.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

usage() {
  sed -n '2,23p' "$0" >&2
  exit 2
}
[ $# -ge 3 ] || usage
step=$1 from=$2 to=$3
shift 3
# shellcheck source=lib/release-module.sh
. hack/lib/release-module.sh

# clone_module DIR: DIR/FROM becomes DIR/TO (links kept), every FROM version in its go.mod now
# TO's (the module path, k8s.io/kubernetes, the staging modules' replaces); go.sum is resolved
# again by the go command. The replaces of modules the proxy did not serve are kept: they are
# printed with what the proxy serves now, to drop them by hand when it serves the original.
clone_module() {
  local dir=$1
  [ -d "$dir/$from" ] || return 0
  if [ -e "$dir/$to" ]; then
    echo "$dir/$to exists: kept" >&2
  else
    cp -a "$dir/$from" "$dir/$to"
    rm -f "$dir/$to/go.sum"
    sed -i -e "s#$from#$to#g" -e "s#$(staging_of "$from")#$(staging_of "$to")#g" "$dir/$to/go.mod"
  fi
  resolve "$dir/$to" "k8s.io/kubernetes@$to"
}

# resolve DIR PKG...: go get in DIR with its own toolchain (never go mod tidy: it walks test
# imports the proxy may not serve, as 1.38.0-beta.0's k8s.io/ktesting), then build.
resolve() {
  local dir=$1
  shift
  local tc
  tc=$(module_toolchain "$dir")
  echo "resolving $dir (Go: $tc)" >&2
  (cd "$dir" && GOTOOLCHAIN=$tc GOWORK=off GOFLAGS=-mod=mod go get "$@" && GOTOOLCHAIN=$tc GOWORK=off GOFLAGS=-mod=mod go build -o /dev/null ./...)
  local m
  for m in $(sed -n 's#^[[:space:]]*\([^ ]*\) => \([^ ]*\) v[^ ]*$#\1 \2#p' "$dir/go.mod" | awk '$1 == $2 && $1 !~ /^k8s.io\// {print $1}'); do
    echo "  $dir keeps a replace of $m; the proxy serves: $(cd "$dir" && GOTOOLCHAIN=$tc GOWORK=off go list -m -versions "$m" 2> /dev/null | cut -d' ' -f2- | tr ' ' '\n' | tail -3 | tr '\n' ' ')" >&2
  done
}

# control_plane_probe: whether TO's kube-apiserver resolves too (in a copy of kube-next, which
# builds the kubelet only): until it does, e2e-node's control plane stays at build.sh's KUBE_VERSION.
control_plane_probe() {
  local tmp out
  tmp=$(mktemp -d)
  cp -a hack/tools/kube-next/. "$tmp/"
  if out=$(cd "$tmp" && GOTOOLCHAIN=$(next_toolchain) GOWORK=off GOFLAGS=-mod=mod go get k8s.io/kubernetes/cmd/kube-apiserver 2>&1); then
    echo "kube-apiserver $to resolves: the e2e-node control plane can move to it (docs/adding-a-kubelet-release.md, section 5)" >&2
  else
    echo "kube-apiserver $to does not resolve, the e2e-node control plane stays at KUBE_VERSION: $(grep -m 1 -o '[^ ]*@v[^:]*: reading [^ ]*: [0-9]* [A-Za-z]*' <<< "$out" || tail -n 1 <<< "$out")" >&2
  fi
  rm -rf "$tmp"
}

# module_dir MODULE VERSION: the module's source, downloaded when needed (with kube-next's Go
# toolchain when the module asks for a newer Go than the local one).
module_dir() {
  local json
  json=$(cd / && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$1@$2" 2> /dev/null || true)
  if grep -q '"Error": ".*requires go' <<< "$json"; then
    json=$(cd / && GOTOOLCHAIN=$(next_toolchain) GOWORK=off GOFLAGS=-mod=mod go mod download -json "$1@$2" 2> /dev/null || true)
  fi
  local dir
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<< "$json")
  [ -n "$dir" ] || { echo "$(sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' <<< "$json" | sed 's/\\n\\t/: /g')" >&2; return 1; }
  echo "$dir"
}

# go_files DIR PATH: PATH's non-test Go files under DIR (PATH a file or a directory).
go_files() {
  [ -e "$1/$2" ] || return 0
  (cd "$1" && find "$2" -name '*.go' ! -name '*_test.go' ! -path '*/testdata/*' | LC_ALL=C sort)
}

# sources: each watched file TO added, removed or changed since FROM, with its diff's size.
sources() {
  local changed=0 kind module path old new old_dir new_dir file
  while IFS=$'\t' read -r kind path; do
    [[ -z $kind || $kind == \#* ]] && continue
    if [ "$kind" = require ]; then
      old=$(sed -n "s#^[[:space:]]*$path \(v[^ ]*\).*#\1#p" "$(module_dir k8s.io/kubernetes "$from")/go.mod" | head -n 1)
      new=$(sed -n "s#^[[:space:]]*$path \(v[^ ]*\).*#\1#p" "$(module_dir k8s.io/kubernetes "$to")/go.mod" | head -n 1)
      [ "$old" = "$new" ] || { printf 'require  %s %s -> %s\n' "$path" "$old" "$new"; changed=$((changed + 1)); }
      continue
    fi
    module=$kind
    if [ "$module" = k8s.io/kubernetes ]; then
      old_dir=$(module_dir "$module" "$from") new_dir=$(module_dir "$module" "$to")
    else
      old_dir=$(module_dir "$module" "$(staging_of "$from")") new_dir=$(module_dir "$module" "$(staging_of "$to")")
    fi
    while read -r file; do
      if [ ! -e "$old_dir/$file" ]; then
        printf 'added    %s %s (%d lines)\n' "$module" "$file" "$(wc -l < "$new_dir/$file")"
      elif [ ! -e "$new_dir/$file" ]; then
        printf 'removed  %s %s\n' "$module" "$file"
      elif ! cmp -s "$old_dir/$file" "$new_dir/$file"; then
        printf 'changed  %s %s (+%d -%d)\n' "$module" "$file" \
          "$(diff "$old_dir/$file" "$new_dir/$file" | grep -c '^>')" "$(diff "$old_dir/$file" "$new_dir/$file" | grep -c '^<')"
      else
        continue
      fi
      changed=$((changed + 1))
    done < <(sort -u <(go_files "$old_dir" "$path") <(go_files "$new_dir" "$path"))
  done < hack/release-day/watched.tsv
  echo "$changed watched sources changed from $from to $to (hack/release-day/watched.tsv)" >&2
}

# compare_sets: for each admission set TO has, the cases FROM's set of that name holds that the
# real code judged otherwise on the same inputs (hack/vectorpack -compare): each is a release row
# to write, or a pick the kubelet makes at random; the conformance tests below judge.
compare_sets() {
  local tmp set a b
  tmp=$(mktemp -d)
  go build -o "$tmp/vectorpack" ./hack/vectorpack
  for set in $(sets_of "$to"); do
    a=testdata/admission/$from-$set.vectors.jsonl b=testdata/admission/$to-$set.vectors.jsonl
    [ "$set" = - ] && a=testdata/admission/$from.vectors.jsonl b=testdata/admission/$to.vectors.jsonl
    printf 'set %s: ' "$set"
    if [ -f "$a" ]; then "$tmp/vectorpack" -compare "$a" "$b"; else echo "$from has none"; fi
  done
  rm -rf "$tmp"
}

# sets_of RELEASE: the suffixes of RELEASE's admission sets in SETS ("-" for its own).
sets_of() {
  awk -v r="$1" '$1 == r {print "-"} index($1, r "-") == 1 {print substr($1, length(r) + 2)}' testdata/admission/SETS
}

# list_set FILE: FILE's set is listed in SETS with the case count of its header (added or
# replaced).
list_set() {
  local name n
  name=$(basename "$1" .vectors.jsonl)
  n=$(head -n 1 "$1" | grep -o '"cases":[0-9]*' | cut -d: -f2)
  if grep -q "^$name " testdata/admission/SETS; then
    sed -i "s#^$name .*#$name $n#" testdata/admission/SETS
  else
    echo "$name $n" >> testdata/admission/SETS
  fi
  echo "listed $name: $n cases" >&2
}

case $step in
modules)
  # Before any clone: a build the proxy does not serve yet leaves nothing behind.
  if ! served=$(cd / && GOTOOLCHAIN=local GOFLAGS=-mod=mod go list -m -f '{{.Version}}' "k8s.io/kubernetes@$to" 2>&1); then
    echo "k8s.io/kubernetes $to is not served by the module proxy yet ($(printf '%s\n' "$served" | tail -n 1 | sed 's/^[[:space:]]*//')): nothing cloned" >&2
    exit 1
  fi
  clone_module hack/admitvec
  clone_module hack/restorevec
  clone_module hack/restorevec/device
  clone_module hack/restorevec/alloc
  clone_module hack/restorevec/readall
  if grep -q "k8s.io/kubernetes $from" hack/tools/kube-next/go.mod; then
    sed -i -e "s#$from#$to#g" -e "s#$(staging_of "$from")#$(staging_of "$to")#g" hack/tools/kube-next/go.mod
    resolve hack/tools/kube-next "k8s.io/kubernetes/cmd/kubelet@$to"
    control_plane_probe
  fi
  echo "next: hack/release-day.sh vectors $from $to" >&2
  ;;
vectors)
  [ -d "hack/admitvec/$to" ] || { echo "no hack/admitvec/$to: run the modules step first" >&2; exit 1; }
  wanted=("$@")
  [ ${#wanted[@]} -gt 0 ] || mapfile -t wanted < <(sets_of "$from")
  names=$(mktemp)
  trap 'rm -f "$names"; rm -rf "$names.d"' EXIT
  for set in "${wanted[@]}"; do
    [ "$set" != start ] && [ "$set" != readers ] || continue # below
    recipe=$(awk -F'\t' -v s="$set" '$1 == s {print $2}' hack/release-day/recipes.tsv)
    [ -n "$recipe" ] || { echo "set $from-$set has no recipe in hack/release-day/recipes.tsv: write it first" >&2; exit 1; }
    file=testdata/admission/$to-$set.vectors.jsonl
    from_file=testdata/admission/$from-$set.vectors.jsonl
    if [ "$set" = - ]; then
      file=testdata/admission/$to.vectors.jsonl
      from_file=testdata/admission/$from.vectors.jsonl
    fi
    # $NAMES_FILE: the case names of FROM's set, for a recipe that keeps TO's set to them.
    if [[ $recipe == *'$NAMES_FILE'* ]]; then
      go run ./hack/vectorpack -unpack "$from_file" "$names.d" > /dev/null 2>&1
      ls "$names.d/cases" > "$names"
      rm -rf "$names.d"
    fi
    cmd=${recipe//RELEASE/$to}
    cmd=${cmd//\$NAMES_FILE/$names}
    label=$set
    [ "$set" = - ] && label="(own)"
    echo "== set $label of $from, for $to: $cmd" >&2
    [ -n "${DRYRUN:-}" ] && continue
    (cd hack/admitvec && eval "$cmd")
    case $set in
    *-devices | devices)
      # devices.sh leaves its set as a directory: packed here as the others are.
      go run ./hack/vectorpack "testdata/admission/$to-$set" "$file"
      rm -rf "testdata/admission/$to-$set"
      ;;
    esac
    list_set "$file"
  done
  [ -n "${DRYRUN:-}" ] && exit 0
  if [ $# -eq 0 ] || [[ " $* " == *" start "* ]]; then
    # The kubelet-start set holds each release its header names (meta.versions): TO joins them.
    start_set=testdata/kubelet-start/start-admitvec.vectors.jsonl
    rels=$(head -n 1 "$start_set" | grep -o '"versions":\[[^]]*\]' | grep -o '"v1\.[^"]*"' | tr -d '"' | grep -vx "$to" || true)
    if grep -qx "$from" <<< "$rels"; then
      echo "== the kubelet-start set, for $(echo $rels) $to" >&2
      # shellcheck disable=SC2086 # one release a word
      OUT=$start_set hack/admitvec/start.sh $rels "$to"
    fi
  fi
  if [ $# -eq 0 ] || [[ " $* " == *" readers "* ]]; then
    # The checkpoint readers: each generator reads with every release module it has (TO's
    # cloned by the modules step), adding TO's verdict to every vector.
    for gen in hack/restorevec hack/restorevec/device hack/restorevec/alloc hack/restorevec/readall; do
      if [ -d "$gen/$to" ]; then
        echo "== the readers of $gen" >&2
        "$gen/run.sh"
      fi
    done
  fi
  echo "next: hack/release-day.sh compare $from $to" >&2
  ;;
compare)
  compare_sets
  go test ./pkg/admit -run TestAdmissionConformance -count=1 -v 2>&1 | grep -E "admission conformance ($from|$to) |FAIL" || true
  go test ./pkg/doctor -run 'TestStart(Conformance|VectorsComplete)' -count=1 -v 2>&1 | grep -E -- "--- (PASS|FAIL)|$to" | head -20 || true
  go test ./pkg/decode -run Conformance -count=1
  ;;
sources) sources ;;
*) usage ;;
esac
