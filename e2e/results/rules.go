package results

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// ThresholdRule is a pass/fail rule evaluated on the results: config's
// thresholds, tools/report's -thresholds file, and the rules the report
// evaluates are all this type.
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

// ThresholdMetrics returns every metric the report's EvaluateThresholds
// evaluates. The config validation accepts exactly these (it calls this
// function), so a rule that passes validation is never "invalid" at
// evaluation time.
func ThresholdMetrics() []string {
	m := append([]string{MetricDelivered, MetricOffered, MetricLoss, MetricRetransmits, MetricGain, MetricCV}, CPUMetrics...)
	m = append(m, PacketMetrics()...)
	m = append(m, ConnectionMetrics()...)
	m = append(m, HoldMetrics()...)
	m = append(m, AgingMetrics()...)
	m = append(m, MetricFailoverOutage)
	return append(m, LatencyMetrics()...)
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
	case op == "<=" && metric == MetricOffloadedShare && v >= 1:
		return "must be < 1 with op <= (a share never exceeds 1: the rule could never fail)"
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
	if IsLatencyMetric(metric) && v <= 0 {
		if metric == MetricFirstPacketRatio {
			return "must be > 0 for " + metric + " (a ratio, 1.0 = the first packet as fast as the rest)"
		}
		return "must be > 0 for " + metric + " (microseconds, round trip)"
	}
	switch metric {
	case MetricDelivered, MetricOffered, MetricNDR, MetricPDR:
		if v <= 0 {
			return "must be > 0 for " + metric + " (bits per second)"
		}
	case MetricDeliveredPps, MetricOfferedPps:
		if v <= 0 {
			return "must be > 0 for " + metric + " (packets per second)"
		}
	case MetricLoss:
		if v < 0 || v > 100 {
			return "must be between 0 and 100 for " + metric + " (a percentage)"
		}
	case MetricCV:
		if v < 0 {
			return "must be >= 0 for " + metric + " (a percentage)"
		}
	case MetricRetransmits, MetricHostCoresBusy, MetricHostCoresPer10G, MetricOVSCores:
		if v < 0 {
			return "must be >= 0 for " + metric
		}
	case MetricGain:
		if v <= 0 {
			return "must be > 0 for gain (a ratio, 1.0 = equal)"
		}
	case MetricOffloadedShare:
		if v < 0 || v > 1 {
			return "must be between 0 and 1 for " + metric + " (a share: 0.99 = 99 % of the connections offloaded)"
		}
	case MetricReinstallMs, MetricReoffloadMs, MetricFailoverOutage:
		if v <= 0 {
			return "must be > 0 for " + metric + " (milliseconds)"
		}
	case MetricTimeToOffload:
		if v <= 0 {
			return "must be > 0 for " + metric + " (seconds)"
		}
	case MetricRulesPerSecond:
		if v <= 0 {
			return "must be > 0 for " + metric + " (rules inserted a second)"
		}
	case MetricChurnCount:
		if v < 0 || v != math.Trunc(v) {
			return "must be a whole number >= 0 for " + metric + " (rules deleted and re-added)"
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
