// Package layering holds the test of the import graph: each arrow points down,
// cmd -> render -> nodestate -> engines (fetch, decode, doctor, admit, replay) -> machine.
package layering
