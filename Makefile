# kubectl-nodestate. `make help` lists the targets.
GO      ?= go
BIN     ?= bin/kubectl-nodestate
PKG     := github.com/kubectl-nodestate/kubectl-nodestate
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X $(PKG)/pkg/version.version=$(VERSION) -X $(PKG)/pkg/version.commit=$(COMMIT) -X $(PKG)/pkg/version.date=$(DATE)

.PHONY: help build test lint mutate mutations demo fuzz bench bench-nodecheck bench-scale bench-fanout bench-admit bench-conditions bench-podindex bench-scheduler e2e e2e-faults e2e-scale e2e-node e2e-node-next e2e-nrt-scheduler judge-loop judge-sidebyside e2e-scheduler krew-test release-check images ci

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/kubectl-nodestate
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/kubectl-nodestate

test: ## the fast test suite (no cluster): unit, conformance against the kubelet vectors, fuzz seeds
	$(GO) test ./...

lint: ## staticcheck, pinned in hack/tools/staticcheck and built from its module (cached outside the clone)
	hack/lint.sh

mutate: ## mutation testing (gremlins, pinned in hack/tools/gremlins) over MUTATE_PKGS (decode, doctor, replay/admit when present); efficacy per package; slow, not in CI
	hack/mutate.sh

mutations: ## the mutations issue 21 found missed, and deleted vectors, each applied to a copy of the tree: go test must fail for each
	hack/mutations.sh

demo: build ## verify and show the bundled example kubelet dir (no cluster needed)
	./$(BIN) verify --from-dir examples/kubelet-root
	./$(BIN) cpus --from-dir examples/kubelet-root

fuzz: ## fuzz every target for FUZZTIME (default 20s each); fails only on a finding, ends with passed/failed/flaked
	hack/fuzz.sh

bench: ## decoder benchmarks beside the kubelet's own algorithm, in one run, with ratios (COUNT=5)
	hack/bench.sh

bench-nodecheck: ## each node-local check (node-check, the NPD plugin) on a node of 500 containers: Go benchmark, then the binary's wall time and peak RSS (/usr/bin/time -v, COUNT=5)
	hack/bench-nodecheck.sh

bench-scale: ## the plugin's verify --all-nodes beside a minimal client-go floor on NODES (1,000) kwok nodes, and at 100 and 300
	hack/bench-scale.sh

bench-fanout: ## every fan-out verb (verify, doctor, admit, admit --devices; verify and admit with --reader=binary too) beside a floor creating its very debug pod and running its very exec, interleaved in one run, on NODES (1,000; a list for several sizes) kwok nodes in two node states: time, machine-CPU and own-CPU ratios, requests per node, peak RSS (not in CI)
	NODESTATE_BENCH_FANOUT_SIZES="$${NODESTATE_BENCH_FANOUT_SIZES:-$${NODES:-1000}}" hack/e2e.sh -run '^TestBenchFanout$$' -timeout 300m -v 2>&1 | grep -E '^(BENCH|---|FAIL|ok|    bench)'

bench-admit: ## admit --all-nodes beside verify --all-nodes, interleaved in one run, on NODES (1,000) kwok nodes: time ratio and requests per node
	NODESTATE_BENCH_ADMIT_NODES=$${NODES:-1000} hack/e2e.sh -run '^TestBenchAdmit$$' -v 2>&1 | grep -E '^(BENCH|---|FAIL|ok)'

bench-conditions: ## verify --all-nodes from the monitor's node conditions beside --fresh (a debug pod per node), interleaved in one run, on NODES (10,000) kwok nodes: time, requests, peak RSS
	NODESTATE_BENCH_CONDITIONS_NODES=$${NODES:-10000} hack/e2e.sh -run '^TestBenchConditions$$' -timeout 150m -v 2>&1 | grep -E '^(BENCH|---|FAIL|ok)|bench_(conditions_)?test'

bench-podindex: ## what naming pods costs the API server: a list per node vs one cluster-wide paginated list, at 100 and 10,000 pods a node
	NODESTATE_BENCH_PODINDEX=1 hack/e2e.sh -run '^TestBenchPodIndex$$' 2>&1 | grep -E '^(PODINDEX|---|FAIL|ok)'

