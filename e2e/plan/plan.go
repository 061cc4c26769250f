// Package plan is what a run of the harness does under a config, known
// before anything is built: the profiles it selects (Selected), how long it
// may take step by step (RunBudget, the --timeout `make e2e` gives Ginkgo)
// and how much it may write into run.output_dir (ArtifactsEstimate). Pure:
// a config in, numbers and their rules out. The harness runs what it
// selects and checks the output directory's room; tools/budget prints the
// table without importing the harness.
//
// Where things are: plan.go (Selected, SelectedProfiles, SelectedLatency: the
// profiles a run selects, of every family; LoadDuration); budget.go
// (RunBudget: the wall-time allowance step by step, a fleet's steps per pair,
// fleetPairs, and its checks per round, fleetRounds; GinkgoTimeout, the total
// rounded up to a minute; Teardown, its tear-down step; AfterSIGTERM, the
// longest from SIGTERM to exit: Ginkgo's grace period three times and the
// teardown, which deploy/'s pods' grace must cover); artifacts.go
// (ArtifactsEstimate, a fleet's per pair). Each measurement family's budget
// lines and artifacts are registered in its own file (pps.go,
// connections.go, hold.go, aging.go, failover.go, latency.go; families.go),
// which RunBudget and ArtifactsEstimate range over in order.
package plan

import (
	"slices"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Selected reports whether the config selects profile id, of any family: a
// seed profile named in traffic.profiles (all of them when it is empty), a
// small-packet one in pps.profiles or traffic.profiles, a latency one in
// latency.profiles.
func Selected(cfg *config.Config, id string) bool {
	if slices.Contains(cfg.Traffic.Profiles, id) || slices.Contains(cfg.PPS.Profiles, id) || slices.Contains(cfg.Latency.Profiles, id) {
		return true
	}
	return len(cfg.Traffic.Profiles) == 0 && slices.ContainsFunc(iperf3.Catalogue(), func(p iperf3.Profile) bool { return p.ID == id })
}

// SelectedProfiles returns the seed's profiles the config selects, in catalogue order.
func SelectedProfiles(cfg *config.Config) []iperf3.Profile {
	return selectedOf(cfg, iperf3.Catalogue(), func(p iperf3.Profile) string { return p.ID })
}

// SelectedLatency returns the latency profiles the config selects, in
// catalogue order.
func SelectedLatency(cfg *config.Config) []results.LatencyShape {
	return selectedOf(cfg, results.LatencyCatalogue(), func(l results.LatencyShape) string { return l.ID })
}

// selectedOf is the entries of a catalogue the config selects (Selected of
// their id), in the catalogue's order; nil when it selects none.
func selectedOf[T any](cfg *config.Config, catalogue []T, id func(T) string) []T {
	var out []T
	for _, e := range catalogue {
		if Selected(cfg, id(e)) {
			out = append(out, e)
		}
	}
	return out
}

// LoadDuration is the load's iperf3 -t: latency.settle + latency.duration +
// latency.grace in whole seconds up, so that the load outlasts the sockperf
// client even when the client takes all of its bound (on the lab a 3 s
// client took 5.3 s over SSH). The harness still checks afterwards that the
// load outlasted the latency window, and fails the profile when it did not.
func LoadDuration(l config.Latency) time.Duration {
	return (l.Settle + l.Duration + l.Grace + time.Second - 1).Truncate(time.Second)
}
