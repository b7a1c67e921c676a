module github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen

go 1.26.0

require github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common v0.0.0

replace github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common => ../../common
