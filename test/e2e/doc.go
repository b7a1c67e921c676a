// Package e2e holds the end-to-end tests of kubectl-nodestate against a real
// control plane: kube-apiserver + etcd + kwok (simulated nodes and pods), all
// started on 127.0.0.1 by TestMain. Every other file carries the build tag
// "e2e", so `go test ./...` skips them; run `hack/e2e.sh` (or
// `go test -tags e2e ./test/e2e/...`). See README.md for the harness API.
package e2e
