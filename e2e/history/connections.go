package history

import (
	"fmt"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The connection-scale profile's, per hypervisor: the share of the
// opened connections offloaded, and the seconds until all were.
const (
	MetricOffloadedShare = "offloaded_share"
	MetricTimeToOffload  = "time_to_offload_s"
)

func init() {
	Metrics[MetricOffloadedShare] = Metric{Name: MetricOffloadedShare, HigherBetter: true, MinEffect: 0.05, Absolute: true}
	Metrics[MetricTimeToOffload] = Metric{Name: MetricTimeToOffload, MinEffect: 0.20}
	families.Register(40, connectionPoints, results.FamilyConnections)
}

// connectionPoints are per connection-scale N and hypervisor the
// offloaded share and the time to offload.
func connectionPoints(r *results.Results, _ string, add adder) {
	for _, c := range r.Connections {
		if c.Error != "" {
			continue
		}
		prof := fmt.Sprintf("connections-%d", c.N)
		for _, h := range c.Hosts {
			if !h.Shared() {
				continue
			}
			add(MetricOffloadedShare, prof, c.Path, h.Hypervisor, h.Share, h.Share, h.Share, 1)
			if h.TimeToOffloadSeconds != nil {
				v := *h.TimeToOffloadSeconds
				add(MetricTimeToOffload, prof, c.Path, h.Hypervisor, v, v, v, 1)
			}
		}
	}
}
