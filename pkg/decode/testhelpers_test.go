package decode

// mustParseKubelet is ParseKubelet for literals in tests.
func mustParseKubelet(s string) Kubelet {
	k, err := ParseKubelet(s, nil)
	if err != nil {
		panic(err)
	}
	return k
}

// hashedText returns the exact text the kubelet feeds to the checksum for each checksum of the
// file's detected format (for debugging a mismatch by eye). Keys are JSON field names.
func hashedText(kind Kind, raw []byte) map[string]string {
	if files[kind].Unchecked {
		return nil
	}
	p := Parse(kind, raw)
	f := p.detect()
	if f == nil {
		return nil
	}
	v, err := p.in.decode(f.Layout)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, c := range f.Sums {
		out[c.Field] = c.Rule.text(v)
	}
	return out
}
