package results

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testdata/lab-baseline-results.json is the results file of the baseline
// perf run of `make lab` on 2026-12-02 (lab/harness.yaml: 4 profiles, 5 s,
// 2 repeats, cv_limit_percent 25, threshold lab-tcp-1-stream-floor). Its
// numbers are real lab measurements; these tests exercise repeats, spread
// and thresholds on them.
func loadLabBaseline(t *testing.T) *Results {
	t.Helper()
	r, err := Load("testdata/lab-baseline-results.json")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestLabRepeatsSummary(t *testing.T) {
	r := loadLabBaseline(t)
	var p *ProfileResult
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
	Summarize(&q, 10)
	if !q.Summary.Unstable || !strings.Contains(q.Summary.UnstableReason, "11.3") {
		t.Fatalf("limit 10%%: unstable=%v (%s), want unstable naming CV 11.3%%", q.Summary.Unstable, q.Summary.UnstableReason)
	}
}

func TestLabThresholds(t *testing.T) {
	r := loadLabBaseline(t)
	if len(r.Thresholds) != 1 || !r.Thresholds[0].Pass || r.Thresholds[0].Name != "lab-tcp-1-stream-floor" {
		t.Fatalf("recorded thresholds %+v: want lab-tcp-1-stream-floor passed", r.Thresholds)
	}
	got := EvaluateThresholds([]ThresholdRule{
		{Name: "floor", Profile: "tcp-p1", Path: "baseline", Metric: MetricDelivered, Op: ">=", Value: 20e6},
		{Name: "line-rate", Profile: "tcp-p15", Path: "baseline", Metric: MetricDelivered, Op: ">=", Value: 10e9},
		{Name: "udp-loss", Profile: "udp-500m-p1-l700", Path: "baseline", Metric: MetricLoss, Op: "<=", Value: 1},
		{Name: "asap2-missing", Profile: "tcp-p1", Path: "asap2", Metric: MetricDelivered, Op: ">=", Value: 1e9},
	}, r)
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

// A killed run keeps everything it finished: after every PutProfile the
// file on disk is complete, valid and holds every profile so far; no
// temporary file is left behind.
func TestWriterFileCompleteAfterEveryProfile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "json")
	src := loadLabBaseline(t) // 4 profiles, 2 repeats each
	init := *src
	init.Profiles, init.FinishedAt = nil, nil
	w, err := NewWriter(file, init)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Load(file); err != nil || len(r.Profiles) != 0 || r.FinishedAt != nil {
		t.Fatalf("initial file: %v, %+v", err, r)
	}
	for i, p := range src.Profiles {
		if err := w.PutProfile(p); err != nil {
			t.Fatal(err)
		}
		r, err := Load(file)
		if err != nil {
			t.Fatalf("after profile %d: %v", i, err)
		}
		if len(r.Profiles) != i+1 || r.Profiles[i].ID != p.ID {
			t.Fatalf("after profile %d: file has %d profiles", i, len(r.Profiles))
		}
	}
	// Re-putting a profile replaces it.
	p := src.Profiles[0]
	p.Runs = append(p.Runs, Run{Repeat: 3, OfferedBps: 15e9, DeliveredBps: 15e9})
	if err := w.PutProfile(p); err != nil {
		t.Fatal(err)
	}
	if err := w.Update(func(r *Results) {
		r.Timings = append(r.Timings, Timing{Phase: PhaseTeardown, Seconds: 1.5})
		r.Errors = append(r.Errors, "port p1: still bound")
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	r, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Profiles) != len(src.Profiles) || r.Profiles[0].Summary.Delivered.N != 3 {
		t.Errorf("replace failed: %d profiles, first has %d runs", len(r.Profiles), r.Profiles[0].Summary.Delivered.N)
	}
	last := r.Timings[len(r.Timings)-1]
	if last.Phase != PhaseTeardown || last.Seconds != 1.5 || r.Errors[0] != "port p1: still bound" || r.FinishedAt == nil {
		t.Errorf("timing/error/finish not recorded: %+v %q %v", last, r.Errors, r.FinishedAt)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("leftover files: %v", names)
	}
	// Snapshot is a deep copy.
	snap := w.Snapshot()
	snap.Profiles[0].Runs[0].DeliveredBps = 1
	if w.Snapshot().Profiles[0].Runs[0].DeliveredBps == 1 {
		t.Error("Snapshot shares memory with the writer")
	}
}

// Interval statistics on a public veth series (iperf3 -i 1 seconds 81-99 of a 100 s TCP run
// through a veth into OVS, the series report's seed_test.go charts): the 100-second average
// hides a 193 Mbit/s second.
func TestIntervalStatsVethSeries(t *testing.T) {
	mbps := []float64{232, 251, 237, 246, 204, 235, 241, 265, 239, 234, 238, 243, 272, 240, 240, 193, 217, 242, 225}
	iv := make([]Interval, len(mbps))
	for i, v := range mbps {
		iv[i] = Interval{Start: 81 + float64(i), End: 82 + float64(i), Bps: v * 1e6}
	}
	st := IntervalStatsOf(iv)
	if st.Count != 19 || st.MinBps != 193e6 || st.MaxBps != 272e6 || st.MedianBps != 239e6 {
		t.Errorf("got %+v", st)
	}
	if st.Worst.Start != 96 || st.Worst.End != 97 {
		t.Errorf("worst interval %+v, want 96-97 s", st.Worst)
	}
	// A trailing partial interval (iperf3 prints e.g. 100.00-100.01) is not
	// the "worst second".
	iv = append(iv, Interval{Start: 100, End: 100.01, Bps: 1e6})
	if st2 := IntervalStatsOf(iv); st2.MinBps != 193e6 || st2.Count != 19 {
		t.Errorf("partial interval counted: %+v", st2)
	}
	if IntervalStatsOf(nil) != nil {
		t.Error("nil series must give nil stats")
	}
}

// The new keys round-trip through the strict loader, stay out of the JSON
// when empty (the change is additive), and a retry without its reason or
// time is named.
func TestSetupRetriesAndGuardsInResultsJSON(t *testing.T) {
	r := loadLabBaseline(t)
	run := &r.Profiles[3].Runs[0]
	run.Iperf3Guards = "client --connect-timeout 30000; server --rcv-timeout 5000"
	run.SetupRetries = []Retry{{At: time.Date(2026, 12, 2, 16, 0, 40, 0, time.UTC), Reason: "port 5201: unable to read from stream socket: Resource temporarily unavailable"}}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	got := back.Profiles[3].Runs[0]
	if got.Iperf3Guards != run.Iperf3Guards || len(got.SetupRetries) != 1 || !got.SetupRetries[0].At.Equal(run.SetupRetries[0].At) || got.SetupRetries[0].Reason != run.SetupRetries[0].Reason {
		t.Errorf("round trip: %+v", got)
	}
	plain, _ := json.Marshal(loadLabBaseline(t))
	if strings.Contains(string(plain), "setup_retries") || strings.Contains(string(plain), "iperf3_guards") {
		t.Error("empty guards/retries are written: the schema change is not additive")
	}
	run.SetupRetries = []Retry{{Reason: "x"}}
	data, _ = json.Marshal(r)
	if _, err := Decode(data); err == nil || !strings.Contains(err.Error(), "profiles[3].runs[0].setup_retries[0]: must have at and reason") {
		t.Errorf("Decode of a retry without time: %v", err)
	}
}

// A rule on a profile whose every repeat failed fails: a gate never passes on nothing.
func TestThresholdOnFailedRepeats(t *testing.T) {
	r := loadLabBaseline(t) // tcp-p1 is its first profile, two repeats
	r.Profiles[0].Runs[0].Error = "iperf3: unable to connect"
	r.Profiles[0].Runs[1].Error = "iperf3: unable to connect"
	Summarize(&r.Profiles[0], 0)
	got := EvaluateThresholds([]ThresholdRule{{Profile: "tcp-p1", Path: "baseline", Metric: MetricDelivered, Op: ">=", Value: 1}}, r)
	if got[0].Pass || !strings.Contains(got[0].Reason, "no successful repeat (2 failed)") {
		t.Errorf("got %+v", got[0])
	}
}

// A CV rule over a single repeat has nothing to measure (the CV of one
// value is 0): it fails with the reason instead of passing. Over the lab's two
// TCP 1-stream repeats (1262.5368 and 1192.6353 Mbit/s) the CV is 4.026 %: the
// sample standard deviation |a-b|/√2 = 49.43 Mbit/s over the mean 1227.59 Mbit/s,
// worked out by hand, and judged both ways.
func TestThresholdCVNeedsRepeats(t *testing.T) {
	one := loadLabBaseline(t)
	one.Profiles[0].Runs = one.Profiles[0].Runs[:1]
	Summarize(&one.Profiles[0], 0)
	got := EvaluateThresholds([]ThresholdRule{{Profile: "tcp-p1", Path: "baseline", Metric: MetricCV, Op: "<=", Value: 10}}, one)
	if got[0].Pass || got[0].Actual != nil || !strings.Contains(got[0].Reason, "at least 2 successful repeats, got 1") {
		t.Errorf("one repeat: got %+v", got[0])
	}
	two := loadLabBaseline(t)
	Summarize(&two.Profiles[0], 0)
	got = EvaluateThresholds([]ThresholdRule{
		{Profile: "tcp-p1", Path: "baseline", Metric: MetricCV, Op: "<=", Value: 4.03},
		{Profile: "tcp-p1", Path: "baseline", Metric: MetricCV, Op: "<=", Value: 4.02},
	}, two)
	if !got[0].Pass || got[1].Pass || got[0].Actual == nil || math.Abs(*got[0].Actual-4.026427) > 1e-5 {
		t.Errorf("CV over 2 repeats, want 4.026427 %%: %+v / %+v", got[0], got[1])
	}
}
