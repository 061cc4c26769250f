package history

import (
	"cmp"
	"slices"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// adder adds one point (Extract's add).
type adder = func(metric, profile string, path results.Path, node string, v, lo, hi float64, n int)

// pointsFunc adds a single run's points of one kind; pair is the run's pair
// ("client-hypervisor>server-hypervisor").
type pointsFunc = func(r *results.Results, pair string, add adder)

// families are the measurement families' points, registered in each
// family's own file (latency.go, connections.go, hold.go, aging.go,
// failover.go, pps.go) with their metrics, or excused there. Their order is Extract's, among its own
// steps: every profile's points at 10, the run's verdict at 30.
var families = results.NewRegistry[pointsFunc]("history families")

// step is one kind of a single run's points.
type step struct {
	order int
	run   pointsFunc
}

// inOrder is Extract's own steps and the families', by order.
func inOrder(own []step) []step {
	all := slices.Clone(own)
	for _, f := range families.All() {
		all = append(all, step{f.Order, f.Value})
	}
	slices.SortStableFunc(all, func(a, b step) int { return cmp.Compare(a.order, b.order) })
	return all
}

// FamilySeries are the family ids the history knows (for
// e2e/internal/families).
func FamilySeries() []string { return families.Covers() }
