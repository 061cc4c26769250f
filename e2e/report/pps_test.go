package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// ppsFile is a baseline run with one small-packet profile (two repeats
// with packet rates) and an NDR search: unlimited trial lost 4.8 %, a probe
// at its delivered rate passed, verification passed.
func ppsFile() *results.Results {
	p := results.ProfileResult{ID: "udp-b0-p1-l64", Name: "UDP unlimited 1 stream, 64 B (-P1 -l64)", Protocol: "udp", Streams: 1, LengthBytes: 64, Path: results.PathBaseline,
		Runs: []results.Run{
			{Repeat: 1, OfferedBps: 78.8e6, DeliveredBps: 75e6, LossPercent: 4.82, Packets: &results.PacketRates{LengthBytes: 64, Sent: 769480, Arrived: 732350, Lost: 37124, OfferedPps: 153895, DeliveredPps: 146467, LossPercent: 4.82, Basis: "bytes / 64 B datagrams (iperf 3.12 < 3.18 counts datagrams it failed to send)"}},
			{Repeat: 2, OfferedBps: 80e6, DeliveredBps: 76e6, LossPercent: 5, Packets: &results.PacketRates{LengthBytes: 64, OfferedPps: 156000, DeliveredPps: 148000, LossPercent: 5}},
		}}
	results.Summarize(&p, 0)
	return &results.Results{SchemaVersion: 1, RunID: "r1", Config: results.ConfigSummary{ExpectedPath: results.PathBaseline},
		Profiles: []results.ProfileResult{p},
		Searches: []results.SearchResult{{
			ID: "ndr-p1-l64", Kind: results.SearchNDR, Path: results.PathBaseline, Streams: 1, LengthBytes: 64,
			TrialSeconds: 2, MaxTrials: 4, ResolutionPercent: 1, Found: true, RateBps: 75e6, RatePps: 75e6 / 512,
			UpperBps: 78.8e6, FinalLowerBps: 75e6, FinalUpperBps: 75.5e6, StopReason: "resolution reached; verified by trial 3",
			Iperf3Version: "iperf 3.12", PacketBasis: "bytes / 64 B datagrams",
			Trials: []results.SearchTrial{
				{N: 1, Phase: "unlimited", OfferedBps: 78.8e6, DeliveredBps: 75e6, LossPercent: 4.82, Reason: "loss 4.82% above 0%"},
				{N: 2, Phase: "search", RequestedBps: 75e6, OfferedBps: 75e6, DeliveredBps: 75e6, OfferedPps: 146484, DeliveredPps: 146484, Pass: true, Reason: "loss 0% within 0%"},
				{N: 3, Phase: "verify", RequestedBps: 75e6, OfferedBps: 75e6, DeliveredBps: 75e6, Pass: true, Reason: "loss 0% within 0%"},
			},
		}}}
}

func TestMarkdownShowsPacketsAndSearch(t *testing.T) {
	s, err := NewSet(ppsFile())
	if err != nil {
		t.Fatal(err)
	}
	md := Markdown(s, Options{})
	for _, want := range []string{
		"## Small packets: packets per second",
		"| UDP unlimited 1 stream, 64 B (-P1 -l64) | Baseline | 64 B | 154.9 kpps (153.9 kpps–156.0 kpps, n=2) | 147.2 kpps (146.5 kpps–148.0 kpps, n=2) | 4.9% | 79.4 Mbit/s / 75.5 Mbit/s |",
		"bytes / 64 B datagrams (iperf 3.12 < 3.18",
		"## Zero-loss search (RFC 2544 throughput, ETSI GS NFV-TST 009)",
		"the TCP rows are iperf3's goodput",
		"| NDR (loss ≤ 0%), 1 stream, 64 B | Baseline | 75.0 Mbit/s | 146.5 kpps | 3 of 4 × 2s | 0 bit/s – 78.8 Mbit/s → 75.0 Mbit/s – 75.5 Mbit/s |",
		"### Trials: NDR (loss ≤ 0%), 1 stream, 64 B, Baseline",
		"| 1 | unlimited | unlimited (-b 0) | 78.8 Mbit/s | 75.0 Mbit/s | — | — | 4.8% | fail |",
		"| 3 | verify | 75.0 Mbit/s |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(md)
	}
}

func TestSearchNotFoundIsNoneNotZero(t *testing.T) {
	f := ppsFile()
	f.Searches[0].Found, f.Searches[0].RateBps, f.Searches[0].RatePps = false, 0, 0
	f.Searches[0].StopReason = "no rate passed"
	s, _ := NewSet(f)
	md := Markdown(s, Options{})
	if !strings.Contains(md, "| Baseline | none found | — |") || strings.Contains(md, "| Baseline | 0 bit/s") {
		t.Errorf("a search that found nothing must read none found:\n%s", md)
	}
	h := string(HTML(s, Options{}))
	if strings.Contains(h, "stroke-dasharray=\"5 4\"") {
		t.Error("the chart draws a found-rate line for a search that found none")
	}
}

