module github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common

go 1.22
