#!/usr/bin/env bash
# The one release pipeline, checked: the real goreleaser (built from its pinned Go module) runs
# `check`, then a snapshot release of every platform from a clean clone of HEAD, then the output
# is checked: the krew manifest goreleaser's `krews` section wrote, through krew's own
# validate-krew-manifest; every archive's members; checksums.txt. Nothing is published and the
# working tree is not touched.
#
# Environment:
#   RELEASE_DIST  keep goreleaser's output (archives, checksums.txt, krew/nodestate.yaml) in
#                 this directory, e.g. for `KREW_TEST_DIST=DIR make krew-test` (the files of
#                 an earlier run there are replaced). Default: a temp dir, removed on exit.
set -euo pipefail
if [[ -n ${RELEASE_DIST:-} ]]; then RELEASE_DIST=$(realpath -m "$RELEASE_DIST"); fi
cd "$(dirname "$0")/.."
say() { printf 'release-check: %s\n' "$*" >&2; }
t0=$SECONDS

bin=$(NODESTATE_TOOLS="goreleaser validate-krew-manifest" hack/tools/build.sh | tail -n 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [[ -n $(git status --porcelain --untracked-files=no) ]]; then
  say "note: uncommitted changes are not in the snapshot: it is built from HEAD ($(git rev-parse --short HEAD))"
fi
# goreleaser wants a clean git tree with a GitHub remote (the krews section derives URLs from it).
git clone -q . "$tmp/src"
git -C "$tmp/src" remote set-url origin https://github.com/kubectl-nodestate/kubectl-nodestate.git
cd "$tmp/src"

"$bin/goreleaser" check
say "ok   goreleaser check"
# The scheduler's version stamp (.goreleaser.yaml) is the Kubernetes it is built from.
pin=$(sed -n 's#^\(require \)\{0,1\}[[:space:]]*k8s.io/kubernetes \(v[^ ]*\).*#\2#p' scheduler/go.mod | head -n 1)
stamps=$(grep -o 'version.gitVersion=[^ ]*' .goreleaser.yaml | sort -u)
[[ $stamps == "version.gitVersion=$pin" ]] ||
  { say "FAIL .goreleaser.yaml stamps the scheduler [$stamps], scheduler/go.mod pins k8s.io/kubernetes $pin"; exit 1; }
say "ok   the scheduler stamped with the Kubernetes scheduler/go.mod pins ($pin)"
"$bin/goreleaser" release --snapshot --clean --skip=publish >"$tmp/release.log" 2>&1 || {
  tail -n 30 "$tmp/release.log" >&2
  say "FAIL goreleaser release --snapshot"
  exit 1
}
say "ok   goreleaser release --snapshot (every platform) in $((SECONDS - t0))s"

manifest=dist/krew/nodestate.yaml
[[ -f $manifest ]] || { say "FAIL no krew manifest at $manifest"; exit 1; }
"$bin/validate-krew-manifest" -manifest "$manifest" -skip-install
say "ok   validate-krew-manifest on goreleaser's manifest"

archives=(dist/kubectl-nodestate_*.tar.gz dist/kubectl-nodestate_*.zip)
[[ ${#archives[@]} -eq 5 ]] || { say "FAIL want 5 archives, got: ${archives[*]}"; exit 1; }
for a in "${archives[@]}"; do
  case $a in
    *.zip)
      want="LICENSE kubectl-nodestate.exe "
      got=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$a" | LC_ALL=C sort | tr '\n' ' ')
      ;;
    *.tar.gz)
      want="LICENSE kubectl-nodestate kubectl_complete-nodestate "
      got=$(tar -tzf "$a" | LC_ALL=C sort | tr '\n' ' ')
      ;;
  esac
  [[ $got == "$want" ]] || { say "FAIL $a holds [$got], want [$want]"; exit 1; }
done
(cd dist && sha256sum -c --quiet checksums.txt)
[[ $(wc -l <dist/checksums.txt) -eq 5 ]] || { say "FAIL checksums.txt does not list the 5 archives"; exit 1; }
say "ok   archives hold the binary, LICENSE and (not on windows) the completion helper; checksums match"

# The release's images (hack/image.sh), written twice: the same digests and bytes.
hack/image-check.sh dist
images=(dist/*_image.tar)
# And built twice: goreleaser builds the linux binaries again in another clone (another path;
# the packages from the Go cache, every binary linked anew), and the images written from those
# have the same digests, or a stamp (a build time, a path) makes them differ.
git clone -q . "$tmp/src2"
git -C "$tmp/src2" remote set-url origin https://github.com/kubectl-nodestate/kubectl-nodestate.git
(cd "$tmp/src2" && "$bin/goreleaser" build --snapshot --clean --id unix --id scheduler) >"$tmp/build2.log" 2>&1 || {
  tail -n 30 "$tmp/build2.log" >&2
  say "FAIL goreleaser build --snapshot (the second build)"
  exit 1
}
(cd hack/tools/ociimage && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -o "$tmp/ociimage" .)
OCIIMAGE="$tmp/ociimage" hack/image.sh dist >"$tmp/digests-build1"
OCIIMAGE="$tmp/ociimage" hack/image.sh "$tmp/src2/dist" >"$tmp/digests-build2"
if ! cmp -s "$tmp/digests-build1" "$tmp/digests-build2"; then
  say "FAIL the images differ between two builds of one commit:"
  paste -d'\n' "$tmp/digests-build1" "$tmp/digests-build2" >&2
  exit 1
fi
say "ok   built twice (two clones): the same image digests: $(cut -d' ' -f2 "$tmp/digests-build1" | tr '\n' ' ')"

if [[ -n ${RELEASE_DIST:-} ]]; then
  # Remove only what this script writes there, never the whole directory.
  rm -f "$RELEASE_DIST"/kubectl-nodestate_* "$RELEASE_DIST"/nodestate-scheduler_* "$RELEASE_DIST/checksums.txt" "$RELEASE_DIST/krew/nodestate.yaml"
  mkdir -p "$RELEASE_DIST/krew"
  cp "$tmp/src/$manifest" "$RELEASE_DIST/krew/"
  cp "${archives[@]/#/$tmp/src/}" "$tmp/src/dist/checksums.txt" "${images[@]/#/$tmp/src/}" "$RELEASE_DIST/"
  say "kept archives, checksums.txt, krew/nodestate.yaml and the images in $RELEASE_DIST"
fi
say "PASS in $((SECONDS - t0))s"
