// Package history is the nightly series of the harness's runs (issue 37):
// the series model (Series, Metric, Point), the points one results file
// holds (Extract: a single run, a fleet run or its merged shards) and the
// change-point detection over a series (Detect). Pure: no database, no
// files; e2e/history/store keeps the points and tools/history drives both.
//
// The words: Series (metric, profile, path, node or pair, backend,
// port-security mode); Metric (direction, minimum effect, verdict); Point,
// with its repeats' 95 % interval (Inconclusive when wider than the minimum
// effect); Extract (a single run, a fleet, shards); Detect (E-divisive means,
// a pooled t-test at p ≤ 0.01, deterministic); Open (the regression the newest
// point sits in: the last change point of the newest 60 runs, within the
// newest 10); Trend (the offline trend page: regressions on top, one SVG chart
// per series family, change points and builds marked, and for a fleet a
// per-node heat map against the fleet's median). Each measurement family's
// metrics and points are in its own file, registered in families
// (families.go), which Extract ranges over in order.
package history

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Series names one line of the history: one metric of one profile on one
// path, node or pair, network backend and port-security mode.
type Series struct {
	Metric  string `json:"metric"`
	Profile string `json:"profile"`
	Path    string `json:"path"`
	Node    string `json:"node"` // a hypervisor, or a pair "sender>receiver"
	Backend string `json:"backend"`
	Mode    string `json:"mode"` // results.ConfigSummary.Mode()
}

// Key is the series' one-string identity, stored and printed.
// A "|" inside a field is written "/" so that ParseKey reads it back.
func (s Series) Key() string {
	f := []string{s.Metric, s.Profile, s.Path, s.Node, s.Backend, s.Mode}
	for i := range f {
		f[i] = strings.ReplaceAll(f[i], "|", "/")
	}
	return strings.Join(f, "|")
}

// Family is the series without its node: one chart of the trend page.
func (s Series) Family() string {
	return strings.Join([]string{s.Metric, s.Profile, s.Path, s.Backend, s.Mode}, "|")
}

// ParseKey is Key's inverse.
func ParseKey(key string) (Series, error) {
	f := strings.Split(key, "|")
	if len(f) != 6 || f[0] == "" {
		return Series{}, fmt.Errorf("series key %q: want metric|profile|path|node|backend|mode", key)
	}
	return Series{Metric: f[0], Profile: f[1], Path: f[2], Node: f[3], Backend: f[4], Mode: f[5]}, nil
}

// Metric is how a series is judged: which way is better and the smallest
// relative step (MinEffect, 0.05 = 5 %) worth an alert. Verdict metrics hold
// 1 (offloaded) or 0 (not): any fall from 1 to 0 is a regression.
type Metric struct {
	Name         string
	HigherBetter bool
	MinEffect    float64
	// Absolute: MinEffect is in the metric's own unit (loss: percentage
	// points), not relative to the value before the step.
	Absolute bool
	Verdict  bool
}

// Metric names.
const (
	MetricDelivered   = "delivered_bps"
	MetricLoss        = "loss_percent"
	MetricCoresPer10G = "host_cores_per_10gbps"
	MetricOffloaded   = "offloaded"
)

// Metrics are the judged metrics by name.
var Metrics = map[string]Metric{
	MetricDelivered:   {Name: MetricDelivered, HigherBetter: true, MinEffect: 0.05},
	MetricLoss:        {Name: MetricLoss, MinEffect: 0.5, Absolute: true},
	MetricCoresPer10G: {Name: MetricCoresPer10G, MinEffect: 0.10},
	MetricOffloaded:   {Name: MetricOffloaded, HigherBetter: true, Verdict: true},
}

// MetricOf is the metric named, or an error naming the known ones.
func MetricOf(name string) (Metric, error) {
	m, ok := Metrics[name]
	if !ok {
		var names []string
		for n := range Metrics {
			names = append(names, n)
		}
		sort.Strings(names)
		return Metric{}, fmt.Errorf("unknown metric %q (known: %s)", name, strings.Join(names, ", "))
	}
	return m, nil
}

