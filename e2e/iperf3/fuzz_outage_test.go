package iperf3

import (
	"os"
	"path/filepath"
	"testing"
)

// Over any client JSON Parse takes: the gaps lie in time order within the
// receiver's series, each runs 1 ≤ MinRun ≤ Lost datagrams, only the last
// one is open, the gaps' datagrams sum to Lost, and Longest returns one of
// them with the most datagrams.
func FuzzOutages(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "outage", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			return
		}
		o, err := Outages(r)
		if err != nil {
			return
		}
		if o.PacketsPerSecond <= 0 || o.IntervalSeconds <= 0 {
			t.Fatalf("rate %v, interval %v", o.PacketsPerSecond, o.IntervalSeconds)
		}
		var sum, most int64
		prev := -1e308
		for i, g := range o.Gaps {
			if g.MinRun < 1 || g.MinRun > g.Lost || g.From > g.To && !g.Open || g.Open && i != len(o.Gaps)-1 || g.Silent < 0 {
				t.Errorf("gap %d %+v", i, g)
			}
			if !g.Open && g.From < prev {
				t.Errorf("gap %d from %v before the one before (%v)", i, g.From, prev)
			}
			prev = g.From
			sum += g.Lost
			most = max(most, g.Lost)
		}
		if sum != o.Lost || o.Tail < 0 {
			t.Errorf("gaps sum to %d, Lost %d, tail %d", sum, o.Lost, o.Tail)
		}
		if g, ok := o.Longest(0, 0); ok != (len(o.Gaps) > 0) || ok && g.Lost != most {
			t.Errorf("Longest %+v %v, most %d", g, ok, most)
		}
	})
}
