#!/usr/bin/env bash
# Cross-builds kubectl-nodestate and packs the release under dist/:
#
#   dist/kubectl-nodestate_<version>_<os>_<arch>.tar.gz   (.zip on windows)
#        each holding kubectl-nodestate[.exe], LICENSE and (not on windows) the
#        kubectl_complete-nodestate shell-completion helper, all at the top level
#   dist/checksums.txt    sha256 of every archive (sha256sum format)
#   dist/nodestate.yaml   the krew manifest, rendered from krew/nodestate.yaml.tmpl
#
# Run through `make dist`, which passes VERSION, COMMIT and DATE. Environment:
#   VERSION           release version, vMAJOR.MINOR.PATCH[-pre] (default: git describe).
#                     Anything else (a bare commit hash before the first tag) becomes
#                     v0.0.0-<it>, because krew only takes semantic versions.
#   COMMIT, DATE      stamped into pkg/version with VERSION (defaults: git, now).
#   DIST_PLATFORMS    os/arch list, spaces or commas (default: the five released platforms;
#                     "host" means `go env GOOS`/`go env GOARCH`).
#   DIST_DIR          output directory (default: dist).
#   RELEASE_URL_BASE  URL the archive names are appended to in the manifest (default: the
#                     GitHub release of VERSION).
#   RELEASE=1         a release: VERSION must be a clean vX.Y.Z[-pre] tag (no -dirty), all
#                     five platforms must be built, and the manifest is ALSO written to
#                     krew/nodestate.yaml (the copy kept in the tree and sent to krew-index).
#                     Without it nothing outside DIST_DIR is written.
#   SOURCE_DATE_EPOCH mtime of every archive member (default: the last commit's time,
#                     else 1980-01-01), so that the same inputs give the same archives.
#
# Needs go, GNU tar, gzip, and zip (or python3 as the zip fallback).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PKG=github.com/kubectl-nodestate/kubectl-nodestate
ALL_PLATFORMS="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"
GO=${GO:-go}

die() { printf 'dist: error: %s\n' "$*" >&2; exit 1; }
log() { printf 'dist: %s\n' "$*" >&2; }

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)}
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DATE=${DATE:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}
DIST_DIR=${DIST_DIR:-dist}
RELEASE=${RELEASE:-}

