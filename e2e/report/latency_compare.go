package report

import (
	"fmt"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// LatencyDelta compares one latency profile on one path: p99 for the
// sockperf profiles, the first echo's median for the first-packet one
// (lower is better for both).
type LatencyDelta struct {
	ID           string       `json:"id"`
	Path         results.Path `json:"path"`
	Metric       string       `json:"metric"` // a results.Metric* name
	Accepted     float64      `json:"accepted_us"`
	Candidate    float64      `json:"candidate_us"`
	DeltaPercent float64      `json:"delta_percent"`
	Status       string       `json:"status"`
	Regression   bool         `json:"regression"`
	Notes        []string     `json:"notes,omitempty"`
}

// latencyGated is the value the gate compares, and its metric.
func latencyGated(l *results.LatencyResult) (float64, string) {
	if l.Kind == results.LatencyFirstPacket {
		if l.First == nil {
			return 0, results.MetricFirstPacketP50
		}
		return l.First.FirstMedianUs, results.MetricFirstPacketP50
	}
	return l.P99Us, results.MetricLatencyP99
}

// compareLatency gates the candidate's latency against the accepted run's:
// a rise beyond CompareOptions.LatencyTolerancePercent is a regression, a
// profile the accepted run measured and the candidate did not is missing
// (a regression unless AllowMissing).
func compareLatency(accepted, candidate *Set, o CompareOptions) []LatencyDelta {
	find := func(s *Set, id string, p results.Path) *results.LatencyResult {
		for _, e := range s.Latencies() {
			if e.L.ID == id && e.L.Path == p {
				return e.L
			}
		}
		return nil
	}
	var out []LatencyDelta
	seen := map[string]bool{}
	for _, e := range accepted.Latencies() {
		a := e.L
		key := a.ID + "|" + string(a.Path)
		if seen[key] || !a.OK() {
			continue
		}
		seen[key] = true
		av, metric := latencyGated(a)
		d := LatencyDelta{ID: a.ID, Path: a.Path, Metric: metric, Accepted: av, Status: DeltaOK}
		c := find(candidate, a.ID, a.Path)
		if c == nil || !c.OK() {
			d.Status, d.Regression = DeltaMissing, !o.AllowMissing
			if c == nil {
				d.Notes = append(d.Notes, "latency profile not in the candidate run")
			} else {
				d.Notes = append(d.Notes, "candidate failed: "+c.Error)
			}
			out = append(out, d)
			continue
		}
		d.Candidate, _ = latencyGated(c)
		if av > 0 {
			d.DeltaPercent = (d.Candidate - av) / av * 100
		}
		switch {
		case d.DeltaPercent > o.LatencyTolerancePercent:
			d.Status, d.Regression = DeltaRegression, true
			d.Notes = append(d.Notes, fmt.Sprintf("%s rose %s (%s → %s), beyond the %s tolerance", metric, results.FormatPercent(d.DeltaPercent),
				results.FormatMicros(av), results.FormatMicros(d.Candidate), results.FormatPercent(o.LatencyTolerancePercent)))
		case d.DeltaPercent < -o.LatencyTolerancePercent:
			d.Status = DeltaImproved
		}
		out = append(out, d)
	}
	for _, e := range candidate.Latencies() {
		if key := e.L.ID + "|" + string(e.L.Path); !seen[key] && e.L.OK() {
			seen[key] = true
			v, metric := latencyGated(e.L)
			out = append(out, LatencyDelta{ID: e.L.ID, Path: e.L.Path, Metric: metric, Candidate: v, Status: DeltaNew, Notes: []string{"not in the accepted run"}})
		}
	}
	return out
}

func latencyDeltaMarkdown(c Comparison) string {
	if len(c.Latency) == 0 {
		return ""
	}
	var rows [][]string
	for _, d := range c.Latency {
		acc, cand, delta := results.Dash, results.Dash, results.Dash
		if d.Status != DeltaNew {
			acc = results.FormatMicros(d.Accepted)
		}
		if d.Status != DeltaMissing {
			cand = results.FormatMicros(d.Candidate)
		}
		if d.Status != DeltaNew && d.Status != DeltaMissing && d.Accepted > 0 {
			delta = fmt.Sprintf("%+.1f%%", d.DeltaPercent)
		}
		rows = append(rows, []string{d.ID, pathName(d.Path), d.Metric, acc, cand, delta, d.Status, strings.Join(d.Notes, "; ")})
	}
	return fmt.Sprintf("\n## Latency\n\nTolerance: round trip +%s.\n\n", results.FormatPercent(c.Options.LatencyTolerancePercent)) +
		mdTable([]string{"Profile", "Path", "Metric", "Accepted", "Candidate", "Δ", "Status", "Notes"}, rows)
}
