package results

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// idleLat is a ping-pong result with the numbers of the recorded sockperf
// 3.7 sample e2e/sockperf/testdata/v3.7-pp-udp-m64-t2.txt.
func idleLat(path Path) LatencyResult {
	return LatencyResult{ID: LatencyIdleID, Name: "idle", Kind: LatencyPingPong, Path: path, Tool: "sockperf 3.7-no.git", Protocol: "udp",
		MessageBytes: 64, DurationSeconds: 2, RunTimeSeconds: 1.548, Samples: 53272, SentMessages: 53272,
		P50Us: 20.317, P99Us: 143.688, P999Us: 1833.170, MaxUs: 11031.691, MinUs: 15.058, AvgUs: 28.987}
}

func firstLat(path Path) LatencyResult {
	a, b := 1500.0, 2500.0
	return LatencyResult{ID: LatencyFirstID, Kind: LatencyFirstPacket, Path: path, Protocol: "icmp", MessageBytes: 56,
		First: &FirstPacket{Flows: 3, IdleGapSeconds: 12, FirstUs: []*float64{&a, nil, &b}, FirstLost: 1,
			FirstMedianUs: 2000, FirstMaxUs: 2500, SteadyP50Us: 55.5, SteadySamples: 12}}
}

func latFile(ls ...LatencyResult) *Results {
	return &Results{SchemaVersion: SchemaVersion, RunID: "r1", Config: ConfigSummary{ExpectedPath: PathBaseline}, Latency: ls}
}

func TestLatencyRoundTripAndOldFiles(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(filepath.Join(dir, "results.json"), *latFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.PutLatency(idleLat(PathBaseline)); err != nil {
		t.Fatal(err)
	}
	if err := w.PutLatency(firstLat(PathBaseline)); err != nil {
		t.Fatal(err)
	}
	again := idleLat(PathBaseline)
	again.P50Us = 21
	if err := w.PutLatency(again); err != nil { // replaces, same id and path
		t.Fatal(err)
	}
	snap := w.Snapshot()
	snap.Latency[1].First.FirstUs[0] = nil // a snapshot is a copy
	r, err := Load(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Latency) != 2 || r.Latency[0].P50Us != 21 || r.Latency[1].First.FirstUs[0] == nil || *r.Latency[1].First.FirstUs[0] != 1500 {
		t.Fatalf("loaded %+v", r.Latency)
	}
	// A file written before latency existed has no "latency" key and loads.
	old := latFile()
	old.Latency = nil
	b, _ := json.Marshal(old)
	if strings.Contains(string(b), `"latency"`) {
		t.Fatal("an empty latency list is written")
	}
	if _, err := Decode(b); err != nil {
		t.Fatalf("old file: %v", err)
	}
}

func TestLatencyValidation(t *testing.T) {
	bad := idleLat(PathBaseline)
	bad.P99Us = 5000 // above p99.9
	neg := idleLat(PathASAP2)
	neg.Samples = -1
	unknown := idleLat("")
	unknown.Kind = "jitter"
	f := firstLat(PathASAP2)
	f.First.FirstLost = 4
	err := Validate(latFile(bad, neg, unknown, f, idleLat(PathBaseline)))
	for _, want := range []string{
		"latency[0]: round trips out of order: min 15.058 p50 20.317 p99 5000 p99.9 1833.17",
		"latency[1]: counts must be >= 0",
		`latency[2].kind: must be ping-pong, under-load or first-packet, got "jitter"`,
		`latency[2].path: must be asap2 or baseline, got ""`,
		"latency[3].first_packet: flows 3, 3 first round trips, 4 lost",
		`latency[4]: latency profile "lat-idle" path baseline duplicates latency[0]`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant %q", err, want)
		}
	}
	// A failed profile's numbers are not judged.
	failed := idleLat(PathBaseline)
	failed.P99Us, failed.Error = 5000, "sockperf: No messages were received"
	if err := Validate(latFile(failed)); err != nil {
		t.Errorf("failed profile: %v", err)
	}
}

func TestLatencyThresholds(t *testing.T) {
	failed := idleLat(PathASAP2)
	failed.Error = "guest b: sockperf is not installed"
	files := []*Results{latFile(idleLat(PathBaseline), firstLat(PathBaseline), failed)}
	rules := []ThresholdRule{
		{Name: "p99 ok", Profile: LatencyIdleID, Path: "baseline", Metric: MetricLatencyP99, Op: "<=", Value: 200},
		{Name: "p99.9 bad", Profile: LatencyIdleID, Path: "baseline", Metric: MetricLatencyP999, Op: "<=", Value: 1000},
		{Name: "asap2 failed", Profile: LatencyIdleID, Path: "asap2", Metric: MetricLatencyP50, Op: "<=", Value: 100},
		{Name: "missing", Profile: LatencyLoadID, Path: "baseline", Metric: MetricLatencyP99, Op: "<=", Value: 100},
		{Name: "first ratio", Profile: LatencyFirstID, Path: "baseline", Metric: MetricFirstPacketRatio, Op: "<=", Value: 10},
		{Name: "first max", Profile: LatencyFirstID, Path: "baseline", Metric: MetricFirstPacketMax, Op: "<=", Value: 3000},
		{Name: "wrong kind", Profile: LatencyFirstID, Path: "baseline", Metric: MetricLatencyP99, Op: "<=", Value: 3000},
		{Name: "zero", Profile: LatencyIdleID, Path: "baseline", Metric: MetricLatencyP99, Op: "<=", Value: 0},
	}
	got := EvaluateThresholds(rules, files...)
	want := []struct {
		pass   bool
		reason string
	}{
		{true, "latency_p99_us 144 µs (53272 round trips) meets <= 200 µs"},
		{false, "latency_p99_9_us 1.83 ms (53272 round trips) violates <= 1.00 ms"},
		{false, "latency profile lat-idle asap2 has no result: guest b: sockperf is not installed"},
		{false, "no baseline latency result for profile lat-load"},
		{false, "first-packet 36.04× the steady state (2.00 ms / 55.5 µs) violates <= 10×"},
		{true, "first-packet max 2.50 ms over 2 flows meets <= 3.00 ms"},
		{false, "latency_p99_us is a sockperf metric; profile lat-first is first-packet"},
		{false, "must be > 0 for latency_p99_us (microseconds, round trip)"},
	}
	for i, w := range want {
		g := got[i]
		if g.Pass != w.pass || !strings.Contains(g.Reason, w.reason) {
			t.Errorf("%s: pass %v reason %q\nwant pass %v reason %q", rules[i].Name, g.Pass, g.Reason, w.pass, w.reason)
		}
	}
	if err := ValidateRule(rules[0]); err != nil {
		t.Errorf("latency rule refused: %v", err)
	}
}

func TestFormatMicros(t *testing.T) {
	for v, want := range map[float64]string{18.25: "18.2 µs", 143.688: "144 µs", 1833.17: "1.83 ms", 11031.691: "11.0 ms"} {
		if got := FormatMicros(v); got != want {
			t.Errorf("FormatMicros(%v) = %q, want %q", v, got, want)
		}
	}
}