semver='^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
if [[ ! $VERSION =~ $semver ]]; then
  fixed="v0.0.0-$(printf '%s' "${VERSION#v}" | tr -c '0-9A-Za-z.-' '-')"
  [[ $fixed =~ $semver ]] || die "VERSION $VERSION cannot be made a semantic version"
  log "VERSION $VERSION is not vMAJOR.MINOR.PATCH; using $fixed"
  VERSION=$fixed
fi
if [[ -n $RELEASE && $VERSION == *dirty* ]]; then
  die "RELEASE=1 needs a clean tree, VERSION is $VERSION"
fi
if [[ -n $RELEASE && $VERSION == v0.0.0-* ]]; then
  die "RELEASE=1 needs a tagged VERSION, got $VERSION"
fi

platforms=${DIST_PLATFORMS:-$ALL_PLATFORMS}
platforms=${platforms//,/ }
platforms=${platforms//host/$($GO env GOOS)/$($GO env GOARCH)}
for p in $platforms; do
  [[ $p =~ ^[a-z0-9]+/[a-z0-9]+$ ]] || die "bad platform '$p' in DIST_PLATFORMS (want os/arch, e.g. linux/amd64)"
done
if [[ -n $RELEASE && $(tr ' ' '\n' <<<"$platforms" | grep -c .) -ne 5 ]]; then
  die "RELEASE=1 builds all platforms; unset DIST_PLATFORMS"
fi
RELEASE_URL_BASE=${RELEASE_URL_BASE:-https://github.com/kubectl-nodestate/kubectl-nodestate/releases/download/$VERSION}

if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || true)
  # zip cannot store times before 1980.
  [[ ${SOURCE_DATE_EPOCH:-0} -ge 315532800 ]] 2>/dev/null || SOURCE_DATE_EPOCH=315532800
fi
export SOURCE_DATE_EPOCH

tar --version 2>/dev/null | grep -q 'GNU tar' || die "GNU tar is needed (on macOS: gtar, put it first on PATH as tar)"
[[ -f LICENSE ]] || die "LICENSE is missing"
completion=hack/completion/kubectl_complete-nodestate
[[ -x $completion ]] || die "$completion is missing or not executable"

if command -v zip >/dev/null 2>&1; then
  zipper=zip
elif command -v python3 >/dev/null 2>&1; then
  zipper=python3
else
  die "neither zip nor python3 is available to write the windows .zip"
fi

ldflags="-s -w -X $PKG/pkg/version.version=$VERSION -X $PKG/pkg/version.commit=$COMMIT -X $PKG/pkg/version.date=$DATE"

mkdir -p "$DIST_DIR"
dist=$(cd "$DIST_DIR" && pwd)
# Remove only what this script writes, never the whole directory.
rm -rf "$dist"/kubectl-nodestate_* "$dist/checksums.txt" "$dist/nodestate.yaml" "$dist/.stage"

# zip_dir DIR OUT: a deterministic zip of DIR's files (flat, sorted, fixed times).
zip_dir() {
  local dir=$1 out=$2
  if [[ $zipper == zip ]]; then
    # -X: no uid/gid or extended-time fields; -D: no directory entries. The glob is sorted.
    (cd "$dir" && TZ=UTC LC_ALL=C zip -q -X -D "$out" -- *)
  else
    python3 - "$dir" "$out" <<'PY'
import os, sys, time, zipfile
src, out = sys.argv[1], sys.argv[2]
stamp = time.gmtime(max(int(os.environ["SOURCE_DATE_EPOCH"]), 315532800))[:6]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for name in sorted(os.listdir(src)):
        info = zipfile.ZipInfo(name, date_time=stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o100000 | (os.stat(os.path.join(src, name)).st_mode & 0o777)) << 16
        with open(os.path.join(src, name), "rb") as f:
            z.writestr(info, f.read())
PY
  fi
}

start_all=$SECONDS
for p in $platforms; do
  os=${p%/*} arch=${p#*/}
  bin=kubectl-nodestate
  if [[ $os == windows ]]; then bin=kubectl-nodestate.exe; fi
  stage="$dist/.stage/${os}_${arch}"
  mkdir -p "$stage"

  start=$SECONDS
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch $GO build -trimpath -ldflags "$ldflags" \
    -o "$stage/$bin" ./cmd/kubectl-nodestate || die "build for $os/$arch failed"
  install -m 0644 LICENSE "$stage/LICENSE"
  chmod 0755 "$stage/$bin"
  if [[ $os != windows ]]; then
    # A shell script: kubectl on windows would not run it.
    install -m 0755 "$completion" "$stage/kubectl_complete-nodestate"
  fi
  touch -d "@$SOURCE_DATE_EPOCH" "$stage"/*

  base="kubectl-nodestate_${VERSION}_${os}_${arch}"
  if [[ $os == windows ]]; then
    zip_dir "$stage" "$dist/$base.zip"
  else
    (cd "$stage" && LC_ALL=C tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" \
      --owner=0 --group=0 --numeric-owner --format=gnu -cf - -- *) | gzip -9 -n >"$dist/$base.tar.gz"
  fi
  log "built $os/$arch in $((SECONDS - start))s"
done

(cd "$dist" && sha256sum kubectl-nodestate_* >checksums.txt)

$GO run ./hack/krewmanifest -template krew/nodestate.yaml.tmpl -checksums "$dist/checksums.txt" \
  -version "$VERSION" -url-base "$RELEASE_URL_BASE" -o "$dist/nodestate.yaml"
if [[ -n $RELEASE ]]; then
  cp "$dist/nodestate.yaml" krew/nodestate.yaml
  log "wrote krew/nodestate.yaml (release)"
fi
rm -rf "$dist/.stage"

log "$VERSION for $(wc -w <<<"$platforms") platform(s) in $((SECONDS - start_all))s:"
(cd "$dist" && ls -l kubectl-nodestate_* checksums.txt nodestate.yaml) >&2
