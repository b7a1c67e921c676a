// The device manager's API shapes, not a module of their own: each release module links the
// files its release's API needs (see ../README.md). This go.mod only keeps them out of the
// project's ./... .
module github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/shapes

go 1.22
