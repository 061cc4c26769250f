package plan

import (
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// family is a measurement family's part of a run's plan, registered in
// the family's own file (pps.go, connections.go, hold.go, aging.go,
// failover.go, latency.go): its lines of RunBudget, after the profiles', in
// order, and its share of ArtifactsEstimate.
type family struct {
	// budget adds the family's lines; listen and cmd are the iperf_server
	// and command intervals' bounds.
	budget func(cfg *config.Config, listen, cmd time.Duration, add adder)
	// artifacts is what the family adds to the estimate.
	artifacts func(cfg *config.Config) artifactShare
}

// adder adds one budget line (RunBudget's add).
type adder = func(step string, d time.Duration, rule string, args ...any)

// artifactShare is a family's part of ArtifactsEstimate: evidence flows
// (each artifactsPerFlow and offload.flow_duration of windows) and terms
// of their own.
type artifactShare struct {
	flows int
	terms []artifactTerm
}

// artifactTerm is n things of each bytes, said in the rule with words (a
// format of n) when n > 0.
type artifactTerm struct {
	n, each int64
	words   string
}

// families are the families' plan contributions.
var families = results.NewRegistry[family]("plan families")

// FamilyPlans are the family ids the plan knows (for e2e/internal/families).
func FamilyPlans() []string { return families.Covers() }
