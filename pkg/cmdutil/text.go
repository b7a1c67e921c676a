package cmdutil

import "strings"

// LongDesc trims and dedents a long description written as an indented raw string.
func LongDesc(s string) string { return dedent(s) }

// Examples dedents examples and indents them by two spaces, as kubectl prints them.
func Examples(s string) string {
	lines := strings.Split(dedent(s), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

func dedent(s string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines[i] = ""
		} else {
			lines[i] = l[indent:] // indent is the smallest of the non-blank lines
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
