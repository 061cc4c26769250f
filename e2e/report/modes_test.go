package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func withMode(r *results.Results, id string, mode *bool) *results.Results {
	r.RunID, r.Config.PortSecurity = id, mode
	return r
}

// The gate compares like with like: off against on is refused on either
// side; a run that does not record its mode (older files) stands for off,
// never for on.
func TestCompareModes(t *testing.T) {
	on, off := new(true), new(false)
	for _, tc := range []struct {
		name      string
		acc, cand *bool
		refused   bool
	}{
		{"off vs off", off, off, false},
		{"on vs on", on, on, false},
		{"off vs on", off, on, true},
		{"on vs off", on, off, true},
		{"unrecorded vs off", nil, off, false},
		{"unrecorded vs on", nil, on, true},
		{"on vs unrecorded", on, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acc := mustSet(t, withMode(seedResults(results.PathASAP2), "acc", tc.acc))
			cand := mustSet(t, withMode(seedResults(results.PathASAP2), "cand", tc.cand))
			c := Compare(acc, cand, CompareOptions{TolerancePercent: 5, LossTolerancePoints: 1})
			if c.Refused != tc.refused || c.Failed() != tc.refused {
				t.Fatalf("refused %v failed %v, want %v (differences %q)", c.Refused, c.Failed(), tc.refused, c.ModeDifferences)
			}
			md := c.Markdown()
			if tc.refused != strings.Contains(md, "**REFUSED: the runs were measured in different port-security modes**") {
				t.Errorf("banner wrong for refused=%v:\n%s", tc.refused, md)
			}
			if tc.refused && !strings.Contains(md, "**FAIL**: refused: runs of different port-security modes (0 regression(s) beyond tolerance besides).") {
				t.Errorf("no refusal verdict:\n%s", md)
			}
			if !tc.refused && !strings.Contains(md, "**PASS**") {
				t.Errorf("identical numbers of one mode do not pass:\n%s", md)
			}
			c = Compare(acc, cand, CompareOptions{TolerancePercent: 5, LossTolerancePoints: 1, AcrossModes: true})
			if c.Failed() {
				t.Errorf("-across-modes still fails: %+v", c.ModeDifferences)
			}
		})
	}
}

// The report names every run's mode, says when a report mixes modes, and
// shows the mode in the environment table (so compare's environment
// differences list it too).
func TestReportNamesTheMode(t *testing.T) {
	a := withMode(seedResults(results.PathASAP2), "a-off", new(false))
	b := withMode(seedResults(results.PathBaseline), "b-on", new(true))
	md := Markdown(mustSet(t, a, b), Options{})
	for _, want := range []string{
		"- ASAP² run a-off: cloud `mosk-lab`, build `MOSK 25.2`, security groups off, started",
		"- Baseline run b-on: cloud `mosk-lab`, build `MOSK 25.2`, security groups on, started",
		"**The runs of this report were measured in different port-security modes (security groups off, security groups on)**",
		"| Port security | security groups off | security groups on |",
		"### Baseline run b-on\n\nOverall: **software** (tc software, representor software, dpctl software, counters software).\n\n" + SecurityGroupsNote,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q", want)
		}
	}
	if strings.Count(md, SecurityGroupsNote) != 1 {
		t.Errorf("the ICMP note belongs to the run with security groups on only:\n%s", md)
	}
	b.Config.PortSecurity = nil
	md = Markdown(mustSet(t, a, b), Options{})
	if strings.Contains(md, "different port-security modes") || !strings.Contains(md, "| Port security | security groups off | mode not recorded |") {
		t.Errorf("an unrecorded mode beside off:\n%s", md)
	}
}