e2e: ## live commands end to end on a real kube-apiserver + etcd + kwok (builds/caches the binaries)
	hack/e2e.sh

e2e-faults: ## the fault suite: API server paused and restarted, exec cut and stalled, nodes and pods gone, Ctrl-C, SIGKILL, during verify --all-nodes (docs/reliability.md)
	NODESTATE_E2E_FAULTS=1 hack/e2e.sh -run '^TestFault'

bench-scheduler: ## issue 45's cost: the stock kube-scheduler and the nodestate-scheduler on the same pods at 1,000 and 10,000 kwok nodes with published states (NODES, PODS): pods/s, CPU, Filter time per node per pod
	hack/bench-scheduler.sh

e2e-scale: ## the plugin's verify --all-nodes over 1,000 simulated nodes, at two concurrencies in one run
	NODESTATE_E2E_PLUGIN_SCALE_NODES=$${NODES:-1000} NODESTATE_E2E_SCALE_NODES=$${NODES:-1000} hack/e2e.sh -run 'TestLiveScale|TestSmokeScale'

e2e-nrt-scheduler: ## the side-by-side's baseline: kube-scheduler + the upstream NodeResourceTopologyMatch (hack/nrtscheduler, built and cached) on the e2e control plane with deploy/scheduler-nrt (docs/scheduler-baseline.md)
	sched=$$(hack/nrtscheduler/build.sh) && NODESTATE_NRT_SCHEDULER="$$sched" hack/e2e.sh -run '^TestNRTSchedulerBaseline$$'

e2e-scheduler: ## the nodestate-scheduler (kube-scheduler + NodeStateAdmission, cached with the tools) on the real kube-apiserver + kwok nodes with published states
	hack/e2e-scheduler.sh

e2e-node: ## live commands on ONE real kubelet + containerd in a network namespace (root; builds/caches the kubelet)
	hack/e2e-node.sh

e2e-node-next: ## the same suite on the next release's kubelet (hack/tools/kube-next: v1.38.0-beta.0, Go 1.27.3 there only; control plane as e2e-node's)
	NODESTATE_E2E_NODE_KUBE=next hack/e2e-node.sh

judge-loop: ## issue 45's closed loop (root): a scheduler binds GPU workloads on kwok nodes, v1.37.1's real kubelet managers (hack/admitvec judge mode) admit or refuse each binding; default the stock kube-scheduler (NODESTATE_JUDGE_SCHEDULER=BIN NODESTATE_JUDGE_SCHEDULER_NAME=NAME for another)
	NODESTATE_TOOLS=kube-scheduler hack/tools/build.sh >/dev/null
	cd hack/admitvec/v1.37.1 && $(GO) build -o "$${NODESTATE_JUDGE_BINDIR:-$${TMPDIR:-/tmp}/admitvec-judge}/v1.37.1" .
	NODESTATE_JUDGE_LOOP=1 NODESTATE_JUDGE_BINDIR="$${NODESTATE_JUDGE_BINDIR:-$${TMPDIR:-/tmp}/admitvec-judge}" hack/e2e.sh -run '^TestJudgeLoop$$' -timeout 150m -v > "$${TMPDIR:-/tmp}/judge-loop.log" 2>&1; rc=$$?; grep -E '^(JUDGELOOP|--- |FAIL|ok|panic)|judgeloop' "$${TMPDIR:-/tmp}/judge-loop.log"; exit $$rc

judge-sidebyside: ## issue 45's side-by-side (root): the closed loop with the stock kube-scheduler, the upstream NodeResourceTopologyMatch and the nodestate-scheduler, in one run
	hack/judge-sidebyside.sh

release-check: ## the one release pipeline, goreleaser: check, a snapshot of every platform, its krew manifest validated (RELEASE_DIST=DIR keeps it)
	hack/release-check.sh

images: ## the release's two images (the plugin, the nodestate-scheduler) from goreleaser's DIST (default dist): OCI layout tars, reproducible (hack/image.sh)
	hack/image.sh $${DIST:-dist}

krew-test: ## goreleaser's release (or KREW_TEST_DIST=DIR's) installed through the real krew + kubectl, offline
	hack/krew-test.sh
