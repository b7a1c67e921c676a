package text

import "testing"

func TestText(t *testing.T) {
	for in, want := range map[string]string{"": "", "a": "a", "a|b": "a and b", "a|b|c": "a, b and c"} {
		var words []string
		if in != "" {
			words = splitBar(in)
		}
		if got := JoinAnd(words); got != want {
			t.Errorf("JoinAnd(%q) = %q, want %q", words, got, want)
		}
	}
	if Plural(1, "entry", "entries") != "entry" || Plural(2, "entry", "entries") != "entries" || Plural(0, "entry", "entries") != "entries" {
		t.Error("Plural")
	}
	if got := OneLine("could not restore: x\nPlease  drain\n"); got != "could not restore: x Please drain" {
		t.Errorf("OneLine: %q", got)
	}
}

func splitBar(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '|' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
