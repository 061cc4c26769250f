package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func mustSet(t *testing.T, rs ...*results.Results) *Set {
	t.Helper()
	s, err := NewSet(rs...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Candidate identical to accepted except within tolerance: pass.
func TestCompareWithinTolerance(t *testing.T) {
	acc := mustSet(t, seedResults(results.PathASAP2), seedResults(results.PathBaseline))
	c := seedResults(results.PathASAP2)
	c.RunID = "cand"
	c.Profiles[2].Runs[0].DeliveredBps *= 0.97 // -3% on TCP P30
	results.Summarize(&c.Profiles[2], 0)
	cmp := Compare(acc, mustSet(t, c, seedResults(results.PathBaseline)), CompareOptions{TolerancePercent: 5, LossTolerancePoints: 1})
	if cmp.Failed() {
		t.Fatalf("within tolerance failed:\n%s", cmp.Markdown())
	}
	md := cmp.Markdown()
	if !strings.Contains(md, "| TCP 30 streams (`-P30`) | ASAP² | 22.8 Gbit/s | 22.1 Gbit/s | -3.0% |") || !strings.Contains(md, "**PASS**") {
		t.Errorf("delta table:\n%s", md)
	}
}

// Planted regressions: delivered drop beyond tolerance, UDP loss rise,
// evidence downgrade, missing profile; plus an environment difference.
func TestComparePlantedRegression(t *testing.T) {
	acc := mustSet(t, seedResults(results.PathASAP2))
	c := seedResults(results.PathASAP2)
	c.RunID = "cand"
	c.Profiles[1].Runs[0].DeliveredBps *= 0.80 // TCP P15 -20%
	c.Profiles[3].Runs[0].LossPercent = 29.5   // UDP P1 loss 27% -> 29.5%
	c.Environment.Hypervisors[0].NICFirmware = "26.44.1036 (MT_0000000531)"
	c.Environment.Guests[0].Iperf3Version = "3.18"
	c.Offload[2].Verdict = results.VerdictSoftware
	c.Profiles = c.Profiles[:len(c.Profiles)-1] // last capped profile not run
	for i := range c.Profiles {
		results.Summarize(&c.Profiles[i], 0)
	}
	cmp := Compare(acc, mustSet(t, c), CompareOptions{TolerancePercent: 5, LossTolerancePoints: 1})
	if !cmp.Failed() {
		t.Fatal("planted regression passed the gate")
	}
	md := cmp.Markdown()
	for _, want := range []string{
		"| TCP 15 streams (`-P15`) | ASAP² | 22.7 Gbit/s | 18.2 Gbit/s | -20.0% |",
		"loss rose by 2.5 points (27% → 30%)",
		`evidence went from "offload proven" to "unproven"`,
		"| missing |",
		"| ASAP² | NIC firmware | 26.43.2026 (MT_0000000531) | cmp-asap2-1: 26.44.1036 (MT_0000000531); cmp-asap2-2: 26.43.2026 (MT_0000000531) |",
		"| ASAP² | iperf3 | 3.16 | server: 3.18; client: 3.16 |",
		"**FAIL**",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
	// every row regressed because the evidence downgrade applies to all
	if cmp.Regressions != 14 {
		t.Errorf("regressions = %d, want 14", cmp.Regressions)
	}
	lenient := Compare(acc, mustSet(t, c), CompareOptions{TolerancePercent: 25, IgnoreLoss: true, AllowMissing: true, IgnoreEvidence: true})
	if lenient.Failed() {
		t.Errorf("lenient options still fail:\n%s", lenient.Markdown())
	}
}

// The accepted run proved nothing (its checks are missing) and the
// candidate's checks prove the software path on an asap2 run: the gate
// fails, although the evidence did not "go down" from a proven state.
func TestCompareCandidateProvesOtherPath(t *testing.T) {
	a := seedResults(results.PathASAP2)
	a.Offload = nil
	c := seedResults(results.PathASAP2)
	c.RunID = "cand"
	for i := range c.Offload {
		c.Offload[i].Verdict = results.VerdictSoftware
	}
	cmp := Compare(mustSet(t, a), mustSet(t, c), CompareOptions{TolerancePercent: 5, LossTolerancePoints: 1})
	if !cmp.Failed() || !strings.Contains(cmp.Markdown(), `candidate evidence "software" contradicts its asap2 path`) {
		t.Errorf("software candidate passed the asap2 gate:\n%s", cmp.Markdown())
	}
	if Compare(mustSet(t, a), mustSet(t, c), CompareOptions{TolerancePercent: 5, LossTolerancePoints: 1, IgnoreEvidence: true}).Failed() {
		t.Error("IgnoreEvidence still fails on evidence")
	}
}
