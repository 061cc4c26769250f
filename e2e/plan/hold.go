package plan

import (
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	families.Register(30, family{budget: func(cfg *config.Config, listen, _ time.Duration, add adder) { addHoldBudget(cfg, listen, add) }}, results.FamilyRuleScale, results.FamilyChurn)
}

// addHoldBudget adds issue 38's windows to a run's budget: each rule-scale
// N at its sender's bound (its schedule twice — opening N at
// rule_scale.rate, then rule_scale.hold — and intervals.command, as
// harness.RunRuleScale bounds it) plus one command for the reads before
// and after it; the churn window at churn.duration, the listen wait and
// one command for the judging reads.
func addHoldBudget(cfg *config.Config, listen time.Duration, add adder) {
	cmd := cfg.Interval(config.IntervalCommand).Timeout
	rs := cfg.RuleScale
	if len(rs.Counts) > 0 {
		var total time.Duration
		for _, n := range rs.Counts {
			sched := rs.Hold
			if rs.Rate > 0 {
				sched += time.Duration(float64(n) / float64(rs.Rate) * float64(time.Second))
			}
			total += 2*sched + 2*cmd
		}
		add("measure the rule scale", total, "%d count(s) × (2 × (N / rule_scale.rate + rule_scale.hold) + 2 × command)", len(rs.Counts))
	}
	if cc := cfg.Churn; cc.Duration > 0 {
		add("hold the churn window", cc.Duration+listen+cmd, "churn.duration + iperf_server + command")
	}
}
