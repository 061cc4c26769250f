package perf

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mosk-qa/asap2-e2e/e2e/framework"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() { specs.Register(10, ppsSpecs, results.FamilyPPS) }

// ppsSpecs are issue 12's small-packet profiles (label pps, and each its
// own id) and the zero-loss searches (label ndr), inside the suite's
// Ordered container so that they run after the offload checks.
func ppsSpecs() {
	Describe("Small packets (packets per second)", func() {
		for _, p := range iperf3.PPSCatalogue() {
			It(p.Name, Label("udp", "pps", p.ID), func(ctx SpecContext) {
				if !plan.Selected(run.Config, p.ID) {
					Skip(fmt.Sprintf("%s is not in pps.profiles (or traffic.profiles) of %s", p.ID, run.Config.File))
				}
				By(fmt.Sprintf("measuring %s (%s): %d repeat(s) of %s", p.ID, p.Name, run.Config.Traffic.Repeats, run.Config.Traffic.Duration))
				pr, err := pair.RunProfile(ctx, p)
				framework.ExpectNoError(err, "running %s", p.Name)
				Expect(pr.Summary.Runs).To(BeNumerically(">", 0), "no successful repeat of %s", p.Name)
				Expect(pr.Summary.Packets).NotTo(BeNil(), "%s: no repeat had packet rates (see the log)", p.Name)
				Expect(pr.Summary.Packets.Delivered.Median).To(BeNumerically(">", 0), "%s delivered no datagram", p.Name)
				expectThresholds(p.ID)
			})
		}
	})

	Describe("Zero-loss search (RFC 2544 throughput, ETSI TST009)", Label("ndr"), func() {
		search := func(kind string) func(SpecContext) {
			return func(ctx SpecContext) {
				sc := run.Config.PPS.Search
				for _, s := range sc.Searches() {
					if s.Kind != kind {
						continue
					}
					By(fmt.Sprintf("searching the %s of %d B datagrams, %d stream(s): loss <= %v%%, at most %d trials of %s",
						kind, sc.LengthBytes, sc.Streams, s.LossPercent, sc.MaxTrials, sc.TrialDuration))
					sr, err := pair.RunSearch(ctx, s.Kind, s.ID, s.LossPercent)
					framework.ExpectNoError(err, "running the %s search %s", kind, s.ID)
					// A search that found no rate is a result, not a failure:
					// the report says "none found" and a threshold on it fails.
					By(fmt.Sprintf("%s %s: %s", s.ID, map[bool]string{true: results.FormatBps(sr.RateBps), false: "none found"}[sr.Found], sr.StopReason))
					expectThresholds(s.ID)
					return
				}
				Skip(fmt.Sprintf("no %s search: pps.search.pdr_loss_percent is 0 in %s", kind, run.Config.File))
			}
		}
		It("finds the no-drop rate (NDR)", Label("pps"), search(results.SearchNDR))
		It("finds the partial drop rate (PDR)", Label("pps", "pdr"), search(results.SearchPDR))
	})
}

// expectThresholds evaluates and records the rules on id (a profile or a
// search) and fails on any that does not pass.
func expectThresholds(id string) {
	By(fmt.Sprintf("comparing %s with its thresholds", id))
	got, err := pair.ThresholdsFor(id)
	framework.ExpectNoError(err, "evaluating thresholds of %s", id)
	for _, t := range got {
		Expect(t.Pass).To(BeTrue(), "threshold %s: %s", t.Name, t.Reason)
	}
}
