package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

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
