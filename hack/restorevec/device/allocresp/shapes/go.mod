// The oracle's code, not a module of their own: each era module links the files its code needs
// (see ../../README.md). This go.mod only keeps them out of the project's ./... .
module github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/allocresp/shapes

go 1.22
