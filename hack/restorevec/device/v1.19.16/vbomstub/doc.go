// Package util stands in for vbom.ml/util, which the module proxy no longer serves: k8s.io/kubernetes
// v1.17.17 requires it (kubectl sorts with it), the device manager does not import it.
package util
