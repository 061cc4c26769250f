package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// A test input, not a measurement: N=10000 on a hardware pair whose
// conntrack table plateaued below N on cmp-1 while the flow limit was hit,
// and the lab's shape (userspace datapath) at N=1000; a churn window with
// one re-add on cmp-1 and a modify on cmp-2.
func holdSet(t *testing.T) *Set {
	t.Helper()
	a := seedResults(results.PathASAP2)
	sec := func(v float64) *float64 { return &v }
	one := 1
	a.RuleScale = []results.RuleScaleResult{
		{N: 10000, Path: results.PathASAP2, Opened: 10000, OpenSeconds: 0.6, HoldSeconds: 20, Judged: results.TableConntrack, Hosts: []results.RuleScaleHost{
			{Hypervisor: "cmp-1", Steering: "dmfs", Samples: 30, ReadMeanMS: 120, ReadMaxMS: 300, OVSFlows: 4, OVSFlowLimit: 200000,
				Flows:     &results.Insertion{Table: results.TableDatapathFlows, Final: 4, FinalInHardware: 4, RulesPerSecond: 0, HardwareSeconds: sec(1)},
				Conntrack: &results.Insertion{Table: results.TableConntrack, Final: 8100, FinalInHardware: 7000, RulesPerSecond: 4870, Plateau: true, PlateauSeconds: 2.1, PlateauCount: 8100, BelowTarget: true},
				LogEvents: map[string]int{"flow-limit": 3}, Coverage: map[string]uint64{"upcall_flow_limit_hit": 1900}},
		}},
		{N: 1000, Path: results.PathASAP2, Opened: 1000, OpenSeconds: 0.1, Judged: results.TableDatapathFlows, Hosts: []results.RuleScaleHost{
			{Hypervisor: "hv1", Software: true, Steering: "not read: no devlink", Samples: 22,
				Flows: &results.Insertion{Table: results.TableDatapathFlows, Final: 1000, RulesPerSecond: 1650, Plateau: true, PlateauSeconds: 1.5, PlateauCount: 1000}, LogNote: "not read (rule_scale.vswitchd_log is empty)"},
		}},
	}
	a.Churn = []results.ChurnResult{{Path: results.PathASAP2, DurationSeconds: 600, BitrateBps: 10e6, LengthBytes: 1000, SampleSeconds: 10, SlowPathShare: 0.01, DeliveredBps: 10e6,
		Hosts: []results.ChurnHost{
			{Hypervisor: "cmp-1", Count: 1, Reads: 60, Flows: 1, Deleted: 14, SlowPathMax: 0.002, BlindSpot: "b1", TCChurnCount: &one,
				TCEvents: []results.ChurnEvent{{Kind: "re-added", AfterSeconds: 310, BeforeSeconds: 320, Counted: true}},
				Events:   []results.ChurnEvent{{Kind: "re-added", AfterSeconds: 310, BeforeSeconds: 320, Counted: true}}},
			{Hypervisor: "cmp-2", Stable: true, Reads: 60, Flows: 1, Deleted: 3, BlindSpot: "b2", TCReason: "not judged: no tc rule of the pair on the representor in 60 reads",
				Events: []results.ChurnEvent{{Kind: "modified", AfterSeconds: 100, BeforeSeconds: 110}}},
		}}}
	s, err := NewSet(a)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHoldTables(t *testing.T) {
	s := holdSet(t)
	md := Markdown(s, Options{})
	for _, w := range []string{
		"## Rule scale and insertion rate",
		"| 1000 | ASAP² | 1000 in 0.1 s | hv1 | not read: no devlink | datapath-flows (judged) | 1000 (0) | 1650 | 1000 at 1.5 s | never (software datapath: none by construction) |",
		"| 10000 | ASAP² | 10000 in 0.6 s | cmp-1 | dmfs | conntrack (judged) | 8100 (7000) | 4870 | 8100 at 2.1 s, below N 10000 | never (7000 of 8100 at the last read) | 4 flows, limit 200000 | flow-limit ×3; upcall_flow_limit_hit +1900 | 30, 120 ms avg, 300 ms max |",
		"| 10000 | ASAP² | 10000 in 0.6 s | cmp-1 | dmfs | datapath-flows | 4 (4) | 0 | no growth | 1.0 s |",
		"## Long window without churn",
		"| cmp-1 | churned | 1 | re-added 310–320 s |",
		"| cmp-2 | stable | 0 | modified 100–110 s (not counted) |",
		"| b1 | 1 counted: re-added 310–320 s |",
		"| b2 | not judged: no tc rule of the pair on the representor in 60 reads |",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("markdown lacks %q", w)
		}
	}
	h := string(HTML(s, Options{}))
	for _, w := range []string{"<h2>Rule scale and insertion rate</h2>", "<h2>Long window without churn</h2>", "8100 at 2.1 s, below N 10000"} {
		if !strings.Contains(h, w) {
			t.Errorf("html lacks %q", w)
		}
	}
	// Thresholds read the same results: the slowest judged table, the
	// worse hypervisor's churn.
	got := results.EvaluateThresholds([]results.ThresholdRule{
		{Name: "ins", Profile: "rule-scale-10000", Path: "asap2", Metric: results.MetricRulesPerSecond, Op: ">=", Value: 5000},
		{Name: "churn", Profile: "churn", Path: "asap2", Metric: results.MetricChurnCount, Op: "<=", Value: 0},
		{Name: "lab", Profile: "rule-scale-1000", Path: "asap2", Metric: results.MetricRulesPerSecond, Op: ">=", Value: 1000},
	}, s.Files...)
	if got[0].Pass || !strings.Contains(got[0].Reason, "conntrack inserted at 4870 rules/s (the slowest: cmp-1 4870/s)") ||
		got[1].Pass || !strings.Contains(got[1].Reason, "churn count 1 (the worse: cmp-1 1, cmp-2 0)") || !got[2].Pass {
		t.Errorf("%+v", got)
	}
}

// A churn window whose reads never found the pair's flow judged nothing:
// its row says so, never "churned" (nor "stable").
func TestChurnNotJudgedRow(t *testing.T) {
	a := seedResults(results.PathBaseline)
	a.Churn = []results.ChurnResult{{Path: results.PathBaseline, DurationSeconds: 120, BitrateBps: 10e6, LengthBytes: 1000, SampleSeconds: 10,
		Hosts: []results.ChurnHost{{Hypervisor: "compute1", Reads: 12, Flows: 0, Deleted: 33, BlindSpot: "b"}}}}
	s, err := NewSet(a)
	if err != nil {
		t.Fatal(err)
	}
	md := Markdown(s, Options{})
	if !strings.Contains(md, "| compute1 | not judged: no flow of the pair | 0 |") || strings.Contains(md, "| compute1 | churned |") {
		t.Errorf("the unjudged window's row:\n%s", md)
	}
}
