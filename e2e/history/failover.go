package history

import "github.com/mosk-qa/asap2-e2e/e2e/results"

// The failover profile's series (issue 38), on the hypervisor whose bond
// failed: the outage (ms, lower is better; only a measured failover — one
// that happened, with both commands run and the flow back — has one) and
// the seconds until the pair's flows were in hardware again after the
// failover and after the restore (profile failover-reoffload-<after>;
// none on a software datapath or past the bound).
const (
	MetricFailoverOutage    = "failover_outage_ms"
	MetricFailoverReoffload = "reoffload_s"
)

func init() {
	Metrics[MetricFailoverOutage] = Metric{Name: MetricFailoverOutage, MinEffect: 0.20}
	Metrics[MetricFailoverReoffload] = Metric{Name: MetricFailoverReoffload, MinEffect: 0.20}
	families.Register(70, func(r *results.Results, _ string, add adder) { failoverPoints(r.Failover, add) }, results.FamilyFailover)
}

// failoverPoints are the failover results' points.
func failoverPoints(fs []results.FailoverResult, add adder) {
	for _, f := range fs {
		if v, ok := f.OutageMs(); ok {
			add(MetricFailoverOutage, results.FailoverProfileID, f.Path, f.Hypervisor, v, v, v, 1)
		}
		for _, ro := range f.Reoffload {
			if ro.Seconds != nil {
				add(MetricFailoverReoffload, results.FailoverProfileID+"-reoffload-"+ro.After, f.Path, f.Hypervisor, *ro.Seconds, *ro.Seconds, *ro.Seconds, 1)
			}
		}
	}
}
