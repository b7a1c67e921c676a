#!/usr/bin/env bash
# End-to-end test of the krew packaging, offline, with the real krew and the real kubectl, on
# what the one release pipeline (goreleaser) builds:
#
#   1. tools: kubectl, krew and validate-krew-manifest from hack/tools/build.sh (cached);
#   2. the release: `make release-check` (goreleaser check + a snapshot release of every
#      platform, its krew manifest through validate-krew-manifest -skip-install, the archives'
#      members, checksums.txt) into a temp dir, or the output of an earlier run (KREW_TEST_DIST);
#   3. full validate-krew-manifest (it installs every platform from its uri) against a loopback
#      HTTP server serving the archives, goreleaser's manifest with that server's URL;
#   4. `kubectl krew install --manifest --archive` (no download), then through kubectl's own
#      plugin discovery: `kubectl nodestate version`, `kubectl plugin list`, shell completion
#      through the kubectl_complete-nodestate helper, `kubectl krew uninstall`;
#   5. a manifest with a wrong sha256 is refused and installs nothing;
#   6. `kubectl nodestate verify --from-dir examples/kubelet-root` exits 0 and prints something.
#
# Everything lives in a temp dir removed on exit; KREW_ROOT and HOME point there, so the
# user's krew, kubeconfig and plugins are never touched. Exits non-zero on the first failure.
# Environment:
#   KREW_TEST_DIST       use the release already in this directory (`RELEASE_DIST=DIR make
#                        release-check` writes it: archives, checksums.txt, krew/nodestate.yaml)
#                        instead of running release-check; it must hold the host platform
#   NODESTATE_TOOLS_BIN  use kubectl, krew and validate-krew-manifest from this directory
#                        instead of hack/tools/build.sh
set -Eeuo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD

t0=$SECONDS
step_start=$SECONDS
step_name=
step() {
  if [[ -n $step_name ]]; then
    printf 'krew-test: ok   %-66s %3ss\n' "$step_name" "$((SECONDS - step_start))" >&2
  fi
  step_name=$*
  step_start=$SECONDS
}
die() {
  printf '\nkrew-test: FAIL %s: %s\n' "${step_name:-setup}" "$*" >&2
  exit 1
}
on_err() {
  printf 'krew-test: FAIL %s: command failed (exit %s) at line %s: %s\n' "${step_name:-setup}" "$1" "$2" "$3" >&2
}
trap 'on_err "$?" "$LINENO" "$BASH_COMMAND"' ERR

tmp=$(mktemp -d "${TMPDIR:-/tmp}/krew-test.XXXXXX")
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# run_logged NAME CMD...: run CMD with its output in $tmp/NAME.log, shown only on failure.
run_logged() {
  local name=$1
  shift
  if ! "$@" >"$tmp/$name.log" 2>&1; then
    sed 's/^/    | /' "$tmp/$name.log" >&2
    die "$name failed: $*"
  fi
}

# ---------------------------------------------------------------------------------------------
step "tools (kubectl, krew, validate-krew-manifest)"
if [[ -n ${NODESTATE_TOOLS_BIN:-} ]]; then
  BIN=$NODESTATE_TOOLS_BIN
else
  [[ -x hack/tools/build.sh ]] || die "hack/tools/build.sh is missing"
  BIN=$(NODESTATE_TOOLS="kubectl krew validate-krew-manifest" hack/tools/build.sh | tail -1)
fi
for t in kubectl krew validate-krew-manifest; do
  [[ -x $BIN/$t ]] || die "$BIN/$t is missing (hack/tools/build.sh did not build it?)"
done
# Only our own tools come first on PATH: kubectl (never one already on the machine) and the krew
# plugin as kubectl-krew. KREW_ROOT/bin comes first once the plugin is installed.
mkdir -p "$tmp/tools" "$tmp/home"
ln -s "$BIN/kubectl" "$tmp/tools/kubectl"
ln -s "$BIN/krew" "$tmp/tools/kubectl-krew"
ln -s "$BIN/validate-krew-manifest" "$tmp/tools/validate-krew-manifest"
export PATH="$tmp/tools:$PATH"
export HOME="$tmp/home"
export KUBECONFIG="$tmp/home/no-kubeconfig"
unset KREW_ROOT KREW_OS KREW_ARCH
[[ $(command -v kubectl) == "$tmp/tools/kubectl" ]] || die "kubectl resolves to $(command -v kubectl)"
kubectl version --client >"$tmp/kubectl-version.log" 2>&1 || die "kubectl does not run: $(cat "$tmp/kubectl-version.log")"
kubectl krew version >"$tmp/krew-version.log" 2>&1 || die "kubectl krew does not run: $(cat "$tmp/krew-version.log")"
printf 'krew-test: %s; krew %s\n' "$(head -1 "$tmp/kubectl-version.log")" \
  "$(awk '$1 == "GitTag" {print $2}' "$tmp/krew-version.log")" >&2

