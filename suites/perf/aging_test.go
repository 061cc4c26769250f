package perf

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() { specs.Register(40, agingSpecs, results.FamilyAging, results.FamilyFragments) }

// agingSpecs are issue 38's aging and fragment profiles (labels aging,
// fragments), inside the suite's Ordered container after the other
// profiles.
func agingSpecs() {
	Describe("Offload that holds", func() {
		It("re-offloads the same 5-tuple after it aged out", Label(results.AgingProfileID), func(ctx SpecContext) {
			ac := run.Config.Aging
			if !ac.Enabled {
				Skip(fmt.Sprintf("aging.enabled is false in %s", run.Config.File))
			}
			By(fmt.Sprintf("a UDP flow from client port %d with the checks, an idle past the flowtable timeout %s and OVS's max-idle (+%s), then the same 5-tuple again",
				ac.ClientPort, ac.FlowtableTimeout, ac.IdleMargin))
			ar, err := pair.RunAging(ctx)
			Expect(err).NotTo(HaveOccurred(), "running the aging profile")
			for _, h := range ar.Hosts {
				By(fmt.Sprintf("%s: %s", h.Hypervisor, h.Reason))
			}
			// A flow that did not age out, or a restart of another 5-tuple,
			// measured nothing: the spec says so rather than pass on it.
			Expect(ar.Verdict).To(Equal(results.AgingMeasured), "%s", ar.Reason)
			var bad []string
			for _, h := range ar.Hosts {
				if h.ReinstallMs == nil {
					bad = append(bad, fmt.Sprintf("%s: the flow never came back into the datapath: %s", h.Hypervisor, h.Reason))
				}
				// On hardware, never in hardware is a failure; on a software
				// datapath it is what the datapath is, said in the reason.
				if !h.Software && h.ReoffloadMs == nil && run.Config.Run.ExpectedPath == results.PathASAP2 {
					bad = append(bad, fmt.Sprintf("%s: the flow never came back into hardware: %s", h.Hypervisor, h.Reason))
				}
			}
			By("comparing the aging profile with its thresholds (reinstall_ms, reoffload_ms)")
			got, err := pair.ThresholdsFor(results.AgingProfileID)
			Expect(err).NotTo(HaveOccurred(), "evaluating thresholds of %s", results.AgingProfileID)
			for _, t := range got {
				if !t.Pass {
					bad = append(bad, fmt.Sprintf("threshold %s: %s", t.Name, t.Reason))
				}
			}
			Expect(bad).To(BeEmpty())
		})

		It("labels fragmented UDP as software by the NIC's design", Label(results.FragmentsProfileID), func(ctx SpecContext) {
			if !run.Config.Fragments.Enabled {
				Skip(fmt.Sprintf("fragments.enabled is false in %s", run.Config.File))
			}
			By("UDP datagrams above the data network's MTU, the tc and dpctl checks split by fragment match")
			fr, err := pair.RunFragments(ctx)
			Expect(err).NotTo(HaveOccurred(), "running the fragment profile")
			for _, c := range fr.Checks {
				By(fmt.Sprintf("%s on %s: %s", c.Name, c.Hypervisor, c.Reason))
			}
			// Datagrams that did not fragment tested nothing: said, failed.
			Expect(fr.Fragmented).To(BeTrue(), "%s", fr.Reason)
			// The fragments never fail the node; the unfragmented flows are
			// judged as in any window: software on an asap2 run, or
			// offloaded on a baseline run, is the node's.
			switch run.Config.Run.ExpectedPath {
			case results.PathASAP2:
				Expect(fr.Verdict).NotTo(Equal(results.VerdictSoftware), "%s", fr.Reason)
			case results.PathBaseline:
				Expect(fr.Verdict).NotTo(Equal(results.VerdictOffloaded), "%s", fr.Reason)
			}
		})
	})
}
