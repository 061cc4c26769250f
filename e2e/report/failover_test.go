package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// A test input, not a measurement: the lab's shape (an OVS bond on a
// software datapath, a 212 ms failover within its 200 ms + 100 ms goal), and
// an asap2 run whose bond did not move its traffic (the failover did not
// happen: no outage shown as a pass).
func TestFailoverSection(t *testing.T) {
	a, b := seedResults(results.PathASAP2), seedResults(results.PathBaseline)
	st := func(active string, ul0 bool) *results.BondState {
		return &results.BondState{Source: "ovs", Name: "bond-ul", Mode: "active-backup", Active: active, MonitorMs: 100, DetectMode: "miimon", DownDelayMs: 100,
			Members: []results.BondMember{{Name: "ul0", Up: ul0, LinkFailures: -1, LinkChanges: 2}, {Name: "ul1", Up: true, LinkFailures: -1, LinkChanges: 0}}}
	}
	lab := results.FailoverResult{Path: results.PathBaseline, Hypervisor: "compute1", Side: "source", Bond: "bond-ul", Member: "ul0",
		Down: &results.FailoverAction{Command: "ip link set ul0 down", AtSeconds: 3.01}, Restore: &results.FailoverAction{Command: "ip link set ul0 up", AtSeconds: 8.0},
		Before: st("ul0", true), AfterWindow: st("ul1", true), AfterDown: st("ul1", false), AfterRestore: st("ul1", true),
		Flow:   &results.FailoverFlow{Sent: 270000, Lost: 4400, PacketsPerSecond: 20833, ResolutionMs: 0.048, IntervalSeconds: 0.1},
		Outage: &results.FailoverGap{Lost: 4400, MinRun: 4400, Ms: 211.2, MinMs: 211.2, Silent: 2, Words: "211.2 ms (4400 datagrams, exact) at 3–3.3 s"},
		GoalMs: 300, GoalFrom: "the bond's bound: miimon 100 ms + downdelay 100 ms + 100 ms",
		Reoffload: []results.FailoverReoffload{{After: "failover", Software: true, BoundSeconds: 60}, {After: "restore", Software: true, BoundSeconds: 60}}}
	lab.Verdict, lab.Reason, lab.Measured = results.JudgeFailover(lab)
	b.Failover = []results.FailoverResult{lab}
	stuck := lab
	stuck.Path, stuck.AfterDown, stuck.Outage = results.PathASAP2, st("ul0", false), nil
	stuck.Verdict, stuck.Reason, stuck.Measured = results.JudgeFailover(stuck)
	a.Failover = []results.FailoverResult{stuck}
	s, err := NewSet(a, b)
	if err != nil {
		t.Fatal(err)
	}
	md := Markdown(s, Options{})
	for _, w := range []string{
		"## Bond failover: outage under a fixed UDP rate",
		"| baseline | compute1 (source) | bond-ul | ul0 | 211.2 ms | < 0.05 ms (no loss) | 4400 / 270000 | 300 ms | pass | never: software datapath / never: software datapath |",
		"baseline: **pass**: longest gap, the failover's: 211.2 ms",
		"baseline: bond bond-ul (ovs) after the second down: active-backup, active ul1 (ul0 down, ul1 up; link changes 2/0)",
		"asap2: **fail**: the failover did not happen",
		"down `ip link set ul0 down` at +3.01 s, exit 0",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("markdown lacks %q:\n%s", w, md)
		}
	}
	if strings.Contains(md, "| asap2 | compute1 (source) | bond-ul | ul0 | < ") && strings.Contains(md, "| pass |") && strings.Count(md, "| pass |") > 1 {
		t.Error("the failover that did not happen reads as a pass")
	}
	html := string(HTML(s, Options{}))
	if !strings.Contains(html, "<h2>Bond failover: outage under a fixed UDP rate</h2>") || !strings.Contains(html, "never: software datapath") {
		t.Errorf("html lacks the section")
	}
	plain, err := NewSet(seedResults(results.PathASAP2))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(Markdown(plain, Options{}), "Bond failover") {
		t.Error("a run without the profile has its section")
	}
}
