package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummarizePacketsSkipsFailedAndTCP(t *testing.T) {
	p := ProfileResult{ID: "udp-b0-p1-l64", Runs: []Run{
		{Repeat: 1, DeliveredBps: 1, Packets: &PacketRates{OfferedPps: 100, DeliveredPps: 90, LossPercent: 10, Basis: "b1"}},
		{Repeat: 2, Error: "boom", Packets: &PacketRates{OfferedPps: 1e9, DeliveredPps: 1e9}},
		{Repeat: 3, DeliveredBps: 1, Packets: &PacketRates{OfferedPps: 300, DeliveredPps: 270, LossPercent: 10, Basis: "b3"}},
		{Repeat: 4, DeliveredBps: 1}, // no packets (e.g. a file from before)
	}}
	Summarize(&p, 0)
	ps := p.Summary.Packets
	if ps == nil || ps.Delivered.N != 2 || ps.Delivered.Median != 180 || ps.Offered.Max != 300 || ps.Basis != "b1" {
		t.Fatalf("got %+v", ps)
	}
	tcp := ProfileResult{ID: "tcp-p1", Runs: []Run{{Repeat: 1, DeliveredBps: 5}}}
	Summarize(&tcp, 0)
	if tcp.Summary.Packets != nil {
		t.Fatalf("TCP got packet summary %+v", tcp.Summary.Packets)
	}
}

func TestPacketAndSearchThresholds(t *testing.T) {
	p := ProfileResult{ID: "udp-b0-p1-l64", Path: PathBaseline, Runs: []Run{
		{Repeat: 1, DeliveredBps: 1, Packets: &PacketRates{OfferedPps: 150e3, DeliveredPps: 140e3}},
	}}
	Summarize(&p, 0)
	f := &Results{Config: ConfigSummary{ExpectedPath: PathBaseline}, Profiles: []ProfileResult{p},
		Searches: []SearchResult{
			{ID: "ndr-p1-l64", Kind: SearchNDR, Path: PathBaseline, Found: true, RateBps: 50e6, StopReason: "resolution reached"},
			{ID: "pdr-p1-l64", Kind: SearchPDR, Path: PathBaseline, Found: false, StopReason: "no rate passed"},
		}}
	rules := []ThresholdRule{
		{Name: "pps ok", Profile: "udp-b0-p1-l64", Path: "baseline", Metric: MetricDeliveredPps, Op: ">=", Value: 100e3},
		{Name: "pps low", Profile: "udp-b0-p1-l64", Path: "baseline", Metric: MetricDeliveredPps, Op: ">=", Value: 141e3},
		{Name: "offered", Profile: "udp-b0-p1-l64", Path: "baseline", Metric: MetricOfferedPps, Op: "<=", Value: 150e3},
		{Name: "ndr ok", Profile: "ndr-p1-l64", Path: "baseline", Metric: MetricNDR, Op: ">=", Value: 40e6},
		{Name: "ndr low", Profile: "ndr-p1-l64", Path: "baseline", Metric: MetricNDR, Op: ">=", Value: 60e6},
		{Name: "pdr none", Profile: "pdr-p1-l64", Path: "baseline", Metric: MetricPDR, Op: ">=", Value: 1},
		{Name: "kind", Profile: "pdr-p1-l64", Path: "baseline", Metric: MetricNDR, Op: ">=", Value: 1},
		{Name: "missing", Profile: "ndr-p1-l64", Path: "asap2", Metric: MetricNDR, Op: ">=", Value: 1},
		{Name: "tcp", Profile: "tcp-p1", Path: "baseline", Metric: MetricDeliveredPps, Op: ">=", Value: 1},
	}
	want := map[string]bool{"pps ok": true, "offered": true, "ndr ok": true}
	for _, r := range EvaluateThresholds(rules, f) {
		if r.Pass != want[r.Name] {
			t.Errorf("%s: pass %v, want %v (%s)", r.Name, r.Pass, want[r.Name], r.Reason)
		}
		if r.Name == "pdr none" && (r.Actual == nil || *r.Actual != 0 || !strings.Contains(r.Reason, "none found")) {
			t.Errorf("a search that found nothing is rate 0: %+v", r)
		}
		if r.Name == "kind" && !strings.Contains(r.Reason, "PDR search") {
			t.Errorf("kind: %s", r.Reason)
		}
	}
	if msg := RuleValueProblem(MetricNDR, ">=", 0); msg == "" {
		t.Error("ndr_bps >= 0 could never fail")
	}
}

// Files written before the packet fields load unchanged, and files with
// them round-trip through the strict loader.
func TestSearchesRoundTripAndOldFilesLoad(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(filepath.Join(dir, "r.json"), Results{RunID: "x", Config: ConfigSummary{ExpectedPath: PathBaseline}})
	if err != nil {
		t.Fatal(err)
	}
	s := SearchResult{ID: "ndr-p1-l64", Kind: SearchNDR, Path: PathBaseline, Found: true, RateBps: 5e7, RatePps: 5e7 / 512,
		Trials: []SearchTrial{{N: 1, Phase: "unlimited", Pass: false}, {N: 2, Phase: "verify", RequestedBps: 5e7, Pass: true}}}
	if err := w.PutSearch(s); err != nil {
		t.Fatal(err)
	}
	s.RateBps = 6e7
	if err := w.PutSearch(s); err != nil { // same ID and path: replaced
		t.Fatal(err)
	}
	snap := w.Snapshot()
	snap.Searches[0].Trials[0].N = 99
	got, err := Load(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Searches) != 1 || got.Searches[0].RateBps != 6e7 || len(got.Searches[0].Trials) != 2 || got.Searches[0].Trials[0].N != 1 {
		t.Fatalf("got %+v", got.Searches)
	}
	data, _ := os.ReadFile(w.Path())
	var raw map[string]any
	_ = json.Unmarshal(data, &raw)
	if raw["schema_version"].(float64) != SchemaVersion {
		t.Errorf("schema version changed")
	}
}
