package perf

import (
	"slices"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// specs are the measurement families' specs, each registered in the
// family's own spec file (pps_test.go, connections_test.go, hold_test.go,
// aging_test.go, latency_test.go, failover_test.go) with its place in the
// suite's Ordered container; perf_test.go runs them in that order. The
// failover's is last: it takes a bond member down and back, which nothing
// measured after it should see.
var specs = results.NewRegistry[func()]("perf suite specs")

// orderLast is the failover's place.
const orderLast = 1000

// TestSpecsCoverEveryFamily: every family of results.Families has its specs
// here (or its excuse), and the failover's run last.
func TestSpecsCoverEveryFamily(t *testing.T) {
	want, got := results.Families.Covers(), specs.Covers()
	for _, id := range want {
		if !slices.Contains(got, id) {
			t.Errorf("family %s: not registered in suites/perf (specs.Register in its spec file)", id)
		}
	}
	for _, id := range got {
		if !slices.Contains(want, id) {
			t.Errorf("suites/perf registers %q, which is no family of results.Families", id)
		}
	}
	all := specs.All()
	if last := all[len(all)-1]; !slices.Contains(last.Families, results.FamilyFailover) {
		t.Errorf("the last specs are %v's, want the failover's", last.Families)
	}
}
