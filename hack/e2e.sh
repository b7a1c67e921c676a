#!/usr/bin/env bash
# End-to-end tests of kubectl-nodestate on a real control plane: kube-apiserver
# + etcd + kwok, all on 127.0.0.1, started by the Go harness in test/e2e.
#
#   hack/e2e.sh                 # everything
#   hack/e2e.sh -run TestSmoke  # extra args go to `go test`
#
# Builds (or reuses from the cache outside the clone) the pinned tools with
# hack/tools/build.sh, builds the plugin (a failure fails the run), puts both
# on PATH and runs the e2e tests (build tag e2e).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

log() { printf '[e2e] %s\n' "$*" >&2; }

start=$SECONDS
bin=$(hack/tools/build.sh | tail -n 1)
log "tools ready in $((SECONDS - start))s: $bin"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nodestate-e2e-plugin.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# As users get it (make build, the release): static and stripped. A cgo build links
# dynamically and maps about twice the pages, which the benchmarks' peak RSS would count.
log "building the plugin"
make -s build BIN="$tmp/kubectl-nodestate"

export NODESTATE_TOOLS_BIN="$bin"
export NODESTATE_PLUGIN="$tmp/kubectl-nodestate"
export PATH="$tmp:$bin:$PATH"

log "running the e2e tests"
# One package: go test streams its -v output as it comes (several would each be held to the end).
go test -tags e2e -count=1 -timeout 30m -v ./test/e2e/ "$@"
log "done in $((SECONDS - start))s"
