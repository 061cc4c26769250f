package plan

import (
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
)

// The rule-scale counts at their senders' bounds, the churn window at its
// duration: 1000 at 500/s is 2 s + 20 s hold, 10000 as fast as it can is
// the hold alone; command 2m.
func TestRunBudgetHold(t *testing.T) {
	cfg := budgetConfig()
	if _, ok := budgetLine(RunBudget(cfg), "measure the rule scale"); ok {
		t.Error("a rule-scale step without rule_scale.counts")
	}
	cfg.RuleScale = config.RuleScale{Counts: []int{1000, 10000}, Rate: 500, Hold: 20 * time.Second}
	cfg.Churn = config.Churn{Duration: 300 * time.Second}
	l, ok := budgetLine(RunBudget(cfg), "measure the rule scale")
	cmd := cfg.Interval(config.IntervalCommand).Timeout
	if want := 2*22*time.Second + 2*cmd + 2*40*time.Second + 2*cmd; !ok || l.Bound != want {
		t.Errorf("rule scale %+v, want %s", l, want)
	}
	l, ok = budgetLine(RunBudget(cfg), "hold the churn window")
	if want := 300*time.Second + cfg.Interval(config.IntervalIperfServer).Timeout + cmd; !ok || l.Bound != want {
		t.Errorf("churn %+v, want %s", l, want)
	}
}
