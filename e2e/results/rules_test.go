package results

import (
	"strings"
	"testing"
)

// A rule that cannot fail (delivered >= 0, loss <= 150 %) or is in the wrong
// unit (loss 0.5 meant as 50 % is allowed, but a negative CV or retransmit
// count is not) is rejected before it gates anything.
func TestValidateRuleValues(t *testing.T) {
	bad := []ThresholdRule{
		{Profile: "p", Path: "asap2", Metric: MetricDelivered, Op: ">=", Value: 0},
		{Profile: "p", Path: "asap2", Metric: MetricOffered, Op: ">=", Value: -1},
		{Profile: "p", Path: "asap2", Metric: MetricLoss, Op: "<=", Value: 150},
		{Profile: "p", Path: "asap2", Metric: MetricRetransmits, Op: "<=", Value: -1},
		{Profile: "p", Path: "asap2", Metric: MetricCV, Op: "<=", Value: -5},
		{Profile: "p", Metric: MetricGain, Op: ">=", Value: 0},
		// Could never fail:
		{Profile: "p", Path: "asap2", Metric: MetricRetransmits, Op: ">=", Value: 0},
		{Profile: "p", Path: "asap2", Metric: MetricLoss, Op: ">=", Value: 0},
		{Profile: "p", Path: "asap2", Metric: MetricLoss, Op: "<=", Value: 100},
		{Profile: "p", Path: "asap2", Metric: MetricCV, Op: ">=", Value: 0},
	}
	for _, r := range bad {
		if err := ValidateRule(r); err == nil || !strings.Contains(err.Error(), "value: must be") {
			t.Errorf("ValidateRule(%+v) = %v, want a value problem", r, err)
		}
	}
	for _, m := range ThresholdMetrics() {
		r := ThresholdRule{Profile: "p", Path: "asap2", Metric: m, Op: ">=", Value: 1}
		if err := ValidateRule(r); err != nil {
			t.Errorf("ValidateRule(%+v) = %v, want nil", r, err)
		}
	}
}
