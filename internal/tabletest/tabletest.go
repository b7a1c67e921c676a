// Package tabletest reads kubectl-style tables back into cells, for tests of what the plugin
// prints.
package tabletest

import "strings"

// Rows splits a table into rows of cells (columns are 3+ spaces apart); blank lines are
// dropped.
func Rows(out string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var cells []string
		for _, c := range strings.Split(l, "   ") {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		rows = append(rows, cells)
	}
	return rows
}

// HasRow reports whether rows holds a row of exactly these cells.
func HasRow(rows [][]string, want ...string) bool {
	for _, r := range rows {
		if strings.Join(r, "|") == strings.Join(want, "|") {
			return true
		}
	}
	return false
}
