package report

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The baseline numbers are those of the recorded sockperf 3.7 sample
// (e2e/sockperf/testdata/v3.7-pp-udp-m64-t2.txt); the ASAP² side is a
// test input, not a measurement.
func latencySet(t *testing.T) (*Set, *results.Results, *results.Results) {
	t.Helper()
	a, b := seedResults(results.PathASAP2), seedResults(results.PathBaseline)
	idle := func(p results.Path, scale float64) results.LatencyResult {
		return results.LatencyResult{ID: results.LatencyIdleID, Name: "Latency, idle (sockperf ping-pong)", Kind: results.LatencyPingPong, Path: p,
			Tool: "sockperf 3.7-no.git", Protocol: "udp", MessageBytes: 64, DurationSeconds: 2, Samples: 53272,
			P50Us: 20.317 * scale, P99Us: 143.688 * scale, P999Us: 1833.170 * scale, MaxUs: 11031.691 * scale, MinUs: 15.058 * scale, AvgUs: 28.987 * scale}
	}
	load := idle(results.PathBaseline, 3)
	load.ID, load.Kind, load.Name = results.LatencyLoadID, results.LatencyUnderLoad, "Latency under load"
	load.Load = &results.LatencyLoad{Profile: "tcp-p1", DurationSeconds: 16, SettleSeconds: 3, DeliveredBps: 9.1e9}
	failed := results.LatencyResult{ID: results.LatencyLoadID, Name: "Latency under load", Kind: results.LatencyUnderLoad, Path: results.PathASAP2,
		MessageBytes: 64, DurationSeconds: 10, Error: "guest b: sockperf is not installed (install the package \"sockperf\")"}
	m := 900.0
	first := results.LatencyResult{ID: results.LatencyFirstID, Name: "First-packet latency", Kind: results.LatencyFirstPacket, Path: results.PathBaseline,
		Protocol: "icmp", MessageBytes: 56, Samples: 1,
		First: &results.FirstPacket{Flows: 2, IdleGapSeconds: 12, FirstUs: []*float64{&m, nil}, FirstLost: 1, FirstMedianUs: 900, FirstMaxUs: 900, SteadyP50Us: 55.5, SteadySamples: 8}}
	a.Latency = []results.LatencyResult{idle(results.PathASAP2, 0.5), failed}
	b.Latency = []results.LatencyResult{first, load, idle(results.PathBaseline, 1)}
	s, err := NewSet(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return s, a, b
}

func TestLatencyMarkdown(t *testing.T) {
	s, _, _ := latencySet(t)
	md := Markdown(s, Options{})
	for _, want := range []string{
		"## Latency\n",
		"| Profile | Path | p50 µs | p99 µs | p99.9 µs | max µs | Samples | Message size | Duration |",
		// catalogue order, ASAP² first within a profile
		"| Latency, idle (sockperf ping-pong) | ASAP² | 10.2 | 71.8 | 917 | 5516 | 53272 | 64 B | 2 s |\n| Latency, idle (sockperf ping-pong) | Baseline | 20.3 | 144 | 1833 | 11032 | 53272 | 64 B | 2 s |\n| Latency under load | ASAP² | — | — | — | — | failed | 64 B | 10 s |\n| Latency under load | Baseline | 61.0 | 431 | 5500 | 33095 |",
		"### First packet of a new flow",
		"| First-packet latency | Baseline | 900 | 900 | 55.5 | 16.2× | 2 (1) | 12 s |",
		"- lat-load (Baseline): measured while iperf3 tcp-p1 delivered 9.10 Gbit/s (load of 16 s, sockperf after 3 s)",
		"- lat-load (ASAP²) failed: guest b: sockperf is not installed",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	// A set without latency renders no section (files from before).
	plain, err := NewSet(seedResults(results.PathASAP2), seedResults(results.PathBaseline))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(Markdown(plain, Options{}), "Latency") || strings.Contains(string(HTML(plain, Options{})), "chart latency") {
		t.Error("a set without latency shows a latency section")
	}
}

var latencyRectRE = regexp.MustCompile(`<rect class="bar latency-p50" x="[0-9.]+" y="([0-9.]+)" width="[0-9.]+" height="([0-9.]+)" fill="(#[0-9a-f]+)"><title>([^<]*)</title>`)

func TestLatencyChart(t *testing.T) {
	s, _, _ := latencySet(t)
	h := string(HTML(s, Options{}))
	if strings.Count(h, `<svg class="chart latency"`) != 1 {
		t.Fatal("want one latency chart")
	}
	bars := latencyRectRE.FindAllStringSubmatch(h, -1)
	// idle ASAP², idle baseline, load baseline, first baseline: the failed run has no bar.
	if len(bars) != 4 {
		t.Fatalf("%d bars: %v", len(bars), bars)
	}
	height := map[string]float64{}
	for _, b := range bars {
		v, _ := strconv.ParseFloat(b[2], 64)
		height[strings.SplitN(b[4], ":", 2)[0]] = v
		if strings.Contains(b[4], "ASAP²") != (b[3] == colASAP2) {
			t.Errorf("bar %q coloured %s", b[4], b[3])
		}
	}
	// Log axis: twice the p50 is a taller bar, by the same step per doubling.
	ia, ib, il := height["lat-idle ASAP²"], height["lat-idle Baseline"], height["lat-load Baseline"]
	if !(ia < ib && ib < il) {
		t.Errorf("bar heights asap2 %v baseline %v load %v: want growing with p50 10.2 < 20.3 < 61.0 µs", ia, ib, il)
	}
	if d1, d2 := ib-ia, il-ib; d2 < d1*1.5 || d2 > d1*1.7 { // log2(3) = 1.585 doublings
		t.Errorf("not a log axis: ×2 adds %v, ×3 adds %v", d1, d2)
	}
	if !strings.Contains(h, "First packet of a new flow") || !strings.Contains(h, "<td>16.2×</td>") {
		t.Error("first-packet table missing from the HTML")
	}
}

func TestCompareLatency(t *testing.T) {
	_, _, b := latencySet(t)
	acc, err := NewSet(b)
	if err != nil {
		t.Fatal(err)
	}
	worse := *b
	worse.RunID = "cand"
	worse.Latency = append([]results.LatencyResult(nil), b.Latency...)
	worse.Latency[2].P99Us *= 1.4     // idle baseline p99 +40 %
	worse.Latency = worse.Latency[1:] // first-packet missing
	cand, err := NewSet(&worse)
	if err != nil {
		t.Fatal(err)
	}
	c := Compare(acc, cand, CompareOptions{TolerancePercent: 5, LossTolerancePoints: 1, LatencyTolerancePercent: 25})
	got := map[string]LatencyDelta{}
	for _, d := range c.Latency {
		got[d.ID] = d
	}
	if d := got[results.LatencyIdleID]; d.Status != DeltaRegression || !d.Regression || d.Metric != results.MetricLatencyP99 {
		t.Errorf("idle %+v", d)
	}
	if d := got[results.LatencyFirstID]; d.Status != DeltaMissing || !d.Regression {
		t.Errorf("first %+v", d)
	}
	if d := got[results.LatencyLoadID]; d.Status != DeltaOK || d.Regression {
		t.Errorf("load %+v", d)
	}
	if !c.Failed() || !strings.Contains(c.Markdown(), "| lat-idle | Baseline | latency_p99_us | 144 µs | 201 µs | +40.0% | REGRESSION |") {
		t.Errorf("gate:\n%s", c.Markdown())
	}
	c = Compare(acc, cand, CompareOptions{TolerancePercent: 5, LatencyTolerancePercent: 50, AllowMissing: true})
	for _, d := range c.Latency {
		if d.Regression {
			t.Errorf("within 50%% and missing allowed: %+v", d)
		}
	}
}
