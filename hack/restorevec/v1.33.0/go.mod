module github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/v1.33.0

go 1.24.0

require (
	github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common v0.0.0-00010101000000-000000000000
	k8s.io/kubernetes v1.33.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/fsnotify/fsnotify v1.7.0 // indirect
	github.com/go-logr/logr v1.4.2 // indirect
	golang.org/x/sys v0.31.0 // indirect
	k8s.io/apimachinery v0.0.0 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
	k8s.io/utils v0.0.0-20241104100929-3ea5e8cea738 // indirect
)

replace (
	github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common => ../common
	k8s.io/api => k8s.io/api v0.33.0
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.33.0
	k8s.io/apimachinery => k8s.io/apimachinery v0.33.0
	k8s.io/apiserver => k8s.io/apiserver v0.33.0
	k8s.io/cli-runtime => k8s.io/cli-runtime v0.33.0
	k8s.io/client-go => k8s.io/client-go v0.33.0
	k8s.io/cloud-provider => k8s.io/cloud-provider v0.33.0
	k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.33.0
	k8s.io/code-generator => k8s.io/code-generator v0.33.0
	k8s.io/component-base => k8s.io/component-base v0.33.0
	k8s.io/component-helpers => k8s.io/component-helpers v0.33.0
	k8s.io/controller-manager => k8s.io/controller-manager v0.33.0
	k8s.io/cri-api => k8s.io/cri-api v0.33.0
	k8s.io/cri-client => k8s.io/cri-client v0.33.0
	k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.33.0
	k8s.io/dynamic-resource-allocation => k8s.io/dynamic-resource-allocation v0.33.0
	k8s.io/endpointslice => k8s.io/endpointslice v0.33.0
	k8s.io/externaljwt => k8s.io/externaljwt v0.33.0
	k8s.io/kms => k8s.io/kms v0.33.0
	k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.33.0
	k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.33.0
	k8s.io/kube-proxy => k8s.io/kube-proxy v0.33.0
	k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.33.0
	k8s.io/kubectl => k8s.io/kubectl v0.33.0
	k8s.io/kubelet => k8s.io/kubelet v0.33.0
	k8s.io/metrics => k8s.io/metrics v0.33.0
	k8s.io/mount-utils => k8s.io/mount-utils v0.33.0
	k8s.io/pod-security-admission => k8s.io/pod-security-admission v0.33.0
	k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.33.0
	k8s.io/sample-cli-plugin => k8s.io/sample-cli-plugin v0.33.0
	k8s.io/sample-controller => k8s.io/sample-controller v0.33.0
)
