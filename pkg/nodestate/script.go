package nodestate

import (
	"fmt"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodefs"
)

// CollectScript is a POSIX sh script that reads on the node itself what the debug pod reads
// (the checkpoint files, config.yaml, the sysfs dump, the device plugin sockets, the CDI specs)
// and writes the bundle collect writes, with the kubelet's version from its binary, as one
// tar.gz on stdout: for a node whose kubelet is down and so cannot run a debug pod. Every
// offline command reads the tar.gz with --from-dir. It is built from the debug pod's own
// scripts (fetch.CollectCommand, bundleDumps), so both read the same files. rootDir is the
// default kubelet root dir (KUBELET_ROOT_DIR overrides it on the node); version names the
// plugin that wrote the script.
func CollectScript(rootDir, version string) string {
	if rootDir == "" {
		rootDir = decode.DefaultRootDir
	}
	collect := fetch.CollectCommand(append(decode.Paths(), KubeletConfigFile))
	var files []string
	for _, a := range collect[4:] {
		files = append(files, shQuote(a))
	}
	var dumps strings.Builder
	for _, d := range bundleDumps(onNode) {
		if d.Dump.Script == "" {
			continue // the node reader's only (PodResources)
		}
		fmt.Fprintf(&dumps, "{ %s; } >\"$out/%s\" 2>/dev/null\n", d.Dump.Script, d.File)
	}
	r := strings.NewReplacer(
		"@VERSION@", version,
		"@ROOT@", shQuote(rootDir),
		"@COLLECT@", shQuote(collect[2]),
		"@FILES@", strings.Join(files, " "),
		"@END@", shQuote(strings.TrimSuffix(fetch.CollectEnd, "\n")),
		"@DUMPS@", dumps.String(),
		"@CONFIG@", KubeletConfigFile,
		"@CONFIGFILE@", ConfigYAMLFile,
		"@NODEINFO@", NodeInfoFile,
		"@SCHEMA@", NodeInfoSchema,
		"@FROM@", FromConfigYAML,
	)
	return r.Replace(collectScript)
}

// hostCDIDirs are the CDI dirs under $host, the node's / (HOST_ROOT).
var hostCDIDirs = []nodefs.CDIDir{{Node: nodefs.CDIDirs[0], Here: `"$host"` + nodefs.CDIDirs[0]}, {Node: nodefs.CDIDirs[1], Here: `"$host"` + nodefs.CDIDirs[1]}}

const collectScript = `#!/bin/sh
# Written by kubectl nodestate collect --print-script (@VERSION@): what the plugin's debug pod
# reads from a node, for a node whose kubelet cannot run one (stopped, crash-looping, NotReady).
# Run it as root on the node (ssh, a serial console); it writes one tar.gz on stdout, which the
# plugin's offline commands read:
#
#   kubectl nodestate collect --print-script > collect.sh
#   ssh NODE sudo sh -s < collect.sh > NODE.tar.gz
#   kubectl nodestate doctor --from-dir NODE.tar.gz
#
# It only reads: the checkpoint files and config.yaml of the kubelet root dir, the CPU and
# NUMA topology and each PCI device's NUMA node from sysfs, the device plugin sockets, the CDI
# spec files; and it asks the
# kubelet binary for its version. Environment: KUBELET_ROOT_DIR (default @ROOT@), NODE_NAME
# (default: the hostname), KUBELET (the kubelet binary; default: kubelet on PATH),
# KUBELET_CONFIG (the kubelet's --config file; default: config.yaml in the root dir, where
# kubeadm writes it), HOST_ROOT (where the node's / is, for the CDI dirs: from a rescue system,
# the node's disk; default /).
set -u
umask 077
root=${KUBELET_ROOT_DIR:-@ROOT@}
host=${HOST_ROOT:-}
node=${NODE_NAME:-$(hostname 2>/dev/null || uname -n)}
kubelet=${KUBELET:-$(command -v kubelet 2>/dev/null)}
out=$(mktemp -d 2>/dev/null) || { out=${TMPDIR:-/tmp}/kubectl-nodestate.$$ && mkdir "$out"; } || exit 1
trap 'rm -rf "$out"' EXIT
trap 'exit 1' HUP INT TERM
cd "$root" || { echo "kubectl-nodestate: no kubelet root dir $root: set KUBELET_ROOT_DIR" >&2; exit 1; }
# The checkpoint files and config.yaml: the debug pod's own tar, unpacked into the bundle.
# Its stderr ends with its end line when it read to the end; tar's own messages are passed on.
sh -c @COLLECT@ sh @FILES@ 2>"$out/.collect.err" | (cd "$out" && tar -xf - 2>/dev/null)
grep -Fqx @END@ "$out/.collect.err" || echo "kubectl-nodestate: reading the kubelet root dir did not finish" >&2
grep -Fvx @END@ "$out/.collect.err" >&2
rm -f "$out/.collect.err"
[ ! -f "$out/@CONFIG@" ] || mv "$out/@CONFIG@" "$out/@CONFIGFILE@"
if [ -n "${KUBELET_CONFIG:-}" ]; then
  cat "$KUBELET_CONFIG" >"$out/@CONFIGFILE@" || exit 1
fi
# The debug pod's own sections: sysfs, PCI NUMA nodes, device plugin sockets, CDI specs.
@DUMPS@# node.json: the node and its kubelet's version, as collect records them.
clean() { printf '%s' "$1" | tr -cd 'A-Za-z0-9._+-'; }
version=
[ -z "$kubelet" ] || version=$("$kubelet" --version 2>/dev/null | sed -n 's/^Kubernetes //p')
[ -n "$version" ] || echo "kubectl-nodestate: no kubelet version (set KUBELET to the kubelet binary); give --kubelet-version when reading the bundle" >&2
config=
[ ! -f "$out/@CONFIGFILE@" ] || config=',"kubeletConfig":"@CONFIGFILE@","kubeletConfigFrom":"@FROM@"'
printf '{"schema":"%s","node":"%s","kubeletVersion":"%s"%s}\n' '@SCHEMA@' "$(clean "$node")" "$(clean "$version")" "$config" >"$out/@NODEINFO@"
cd "$out" || exit 1
if command -v gzip >/dev/null 2>&1; then
  tar -cf - . | gzip -c
else
  echo "kubectl-nodestate: no gzip: writing a plain tar" >&2
  tar -cf - .
fi
`

// shQuote quotes s for sh.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
