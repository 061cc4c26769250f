package perf

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() { specs.Register(orderLast, failoverSpecs, results.FamilyFailover) }

// failoverSpecs are issue 38's bond / VF-LAG failover profile (label
// failover: `-ginkgo.label-filter failover` or `-ginkgo.focus failover`
// runs it alone), the last of the suite's Ordered container: it takes a
// bond member down and back, which nothing measured after it should see.
func failoverSpecs() {
	Describe("Bond failover", Label(results.FailoverProfileID), func() {
		It("takes a bond member down and back during a measured UDP flow (failover)", func(ctx SpecContext) {
			fc := run.Config.Failover
			if !fc.Enabled {
				Skip(fmt.Sprintf("failover.enabled is false in %s", run.Config.File))
			}
			By(fmt.Sprintf("a %s UDP flow at %s; on the %s hypervisor `%s` at +%s, `%s` at +%s", fc.Duration, results.FormatBps(float64(fc.BitrateBps)),
				fc.Hypervisor, fc.DownCommand, fc.DownAt, fc.RestoreCommand, fc.RestoreAt))
			fr, err := pair.RunFailover(ctx)
			By(fmt.Sprintf("%s: %s", fr.Verdict, fr.Reason))
			for _, ro := range fr.Reoffload {
				By(fmt.Sprintf("in hardware again after the %s: %s", ro.After, ro.Words()))
			}
			var bad []string
			if err != nil {
				bad = append(bad, err.Error())
			}
			By("comparing the failover with its thresholds")
			got, terr := pair.ThresholdsFor(results.FailoverProfileID)
			if terr != nil {
				bad = append(bad, fmt.Sprintf("evaluating thresholds of %s: %v", results.FailoverProfileID, terr))
			}
			for _, t := range got {
				if !t.Pass {
					bad = append(bad, fmt.Sprintf("threshold %s: %s", t.Name, t.Reason))
				}
			}
			Expect(bad).To(BeEmpty())
		})
	})
}
