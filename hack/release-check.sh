#!/usr/bin/env bash
# Checks the release config with the real goreleaser (built from its pinned Go module): `check`,
# then a snapshot release of every platform in a throwaway clone, then the krew manifest that
# goreleaser's krews section wrote, through krew's own validate-krew-manifest. Nothing is
# published and the working tree is not touched.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'release-check: %s\n' "$*" >&2; }

bin=$(NODESTATE_TOOLS="goreleaser validate-krew-manifest" hack/tools/build.sh | tail -n 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# goreleaser wants a clean git tree with a GitHub remote (the krews section derives URLs from it).
git clone -q . "$tmp/src"
git -C "$tmp/src" remote set-url origin https://github.com/kubectl-nodestate/kubectl-nodestate.git
cd "$tmp/src"

"$bin/goreleaser" check
say "ok   goreleaser check"
"$bin/goreleaser" release --snapshot --clean --skip=publish >"$tmp/release.log" 2>&1 || {
  tail -n 30 "$tmp/release.log" >&2
  say "FAIL goreleaser release --snapshot"
  exit 1
}
say "ok   goreleaser release --snapshot (every platform)"

manifest=dist/krew/nodestate.yaml
[[ -f $manifest ]] || { say "FAIL no krew manifest at $manifest"; exit 1; }
"$bin/validate-krew-manifest" -manifest "$manifest" -skip-install
say "ok   validate-krew-manifest on goreleaser's manifest"

for a in dist/kubectl-nodestate_*.tar.gz; do
  got=$(tar -tzf "$a" | sort | tr '\n' ' ')
  [[ $got == "LICENSE kubectl-nodestate kubectl_complete-nodestate " ]] || { say "FAIL $a holds: $got"; exit 1; }
done
(cd dist && sha256sum -c --quiet checksums.txt)
say "ok   archives hold the binary, LICENSE and the completion helper; checksums match"
say "PASS"
