package report

import (
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// familySection is a measurement family's part of the report, registered in the
// family's own file (pps.go, latency.go, connections.go, hold.go, aging.go,
// failover.go): its markdown and its HTML, each written after the profile
// tables in the sections' order.
type familySection struct {
	markdown func(b *strings.Builder, s *Set)
	html     func(b *strings.Builder, s *Set)
}

// sections are the families' report sections.
var sections = results.NewRegistry[familySection]("report sections")

// writeFamilies writes every family's markdown section, in order.
func writeFamilies(b *strings.Builder, s *Set) {
	for _, e := range sections.All() {
		e.Value.markdown(b, s)
	}
}

// writeFamiliesHTML writes every family's HTML section, in order.
func writeFamiliesHTML(b *strings.Builder, s *Set) {
	for _, e := range sections.All() {
		e.Value.html(b, s)
	}
}

// FamilySections are the family ids with a report section (for
// e2e/internal/families).
func FamilySections() []string { return sections.Covers() }
