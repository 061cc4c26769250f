package history

import "github.com/mosk-qa/asap2-e2e/e2e/results"

// The aging profile's, per hypervisor, from measured results only: ms
// from the restart until the tuple's flows were back in the datapath
// and proven in hardware.
const (
	MetricReinstallMs = "reinstall_ms"
	MetricReoffloadMs = "reoffload_ms"
)

func init() {
	Metrics[MetricReinstallMs] = Metric{Name: MetricReinstallMs, MinEffect: 0.25}
	Metrics[MetricReoffloadMs] = Metric{Name: MetricReoffloadMs, MinEffect: 0.25}
	families.Register(60, agingPoints, results.FamilyAging)
	families.Excuse("a label and a verdict, no number to follow", results.FamilyFragments)
}

// agingPoints are the aging profile's times, per measured hypervisor.
func agingPoints(r *results.Results, _ string, add adder) {
	if a := r.Aging; a != nil {
		for _, h := range a.Hosts {
			if !h.Measured(*a) {
				continue
			}
			if v := h.ReinstallMs; v != nil {
				add(MetricReinstallMs, results.AgingProfileID, a.Path, h.Hypervisor, *v, *v, *v, 1)
			}
			if v := h.ReoffloadMs; v != nil {
				add(MetricReoffloadMs, results.AgingProfileID, a.Path, h.Hypervisor, *v, *v, *v, 1)
			}
		}
	}
}
