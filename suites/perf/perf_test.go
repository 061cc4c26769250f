package perf

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/framework"
	"github.com/mosk-qa/asap2-e2e/e2e/harness"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
)

// The complementary checks come first: they say which path the measured
// numbers below belong to.
var _ = Describe("Complementary offload checks", Label("offload"), func() {
	expect := func(path config.ExpectedPath) func(SpecContext) {
		return func(ctx SpecContext) {
			if session.Config.Run.ExpectedPath != path {
				Skip(fmt.Sprintf("run.expected_path is %s in %s", session.Config.Run.ExpectedPath, session.Config.File))
			}
			checks, err := session.RunOffloadChecks(ctx)
			framework.ExpectNoError(err, "running the offload evidence window")
			framework.ExpectNoError(offload.ExpectPath(string(path), harness.Checks(checks)), "proving the data path")
		}
	}
	It("proves the traffic is offloaded to the NIC (NIC asap2)", Label("asap2"), expect(config.PathASAP2))
	It("proves the traffic stays on the software path (NIC standard)", Label("baseline"), expect(config.PathBaseline))
})

var _ = Describe("iperf3 throughput", func() {
	for _, p := range iperf3.Catalogue() {
		It(p.Name, profileLabels(p), func(ctx SpecContext) {
			if !harness.Selected(session.Config, p.ID) {
				Skip(fmt.Sprintf("%s is not in traffic.profiles of %s", p.ID, session.Config.File))
			}
			pr, err := session.RunProfile(ctx, p)
			framework.ExpectNoError(err, "running %s", p.Name)
			Expect(pr.Summary.Runs).To(BeNumerically(">", 0), "no successful repeat of %s", p.Name)
			Expect(pr.Summary.Delivered.Median).To(BeNumerically(">", 0), "%s delivered nothing", p.Name)
			results, err := session.ThresholdsFor(p.ID)
			framework.ExpectNoError(err, "evaluating thresholds of %s", p.ID)
			for _, t := range results {
				Expect(t.Pass).To(BeTrue(), "threshold %s: %s", t.Name, t.Reason)
			}
		})
	}
})

func profileLabels(p iperf3.Profile) Labels {
	if p.Protocol == iperf3.UDP {
		return Label("udp", "throughput")
	}
	return Label("tcp", "throughput")
}
