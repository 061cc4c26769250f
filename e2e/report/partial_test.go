package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Issue 9 point 5: fewer checks never earn the same stamp. A run that
// configured tc and dpctl only (offload.partial_proof) and got "offloaded"
// from both is a "partial proof" naming what ran and what did not; the
// table cell, the HTML badge and a comparison with a fully proven run say so.
func TestPartialProofIsNeverOffloadProven(t *testing.T) {
	full := seedResults(results.PathASAP2)
	part := seedResults(results.PathASAP2)
	part.RunID = "seed-asap2-partial"
	part.Config.Checks = []string{"tc", "dpctl"}
	part.Config.PartialProof = true
	var kept []results.CheckResult
	for _, c := range part.Offload {
		if c.Name == "tc" || c.Name == "dpctl" {
			kept = append(kept, c)
		}
	}
	part.Offload = kept

	s, err := NewSet(part)
	if err != nil {
		t.Fatal(err)
	}
	p := &part.Profiles[0]
	ev := s.EvidenceFor(p)
	if ev.Status != EvidencePartialProof {
		t.Fatalf("status %q, want %q (detail %q)", ev.Status, EvidencePartialProof, ev.Detail)
	}
	if want := "partial proof: tc, dpctl only (representor, counters not run)"; PartialProofLabel(ev) != want {
		t.Errorf("label %q, want %q", PartialProofLabel(ev), want)
	}
	if !Expected(results.PathASAP2, ev.Status) || Expected(results.PathBaseline, ev.Status) {
		t.Error("a partial proof is what an opted-in asap2 run asked for, and contradicts a baseline")
	}
	md := Markdown(s, Options{})
	if !strings.Contains(md, "ASAP²: partial proof: tc, dpctl only") || strings.Contains(md, EvidenceOffloadProven) {
		t.Errorf("markdown must say partial proof and never offload proven:\n%s", md)
	}
	html := HTML(s, Options{})
	if !strings.Contains(string(html), "partial proof: tc, dpctl only") {
		t.Error("HTML badge does not name the partial proof")
	}

	// Accepted with all four checks, candidate with two: an evidence downgrade.
	accepted, err := NewSet(full)
	if err != nil {
		t.Fatal(err)
	}
	cmp := Compare(accepted, s, CompareOptions{TolerancePercent: 100, LossTolerancePoints: 100})
	found := false
	for _, r := range cmp.Rows {
		for _, n := range r.Notes {
			if strings.Contains(n, `evidence went from "offload proven" to "partial proof"`) {
				found = true
			}
		}
	}
	if !found || !cmp.Failed() {
		t.Errorf("offload proven -> partial proof must be a regression; got regressions=%d rows=%+v", cmp.Regressions, cmp.Rows)
	}
}
