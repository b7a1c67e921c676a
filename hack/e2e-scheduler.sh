#!/usr/bin/env bash
# The nodestate-scheduler's live test (test/e2e TestLiveScheduler): kube-scheduler with the
# NodeStateAdmission plugin, built into the cached tools (NODESTATE_TOOLS=nodestate-scheduler
# hack/tools/build.sh, keyed by its Kubernetes pin and the sources that go into it), run as
# a process against the e2e control plane (kube-apiserver + etcd + kwok).
#
#   hack/e2e-scheduler.sh            # or: make e2e-scheduler
#   hack/e2e-scheduler.sh -v         # extra args go to `go test` (through hack/e2e.sh)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

log() { printf '[e2e-scheduler] %s\n' "$*" >&2; }

hack/tools/build.sh > /dev/null # the control plane's tools first: a cold machine has none
start=$SECONDS
bin=$(NODESTATE_TOOLS=nodestate-scheduler hack/tools/build.sh | tail -n 1)
log "kube-scheduler ready in $((SECONDS - start))s: $bin/nodestate-scheduler"

NODESTATE_SCHEDULER="$bin/nodestate-scheduler" exec hack/e2e.sh -run '^TestLiveScheduler(NRTFallback)?$' "$@"
