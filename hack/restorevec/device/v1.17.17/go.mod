module github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/v1.17.17

go 1.26.0

replace (
	k8s.io/api => k8s.io/api v0.17.17
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.17.17
	k8s.io/apimachinery => k8s.io/apimachinery v0.17.17
	k8s.io/apiserver => k8s.io/apiserver v0.17.17
	k8s.io/cli-runtime => k8s.io/cli-runtime v0.17.17
	k8s.io/client-go => k8s.io/client-go v0.17.17
	k8s.io/cloud-provider => k8s.io/cloud-provider v0.17.17
	k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.17.17
	k8s.io/code-generator => k8s.io/code-generator v0.17.17
	k8s.io/component-base => k8s.io/component-base v0.17.17
	k8s.io/cri-api => k8s.io/cri-api v0.17.17
	k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.17.17
	k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.17.17
	k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.17.17
	k8s.io/kube-proxy => k8s.io/kube-proxy v0.17.17
	k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.17.17
	k8s.io/kubectl => k8s.io/kubectl v0.17.17
	k8s.io/kubelet => k8s.io/kubelet v0.17.17
	k8s.io/legacy-cloud-providers => k8s.io/legacy-cloud-providers v0.17.17
	k8s.io/metrics => k8s.io/metrics v0.17.17
	k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.17.17
)

replace vbom.ml/util => ./vbomstub

require (
	github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen v0.0.0
	k8s.io/api v0.17.17
	k8s.io/klog v1.0.0
)

require github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common v0.0.0 // indirect

require (
	github.com/beorn7/perks v1.0.0 // indirect
	github.com/blang/semver v3.5.0+incompatible // indirect
	github.com/coreos/go-systemd v0.0.0-20190321100706-95778dfbb74e // indirect
	github.com/coreos/pkg v0.0.0-20180108230652-97fdf19511ea // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/docker/distribution v2.7.1+incompatible // indirect
	github.com/docker/spdystream v0.0.0-20160310174837-449fdfce4d96 // indirect
	github.com/fsnotify/fsnotify v1.4.7 // indirect
	github.com/gogo/protobuf v1.2.2-0.20190723190241-65acae22fc9d // indirect
	github.com/golang/groupcache v0.0.0-20160516000752-02826c3e7903 // indirect
	github.com/golang/protobuf v1.3.2 // indirect
	github.com/google/cadvisor v0.35.0 // indirect
	github.com/google/go-cmp v0.3.0 // indirect
	github.com/google/gofuzz v1.0.0 // indirect
	github.com/google/uuid v1.1.1 // indirect
	github.com/googleapis/gnostic v0.0.0-20170729233727-0c5108395e2d // indirect
	github.com/hashicorp/golang-lru v0.5.1 // indirect
	github.com/json-iterator/go v1.1.8 // indirect
	github.com/matttproud/golang_protobuf_extensions v1.0.1 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.1 // indirect
	github.com/opencontainers/go-digest v1.0.0-rc1 // indirect
	github.com/opencontainers/selinux v1.3.1-0.20190929122143-5215b1806f52 // indirect
	github.com/prometheus/client_golang v1.0.0 // indirect
	github.com/prometheus/client_model v0.0.0-20190129233127-fd36f4220a90 // indirect
	github.com/prometheus/common v0.4.1 // indirect
	github.com/prometheus/procfs v0.0.2 // indirect
	github.com/spf13/afero v1.2.2 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
	go.etcd.io/etcd v0.0.0-20191023171146-3cf2f69b5738 // indirect
	go.uber.org/atomic v1.3.2 // indirect
	go.uber.org/multierr v1.1.0 // indirect
	go.uber.org/zap v1.10.0 // indirect
	golang.org/x/crypto v0.0.0-20200220183623-bac4c82f6975 // indirect
	golang.org/x/net v0.0.0-20191004110552-13f9640d40b9 // indirect
	golang.org/x/oauth2 v0.0.0-20190604053449-0f29369cfe45 // indirect
	golang.org/x/sys v0.0.0-20190826190057-c7b8b68b1456 // indirect
	golang.org/x/text v0.3.2 // indirect
	golang.org/x/time v0.0.0-20190308202827-9d24e82272b4 // indirect
	google.golang.org/appengine v1.5.0 // indirect
	google.golang.org/genproto v0.0.0-20190502173448-54afdca5d873 // indirect
	google.golang.org/grpc v1.23.1 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/yaml.v2 v2.2.8 // indirect
	k8s.io/apiextensions-apiserver v0.0.0 // indirect
	k8s.io/apimachinery v0.17.17 // indirect
	k8s.io/apiserver v0.17.17 // indirect
	k8s.io/client-go v0.17.17 // indirect
	k8s.io/cloud-provider v0.17.17 // indirect
	k8s.io/component-base v0.17.17 // indirect
	k8s.io/cri-api v0.0.0 // indirect
	k8s.io/csi-translation-lib v0.17.17 // indirect
	k8s.io/kube-openapi v0.0.0-20200410145947-bcb3869e6f29 // indirect
	k8s.io/kubelet v0.0.0 // indirect
	k8s.io/kubernetes v1.17.17
	k8s.io/utils v0.0.0-20191114184206-e782cd3c129f // indirect
	sigs.k8s.io/yaml v1.1.0 // indirect
)

replace github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen => ../gen

replace github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common => ../../common
