package results

import (
	"fmt"
	"slices"
)

// EvaluateThresholds evaluates every rule against results files read
// together (one run's file in the harness; an asap2 and a baseline file for
// a gain). A rule whose data is missing (profile not run, every repeat
// failed, no baseline for a gain) fails with the reason: a gate never
// passes on nothing.
func EvaluateThresholds(rules []ThresholdRule, files ...*Results) []ThresholdResult {
	out := make([]ThresholdResult, 0, len(rules))
	for _, r := range rules {
		out = append(out, evaluate(r, files))
	}
	return out
}

// profileIn returns the first result for a profile ID on a path among
// files; a profile without its own path is on its file's expected path.
func profileIn(files []*Results, id string, path Path) *ProfileResult {
	for _, f := range files {
		for i := range f.Profiles {
			p := &f.Profiles[i]
			on := p.Path
			if on == "" {
				on = f.Config.ExpectedPath
			}
			if p.ID == id && on == path {
				return p
			}
		}
	}
	return nil
}

func evaluate(r ThresholdRule, files []*Results) ThresholdResult {
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
	if IsLatencyMetric(r.Metric) {
		var why string
		if actual, what, why = latencyActual(r, files); why != "" {
			res.Reason = why
			return res
		}
	} else if r.Metric == MetricFailoverOutage {
		var ok bool
		if actual, what, ok = evaluateFailoverMetric(r, files); !ok {
			res.Reason = what
			return res
		}
	} else if IsConnectionMetric(r.Metric) {
		var ok bool
		if actual, what, ok = evaluateConnectionMetric(r, files); !ok {
			res.Reason = what
			return res
		}
	} else if IsHoldMetric(r.Metric) {
		var ok bool
		if actual, what, ok = evaluateHoldMetric(r, files); !ok {
			res.Reason = what
			return res
		}
	} else if IsAgingMetric(r.Metric) {
		var ok bool
		if actual, what, ok = evaluateAgingMetric(r, files); !ok {
			res.Reason = what
			return res
		}
	} else if slices.Contains(PacketMetrics(), r.Metric) {
		var ok bool
		if actual, what, ok = evaluatePacketMetric(r, files); !ok {
			res.Reason = what
			return res
		}
	} else if r.Metric == MetricGain {
		a, b := profileIn(files, r.Profile, PathASAP2), profileIn(files, r.Profile, PathBaseline)
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
		p := profileIn(files, r.Profile, Path(r.Path))
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
		case MetricHostCoresBusy, MetricHostCoresPer10G, MetricOVSCores:
			var missing string
			if actual, what, missing = cpuMetric(r.Metric, sm.CPU); missing != "" {
				res.Reason = fmt.Sprintf("profile %s %s: %s", r.Profile, r.Path, missing)
				return res
			}
		}
		if n, ok := cpuN(r.Metric, sm.CPU); ok {
			what += fmt.Sprintf(" (median of %d)", n)
		} else {
			what += fmt.Sprintf(" (median of %d)", sm.Delivered.N)
		}
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
	res.Reason = fmt.Sprintf("%s %s %s %s", what, verb, r.Op, FormatMetric(r.Metric, r.Value))
	return res
}

// FormatMetric writes a threshold value in its metric's unit.
func FormatMetric(metric string, v float64) string {
	if IsLatencyMetric(metric) && metric != MetricFirstPacketRatio {
		return FormatMicros(v)
	}
	switch metric {
	case MetricFirstPacketRatio:
		return fmt.Sprintf("%g×", v)
	case MetricDelivered, MetricOffered:
		return FormatBps(v)
	case MetricLoss:
		return FormatLoss(v)
	case MetricCV:
		return FormatPercent(v)
	case MetricGain:
		return fmt.Sprintf("%g×", v)
	case MetricHostCoresPer10G:
		return fmt.Sprintf("%g cores per 10 Gbit/s", v)
	case MetricHostCoresBusy, MetricOVSCores:
		return fmt.Sprintf("%g cores", v)
	case MetricNDR, MetricPDR:
		return FormatBps(v)
	case MetricDeliveredPps, MetricOfferedPps:
		return FormatPps(v)
	case MetricOffloadedShare:
		return FormatPercent(100 * v)
	case MetricTimeToOffload:
		return fmt.Sprintf("%g s", v)
	}
	return fmt.Sprintf("%g", v)
}
