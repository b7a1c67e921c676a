// Keeps shapes/ out of the project's ./...: its files build only inside a release module.
module github.com/kubectl-nodestate/kubectl-nodestate/hack/admitvec/shapes

go 1.22
