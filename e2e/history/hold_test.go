package history

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Issue 38's points: the judged table's rate and time to hardware per
// hypervisor, the churn count; nothing from a failed profile, a hypervisor
// without a timeline or a churn host read once.
func TestExtractHold(t *testing.T) {
	hw := 2.5
	r := &results.Results{Config: results.ConfigSummary{ExpectedPath: results.PathASAP2}, RunID: "r1",
		RuleScale: []results.RuleScaleResult{
			{N: 1000, Path: results.PathASAP2, Judged: results.TableConntrack, Hosts: []results.RuleScaleHost{
				{Hypervisor: "cmp-1", Conntrack: &results.Insertion{RulesPerSecond: 4800, HardwareSeconds: &hw}, Flows: &results.Insertion{RulesPerSecond: 1}},
				{Hypervisor: "cmp-2"},
			}},
			{N: 10000, Path: results.PathASAP2, Error: "sender failed", Judged: results.TableConntrack},
		},
		Churn: []results.ChurnResult{{Path: results.PathASAP2, Hosts: []results.ChurnHost{{Hypervisor: "cmp-1", Count: 2, Reads: 60}, {Hypervisor: "cmp-2", Reads: 1}}}},
	}
	var got []string
	for _, p := range Extract(r) {
		got = append(got, fmt.Sprintf("%s %s %s %g", p.Series.Metric, p.Series.Profile, p.Series.Node, p.Value))
	}
	want := []string{"rules_per_second rule-scale-1000 cmp-1 4800", "time_to_hardware_s rule-scale-1000 cmp-1 2.5", "churn_count churn cmp-1 2"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("points\n--- got:\n%s\n--- want:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
