package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// ThresholdRule is a pass/fail rule. It has exactly the fields of
// config.Threshold, so the integration converts with ThresholdRule(t).
type ThresholdRule struct {
	Name    string  `json:"name" yaml:"name"`
	Profile string  `json:"profile" yaml:"profile"` // profile ID
	Path    string  `json:"path" yaml:"path"`       // asap2 | baseline (ignored for gain)
	Metric  string  `json:"metric" yaml:"metric"`   // one of the Metric* constants
	Op      string  `json:"op" yaml:"op"`           // ">=" | "<="
	Value   float64 `json:"value" yaml:"value"`
}

// Threshold metrics. All are taken from the median over successful repeats.
const (
	MetricDelivered   = "delivered_bps"
	MetricOffered     = "offered_bps"
	MetricLoss        = "loss_percent"
	MetricRetransmits = "retransmits"
	MetricGain        = "gain"       // asap2 delivered / baseline delivered
	MetricCV          = "cv_percent" // CV of delivered over repeats
)

// ThresholdMetrics returns every metric EvaluateThresholds evaluates. The
// config validation accepts exactly these (it calls this function), so a
// rule that passes validation is never "invalid" at evaluation time.
func ThresholdMetrics() []string {
	return []string{MetricDelivered, MetricOffered, MetricLoss, MetricRetransmits, MetricGain, MetricCV}
}

// RuleValueProblem says what is wrong with the value of a rule ("" when
// usable): MetricValueProblem, and a rule that could never fail (every
// metric is >= 0, so ">= 0" always holds; loss is at most 100 %, so
// "loss_percent <= 100" always holds). The config validation and
// ValidateRule both use it.
func RuleValueProblem(metric, op string, v float64) string {
	if msg := MetricValueProblem(metric, v); msg != "" {
		return msg
	}
	switch {
	case op == ">=" && v <= 0:
		return "must be > 0 with op >= (" + metric + " is never negative: the rule could never fail)"
	case op == "<=" && metric == MetricLoss && v >= 100:
		return "must be < 100 with op <= (loss never exceeds 100 %: the rule could never fail)"
	}
	return ""
}

// MetricValueProblem says what is wrong with v as the value of a threshold
// on metric ("" when v is usable): rates are bits per second and > 0, loss
// is a percentage 0..100, a gain is a ratio > 0, retransmits and the CV
// are >= 0.
func MetricValueProblem(metric string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "must be a finite number"
	}
	switch metric {
	case MetricDelivered, MetricOffered:
		if v <= 0 {
			return "must be > 0 for " + metric + " (bits per second)"
		}
	case MetricLoss:
		if v < 0 || v > 100 {
			return "must be between 0 and 100 for " + metric + " (a percentage)"
		}
	case MetricCV:
		if v < 0 {
			return "must be >= 0 for " + metric + " (a percentage)"
		}
	case MetricRetransmits:
		if v < 0 {
			return "must be >= 0 for " + metric
		}
	case MetricGain:
		if v <= 0 {
			return "must be > 0 for gain (a ratio, 1.0 = equal)"
		}
	}
	return ""
}

// ThresholdResult is one evaluated rule.
type ThresholdResult struct {
	Name    string   `json:"name"`
	Profile string   `json:"profile"`
	Path    string   `json:"path,omitempty"`
	Metric  string   `json:"metric"`
	Op      string   `json:"op"`
	Value   float64  `json:"value"`
	Actual  *float64 `json:"actual,omitempty"` // nil when there was nothing to measure
	Pass    bool     `json:"pass"`
	Reason  string   `json:"reason"`
}

// ValidateRule reports what is wrong with a rule, or nil.
func ValidateRule(r ThresholdRule) error {
	var p []string
	if r.Profile == "" {
		p = append(p, "profile: must be set")
	}
	if r.Metric != MetricGain && r.Path != string(PathASAP2) && r.Path != string(PathBaseline) {
		p = append(p, fmt.Sprintf("path: must be asap2 or baseline, got %q", r.Path))
	}
	if !slices.Contains(ThresholdMetrics(), r.Metric) {
		p = append(p, fmt.Sprintf("metric: must be one of %s, got %q", strings.Join(ThresholdMetrics(), ", "), r.Metric))
	}
	if r.Op != ">=" && r.Op != "<=" {
		p = append(p, fmt.Sprintf("op: must be >= or <=, got %q", r.Op))
	}
	if msg := RuleValueProblem(r.Metric, r.Op, r.Value); msg != "" {
		p = append(p, fmt.Sprintf("value: %s, got %v", msg, r.Value))
	}
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("threshold %q: %s", r.Name, strings.Join(p, "; "))
}

// EvaluateThresholds evaluates every rule against the set. A rule whose
// data is missing (profile not run, every repeat failed, no baseline for a
// gain) fails with the reason: a gate never passes on nothing.
func EvaluateThresholds(rules []ThresholdRule, s *Set) []ThresholdResult {
	out := make([]ThresholdResult, 0, len(rules))
	for _, r := range rules {
		out = append(out, evaluate(r, s))
	}
	return out
}

func evaluate(r ThresholdRule, s *Set) ThresholdResult {
	res := ThresholdResult{Name: r.Name, Profile: r.Profile, Path: r.Path, Metric: r.Metric, Op: r.Op, Value: r.Value}
	if res.Name == "" {
		res.Name = fmt.Sprintf("%s %s %s %s %v", r.Profile, r.Path, r.Metric, r.Op, r.Value)
	}
	if err := ValidateRule(r); err != nil {
		res.Reason = "invalid rule: " + err.Error()
		return res
	}
	var actual float64
	var what string
	if r.Metric == MetricGain {
		a, b := s.Profile(r.Profile, PathASAP2), s.Profile(r.Profile, PathBaseline)
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
		p := s.Profile(r.Profile, Path(r.Path))
		if p == nil {
			res.Reason = fmt.Sprintf("no %s result for profile %s", r.Path, r.Profile)
			return res
		}
		sm := p.Summary
		if sm.Delivered.N == 0 {
			res.Reason = fmt.Sprintf("profile %s %s has no successful repeat (%d failed)", r.Profile, r.Path, sm.Failed)
			return res
		}
		if r.Metric == MetricCV && sm.Delivered.N < 2 {
			// The CV of one value is 0 by definition: a rule on it could
			// never fail.
			res.Reason = fmt.Sprintf("profile %s %s: the CV needs at least 2 successful repeats, got %d", r.Profile, r.Path, sm.Delivered.N)
			return res
		}
		switch r.Metric {
		case MetricDelivered:
			actual, what = sm.Delivered.Median, "delivered "+FormatBps(sm.Delivered.Median)
		case MetricOffered:
			actual, what = sm.Offered.Median, "offered "+FormatBps(sm.Offered.Median)
		case MetricLoss:
			actual, what = sm.Loss.Median, "loss "+FormatLoss(sm.Loss.Median)
		case MetricRetransmits:
			actual, what = sm.Retransmits.Median, fmt.Sprintf("retransmits %.0f", sm.Retransmits.Median)
		case MetricCV:
			actual, what = sm.Delivered.CVPercent, "delivered CV "+FormatPercent(sm.Delivered.CVPercent)
		}
		what += fmt.Sprintf(" (median of %d)", sm.Delivered.N)
		if r.Metric == MetricCV {
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
	case MetricDelivered, MetricOffered:
		return FormatBps(v)
	case MetricLoss:
		return FormatLoss(v)
	case MetricCV:
		return FormatPercent(v)
	case MetricGain:
		return fmt.Sprintf("%g×", v)
	}
	return fmt.Sprintf("%g", v)
}
