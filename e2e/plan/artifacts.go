package plan

import (
	"fmt"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
)

// Artifacts-size estimate, checked against measured runs: the Epoxy lab's
// baseline run under lab/harness.yaml (2026-12-03, make lab LAB_RELEASE=epoxy)
// wrote 9.5 MiB — offload evidence 7.3 MiB for 2 flows on two hypervisors,
// commands.jsonl 1.5 MiB, iperf3 JSON 0.4 MiB, the rest under 0.3 MiB —
// where this estimate allows 80 MiB. A real hypervisor's dumps hold many
// more flows than the lab's, so the per-flow part keeps twice the lab's
// size. A run writes a fixed part (harness.log, api.log, commands.jsonl,
// topology evidence, results and reports), the captures and samples of each
// evidence flow on two hypervisors, and per second of measured window
// iperf3's per-interval JSON and the commands' outputs; the sum is doubled.
const (
	artifactsFixed      = 16 << 20
	artifactsPerFlow    = 8 << 20
	artifactsPerSecond  = 64 << 10
	artifactsSafetyRate = 2
)

// ArtifactsEstimate is how many bytes a run of the performance suite under
// cfg may write into its output directory, with the rule that gave it.
func ArtifactsEstimate(cfg *config.Config) (int64, string) {
	flows := 0
	if len(cfg.Offload.Checks) > 0 {
		flows = len(evidence.Flows)
	}
	windows := len(SelectedProfiles(cfg)) * cfg.Traffic.Repeats
	pairs := ""
	if cfg.Fleet != nil {
		// A fleet: every pair its own evidence flows and windows.
		n, why := fleetPairs(cfg.Fleet)
		flows, windows, pairs = flows*n, windows*n, "; "+why
	}
	// The families' evidence flows and their own terms (families.go).
	var terms []artifactTerm
	for _, f := range families.All() {
		if f.Value.artifacts != nil {
			share := f.Value.artifacts(cfg)
			flows += share.flows
			terms = append(terms, share.terms...)
		}
	}
	seconds := float64(windows)*(cfg.Traffic.Duration+cfg.Traffic.Omit).Seconds() + float64(flows)*cfg.Offload.FlowDuration.Seconds()
	sum := artifactsFixed + int64(flows)*artifactsPerFlow + int64(seconds)*artifactsPerSecond
	rule := fmt.Sprintf("2 × (16 MiB of logs, topology and reports + %d evidence flow(s) × 8 MiB + %.0fs of windows × 64 KiB/s", flows, seconds)
	for _, t := range terms {
		sum += t.n * t.each
		if t.n > 0 {
			rule += " + " + fmt.Sprintf(t.words, t.n)
		}
	}
	n := artifactsSafetyRate * sum
	return n, rule + ")" + pairs
}

// MiB prints a byte count in mebibytes.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
