package config

import (
	"cmp"
	"slices"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// section is a measurement family's part of the configuration, registered
// in the family's own file (latency.go, pps.go, connections.go, hold.go,
// aging.go, failover.go): applyDefaults and validate run every section, in
// order, where the families' calls stood.
type section struct {
	// defaults fills the family's keys the file left out (after the
	// intervals are merged).
	defaults func(c *Config)
	// validate adds the family's problems.
	validate func(v *validator)
	// metric reports whether a threshold metric is the family's; profile
	// then checks the rule's profile id (thresholds[i].profile).
	metric  func(metric string) bool
	profile func(v *validator, path, metric, id string)
}

// sections are the families' config sections. Their order is the
// validation's (the order of the problems), among validate's own steps:
// those are at multiples of 10 (offload 120, intervals 140, thresholds
// 150, fleet 170).
var sections = results.NewRegistry[section]("config sections")

// step is one validation step: validate's own or a family's.
type step struct {
	order int
	run   func()
}

// inOrder is validate's own steps and the families', by order.
func (v *validator) inOrder(own []step) []step {
	all := slices.Clone(own)
	for _, s := range sections.All() {
		if fn := s.Value.validate; fn != nil {
			all = append(all, step{s.Order, func() { fn(v) }})
		}
	}
	slices.SortStableFunc(all, func(a, b step) int { return cmp.Compare(a.order, b.order) })
	return all
}

// familyProfile checks a threshold's profile when its metric is a family's.
func (v *validator) familyProfile(path, metric, id string) bool {
	for _, s := range sections.All() {
		if s.Value.metric != nil && s.Value.metric(metric) {
			s.Value.profile(v, path, metric, id)
			return true
		}
	}
	return false
}

// FamilySections are the family ids with a config section (for
// e2e/internal/families).
func FamilySections() []string { return sections.Covers() }
