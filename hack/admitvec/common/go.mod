module github.com/kubectl-nodestate/kubectl-nodestate/hack/admitvec/common

go 1.22

require (
	k8s.io/api v0.31.14
	k8s.io/apimachinery v0.31.14
)