func TestHTMLHasTheTrialsChart(t *testing.T) {
	s, _ := NewSet(ppsFile())
	h := string(HTML(s, Options{}))
	for _, want := range []string{"Small packets: packets per second", "<svg class=\"chart\"", "trials of NDR", "trial 3 (verify)", "NDR 75.0 Mbit/s"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	// one green dot per passing trial, one red per failing one
	if g, r := strings.Count(h, `r="5" fill="#1a7f64"`), strings.Count(h, `r="5" fill="#c53030"`); g != 2 || r != 1 {
		t.Errorf("%d pass and %d fail dots, want 2 and 1", g, r)
	}
}

func TestNoPacketSectionsWithoutData(t *testing.T) {
	f := ppsFile()
	f.Searches = nil
	for i := range f.Profiles {
		for j := range f.Profiles[i].Runs {
			f.Profiles[i].Runs[j].Packets = nil
		}
		results.Summarize(&f.Profiles[i], 0)
	}
	s, _ := NewSet(f)
	md := Markdown(s, Options{})
	if strings.Contains(md, "packets per second") || strings.Contains(md, "Zero-loss") {
		t.Errorf("sections without data:\n%s", md)
	}
}

func TestCompareGatesSearches(t *testing.T) {
	acc, _ := NewSet(ppsFile())
	worse := ppsFile()
	worse.Searches[0].RateBps = 60e6
	cand, _ := NewSet(worse)
	c := Compare(acc, cand, CompareOptions{TolerancePercent: 5, LossTolerancePoints: 1})
	var row *DeltaRow
	for i := range c.Rows {
		if c.Rows[i].ID == "ndr-p1-l64" {
			row = &c.Rows[i]
		}
	}
	if row == nil || !row.Regression || row.Status != DeltaRegression || !c.Failed() {
		t.Fatalf("NDR 75 → 60 Mbit/s not a regression: %+v", row)
	}
	none := ppsFile()
	none.Searches[0].Found, none.Searches[0].RateBps = false, 0
	cand2, _ := NewSet(none)
	if c := Compare(acc, cand2, CompareOptions{TolerancePercent: 5}); !c.Failed() {
		t.Error("a candidate that found no NDR passed the gate")
	}
	same, _ := NewSet(ppsFile())
	if c := Compare(acc, same, CompareOptions{TolerancePercent: 5}); c.Failed() {
		t.Errorf("same run failed the gate: %s", c.Markdown())
	}
}

// testdata/lab-pps-results.json is the results file of a lab run on
// 2026-12-03 (lab/harness.yaml with output_dir moved, `make e2e
// LABELS=pps`: udp-b0-p1-l64 2 × 5 s and the NDR search, 4 trials of 2 s;
// software path, iperf3 3.12 in the guests). Real numbers: the report
// must show them as measured.
func TestLabPPSResultsRender(t *testing.T) {
	r, err := results.Load("testdata/lab-pps-results.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Searches) != 1 || !r.Searches[0].Found || len(r.Searches[0].Trials) != 4 {
		t.Fatalf("searches %+v", r.Searches)
	}
	sr := r.Searches[0]
	v := sr.Trials[3]
	if v.Phase != "verify" || !v.Pass || v.RequestedBps != sr.RateBps || v.LossPercent != 0 || sr.RatePps != sr.RateBps/512 {
		t.Errorf("verified rate %v from %+v", sr.RateBps, v)
	}
	// The search's rate lies between the last pass and the first fail.
	if sr.RateBps != sr.FinalLowerBps || sr.FinalUpperBps <= sr.RateBps || sr.Trials[1].Pass || !sr.Trials[2].Pass {
		t.Errorf("bounds %v..%v, rate %v", sr.FinalLowerBps, sr.FinalUpperBps, sr.RateBps)
	}
	s, _ := NewSet(r)
	md := Markdown(s, Options{})
	for _, want := range []string{
		"| NDR (loss ≤ 0%), 1 stream, 64 B | Baseline | 5.98 Mbit/s | 11.7 kpps | 4 of 4 × 2s |",
		"| 4 | verify | 5.98 Mbit/s | 5.98 Mbit/s | 5.94 Mbit/s | 11.7 kpps | 11.6 kpps | 0% | pass |",
		"| UDP unlimited 1 stream, 64 B (-P1 -l64) | Baseline | 64 B | 85.3 kpps (64.1 kpps–106.4 kpps, n=2) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lab report lacks %q", want)
		}
	}
}
