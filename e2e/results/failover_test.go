package results

import (
	"strings"
	"testing"
)

func bondAB(active string, ul0, ul1 bool, failures int) *BondState {
	return &BondState{Source: "ovs", Name: "bond-ul", Mode: "active-backup", Active: active, MonitorMs: 100, DetectMode: "miimon", DownDelayMs: 100, UpDelayMs: 200,
		Members: []BondMember{{Name: "ul0", Up: ul0, LinkFailures: failures, LinkChanges: -1}, {Name: "ul1", Up: ul1, LinkFailures: 0, LinkChanges: -1}}}
}

// goodFailover is a failover that happened, 1 datagram = 0.4 ms, goal 300
// ms from the bond (miimon 100 + downdelay 100 + 100).
func goodFailover() FailoverResult {
	return FailoverResult{
		Path: PathBaseline, Hypervisor: "compute1", Side: "source", Bond: "bond-ul", Member: "ul0", MemberFrom: "active before",
		Down:    &FailoverAction{Command: "ip link set ul0 down"},
		Restore: &FailoverAction{Command: "ip link set ul0 up"},
		Down2:   &FailoverAction{Command: "ip link set ul0 down"}, Restore2: &FailoverAction{Command: "ip link set ul0 up"},
		Before: bondAB("ul0", true, true, 0), AfterWindow: bondAB("ul1", true, true, 1),
		AfterDown: bondAB("ul1", false, true, 2), AfterRestore: bondAB("ul1", true, true, 2),
		Flow:   &FailoverFlow{Sent: 32500, Lost: 500, PacketsPerSecond: 2500, ResolutionMs: 0.4, IntervalSeconds: 0.1},
		Outage: &FailoverGap{FromSeconds: 3.1, ToSeconds: 3.3, Lost: 500, MinRun: 250, Ms: 200, MinMs: 100, Silent: 1, Words: "200.0 ms (500 datagrams; at least 100.0 ms) at 3.1–3.3 s"},
		GoalMs: 300, GoalFrom: "the bond's bound: miimon 100 ms + downdelay 100 ms + 100 ms",
		Reoffload: []FailoverReoffload{{After: "failover", Software: true, BoundSeconds: 60}, {After: "restore", Software: true, BoundSeconds: 60}},
	}
}

func TestJudgeFailover(t *testing.T) {
	for _, c := range []struct {
		name     string
		edit     func(*FailoverResult)
		verdict  string
		measured bool
		want     []string
	}{
		{"within the goal", func(*FailoverResult) {}, FailoverPass, true, []string{"longest gap, the failover's: 200.0 ms", "within the goal 300 ms", "1 datagram = 0.40 ms"}},
		{"over the goal", func(f *FailoverResult) { f.Outage.Ms, f.Outage.MinMs = 900, 800 }, FailoverFail, true, []string{"over the goal 300 ms"}},
		{"between: the interval's loss may be several runs", func(f *FailoverResult) { f.Outage.Ms, f.Outage.MinMs = 400, 2 }, FailoverInconclusive, true, []string{"between 2.0 and 400.0 ms"}},
		{"the failback is longer", func(f *FailoverResult) {
			f.Failback = &FailoverGap{Lost: 1000, MinRun: 900, Ms: 400, MinMs: 360, Words: "400.0 ms"}
		}, FailoverFail, true, []string{"the failback (after the restore)'s: 400.0 ms"}},
		{"no loss after the down is no 0 ms lie: the resolution is said", func(f *FailoverResult) { f.Outage = nil }, FailoverPass, true, []string{"no datagram lost after the down", "under 1 datagram = 0.40 ms"}},
		{"spread loss is said", func(f *FailoverResult) {
			f.Outage = &FailoverGap{Lost: 8, MinRun: 1, Ms: 3.2, MinMs: 0.4, Spread: true, Words: "3.2 ms"}
		}, FailoverPass, true, []string{"spread loss, no single run stands out"}},
		{"lossy before the down", func(f *FailoverResult) { f.LostBeforeDown = 7 }, FailoverPass, true, []string{"7 datagram(s) lost before the down"}},
		{"the down command failed: host, command, stderr", func(f *FailoverResult) {
			f.Down.ExitCode, f.Down.Stderr = 1, "Cannot find device \"ul0\"\n"
		}, FailoverFail, false, []string{"the down command failed: on compute1 `ip link set ul0 down` exited 1: Cannot find device \"ul0\""}},
		{"a failed command explains a failed flow", func(f *FailoverResult) {
			f.Down.ExitCode, f.Error = 1, "the failover flow: iperf3 reported: control socket has closed unexpectedly"
		}, FailoverFail, false, []string{"the down command failed: on compute1 `ip link set ul0 down` exited 1"}},
		{"the down command could not run", func(f *FailoverResult) { f.Down.Error = "ssh: connection lost" }, FailoverFail, false, []string{"could not run: ssh: connection lost"}},
		{"the restore command failed", func(f *FailoverResult) { f.Restore.ExitCode = 2 }, FailoverFail, false, []string{"the restore command failed", "member ul0 may still be down"}},
		{"the bond did not change its active member", func(f *FailoverResult) {
			f.AfterDown = bondAB("ul0", false, true, 1)
			f.Outage = nil
		}, FailoverFail, false, []string{"the failover did not happen", "active \"ul0\"", "no outage is reported"}},
		{"the member stayed up", func(f *FailoverResult) { f.AfterDown = bondAB("ul1", true, true, 0) }, FailoverFail, false, []string{"the failover did not happen: after `ip link set ul0 down` member ul0 of bond bond-ul on compute1 was still up"}},
		{"the member was already down before", func(f *FailoverResult) { f.Before = bondAB("ul1", false, true, 3) }, FailoverFail, false, []string{"member ul0 of bond bond-ul on compute1 was already down before the window"}},
		{"no such member", func(f *FailoverResult) { f.Member = "ul7" }, FailoverFail, false, []string{"has no member ul7"}},
		{"the restore never came back", func(f *FailoverResult) { f.AfterWindow = bondAB("ul1", false, true, 1) }, FailoverFail, false, []string{"the restore never came back: member ul0", "after the window's restore"}},
		{"the flow never came back in the window", func(f *FailoverResult) {
			f.Failback = &FailoverGap{Open: true, Lost: 100, MinRun: 100, Ms: 40, MinMs: 40, Words: "40.0 ms and not over when the sender stopped"}
		}, FailoverFail, false, []string{"the flow never came back within the window: 40.0 ms and not over"}},
		{"no goal", func(f *FailoverResult) { f.GoalMs = 0 }, FailoverInconclusive, true, []string{"no goal"}},
		{"not run", func(f *FailoverResult) { f.Error = "no connection to compute1" }, FailoverFail, false, []string{"not measured: no connection to compute1"}},
		{"asap2, not in hardware again", func(f *FailoverResult) {
			f.Path = PathASAP2
			f.Reoffload = []FailoverReoffload{{After: "failover", BoundSeconds: 60, Reason: "tc: software"}}
		}, FailoverFail, true, []string{"not in hardware again within 60 s after the failover: tc: software"}},
		{"asap2, in hardware again", func(f *FailoverResult) {
			f.Path = PathASAP2
			s := 4.5
			f.Reoffload = []FailoverReoffload{{After: "failover", Seconds: &s, BoundSeconds: 60}}
		}, FailoverPass, true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := goodFailover()
			c.edit(&f)
			v, reason, measured := JudgeFailover(f)
			if v != c.verdict || measured != c.measured {
				t.Errorf("verdict %s measured %v, want %s %v: %s", v, measured, c.verdict, c.measured, reason)
			}
			for _, w := range c.want {
				if !strings.Contains(reason, w) {
					t.Errorf("reason %q lacks %q", reason, w)
				}
			}
			f.Verdict, f.Reason, f.Measured = v, reason, measured
			ms, ok := f.OutageMs()
			if ok != measured || ok && f.Outage != nil && f.Failback == nil && ms != f.Outage.Ms {
				t.Errorf("OutageMs %v %v", ms, ok)
			}
		})
	}
}

