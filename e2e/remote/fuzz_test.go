package remote

import (
	"bytes"
	"testing"
)

// FuzzPGIDWriter feeds arbitrary stderr, split at an arbitrary point, through
// the marker filter: it must never panic, must pass through unchanged any
// stderr that does not hold the marker line, and must remove exactly that line.
// Seeds: the shapes in TestPGIDWriterStripsMarkerAcrossWrites.
func FuzzPGIDWriter(f *testing.F) {
	const m = "ASAP2E2E-PGID-0123456789abcdef"
	f.Add([]byte(m+" 4242\nerr\n"), 5)
	f.Add([]byte("noise\n"+m+" 77\nx"), 9)
	f.Add([]byte(m+" 1\n"), 0)
	f.Add([]byte("partial"), 3)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		w := newPGIDWriter(m)
		if split < 0 {
			split = -split
		}
		if len(data) > 0 {
			split %= len(data) + 1
		} else {
			split = 0
		}
		w.Write(data[:split])
		w.Write(data[split:])
		out := w.bytes()
		pgid, found := w.id()
		if !bytes.Contains(data, []byte(m)) {
			if found || !bytes.Equal(out, data) {
				t.Fatalf("no marker in %q but output %q found=%v", data, out, found)
			}
			return
		}
		if found {
			line := []byte(m + " ")
			if pgid <= 1 || len(out) >= len(data) || !bytes.Contains(data, line) {
				t.Fatalf("marker found in %q: pgid %d output %q", data, pgid, out)
			}
		} else if !bytes.Equal(out, data) {
			t.Fatalf("marker not accepted in %q but output changed to %q", data, out)
		}
	})
}
