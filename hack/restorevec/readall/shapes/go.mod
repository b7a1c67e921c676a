// The shapes' sources, not a module of their own: each release module links them (../README.md).
// This go.mod only keeps them out of the project's ./... .
module github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/readall/shapes

go 1.22
