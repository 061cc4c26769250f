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

// Seed-formatted numbers (source: the seed's tables, see seed_test.go).
func TestFormatting(t *testing.T) {
	for in, want := range map[float64]string{16.5e9: "16.5 Gbit/s", 2.76e9: "2.76 Gbit/s", 891e6: "891 Mbit/s", 7.5e9: "7.50 Gbit/s",
		999.7e6: "1.00 Gbit/s", 0: "0 bit/s", 1234: "1.23 Kbit/s", -1: Dash} {
		if got := FormatBps(in); got != want {
			t.Errorf("FormatBps(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{27: "27%", 0.046: "0.046%", 0.00017: "0.00017%", 0.3: "0.3%", 0: "0%", 2.7: "2.7%",
		0.0094: "0.0094%", 100: "100%", 9.96: "10%", 0.12345: "0.12%"} {
		if got := FormatLoss(in); got != want {
			t.Errorf("FormatLoss(%v) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		in    float64
		whole bool
		want  string
	}{{5.98, true, "~6×"}, {1.97, true, "~2×"}, {3.98, false, "~4.0×"}, {19.59, false, "~20×"}, {35.76, false, "~36×"}, {2.629, false, "~2.6×"}, {0.5, false, "~0.50×"}} {
		if got := FormatGain(c.in, c.whole); got != c.want {
			t.Errorf("FormatGain(%v, %v) = %q, want %q", c.in, c.whole, got, c.want)
		}
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
