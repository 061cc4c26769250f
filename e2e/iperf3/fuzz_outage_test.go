package iperf3

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// shrinkOutageSeed keeps of a recorded client JSON what Parse and Outages
// read, so that the fuzzer mutates about a kilobyte, not the recordings'
// 50-75 KB (the engine minimises an input that reaches new code in about
// n²/2 runs: e2e/report/fuzz_test.go's maxSeedBytes): start's version and
// test_start, end's sums without their per-stream copies but the UDP
// out_of_order, one client interval, and the receiver's intervals around
// its largest loss (at most 4), each with the sum's counting fields only.
func shrinkOutageSeed(tb testing.TB, b []byte) []byte {
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		tb.Fatal(err)
	}
	pick := func(m map[string]any, keys ...string) map[string]any {
		out := map[string]any{}
		for _, k := range keys {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	sum := func(iv any) map[string]any {
		m, _ := iv.(map[string]any)
		s, _ := m["sum"].(map[string]any)
		return map[string]any{"sum": pick(s, "start", "end", "seconds", "bytes", "packets", "lost_packets")}
	}
	start, _ := doc["start"].(map[string]any)
	end, _ := doc["end"].(map[string]any)
	newEnd := map[string]any{}
	for _, k := range []string{"sum", "sum_sent", "sum_received"} {
		if m, ok := end[k].(map[string]any); ok {
			newEnd[k] = pick(m, "seconds", "bytes", "bits_per_second", "packets", "lost_packets", "sender")
		}
	}
	if streams, ok := end["streams"].([]any); ok && len(streams) > 0 {
		udp, _ := streams[0].(map[string]any)["udp"].(map[string]any)
		newEnd["streams"] = []any{map[string]any{"udp": pick(udp, "out_of_order", "packets", "lost_packets")}}
	}
	ts, _ := start["test_start"].(map[string]any)
	out := map[string]any{"start": map[string]any{"version": start["version"], "test_start": pick(ts, "protocol", "num_streams", "blksize", "duration", "target_bitrate")}, "end": newEnd}
	if ivs, ok := doc["intervals"].([]any); ok && len(ivs) > 0 {
		out["intervals"] = []any{sum(ivs[0])}
	}
	srv, _ := doc["server_output_json"].(map[string]any)
	ivs, _ := srv["intervals"].([]any)
	most, at := -1.0, 0
	for i, iv := range ivs {
		if l, _ := sum(iv)["sum"].(map[string]any)["lost_packets"].(float64); l > most {
			most, at = l, i
		}
	}
	lo := max(at-3, 0)
	var keep []any
	for _, iv := range ivs[lo:min(lo+4, len(ivs))] {
		keep = append(keep, sum(iv))
	}
	out["server_output_json"] = map[string]any{"intervals": keep}
	s, err := json.Marshal(out)
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
	gaps := 0
	for _, name := range []string{"cut-1s", "cut-at-end", "spread-2pct"} {
		p := filepath.Join("testdata", "outage", "v3.12-udp-20m-l1000-"+name+".json")
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
		// The tail is in Lost; it is a gap (the open one, last) only after a
		// whole interval without a datagram, else it was in flight.
		open := len(o.Gaps) > 0 && o.Gaps[len(o.Gaps)-1].Open
		if !open {
			sum += o.Tail
		}
		if sum != o.Lost || o.Tail < 0 || open && (o.Gaps[len(o.Gaps)-1].Lost != o.Tail || o.Gaps[len(o.Gaps)-1].Silent < 1) {
			t.Errorf("gaps sum to %d (tail %d, open gap %v), Lost %d", sum, o.Tail, open, o.Lost)
		}
		if g, ok := o.Longest(0, 0); ok != (len(o.Gaps) > 0) || ok && g.Lost != most {
			t.Errorf("Longest %+v %v, most %d", g, ok, most)
		}
	})
}
