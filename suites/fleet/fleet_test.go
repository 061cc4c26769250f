package fleet

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mosk-qa/asap2-e2e/e2e/framework"
	"github.com/mosk-qa/asap2-e2e/e2e/harness"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
)

// One Ordered container, in the methodology's order (BeforeSuite built,
// reached and recorded every pair and node): each pair's offload evidence
// window, in rounds of pairs that share no node (the pairs of a round at
// once, each flow's window opened for all of them together) in both
// modes; then each selected
// profile on every pair (fleet.mode: isolated one pair after the other,
// concurrent every pair's windows opened together); then the verdict by
// node, in AfterAll so that it runs whatever labels selected the specs.
// ContinueOnFailure: a failed step does not skip the ones after it.
var _ = Describe("ASAP² Direct fleet sweep", Ordered, ContinueOnFailure, func() {
	It("proves the data path on every node, in rounds of pairs that share no node", Label("offload"), func(ctx SpecContext) {
		By(fmt.Sprintf("running the offload evidence windows of %d pairs, the pairs that share no node at once", len(run.Pairs)))
		framework.ExpectNoError(run.RunOffloadChecks(ctx), "running the pairs' offload evidence windows")
		By(fmt.Sprintf("judging each node's verdicts against the expected path %s", run.Config.Run.ExpectedPath))
		v := run.CheckVerdict()
		Expect(v.Pass()).To(BeTrue(), "nodes whose offload proof failed:\n%s", harness.DescribeVerdict(v))
	})

	Describe("iperf3 throughput on every pair", func() {
		for _, p := range iperf3.Catalogue() {
			It(p.Name, framework.ProfileLabels(p), func(ctx SpecContext) {
				if !plan.Selected(run.Config, p.ID) {
					Skip(fmt.Sprintf("%s is not in traffic.profiles of %s", p.ID, run.Config.File))
				}
				By(fmt.Sprintf("measuring %s on %d pairs (%s): %d repeat(s) of %s", p.ID, len(run.Pairs), run.Config.Fleet.Mode, run.Config.Traffic.Repeats, run.Config.Traffic.Duration))
				framework.ExpectNoError(run.RunProfile(ctx, p), "running %s on the fleet", p.Name)
			})
		}
	})

	AfterAll(func() {
		By("judging the fleet by node: offload proof, outliers, pairs that moved nothing")
		v := run.Verdict()
		for _, n := range v.Notes {
			fmt.Fprintf(GinkgoWriter, "fleet note: %s\n", n)
		}
		Expect(v.Pass()).To(BeTrue(), "the fleet fails on %v:\n%s", v.Failed(), harness.DescribeVerdict(v))
	})
})
