# Sourced by hack/restorevec/newmodule.sh and hack/admitvec/newmodule.sh: the go.mod of a
# throwaway module running the real kubelet packages of one release (docs/kubelet-modules.md).
#
# release_gomod TOOL REL [MODULE=REPLACEMENT ...] writes REL/go.mod: module
# .../hack/TOOL/REL, k8s.io/kubernetes at REL, each of its staging modules (k8s.io/NAME v0.0.0,
# replaced by ./staging/src/k8s.io/NAME in its go.mod) replaced by the published v0.Y.Z
# (STAGING=v0.Y.Z overrides it), TOOL's common module, the extra replaces (an extra replace of
# a staging module wins); then go mod tidy. Run it from hack/TOOL.
release_gomod() {
  local tool=$1 rel=$2
  shift 2
  go mod download -json "k8s.io/kubernetes@$rel" > /dev/null
  local mod staging
  mod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$rel.mod
  staging=${STAGING:-$(staging_of "$rel")}
  {
    echo "module github.com/kubectl-nodestate/kubectl-nodestate/hack/$tool/$rel"
    echo
    echo "go 1.22"
    echo
    echo "require k8s.io/kubernetes $rel"
    echo
    echo "replace ("
    echo "	github.com/kubectl-nodestate/kubectl-nodestate/hack/$tool/common => ../common"
    grep -oE 'k8s.io/[a-z0-9-]+ => \./staging/src/k8s.io/[a-z0-9-]+' "$mod" | while read -r name _ _; do
      case " ${*%%=*} " in *" $name "*) ;; *) echo "	$name => $name $staging" ;; esac
    done
    local r
    for r in "$@"; do
      echo "	${r%%=*} => ${r#*=}"
    done
    echo ")"
  } > "$rel/go.mod"
  (cd "$rel" && go mod tidy)
}

release_module_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# staging_of RELEASE: the version its staging modules are published at (v1.38.0-rc.0: v0.38.0-rc.0).
staging_of() { echo "v0.${1#v1.}"; }

# next_toolchain: the one approved Go newer than the local one, as hack/tools/kube-next names it.
next_toolchain() { sed -n 's/^toolchain //p' "$release_module_lib/../tools/kube-next/go.mod"; }

# module_toolchain DIR: the GOTOOLCHAIN a release module builds with: its go.mod's toolchain
# line; else, when the local Go cannot load it (its go line asks for a newer one), the toolchain
# hack/tools/kube-next names (the one approved newer Go); else local.
module_toolchain() {
  local tc
  tc=$(sed -n 's/^toolchain //p' "$1/go.mod")
  if [ -z "$tc" ] && ! (cd "$1" && GOTOOLCHAIN=local GOWORK=off go list -m > /dev/null 2>&1); then
    tc=$(next_toolchain)
  fi
  echo "${tc:-local}"
}

# releases_in DIR: the release modules under DIR (v*/), oldest first, a pre-release before its
# release (sort -V alone puts v1.38.0-beta.0 after v1.38.0).
releases_in() {
  (cd "$1" && ls -d v*/ 2> /dev/null) | tr -d / | sed 's/-/~/' | sort -V | sed 's/~/-/'
}
