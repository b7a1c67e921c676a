// Package layering holds the test of the import graph: each arrow points down,
// cmd -> render -> nodestate -> engines (fetch, decode, doctor, admit, replay, cgroup, nodefs) ->
// machine. Commands and render import no engine: nodestate is the only way in.
package layering
