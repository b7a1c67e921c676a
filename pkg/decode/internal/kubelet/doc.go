// Package kubelet holds mirror copies of the kubelet's checkpoint types, one sub-package per
// kubelet package. The checksums are fnv32a over go-spew's "%#v" text, which names every type as
// "<package name>.<type name>" (reflect.Type.String), and encoding/json names the struct in its
// errors; so the package names (state, checkpoint, checksum, v1alpha2) and type names here must
// stay exactly the kubelet's. Do not rename them.
package kubelet
