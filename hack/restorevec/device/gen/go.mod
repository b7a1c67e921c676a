module github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen

go 1.26.0
