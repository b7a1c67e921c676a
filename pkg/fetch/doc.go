// Package fetch copies files out of a node's kubelet root directory through a short-lived,
// read-only debug pod: check the node, create the pod (GenerateDebugPod), watch it until it
// runs, exec one `tar` of the requested relative paths, parse that tar in memory (ReadTar), and
// delete the pod on every path out, including Ctrl-C.
//
// fetch knows pods and streams, not checkpoint formats: the caller passes the relative paths to
// collect and gets bytes back. It must not import the decode or render packages; data flows
// fetch -> decode -> render, wired by the command layer.
//
// Every error returned by Fetch is an *Error whose Reason classifies it and whose message is one
// line that names the fix, so the command layer can print a per-node failure row and map it to
// an exit code without parsing text.
package fetch