// Run is what identifies one run in the history: its id, when it started
// and the build it measured.
type Run struct {
	ID        string    `json:"run_id"`
	StartedAt time.Time `json:"started_at"`
	Build     string    `json:"build"`
	// BuildID is the run's run.build_id; HarnessCommit the commit of the
	// harness that measured it (its results file's environment.harness);
	// both empty when not recorded.
	BuildID       string `json:"build_id,omitempty"`
	HarnessCommit string `json:"harness_commit,omitempty"`
}

// BuildName names the run's build for the trend page and check's output:
// "MOSK 25.2 rc3 (pipeline-4711)", the label or the id alone, or "".
func (r Run) BuildName() string {
	switch {
	case r.BuildID == "":
		return r.Build
	case r.Build == "":
		return r.BuildID
	}
	return r.Build + " (" + r.BuildID + ")"
}

// Point is one run's value of one series, with the 95 % confidence interval
// of its repeats [Lo, Hi] (equal to Value when there was one repeat or
// none is known) and the number of repeats N.
type Point struct {
	Series Series  `json:"series"`
	RunID  string  `json:"run_id"`
	Value  float64 `json:"value"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	N      int     `json:"n"`
}

// Inconclusive reports whether the point's interval is wider than the
// metric's minimum effect (half-width relative to the value): such a point
// can neither show a regression nor rule one out.
func (p Point) Inconclusive(m Metric) bool {
	if m.Verdict || m.MinEffect == 0 {
		return false
	}
	if m.Absolute {
		return (p.Hi-p.Lo)/2 > m.MinEffect
	}
	if p.Value == 0 {
		return false
	}
	return (p.Hi-p.Lo)/2/math.Abs(p.Value) > m.MinEffect
}

// RunOf is the run a results file describes; the build is the user's
// build_label and build_id (the config's, else the environment's), with
// the commit of the harness that measured it where it is known.
func RunOf(r *results.Results) Run {
	first := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	run := Run{ID: r.RunKey(), StartedAt: r.StartedAt.UTC(), Build: first(r.Config.BuildLabel, r.Environment.BuildLabel),
		BuildID: first(r.Config.BuildID, r.Environment.BuildID)}
	if h := r.Environment.Harness; h != nil && h.Revision != results.Unknown {
		run.HarnessCommit = h.Revision
	}
	return run
}

// Extract is every point a results file holds: per profile the delivered
// rate, the loss (UDP), host cores per 10 Gbit/s where measured and the
// offload verdict of the pair; per latency profile the percentiles; per
// connection-scale N and hypervisor the offloaded share and the time to
// offload; for a
// fleet run each pair's delivered rate and each node's offload verdict.
// Shards of one fleet run give disjoint points (their pairs and nodes
// differ) under the run's group (results.RunKey), so ingesting each shard
// or the merged file gives the same set.
func Extract(r *results.Results) []Point {
	mode := r.Config.Mode()
	backend := r.Environment.NetworkBackend
	if backend == "" {
		backend = "unknown"
	}
	pair := pairOf(r.Environment.Guests)
	var pts []Point
	add := func(metric, profile string, path results.Path, node string, v, lo, hi float64, n int) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		pts = append(pts, Point{
			Series: Series{Metric: metric, Profile: profile, Path: string(path), Node: node, Backend: backend, Mode: mode},
			RunID:  r.RunKey(), Value: v, Lo: lo, Hi: hi, N: n,
		})
	}
	if r.Fleet == nil {
		// Every profile's points, then the run's verdict, with the
		// families' points among them by order (families.go).
		for _, s := range inOrder([]step{{10, profilePoints}, {30, runVerdictPoint}}) {
			s.run(r, pair, add)
		}
		return pts
	}
	fleetPoints(r, add)
	return pts
}

// profilePoints are each profile's points: delivered, loss (UDP), host
// cores per 10 Gbit/s and the pair's offload verdict.
func profilePoints(r *results.Results, pair string, add adder) {
	for _, p := range r.Profiles {
		if p.Summary.Runs > 0 {
			var del, loss []float64
			for _, run := range p.Runs {
				if run.Error == "" {
					del = append(del, run.DeliveredBps)
					loss = append(loss, run.LossPercent)
				}
			}
			lo, hi := Interval(del)
			add(MetricDelivered, p.ID, p.Path, pair, p.Summary.Delivered.Median, lo, hi, len(del))
			if p.Protocol == "udp" {
				lo, hi := Interval(loss)
				add(MetricLoss, p.ID, p.Path, pair, p.Summary.Loss.Median, lo, hi, len(loss))
			}
			if c := p.Summary.CPU; c != nil && c.CoresPer10G.N > 0 {
				lo, hi := statInterval(c.CoresPer10G)
				add(MetricCoresPer10G, p.ID, p.Path, pair, c.CoresPer10G.Median, lo, hi, c.CoresPer10G.N)
			}
		}
		if v, ok := verdictValue(p.Offload); ok {
			add(MetricOffloaded, p.ID, p.Path, pair, v, v, v, 1)
		}
	}
}

// runVerdictPoint is the offload verdict of the run's own checks.
func runVerdictPoint(r *results.Results, pair string, add adder) {
	if v, ok := verdictValue(r.Offload); ok {
		add(MetricOffloaded, "run", r.Config.ExpectedPath, pair, v, v, v, 1)
	}
}

// fleetPoints are a fleet run's: each pair's delivered rate and each
// node's offload verdict.
func fleetPoints(r *results.Results, add adder) {
	f := r.Fleet
	pairs := map[string]string{}
	for _, p := range f.Pairs {
		pairs[p.ID] = p.Sender + ">" + p.Receiver
	}
	path := r.Config.ExpectedPath
	for _, pr := range f.Results {
		if pr.Repeats == 0 || pr.Error != "" {
			continue
		}
		node := pairs[pr.Pair]
		if node == "" {
			node = pr.Pair
		}
		lo, hi := statInterval(pr.Delivered)
		add(MetricDelivered, pr.Profile, path, node, pr.Delivered.Median, lo, hi, pr.Repeats)
	}
	byNode := map[string][]results.CheckResult{}
	var nodes []string
	for _, c := range f.Checks {
		if _, ok := byNode[c.Node]; !ok {
			nodes = append(nodes, c.Node)
		}
		byNode[c.Node] = append(byNode[c.Node], results.CheckResult{Name: c.Check, Verdict: c.Verdict})
	}
	for _, n := range nodes {
		if v, ok := verdictValue(byNode[n]); ok {
			add(MetricOffloaded, "fleet", path, n, v, v, v, 1)
		}
	}
}

// pairOf names a single run's pair "client-hypervisor>server-hypervisor".
func pairOf(gs []results.Guest) string {
	var c, s string
	for _, g := range gs {
		switch g.Role {
		case "client":
			c = g.Hypervisor
		case "server":
			s = g.Hypervisor
		}
	}
	if c == "" && s == "" {
		return "unknown"
	}
	return c + ">" + s
}

// verdictValue is 1 when every conclusive check says offloaded, 0 when any
// says software; no conclusive check gives no point.
func verdictValue(cs []results.CheckResult) (float64, bool) {
	seen := false
	for _, c := range cs {
		switch c.Verdict {
		case results.VerdictSoftware:
			return 0, true
		case results.VerdictOffloaded:
			seen = true
		}
	}
	if seen {
		return 1, true
	}
	return 0, false
}

// Interval is the 95 % confidence interval of the mean of xs (Student's
// t); with fewer than two values it is the value itself.
func Interval(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	m, sd := meanSD(xs)
	if len(xs) < 2 {
		return m, m
	}
	h := tQuantile975(len(xs)-1) * sd / math.Sqrt(float64(len(xs)))
	return m - h, m + h
}

// statInterval is Interval from a stored summary (mean, CV and N).
func statInterval(s results.Stat) (lo, hi float64) {
	if s.N < 2 {
		return s.Median, s.Median
	}
	sd := s.CVPercent / 100 * s.Mean
	h := tQuantile975(s.N-1) * sd / math.Sqrt(float64(s.N))
	return s.Mean - h, s.Mean + h
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// tQuantile975 is Student's t 0.975 quantile for df degrees of freedom.
func tQuantile975(df int) float64 {
	table := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086}
	switch {
	case df <= 0:
		return math.Inf(1)
	case df < len(table):
		return table[df]
	case df < 30:
		return 2.05
	case df < 60:
		return 2.01
	}
	return 1.96
}
