// Keeps the shape files out of the project's ./...: they build only inside a release module,
// which links them.
module github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/alloc/shapes

go 1.26
