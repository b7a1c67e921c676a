// Stand-in module for sigs.k8s.io/iptables-wrappers v1.0.0, which the module proxy does not serve
// (see pkg/iptables). Used only by hack/tools/kube-next through a replace.
module sigs.k8s.io/iptables-wrappers

go 1.26
