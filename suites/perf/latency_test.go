package perf

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mosk-qa/asap2-e2e/e2e/framework"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() { specs.Register(50, latencySpecs, results.FamilyLatency) }

// latencySpecs are issue 12's latency profiles (label latency, and each
// its own id), after the other profiles but before the failover.
func latencySpecs() {
	Describe("Latency", func() {
		for _, l := range results.LatencyCatalogue() {
			It(l.Name, Label("latency", l.ID), func(ctx SpecContext) {
				if !plan.Selected(run.Config, l.ID) {
					Skip(fmt.Sprintf("%s is not in latency.profiles of %s", l.ID, run.Config.File))
				}
				By(fmt.Sprintf("measuring %s (%s)", l.ID, l.Name))
				lr, err := pair.RunLatency(ctx, l)
				framework.ExpectNoError(err, "running %s", l.Name)
				Expect(lr.OK()).To(BeTrue(), "%s has no result", l.Name)
				expectThresholds(l.ID) // pps_test.go
			})
		}
	})
}
