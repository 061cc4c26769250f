package report

import (
	"math"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// testdata/lab-baseline-results.json is the results file of the baseline
// perf run of `make lab` on 2026-12-02 (lab/harness.yaml: 4 profiles, 5 s,
// 2 repeats, cv_limit_percent 25, threshold lab-tcp-1-stream-floor). Its
// numbers are real lab measurements; these tests exercise repeats, spread
// and thresholds on them.
func loadLabBaseline(t *testing.T) *results.Results {
	t.Helper()
	r, err := results.Load("testdata/lab-baseline-results.json")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestLabRepeatsSummary(t *testing.T) {
	r := loadLabBaseline(t)
	var p *results.ProfileResult
	for i := range r.Profiles {
		if r.Profiles[i].ID == "tcp-p15" {
			p = &r.Profiles[i]
		}
	}
	if p == nil {
		t.Fatal("no tcp-p15 in the lab results")
	}
	// The two repeats delivered 1862.9 and 1587.8 Mbit/s.
	d := p.Summary.Delivered
	if p.Summary.Runs != 2 || d.N != 2 {
		t.Fatalf("runs %d, n %d: want 2 repeats", p.Summary.Runs, d.N)
	}
	if math.Abs(d.Median-(d.Min+d.Max)/2) > 1 || d.Min >= d.Max {
		t.Fatalf("median %.0f of two repeats must be their mean (%.0f..%.0f)", d.Median, d.Min, d.Max)
	}
	if d.Min < 1.58e9 || d.Max > 1.87e9 {
		t.Fatalf("min–max %.3g–%.3g, want 1.59e9–1.86e9 from the recorded runs", d.Min, d.Max)
	}
	if math.Abs(d.CVPercent-11.27) > 0.05 {
		t.Fatalf("CV %.2f%%, want 11.27%% (sample standard deviation / mean)", d.CVPercent)
	}
	if p.Summary.Unstable {
		t.Fatalf("CV 11.3%% is within the run's limit of 25%%: %s", p.Summary.UnstableReason)
	}
	// The same runs under a stricter limit are unstable, with the reason.
	q := *p
	results.Summarize(&q, 10)
	if !q.Summary.Unstable || !strings.Contains(q.Summary.UnstableReason, "11.3") {
		t.Fatalf("limit 10%%: unstable=%v (%s), want unstable naming CV 11.3%%", q.Summary.Unstable, q.Summary.UnstableReason)
	}
}

func TestLabThresholds(t *testing.T) {
	r := loadLabBaseline(t)
	if len(r.Thresholds) != 1 || !r.Thresholds[0].Pass || r.Thresholds[0].Name != "lab-tcp-1-stream-floor" {
		t.Fatalf("recorded thresholds %+v: want lab-tcp-1-stream-floor passed", r.Thresholds)
	}
	set, err := NewSet(r)
	if err != nil {
		t.Fatal(err)
	}
	got := results.EvaluateThresholds([]results.ThresholdRule{
		{Name: "floor", Profile: "tcp-p1", Path: "baseline", Metric: results.MetricDelivered, Op: ">=", Value: 20e6},
		{Name: "line-rate", Profile: "tcp-p15", Path: "baseline", Metric: results.MetricDelivered, Op: ">=", Value: 10e9},
		{Name: "udp-loss", Profile: "udp-500m-p1-l700", Path: "baseline", Metric: results.MetricLoss, Op: "<=", Value: 1},
		{Name: "asap2-missing", Profile: "tcp-p1", Path: "asap2", Metric: results.MetricDelivered, Op: ">=", Value: 1e9},
	}, set.Files...)
	want := map[string]bool{"floor": true, "line-rate": false, "udp-loss": false, "asap2-missing": false}
	for _, g := range got {
		if g.Pass != want[g.Name] {
			t.Errorf("%s: pass=%v, want %v (%s)", g.Name, g.Pass, want[g.Name], g.Reason)
		}
		if g.Reason == "" {
			t.Errorf("%s: no reason", g.Name)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d results for %d rules", len(got), len(want))
	}
}
