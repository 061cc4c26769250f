package history

import (
	"math"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Real lab results files (copied from e2e/results and e2e/report testdata).
func TestExtractLabResults(t *testing.T) {
	for _, f := range []string{"testdata/lab-baseline-results.json", "testdata/lab-pps-results.json"} {
		r, err := results.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		pts := Extract(r)
		if len(pts) == 0 {
			t.Fatalf("%s: no points", f)
		}
		seen := map[string]bool{}
		for _, p := range pts {
			k := p.Series.Key()
			if seen[k] {
				t.Errorf("%s: series %s twice", f, k)
			}
			seen[k] = true
			if p.RunID != r.RunID {
				t.Errorf("%s: point of run %q", f, p.RunID)
			}
			if p.Lo > p.Hi {
				t.Errorf("%s: %s interval [%g, %g]", f, k, p.Lo, p.Hi)
			}
			if _, err := ParseKey(k); err != nil {
				t.Error(err)
			}
		}
		if !seen["delivered_bps|tcp-p1|"+string(r.Profiles[0].Path)+"|compute1>compute2|unknown|"+r.Config.Mode()] && f == "testdata/lab-baseline-results.json" {
			t.Errorf("%s: no tcp-p1 delivered series among %v", f, seen)
		}
	}
}

func TestVerdictRegression(t *testing.T) {
	m := Metrics[MetricOffloaded]
	var pts []Point
	for _, v := range []float64{1, 1, 1, 1, 0} {
		pts = append(pts, Point{Value: v, Lo: v, Hi: v})
	}
	cp, ok := Open(pts, m, Options{})
	if !ok || cp.Index != 4 || !cp.Regression {
		t.Fatalf("offloaded → software: got %+v %v", cp, ok)
	}
}

func TestInconclusiveNotRegression(t *testing.T) {
	m := Metrics[MetricDelivered]
	var pts []Point
	for i := range 20 {
		v := 10.0
		lo, hi := 9.9, 10.1
		if i >= 15 {
			v, lo, hi = 5, 2, 8 // a drop measured with an interval wider than 5 %
		}
		pts = append(pts, Point{Value: v + float64(i%2)*0.01, Lo: lo, Hi: hi})
	}
	if cps := Detect(pts, m, Options{}); len(cps) != 0 {
		t.Fatalf("inconclusive points made change points: %+v", cps)
	}
	for i := 15; i < 20; i++ {
		pts[i].Lo, pts[i].Hi = 4.9, 5.1
	}
	cp, ok := Open(pts, m, Options{})
	if !ok || cp.Index != 15 {
		t.Fatalf("a conclusive 50 %% drop: got %+v %v", cp, ok)
	}
}

func FuzzParseKey(f *testing.F) {
	f.Add("delivered_bps|tcp-p1|asap2|a>b|ovs|security groups on")
	f.Add("||||||")
	f.Fuzz(func(t *testing.T, k string) {
		s, err := ParseKey(k)
		if err != nil {
			return
		}
		if s.Key() != k {
			t.Fatalf("ParseKey(%q).Key() = %q", k, s.Key())
		}
	})
}

func FuzzExtract(f *testing.F) {
	f.Add([]byte(`{"schema_version":2,"run_id":"r","started_at":"2026-01-01T00:00:00Z","config":{},"environment":{},"profiles":[],"offload":[],"timings":[],"thresholds":[],"errors":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := results.Decode(data)
		if err != nil {
			return
		}
		for _, p := range Extract(r) {
			if p.RunID != r.RunID {
				t.Fatalf("point of run %q from run %q", p.RunID, r.RunID)
			}
			if _, err := ParseKey(p.Series.Key()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// pooledP against a numerical integration of Student's t density (t =
// 2.62829, df = 10; Simpson's rule from t to 400): x = 1..5, y = 3..9.
func TestPooledP(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5}
	y := []float64{3, 4, 5, 6, 7, 8, 9}
	mx, sx := meanSD(x)
	my, sy := meanSD(y)
	if p := pooledP(mx, sx, len(x), my, sy, len(y)); math.Abs(p-0.0252362) > 1e-6 {
		t.Fatalf("pooledP = %g, want 0.0252362", p)
	}
	if p := pooledP(mx, sx, 1, my, sy, len(y)); p != 1 {
		t.Fatalf("pooledP of a 1-point segment = %g, want 1 (undefined)", p)
	}
}

// A run's build names its label and its id, and carries the commit of the
// harness that measured it (none when the file says "unknown").
func TestRunOfBuildIdentity(t *testing.T) {
	r := &results.Results{RunID: "r1", Config: results.ConfigSummary{BuildLabel: "MOSK 25.2", BuildID: "pipeline-4711"},
		Environment: results.Environment{Harness: &results.HarnessBuild{Version: "(devel)", Revision: "1d40259", Source: results.HarnessSourceVCS}}}
	run := RunOf(r)
	if run.BuildID != "pipeline-4711" || run.HarnessCommit != "1d40259" || run.BuildName() != "MOSK 25.2 (pipeline-4711)" {
		t.Errorf("got %+v, name %q", run, run.BuildName())
	}
	r.Config.BuildLabel, r.Environment.Harness.Revision = "", results.Unknown
	if run := RunOf(r); run.BuildName() != "pipeline-4711" || run.HarnessCommit != "" {
		t.Errorf("got %+v, name %q", run, run.BuildName())
	}
}

// The aging profile's times are series per hypervisor, and only from a
// measured result: a host that did not age out, or a restart of another
// 5-tuple, gives no point.
func TestExtractAging(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	r := &results.Results{RunID: "r1", Config: results.ConfigSummary{ExpectedPath: results.PathASAP2}}
	r.Aging = &results.AgingResult{Path: results.PathASAP2, SameTuple: true, Verdict: results.AgingMeasured, Hosts: []results.AgingHost{
		{Hypervisor: "cmp-1", AgedOut: true, ReinstallMs: v(120), ReoffloadMs: v(300)},
		{Hypervisor: "cmp-2", AgedOut: true, Software: true, ReinstallMs: v(150)},
	}}
	got := map[string]float64{}
	for _, p := range Extract(r) {
		if p.Series.Profile == results.AgingProfileID {
			got[p.Series.Metric+" "+p.Series.Node] = p.Value
		}
	}
	if len(got) != 3 || got["reoffload_ms cmp-1"] != 300 || got["reinstall_ms cmp-2"] != 150 {
		t.Errorf("points %v", got)
	}
	r.Aging.Verdict = results.AgingNotMeasured
	for _, p := range Extract(r) {
		if p.Series.Profile == results.AgingProfileID {
			t.Errorf("a point of an aging result that measured nothing: %+v", p)
		}
	}
}
