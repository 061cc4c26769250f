package main

import (
	"os"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// A candidate measured with security groups on against the seed (off) is
// refused with exit 2 and both runs' modes on stderr, and nothing on stdout
// that could read as a gate result; -across-modes compares them with the
// modes said at the top. Before the mode was recorded the comparison passed
// with exit 0, the -4% read as within tolerance.
func TestCompareRefusesRunsOfDifferentPortSecurityModes(t *testing.T) {
	cand := plant(t, func(r *results.Results) {
		r.Config.PortSecurity = new(true)
		for i := range r.Profiles {
			r.Profiles[i].Runs[0].DeliveredBps *= 0.96
		}
	})
	code, out, errs := runCmd(t, "compare", seedASAP2, cand)
	if code != 2 || out != "" {
		t.Fatalf("exit %d, want 2 and no table; stdout:\n%s", code, out)
	}
	want := "report compare: refused: the runs were measured in different port-security modes (ASAP²: accepted run seed-asap2 security groups off, candidate run candidate security groups on)"
	if !strings.Contains(errs, want) {
		t.Errorf("stderr %q lacks %q", errs, want)
	}

	code, out, errs = runCmd(t, "compare", "-across-modes", seedASAP2, cand)
	if code != 0 {
		t.Fatalf("exit %d with -across-modes: %s\n%s", code, errs, out)
	}
	if !strings.HasPrefix(strings.SplitN(out, "\n\n", 3)[1], "**THE RUNS WERE MEASURED IN DIFFERENT PORT-SECURITY MODES** (compared on purpose, -across-modes)") {
		t.Errorf("no banner at the top:\n%s", out)
	}
}

// sgcost: the lab's two recorded runs side by side (exit 0, the table on
// stdout and in -o), the files swapped refused with exit 2 naming both
// modes, one file a usage error.
func TestSgcostSideBySide(t *testing.T) {
	off, on := "../../e2e/report/testdata/sgcost-lab/off.json", "../../e2e/report/testdata/sgcost-lab/on.json"
	md := t.TempDir() + "/cost.md"
	code, out, errs := runCmd(t, "sgcost", "-o", md, off, on)
	if code != 0 || !strings.Contains(out, "| tcp-p1 |") {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	if data, err := os.ReadFile(md); err != nil || string(data) != out {
		t.Errorf("-o wrote %q (%v), want what stdout showed", data, err)
	}
	code, out, errs = runCmd(t, "sgcost", on, off)
	if code != 2 || out != "" || !strings.Contains(errs, "measured with security groups on: give the run with port security off first") || !strings.Contains(errs, "second run (20261204t093836-3b70) was measured with security groups off") {
		t.Errorf("swapped: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, errs = runCmd(t, "sgcost", off); code != 2 || !strings.Contains(errs, "want OFF_RESULTS.json and ON_RESULTS.json") {
		t.Errorf("one file: exit %d, %s", code, errs)
	}
}
