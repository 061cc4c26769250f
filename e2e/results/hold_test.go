package results

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestHoldRoundTripAndValidation(t *testing.T) {
	w, err := NewWriter(filepath.Join(t.TempDir(), "results.json"), *latFile())
	if err != nil {
		t.Fatal(err)
	}
	hw := 1.5
	rs := RuleScaleResult{N: 1000, Path: PathASAP2, Opened: 1000, Judged: TableDatapathFlows, Hosts: []RuleScaleHost{{Hypervisor: "cmp-1",
		Flows: &Insertion{Table: TableDatapathFlows, Final: 1000, FinalInHardware: 990, RulesPerSecond: 4000, HardwareSeconds: &hw}, Coverage: map[string]uint64{"dpif_flow_del": 3}}}}
	if err := w.PutRuleScale(rs); err != nil {
		t.Fatal(err)
	}
	rs.Opened = 999
	if err := w.PutRuleScale(rs); err != nil { // replaces: same n and path
		t.Fatal(err)
	}
	hw = 99 // the writer keeps its own copy
	if err := w.PutChurn(ChurnResult{Path: PathASAP2, Hosts: []ChurnHost{{Hypervisor: "cmp-1", Count: 2, Reads: 60, Deleted: -1}}}); err != nil {
		t.Fatal(err)
	}
	r, err := Load(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.RuleScale) != 1 || r.RuleScale[0].Opened != 999 || *r.RuleScale[0].Hosts[0].Flows.HardwareSeconds != 1.5 || len(r.Churn) != 1 || r.Churn[0].Hosts[0].Count != 2 {
		t.Fatalf("loaded %+v %+v", r.RuleScale, r.Churn)
	}
	// Every problem at once.
	r.RuleScale = append(r.RuleScale, RuleScaleResult{N: 1000, Path: PathASAP2, Opened: 2000, Judged: "tc", Hosts: []RuleScaleHost{{
		Flows: &Insertion{Table: TableDatapathFlows, Final: 5, FinalInHardware: 6, RulesPerSecond: -1}}}})
	r.Churn = append(r.Churn, ChurnResult{Path: "x", Hosts: []ChurnHost{{Count: -1}}})
	b, _ := json.Marshal(r)
	_, err = Decode(b)
	for _, want := range []string{
		"rule_scale[1]: n must be >= 1 and opened 0..n, got n 1000 opened 2000",
		`rule_scale[1].judged: must be datapath-flows or conntrack, got "tc"`,
		"rule_scale[1]: n 1000 path asap2 duplicates rule_scale[0]",
		"rule_scale[1].hosts[0].hypervisor: must be set",
		"rule_scale[1].hosts[0].datapath-flows: rules_per_second must be >= 0 and final_in_hardware 0..final, got -1, 6 of 5",
		`churn[1].path: must be asap2 or baseline, got "x"`,
		`churn[1].hosts[0]: hypervisor must be set and churn_count >= 0, got "" -1`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
}

// A rule on a profile that did not run, failed or read nothing says so,
// never passes on a 0.
func TestHoldMetricWithoutResult(t *testing.T) {
	f := latFile()
	f.RuleScale = []RuleScaleResult{{N: 1000, Path: PathASAP2, Judged: TableConntrack, Hosts: []RuleScaleHost{{Hypervisor: "cmp-1", Reason: "conntrack: no read"}}}}
	f.Churn = []ChurnResult{{Path: PathASAP2, Hosts: []ChurnHost{{Hypervisor: "cmp-1", Reads: 1, Reason: "one read"}}}, {Path: PathBaseline, Hosts: []ChurnHost{{Hypervisor: "cmp-2", Reads: 30, Reason: "not judged"}}}}
	got := EvaluateThresholds([]ThresholdRule{
		{Profile: "rule-scale-1000", Path: "asap2", Metric: MetricRulesPerSecond, Op: ">=", Value: 1},
		{Profile: "rule-scale-10000", Path: "asap2", Metric: MetricRulesPerSecond, Op: ">=", Value: 1},
		{Profile: "churn", Path: "asap2", Metric: MetricChurnCount, Op: "<=", Value: 0},
		{Profile: "churn", Path: "baseline", Metric: MetricChurnCount, Op: "<=", Value: 0},
	}, f)
	f.Churn = f.Churn[:1]
	got = append(got, EvaluateThresholds([]ThresholdRule{{Profile: "churn", Path: "baseline", Metric: MetricChurnCount, Op: "<=", Value: 0}}, f)...)
	for i, want := range []string{"cmp-1 has no conntrack timeline: conntrack: no read", "no asap2 result for profile rule-scale-10000", "cmp-1 was read 1 time(s), a churn count needs 2",
		"cmp-2: no flow of the pair in any read, nothing to count", "no baseline result for profile churn"} {
		if got[i].Pass || got[i].Actual != nil || !strings.Contains(got[i].Reason, want) {
			t.Errorf("rule %d: %+v, want %q", i, got[i], want)
		}
	}
}
