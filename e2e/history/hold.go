package history

import "github.com/mosk-qa/asap2-e2e/e2e/results"

// Issue 38's, per hypervisor: the rule-scale profile's insertion rate
// of its judged table and the seconds until the hardware share was in
// hardware; the churn window's counted events.
const (
	MetricRulesPerSecond = "rules_per_second"
	MetricTimeToHardware = "time_to_hardware_s"
	MetricChurnCount     = "churn_count"
)

func init() {
	Metrics[MetricRulesPerSecond] = Metric{Name: MetricRulesPerSecond, HigherBetter: true, MinEffect: 0.10}
	Metrics[MetricTimeToHardware] = Metric{Name: MetricTimeToHardware, MinEffect: 0.20}
	Metrics[MetricChurnCount] = Metric{Name: MetricChurnCount, MinEffect: 1, Absolute: true}
	families.Register(50, func(r *results.Results, _ string, add adder) { holdPoints(r, add) }, results.FamilyRuleScale, results.FamilyChurn)
}

// holdPoints are issue 38's points: per rule-scale N and hypervisor the
// judged table's insertion rate (rules_per_second, profile rule-scale-<N>)
// and its time to hardware (time_to_hardware_s, only when it got there);
// per hypervisor the churn window's count (churn_count, profile churn).
// A failed profile or an unread hypervisor adds nothing.
func holdPoints(r *results.Results, add adder) {
	for _, c := range r.RuleScale {
		if c.Error != "" {
			continue
		}
		for _, h := range c.Hosts {
			in := h.Judged(c.Judged)
			if in == nil {
				continue
			}
			prof := results.RuleScaleProfileID(c.N)
			add(MetricRulesPerSecond, prof, c.Path, h.Hypervisor, in.RulesPerSecond, in.RulesPerSecond, in.RulesPerSecond, 1)
			if in.HardwareSeconds != nil && !h.Software {
				v := *in.HardwareSeconds
				add(MetricTimeToHardware, prof, c.Path, h.Hypervisor, v, v, v, 1)
			}
		}
	}
	for _, c := range r.Churn {
		if c.Error != "" {
			continue
		}
		for _, h := range c.Hosts {
			if h.Reads >= 2 {
				v := float64(h.Count)
				add(MetricChurnCount, results.ChurnProfileID, c.Path, h.Hypervisor, v, v, v, 1)
			}
		}
	}
}