host_os=$(go env GOOS)
host_arch=$(go env GOARCH)

# ---------------------------------------------------------------------------------------------
dist="$tmp/dist"
if [[ -n ${KREW_TEST_DIST:-} ]]; then
  step "release: reuse $KREW_TEST_DIST"
  mkdir -p "$dist/krew"
  cp "$KREW_TEST_DIST"/kubectl-nodestate_* "$KREW_TEST_DIST/checksums.txt" "$dist/" &&
    cp "$KREW_TEST_DIST/krew/nodestate.yaml" "$dist/krew/" ||
    die "$KREW_TEST_DIST does not hold the archives, checksums.txt and krew/nodestate.yaml of make release-check"
  commit=
else
  step "release: make release-check (goreleaser snapshot of every platform)"
  run_logged release-check env RELEASE_DIST="$dist" hack/release-check.sh
  commit=$(git rev-parse --short HEAD)
fi
manifest="$dist/krew/nodestate.yaml"
[[ -f $manifest && -f $dist/checksums.txt ]] || die "the release lacks krew/nodestate.yaml or checksums.txt"
(cd "$dist" && sha256sum --quiet -c checksums.txt) || die "checksums.txt does not match the archives"
version=$(awk '$1 == "version:" {print $2; exit}' "$manifest")
[[ $version =~ ^v[0-9] ]] || die "cannot tell the version of the release (got '$version')"
ext=tar.gz
if [[ $host_os == windows ]]; then ext=zip; fi
host_archive=$(awk -v p="_${host_os}_${host_arch}.$ext" 'index($2, p) == length($2) - length(p) + 1 {print $2}' "$dist/checksums.txt")
[[ -n $host_archive && -f $dist/$host_archive ]] || die "no archive for the host platform $host_os/$host_arch in $dist"
host_archive="$dist/$host_archive"

# ---------------------------------------------------------------------------------------------
step "validate-krew-manifest with install, from a loopback server"
python3 - "$dist" "$tmp/port" >"$tmp/http.log" 2>&1 <<'PY' &
import functools, http.server, os, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
server.serve_forever()
PY
server_pid=$!
for _ in $(seq 50); do [[ -s $tmp/port ]] && break; sleep 0.1; done
[[ -s $tmp/port ]] || die "the loopback HTTP server did not start: $(cat "$tmp/http.log")"
port=$(cat "$tmp/port")
mkdir -p "$tmp/loopback"
# goreleaser's manifest, each uri's directory swapped for the loopback server (the names and
# sha256 stay as goreleaser wrote them).
sed -E "s#^( *uri: ).*/([^/]+)\$#\\1http://127.0.0.1:$port/\\2#" "$manifest" >"$tmp/loopback/nodestate.yaml"
[[ $(grep -c 'uri: ' "$manifest") -eq 5 ]] || die "goreleaser's manifest does not list 5 platforms"
grep -q "uri: http://127.0.0.1:$port/" "$tmp/loopback/nodestate.yaml" || die "the re-rendered manifest does not point at the loopback server"
run_logged validate-install validate-krew-manifest -manifest "$tmp/loopback/nodestate.yaml"
grep -q 'spec.platforms installed fine' "$tmp/validate-install.log" || die "validate-krew-manifest did not report the installs"
grep -q 'GET /kubectl-nodestate_' "$tmp/http.log" || die "validate-krew-manifest never downloaded from the loopback server"
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=

# ---------------------------------------------------------------------------------------------
step "kubectl krew install --manifest --archive"
export KREW_ROOT="$tmp/krew"
run_logged krew-install kubectl krew install --manifest="$manifest" --archive="$host_archive" </dev/null
[[ -f $KREW_ROOT/receipts/nodestate.yaml ]] || die "no receipt in $KREW_ROOT/receipts after install"
[[ -x $KREW_ROOT/bin/kubectl-nodestate ]] || die "$KREW_ROOT/bin/kubectl-nodestate was not linked"
grep -q 'pod-security.kubernetes.io/enforce=privileged' "$tmp/krew-install.log" || die "krew install did not print the caveats"
export PATH="$KREW_ROOT/bin:$PATH"

