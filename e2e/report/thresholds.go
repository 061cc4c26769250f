package report

import (
	"fmt"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// EvaluateThresholds evaluates every rule against the set. A rule whose
// data is missing (profile not run, every repeat failed, no baseline for a
// gain) fails with the reason: a gate never passes on nothing.
func EvaluateThresholds(rules []results.ThresholdRule, s *Set) []results.ThresholdResult {
	out := make([]results.ThresholdResult, 0, len(rules))
	for _, r := range rules {
		out = append(out, evaluate(r, s))
	}
	return out
}

func evaluate(r results.ThresholdRule, s *Set) results.ThresholdResult {
	res := results.ThresholdResult{Name: r.Name, Profile: r.Profile, Path: r.Path, Metric: r.Metric, Op: r.Op, Value: r.Value}
	if res.Name == "" {
		res.Name = fmt.Sprintf("%s %s %s %s %v", r.Profile, r.Path, r.Metric, r.Op, r.Value)
	}
	if err := results.ValidateRule(r); err != nil {
		res.Reason = "invalid rule: " + err.Error()
		return res
	}
	var actual float64
	var what string
	if r.Metric == results.MetricGain {
		a, b := s.Profile(r.Profile, results.PathASAP2), s.Profile(r.Profile, results.PathBaseline)
		switch {
		case a == nil || a.Summary.Delivered.N == 0:
			res.Reason = fmt.Sprintf("no successful asap2 result for profile %s", r.Profile)
			return res
		case b == nil || b.Summary.Delivered.N == 0:
			res.Reason = fmt.Sprintf("no successful baseline result for profile %s", r.Profile)
			return res
		case b.Summary.Delivered.Median <= 0:
			res.Reason = fmt.Sprintf("baseline delivered nothing for profile %s", r.Profile)
			return res
		}
		actual = a.Summary.Delivered.Median / b.Summary.Delivered.Median
		what = fmt.Sprintf("gain %.2f× (asap2 %s / baseline %s)", actual,
			FormatBps(a.Summary.Delivered.Median), FormatBps(b.Summary.Delivered.Median))
	} else {
		p := s.Profile(r.Profile, results.Path(r.Path))
		if p == nil {
			res.Reason = fmt.Sprintf("no %s result for profile %s", r.Path, r.Profile)
			return res
		}
		sm := p.Summary
		if sm.Delivered.N == 0 {
			res.Reason = fmt.Sprintf("profile %s %s has no successful repeat (%d failed)", r.Profile, r.Path, sm.Failed)
			return res
		}
		if r.Metric == results.MetricCV && sm.Delivered.N < 2 {
			// The CV of one value is 0 by definition: a rule on it could
			// never fail.
			res.Reason = fmt.Sprintf("profile %s %s: the CV needs at least 2 successful repeats, got %d", r.Profile, r.Path, sm.Delivered.N)
			return res
		}
		switch r.Metric {
		case results.MetricDelivered:
			actual, what = sm.Delivered.Median, "delivered "+FormatBps(sm.Delivered.Median)
		case results.MetricOffered:
			actual, what = sm.Offered.Median, "offered "+FormatBps(sm.Offered.Median)
		case results.MetricLoss:
			actual, what = sm.Loss.Median, "loss "+FormatLoss(sm.Loss.Median)
		case results.MetricRetransmits:
			actual, what = sm.Retransmits.Median, fmt.Sprintf("retransmits %.0f", sm.Retransmits.Median)
		case results.MetricCV:
			actual, what = sm.Delivered.CVPercent, "delivered CV "+FormatPercent(sm.Delivered.CVPercent)
		}
		what += fmt.Sprintf(" (median of %d)", sm.Delivered.N)
		if r.Metric == results.MetricCV {
			what = fmt.Sprintf("delivered CV %s over %d repeats", FormatPercent(sm.Delivered.CVPercent), sm.Delivered.N)
		}
	}
	res.Actual = &actual
	if r.Op == ">=" {
		res.Pass = actual >= r.Value
	} else {
		res.Pass = actual <= r.Value
	}
	verb := "meets"
	if !res.Pass {
		verb = "violates"
	}
	res.Reason = fmt.Sprintf("%s %s %s %s", what, verb, r.Op, formatMetric(r.Metric, r.Value))
	return res
}

func formatMetric(metric string, v float64) string {
	switch metric {
	case results.MetricDelivered, results.MetricOffered:
		return FormatBps(v)
	case results.MetricLoss:
		return FormatLoss(v)
	case results.MetricCV:
		return FormatPercent(v)
	case results.MetricGain:
		return fmt.Sprintf("%g×", v)
	}
	return fmt.Sprintf("%g", v)
}
