package perf

import (
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() { specs.Register(30, holdSpecs, results.FamilyRuleScale, results.FamilyChurn) }

// ruleScaleLadder are the counts with their own spec and label
// (rule-scale-<N>); a count of rule_scale.counts off the ladder runs in
// the last spec, labelled rule-scale only.
var ruleScaleLadder = []int{1000, 10000}

// thresholdsOf is what is wrong with a profile's thresholds.
func thresholdsOf(id string) []string {
	By(fmt.Sprintf("comparing %s with its thresholds", id))
	got, err := pair.ThresholdsFor(id)
	if err != nil {
		return []string{fmt.Sprintf("evaluating thresholds of %s: %v", id, err)}
	}
	var bad []string
	for _, t := range got {
		if !t.Pass {
			bad = append(bad, fmt.Sprintf("threshold %s: %s", t.Name, t.Reason))
		}
	}
	return bad
}

// ladder is a count family's specs: one per step, labelled with its
// profile id and skipped when the config does not run it, then one for
// the configured counts off the steps (labelled with the family only).
type ladder struct {
	key    string // the config key of the counts, for the skip messages
	spec   string // a step's spec name, with %d
	steps  []int
	counts func() []int // the config's counts (read when the spec runs)
	label  func(int) string
}

// ladderSpecs declares l's specs, each measuring with measure and failing
// on what it returns.
func ladderSpecs(l ladder, measure func(SpecContext, int) []string) {
	for _, n := range l.steps {
		It(fmt.Sprintf(l.spec, n), Label(l.label(n)), func(ctx SpecContext) {
			if !slices.Contains(l.counts(), n) {
				Skip(fmt.Sprintf("%d is not in %s of %s", n, l.key, run.Config.File))
			}
			Expect(measure(ctx, n)).To(BeEmpty())
		})
	}
	It("opens the other counts of "+l.key, func(ctx SpecContext) {
		var others []int
		for _, n := range l.counts() {
			if !slices.Contains(l.steps, n) {
				others = append(others, n)
			}
		}
		if len(others) == 0 {
			Skip(fmt.Sprintf("%s of %s has no count off %v", l.key, run.Config.File, l.steps))
		}
		slices.Sort(others)
		var bad []string
		for _, n := range others {
			bad = append(bad, measure(ctx, n)...)
		}
		Expect(bad).To(BeEmpty())
	})
}

// holdSpecs are issue 38's evidence windows, inside the suite's Ordered
// container after the other profiles, each labelled to run alone
// (--label-filter rule-scale-1000, churn).
func holdSpecs() {
	Describe("Rule scale and insertion rate", Label("rule-scale"), func() {
		// measure opens n 5-tuples and returns what is wrong: the sender
		// failed, a hypervisor not read (an insertion rate is a
		// measurement, never a silent 0), a threshold violated. A slow
		// insertion or a plateau below n is a result the report names, not
		// a failure, unless a threshold (rules_per_second) gates it.
		measure := func(ctx SpecContext, n int) []string {
			rs := run.Config.RuleScale
			By(fmt.Sprintf("opening %d distinct UDP 5-tuples (%d per second, 0 = as fast as the guest can), held %s, the hypervisors read during it", n, rs.Rate, rs.Hold))
			cr, err := pair.RunRuleScale(ctx, n)
			if err != nil {
				return []string{fmt.Sprintf("%d 5-tuples: %v", n, err)}
			}
			var bad []string
			for _, h := range cr.Hosts {
				By(fmt.Sprintf("%s (steering %s): %s", h.Hypervisor, h.Steering, h.Reason))
				switch ins := h.Judged(cr.Judged); {
				case ins == nil:
					bad = append(bad, fmt.Sprintf("%d 5-tuples, %s: no %s timeline: %s", n, h.Hypervisor, cr.Judged, h.Reason))
				case ins.Final == 0:
					// N 5-tuples crossed this hypervisor and not one entry
					// of the pair was counted: the reads did not find the
					// pair, they measured nothing (never "0 rules/s").
					bad = append(bad, fmt.Sprintf("%d 5-tuples, %s: none of the pair's %s counted: %s", n, h.Hypervisor, cr.Judged, h.Reason))
				}
			}
			return append(bad, thresholdsOf(results.RuleScaleProfileID(n))...)
		}
		ladderSpecs(ladder{key: "rule_scale.counts", spec: "opens %d distinct 5-tuples", steps: ruleScaleLadder,
			counts: func() []int { return run.Config.RuleScale.Counts }, label: results.RuleScaleProfileID}, measure)
	})

	Describe("Long window without churn", Label(results.ChurnProfileID), func() {
		It("holds one flow's offloaded rules for the whole window", func(ctx SpecContext) {
			cc := run.Config.Churn
			if cc.Duration <= 0 {
				Skip(fmt.Sprintf("churn.duration is not set in %s", run.Config.File))
			}
			By(fmt.Sprintf("one UDP flow at %s for %s, the pair's rules read every %s", results.FormatBps(float64(cc.Bitrate)), cc.Duration, run.Config.Interval(config.IntervalChurnSample).Poll))
			cr, err := pair.RunChurn(ctx)
			Expect(err).NotTo(HaveOccurred(), "the churn window")
			var bad []string
			for _, h := range cr.Hosts {
				By(fmt.Sprintf("%s: %s", h.Hypervisor, h.Reason))
				switch {
				case h.Reads < 2:
					bad = append(bad, fmt.Sprintf("%s read %d time(s): %s", h.Hypervisor, h.Reads, h.Reason))
				case h.Flows == 0:
					// The flow ran and no read found its rules: nothing
					// was judged, which is no "stable" and no pass.
					bad = append(bad, fmt.Sprintf("%s: no flow of the pair in %d reads: the window judged nothing: %s", h.Hypervisor, h.Reads, h.Reason))
				}
			}
			// Churn fails the spec only through a gate the config sets
			// (thresholds: churn_count), or when it judged nothing; the
			// verdict is in the report.
			Expect(append(bad, thresholdsOf(results.ChurnProfileID)...)).To(BeEmpty())
		})
	})
}
