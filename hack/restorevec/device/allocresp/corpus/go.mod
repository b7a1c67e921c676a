module github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/allocresp/corpus

go 1.26.0

require github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen v0.0.0

require github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common v0.0.0 // indirect

replace (
	github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common => ../../../common
	github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen => ../../gen
)
