package report_test

import (
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// report depends on no harness package, so the strings other packages hand
// it (verdicts, check names, paths) are defined twice. The integration
// copies them verbatim (e2e/harness checks.go recordChecks: Verdict:
// string(fc.Check.Verdict)); this pins every pair so a rename on one side
// fails here instead of silently turning every check "missing" or every row
// "unproven" in the report.
func TestStringsSharedWithOtherPackages(t *testing.T) {
	pairs := []struct{ what, got, want string }{
		{"verdict offloaded", string(offload.Offloaded), string(results.VerdictOffloaded)},
		{"verdict software", string(offload.Software), string(results.VerdictSoftware)},
		{"verdict inconclusive", string(offload.Inconclusive), string(results.VerdictInconclusive)},
		{"path asap2 (offload)", offload.PathASAP2, string(results.PathASAP2)},
		{"path baseline (offload)", offload.PathBaseline, string(results.PathBaseline)},
		{"check tc", offload.CheckNameTC, results.CheckTC},
		{"check representor", offload.CheckNameRepresentor, results.CheckRepresentor},
		{"check dpctl", offload.CheckNameDpctl, results.CheckDpctl},
		{"check counters", offload.CheckNameCounters, results.CheckCounters},
	}
	for _, p := range pairs {
		if p.got != p.want {
			t.Errorf("%s: %q in one package, %q in the other", p.what, p.got, p.want)
		}
	}
}
