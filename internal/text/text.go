// Package text is the few words-and-sentences helpers the packages share. It imports only the
// standard library, so any layer may use it.
package text

import "strings"

// JoinAnd lists words: "a", "a and b", "a, b and c".
func JoinAnd(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// OneLine puts a message on one line: every run of white space, line breaks included, is one
// space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
