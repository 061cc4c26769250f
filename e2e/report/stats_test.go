package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Interval statistics on the public veth series (seed_test.go): the
// 100-second average hides a 193 Mbit/s second.
func TestIntervalStatsVethSeries(t *testing.T) {
	iv := series(81, vethSeries, 1)
	st := results.IntervalStatsOf(iv)
	if st.Count != 19 || st.MinBps != 193e6 || st.MaxBps != 272e6 || st.MedianBps != 239e6 {
		t.Errorf("got %+v", st)
	}
	if st.Worst.Start != 96 || st.Worst.End != 97 {
		t.Errorf("worst interval %+v, want 96-97 s", st.Worst)
	}
	// A trailing partial interval (iperf3 prints e.g. 100.00-100.01) is not
	// the "worst second".
	iv = append(iv, results.Interval{Start: 100, End: 100.01, Bps: 1e6})
	if st2 := results.IntervalStatsOf(iv); st2.MinBps != 193e6 || st2.Count != 19 {
		t.Errorf("partial interval counted: %+v", st2)
	}
	if results.IntervalStatsOf(nil) != nil {
		t.Error("nil series must give nil stats")
	}
}

func TestJudge(t *testing.T) {
	all := results.AllChecks
	off := func(n string) results.CheckResult {
		return results.CheckResult{Name: n, Verdict: results.VerdictOffloaded}
	}
	sw := func(n string) results.CheckResult {
		return results.CheckResult{Name: n, Verdict: results.VerdictSoftware}
	}
	cases := []struct {
		name   string
		checks []results.CheckResult
		want   string
		detail string
	}{
		{"all offloaded", []results.CheckResult{off("tc"), off("representor"), off("dpctl"), off("counters")}, EvidenceOffloadProven, ""},
		{"one missing", []results.CheckResult{off("tc"), off("dpctl")}, EvidenceUnproven, "representor missing"},
		{"none", nil, EvidenceUnproven, "representor missing"},
		{"software", []results.CheckResult{sw("tc"), sw("representor"), sw("dpctl")}, EvidenceSoftware, ""},
		{"contradiction", []results.CheckResult{off("tc"), sw("representor"), off("dpctl")}, EvidenceUnproven, "contradict"},
		{"udp flow software", []results.CheckResult{off("tc"), off("representor"), off("dpctl"), off("counters"), {Name: "tc", Flow: "udp", Verdict: results.VerdictSoftware}}, EvidenceUnproven, "tc software"},
		{"inconclusive", []results.CheckResult{off("tc"), off("representor"), {Name: "dpctl", Verdict: results.VerdictInconclusive}}, EvidenceUnproven, "dpctl inconclusive"},
		// One hypervisor's tc rules in hardware, the other's not: no
		// "software" proof for a baseline row (offload.ExpectPath fails such a
		// baseline run, the report must not show it as expected).
		{"offloaded on one hypervisor", []results.CheckResult{sw("tc"), off("tc"), sw("representor"), sw("dpctl")}, EvidenceUnproven, "contradict"},
	}
	for _, c := range cases {
		ev := Judge(c.checks, all, "run")
		if c.name == "all offloaded" {
			// the same verdicts with only three checks configured: partial
			if p := Judge(c.checks[:3], all[:3], "run"); p.Status != EvidencePartialProof || !strings.Contains(p.Detail, "counters not run") {
				t.Errorf("three of four checks: got %+v, want a partial proof naming counters", p)
			}
		}
		if ev.Status != c.want || !strings.Contains(ev.Detail, c.detail) {
			t.Errorf("%s: got %+v, want %s with %q", c.name, ev, c.want, c.detail)
		}
	}
	if ev := Judge(nil, nil, "run"); ev.Status != EvidenceUnproven || ev.Detail != "no offload check ran" {
		t.Errorf("nothing configured, nothing ran: %+v", ev)
	}
}
