package report_test

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/report"
)

// report depends on no harness package, so the strings other packages hand
// it (verdicts, check names, paths) are defined twice. The integration
// copies them verbatim (e2e/harness checks.go recordChecks: Verdict:
// string(fc.Check.Verdict)); this pins every pair so a rename on one side
// fails here instead of silently turning every check "missing" or every row
// "unproven" in the report.
func TestStringsSharedWithOtherPackages(t *testing.T) {
	pairs := []struct{ what, got, want string }{
		{"verdict offloaded", string(offload.Offloaded), report.VerdictOffloaded},
		{"verdict software", string(offload.Software), report.VerdictSoftware},
		{"verdict inconclusive", string(offload.Inconclusive), report.VerdictInconclusive},
		{"path asap2 (offload)", offload.PathASAP2, string(report.PathASAP2)},
		{"path baseline (offload)", offload.PathBaseline, string(report.PathBaseline)},
		{"path asap2 (config)", string(config.PathASAP2), string(report.PathASAP2)},
		{"path baseline (config)", string(config.PathBaseline), string(report.PathBaseline)},
		{"check tc", offload.CheckNameTC, config.CheckTC},
		{"check representor", offload.CheckNameRepresentor, config.CheckRepresentor},
		{"check dpctl", offload.CheckNameDpctl, config.CheckDpctl},
		{"check counters", offload.CheckNameCounters, config.CheckCounters},
		{"known checks", strings.Join(report.KnownChecks, ","), strings.Join(config.AllChecks, ",")},
	}
	for _, p := range pairs {
		if p.got != p.want {
			t.Errorf("%s: %q in one package, %q in the other", p.what, p.got, p.want)
		}
	}
}