# ---------------------------------------------------------------------------------------------
step "kubectl nodestate version (through kubectl plugin discovery)"
out=$(kubectl nodestate version 2>&1) || die "kubectl nodestate version failed: $out"
line=${out%%$'\n'*} checked=${out#*$'\n'}
[[ $line == "kubectl-nodestate $version ("* ]] || die "unexpected version line: $out"
if [[ -n $commit && $line != *"commit $commit,"* ]]; then die "version line lacks commit $commit: $out"; fi
[[ $line == *"$host_os/$host_arch)" ]] || die "version line lacks $host_os/$host_arch: $out"
[[ $checked == "kubelet builds checked: v1."* ]] || die "version names no kubelet build checked: $out"
printf 'krew-test:      %s\n' "$line" >&2
json=$(kubectl nodestate version -o json) || die "kubectl nodestate version -o json failed"
python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert d["version"] == sys.argv[2], d' "$json" "$version" ||
  die "version -o json is not the expected JSON: $json"
if out=$(kubectl nodestate version -o bogus 2>&1); then die "version -o bogus should fail"; fi

# ---------------------------------------------------------------------------------------------
step "kubectl plugin list"
kubectl plugin list >"$tmp/plugin-list.log" 2>&1 || true # non-zero when other plugins on PATH warn
grep -qx "$KREW_ROOT/bin/kubectl-nodestate" "$tmp/plugin-list.log" ||
  die "kubectl plugin list does not show $KREW_ROOT/bin/kubectl-nodestate: $(cat "$tmp/plugin-list.log")"

# ---------------------------------------------------------------------------------------------
step "shell completion through kubectl_complete-nodestate"
# kubectl completes a plugin's arguments only through a kubectl_complete-<plugin> executable.
out=$(kubectl __complete nodestate ver 2>/dev/null) || die "kubectl __complete nodestate failed"
if grep -q '^version' <<<"$out"; then die "completion worked before the helper was installed?"; fi
# The command the caveats give.
cp "${KREW_ROOT:-$HOME/.krew}"/store/nodestate/v*/kubectl_complete-nodestate "${KREW_ROOT:-$HOME/.krew}/bin/" ||
  die "the caveats' cp command failed: is the helper installed under store/nodestate/<version>/?"
out=$(kubectl __complete nodestate ver 2>/dev/null) || die "kubectl __complete nodestate failed"
grep -qx 'version.*' <<<"$out" || die "kubectl did not complete 'nodestate ver' to version: $out"
out=$(kubectl __complete nodestate version -o '' 2>/dev/null) || die "kubectl __complete nodestate version -o failed"
grep -qx 'json' <<<"$out" || die "kubectl did not complete -o values: $out"

# ---------------------------------------------------------------------------------------------
step "kubectl krew list and uninstall (against an empty local index)"
# Offline there is no index; these commands only need one to exist as a git directory.
git init -q "$KREW_ROOT/index/default" || die "git init of an empty krew index failed"
run_logged krew-list kubectl krew list
# A plugin installed from a manifest file, not from an index, is listed as detached/nodestate.
grep -Eq '^(detached/)?nodestate([[:space:]]|$)' "$tmp/krew-list.log" || die "kubectl krew list does not show nodestate: $(cat "$tmp/krew-list.log")"
run_logged krew-uninstall kubectl krew uninstall nodestate </dev/null
[[ ! -e $KREW_ROOT/bin/kubectl-nodestate && ! -e $KREW_ROOT/receipts/nodestate.yaml ]] ||
  die "kubectl krew uninstall left the plugin behind"
rm -f "$KREW_ROOT/bin/kubectl_complete-nodestate"
run_logged krew-reinstall kubectl krew install --manifest="$manifest" --archive="$host_archive" </dev/null

# ---------------------------------------------------------------------------------------------
step "a wrong sha256 is refused"
mkdir -p "$tmp/badsum"
good=$(awk -v a="$(basename "$host_archive")" '$2 == a {print $1}' "$dist/checksums.txt")
[[ ${#good} -eq 64 ]] || die "no checksum for $(basename "$host_archive")"
bad=$(printf '%s' "$good" | tr '0-9a-f' '1-9a-f0')
sed "s/$good/$bad/" "$manifest" >"$tmp/badsum/nodestate.yaml"
grep -q "$bad" "$tmp/badsum/nodestate.yaml" || die "could not plant the wrong sha256"
if KREW_ROOT="$tmp/krew-bad" kubectl krew install --manifest="$tmp/badsum/nodestate.yaml" \
  --archive="$host_archive" </dev/null >"$tmp/badsum.log" 2>&1; then
  die "krew installed an archive whose sha256 does not match the manifest"
fi
grep -q 'checksum does not match' "$tmp/badsum.log" || die "krew refused, but not for the checksum: $(cat "$tmp/badsum.log")"
[[ ! -e $tmp/krew-bad/receipts/nodestate.yaml && ! -e $tmp/krew-bad/bin/kubectl-nodestate ]] ||
  die "a refused install left files behind"

# ---------------------------------------------------------------------------------------------
step "kubectl nodestate verify --from-dir examples/kubelet-root"
[[ -d examples/kubelet-root ]] || die "examples/kubelet-root is missing"
if ! out=$(kubectl nodestate verify --from-dir examples/kubelet-root 2>"$tmp/verify.err"); then
  die "kubectl nodestate verify --from-dir examples/kubelet-root failed: $out $(cat "$tmp/verify.err")"
fi
[[ -n $out ]] || die "kubectl nodestate verify printed nothing"
printf '%s\n' "$out" | head -20 | sed 's/^/krew-test:      /' >&2

step ""
printf 'krew-test: PASS in %ss\n' "$((SECONDS - t0))" >&2
