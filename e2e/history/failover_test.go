package history

import (
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// A measured failover gives its outage and re-offload times on the
// hypervisor whose bond failed; a failover that did not happen gives none.
func TestExtractFailover(t *testing.T) {
	s := 4.5
	f := results.FailoverResult{Path: results.PathASAP2, Hypervisor: "cmp-1", Measured: true, Flow: &results.FailoverFlow{Sent: 10},
		Outage:    &results.FailoverGap{Lost: 10, MinRun: 10, Ms: 120, MinMs: 120},
		Reoffload: []results.FailoverReoffload{{After: "failover", Seconds: &s}, {After: "restore", Software: true}}}
	r := &results.Results{Failover: []results.FailoverResult{f}}
	got := map[string]float64{}
	for _, p := range Extract(r) {
		got[p.Series.Metric+"|"+p.Series.Profile+"|"+p.Series.Node] = p.Value
	}
	if got["failover_outage_ms|failover|cmp-1"] != 120 || got["reoffload_s|failover-reoffload-failover|cmp-1"] != 4.5 || len(got) != 2 {
		t.Errorf("%v", got)
	}
	for _, m := range []string{MetricFailoverOutage, MetricFailoverReoffload} {
		if _, err := MetricOf(m); err != nil {
			t.Error(err)
		}
	}
	f.Measured = false
	r.Failover[0] = f
	for _, p := range Extract(r) {
		if p.Series.Metric == MetricFailoverOutage {
			t.Errorf("an unmeasured failover has an outage point: %+v", p)
		}
	}
}