func TestBondStateWords(t *testing.T) {
	b := bondAB("ul1", false, true, 2)
	if l := b.Line(); l != "active-backup, active ul1 (ul0 down, ul1 up; link failures 2/0)" {
		t.Errorf("%s", l)
	}
	if ms, w, ok := b.Bound(); !ok || ms != 200 || w != "miimon 100 ms + downdelay 100 ms" {
		t.Errorf("%d %q %v", ms, w, ok)
	}
	b.DetectMode, b.MonitorMs = "carrier", 0
	if _, w, _ := b.Bound(); w != "carrier detection + downdelay 100 ms" {
		t.Errorf("%q", w)
	}
	b.MonitorMs = -1
	if _, _, ok := b.Bound(); ok {
		t.Error("a bond without a monitoring period has a bound")
	}
	s := 3.25
	for _, c := range []struct {
		r    FailoverReoffload
		want string
	}{{FailoverReoffload{Seconds: &s}, "3.2 s"}, {FailoverReoffload{Software: true}, "never: software datapath"}, {FailoverReoffload{BoundSeconds: 60}, "not within 60 s"}} {
		if w := c.r.Words(); w != c.want {
			t.Errorf("%q, want %q", w, c.want)
		}
	}
}

func TestFailoverThreshold(t *testing.T) {
	f := goodFailover()
	f.Verdict, f.Reason, f.Measured = JudgeFailover(f)
	r := &Results{Failover: []FailoverResult{f}}
	res := evaluate(ThresholdRule{Name: "outage", Profile: FailoverProfileID, Path: "baseline", Metric: MetricFailoverOutage, Op: "<=", Value: 250}, []*Results{r})
	if !res.Pass || res.Actual == nil || *res.Actual != 200 {
		t.Errorf("%+v", res)
	}
	f.AfterDown = bondAB("ul0", false, true, 1)
	f.Verdict, f.Reason, f.Measured = JudgeFailover(f)
	r.Failover[0] = f
	res = evaluate(ThresholdRule{Name: "outage", Profile: FailoverProfileID, Path: "baseline", Metric: MetricFailoverOutage, Op: "<=", Value: 250}, []*Results{r})
	if res.Pass || !strings.Contains(res.Reason, "the failover did not happen") {
		t.Errorf("a failover that did not happen passed the threshold: %+v", res)
	}
}
