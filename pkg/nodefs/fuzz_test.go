package nodefs

import "testing"

// Hostile sections and specs: no panic, no hang, and what is accepted stays within the caps.
func FuzzParseSockets(f *testing.F) {
	f.Add([]byte(SocketsHeader + "\nkubelet.sock\nnvidia.sock\n" + End + "\n"))
	f.Add([]byte(SocketsHeader + "\n" + End))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSockets(b)
		if err == nil && len(s.Names) > MaxSockets {
			t.Fatalf("%d sockets", len(s.Names))
		}
	})
}

func FuzzParseCDIDump(f *testing.F) {
	f.Add([]byte(CDIHeader + "\n@@file /etc/cdi/a.yaml 3\nabc\n@@big /etc/cdi/b.json 99999999\n" + End + "\n"))
	f.Add([]byte(CDIHeader + "\n@@file /etc/cdi/a.yaml 0\n\n" + End))
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := ParseCDIDump(b)
		if err != nil {
			return
		}
		if len(files) > MaxSpecs {
			t.Fatalf("%d files", len(files))
		}
		for _, sf := range files {
			if len(sf.Data) > MaxSpecBytes {
				t.Fatalf("%s: %d bytes", sf.Path, len(sf.Data))
			}
		}
		NewRegistry(files)
	})
}

func FuzzParseSpec(f *testing.F) {
	f.Add([]byte(gpuSpec))
	f.Add([]byte(`{"cdiVersion":"0.5.0","kind":"a.b/c","devices":[{"name":"d"}]}`))
	f.Add([]byte("a: &a [x,x]\nb: [*a,*a]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := ParseSpec(b); err == nil && (s.Kind == "" || len(s.Devices) == 0) {
			t.Fatalf("accepted %+v", s)
		}
	})
}
