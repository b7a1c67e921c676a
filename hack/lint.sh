#!/usr/bin/env bash
# staticcheck over every package, the e2e-tagged ones included. The binary is built from the
# pinned module hack/tools/staticcheck (go.mod + go.sum) by hack/tools/build.sh and cached
# outside the clone, so a warm run only analyses.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(NODESTATE_TOOLS=staticcheck hack/tools/build.sh | tail -n 1)
"$bin/staticcheck" -version
"$bin/staticcheck" ./...
"$bin/staticcheck" -tags e2e ./test/...
echo "staticcheck: no findings"
