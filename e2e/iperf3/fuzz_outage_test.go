package iperf3

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// shrinkOutageSeed keeps of a recorded client JSON what Outages reads, so
// that the fuzzer mutates kilobytes, not the recordings' 50-75 KB: the
// client's first two intervals and the receiver's intervals that carried or
// preceded a gap, with one neighbour on each side (at most 16).
func shrinkOutageSeed(tb testing.TB, b []byte) []byte {
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		tb.Fatal(err)
	}
	if ivs, ok := doc["intervals"].([]any); ok && len(ivs) > 2 {
		doc["intervals"] = ivs[:2]
	}
	srv, _ := doc["server_output_json"].(map[string]any)
	ivs, _ := srv["intervals"].([]any)
	keep := map[int]bool{}
	for i, iv := range ivs {
		sum, _ := iv.(map[string]any)["sum"].(map[string]any)
		if sum["lost_packets"] != 0.0 || sum["packets"] == 0.0 {
			for j := max(i-1, 0); j <= min(i+1, len(ivs)-1); j++ {
				keep[j] = true
			}
		}
	}
	var out []any
	for i, iv := range ivs {
		if (keep[i] || i < 2) && len(out) < 16 {
			out = append(out, iv)
		}
	}
	if srv != nil {
		srv["intervals"] = out
		delete(srv, "start")
	}
	s, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// Over any client JSON Parse takes: the gaps lie in time order within the
// receiver's series, each runs 1 ≤ MinRun ≤ Lost datagrams, only the last
// one is open, the gaps' datagrams sum to Lost, and Longest returns one of
// them with the most datagrams.
func FuzzOutages(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "outage", "*.json"))
	gaps := 0
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		seed := shrinkOutageSeed(f, b)
		if r, err := Parse(seed); err == nil {
			if o, err := Outages(r); err == nil {
				gaps += len(o.Gaps)
			}
		}
		f.Add(seed)
	}
	if gaps == 0 {
		f.Fatal("no seed has a gap: the shrunk recordings lost what Outages reads")
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
