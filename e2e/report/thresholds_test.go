package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Rules in the spirit of issue 5 ("TCP 30 streams ≥ 0.9 × line rate", "UDP
// 500M capped loss ≤ 0.1 %", "gain over baseline ≥ 2×") on the seed's numbers.
func TestEvaluateThresholdsOnSeed(t *testing.T) {
	s := seedSet(t)
	rules := []results.ThresholdRule{
		{Name: "TCP P30 near line rate", Profile: "tcp-p30", Path: "asap2", Metric: results.MetricDelivered, Op: ">=", Value: 0.9 * 25e9},
		{Name: "UDP 500M P15 loss", Profile: "udp-500m-p15", Path: "asap2", Metric: results.MetricLoss, Op: "<=", Value: 0.1},
		{Name: "UDP 500M P30 l700 loss", Profile: "udp-500m-p30-l700", Path: "asap2", Metric: results.MetricLoss, Op: "<=", Value: 0.1},
		{Name: "TCP P15 gain", Profile: "tcp-p15", Metric: results.MetricGain, Op: ">=", Value: 2},
		{Name: "TCP P1 gain", Profile: "tcp-p1", Metric: results.MetricGain, Op: ">=", Value: 2},
		{Name: "absent", Profile: "tcp-p64", Path: "asap2", Metric: results.MetricDelivered, Op: ">=", Value: 1},
		{Name: "bad", Profile: "tcp-p1", Path: "fast", Metric: "jitter", Op: ">", Value: 1},
		{Name: "TCP P1 stable", Profile: "tcp-p1", Path: "asap2", Metric: results.MetricCV, Op: "<=", Value: 5},
		{Name: "retr", Profile: "tcp-p1", Path: "baseline", Metric: results.MetricRetransmits, Op: "<=", Value: 0},
	}
	got := results.EvaluateThresholds(rules, s.Files...)
	want := []struct {
		pass   bool
		reason string
	}{
		{true, "delivered 22.8 Gbit/s (median of 1) meets >= 22.5 Gbit/s"},
		{true, "loss 0.022% (median of 1) meets <= 0.1%"},
		{false, "loss 18% (median of 1) violates <= 0.1%"},
		{false, "gain 1.97× (asap2 22.7 Gbit/s / baseline 11.5 Gbit/s) violates >= 2×"},
		{true, "gain 5.98×"},
		{false, "no asap2 result for profile tcp-p64"},
		{false, `invalid rule: threshold "bad": path: must be asap2 or baseline, got "fast"; metric: must be one of`},
		{false, "the CV needs at least 2 successful repeats, got 1"}, // the CV of one value cannot fail
		{true, "retransmits 0 (median of 1) meets <= 0"},
	}
	for i, w := range want {
		if got[i].Pass != w.pass || !strings.Contains(got[i].Reason, w.reason) {
			t.Errorf("%s: pass=%v reason=%q; want pass=%v containing %q", rules[i].Name, got[i].Pass, got[i].Reason, w.pass, w.reason)
		}
	}
	if got[5].Actual != nil || got[0].Actual == nil || *got[0].Actual != 22.8e9 {
		t.Errorf("actual values wrong: %+v %+v", got[0].Actual, got[5].Actual)
	}
	md := Markdown(s, Options{Thresholds: got})
	if !strings.Contains(md, "## Thresholds\n\n4 of 9 passed.") || !strings.Contains(md, "| TCP P15 gain | tcp-p15 gain >= 2× | FAIL |") {
		t.Errorf("thresholds section wrong:\n%s", md[strings.Index(md, "## Thresholds"):])
	}
}
