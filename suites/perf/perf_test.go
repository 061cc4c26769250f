package perf

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/framework"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// One Ordered container, in the methodology's order: the topology is built
// (BeforeSuite), the complementary checks prove which path the numbers
// below belong to, then each profile is measured; teardown runs after the
// last spec (registered by framework.SetUp). Ginkgo shuffles top-level
// containers, never the specs inside an Ordered one. ContinueOnFailure: a
// failed check or profile does not skip the profiles after it — each is
// reported on its own, and the report says which path the numbers are.
var _ = Describe("ASAP² Direct performance", Ordered, ContinueOnFailure, func() {
	Describe("Complementary offload checks", Label("offload"), func() {
		expect := func(path results.Path) func(SpecContext) {
			return func(ctx SpecContext) {
				if run.Config.Run.ExpectedPath != path {
					Skip(fmt.Sprintf("run.expected_path is %s in %s", run.Config.Run.ExpectedPath, run.Config.File))
				}
				By(fmt.Sprintf("proving the data path: %s checks during one evidence window", checkNames(run.Config)))
				checks, err := pair.RunOffloadChecks(ctx)
				framework.ExpectNoError(err, "running the offload evidence window")
				By(fmt.Sprintf("judging the verdicts against the expected path %s", path))
				framework.ExpectNoError(offload.ExpectPath(path, evidence.Checks(checks)), "proving the data path")
			}
		}
		It("proves the traffic is offloaded to the NIC (NIC asap2)", Label("asap2"), expect(results.PathASAP2))
		It("proves the traffic stays on the software path (NIC standard)", Label("baseline"), expect(results.PathBaseline))
	})

	Describe("iperf3 throughput", func() {
		for _, p := range iperf3.Catalogue() {
			It(p.Name, framework.ProfileLabels(p), func(ctx SpecContext) {
				if !plan.Selected(run.Config, p.ID) {
					Skip(fmt.Sprintf("%s is not in traffic.profiles of %s", p.ID, run.Config.File))
				}
				By(fmt.Sprintf("measuring %s (%s): %d repeat(s) of %s", p.ID, p.Name, run.Config.Traffic.Repeats, run.Config.Traffic.Duration))
				pr, err := pair.RunProfile(ctx, p)
				framework.ExpectNoError(err, "running %s", p.Name)
				Expect(pr.Summary.Runs).To(BeNumerically(">", 0), "no successful repeat of %s", p.Name)
				Expect(pr.Summary.Delivered.Median).To(BeNumerically(">", 0), "%s delivered nothing", p.Name)
				By(fmt.Sprintf("comparing %s with its thresholds", p.ID))
				results, err := pair.ThresholdsFor(p.ID)
				framework.ExpectNoError(err, "evaluating thresholds of %s", p.ID)
				for _, t := range results {
					Expect(t.Pass).To(BeTrue(), "threshold %s: %s", t.Name, t.Reason)
				}
			})
		}
	})

	// The measurement families' specs, each registered in its own spec
	// file (families_test.go), in their order; the failover's last, it
	// disturbs the bond.
	for _, f := range specs.All() {
		f.Value()
	}
})

func checkNames(cfg *config.Config) string {
	if len(cfg.Offload.Checks) == 0 {
		return "no"
	}
	return strings.Join(cfg.Offload.Checks, ", ")
}
