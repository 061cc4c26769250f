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
	// artifactsPerStreamSecond: iperf3 -J writes one interval object per
	// stream and second, about 540 B each in the recordings
	// (e2e/iperf3/testdata/v3.12-tcp-p15.json: 40161 B for 15 streams × 5
	// intervals), the client's and the server's output each: the
	// connection-scale profile's N streams dominate its evidence.
	artifactsPerStreamSecond = 1 << 10
	// artifactsPerDump is one `dpctl/dump-flows -m` of a real hypervisor
	// kept whole (the aging profile's dumps after the idle and after the
	// restart, every intervals.aging_sample.poll on two hypervisors): a
	// share of artifactsPerFlow, whose flow holds about 16 outputs.
	artifactsPerDump = 512 << 10
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
	dumps := 0
	if cfg.Fleet == nil && len(cfg.Offload.Checks) > 0 {
		// Issue 38: the aging profile's first flow and the fragment
		// profile's flow are evidence flows; the aging profile's dumps
		// before and after the idle and every poll after the restart.
		if cfg.Aging.Enabled {
			flows++
			if iv := cfg.Interval(config.IntervalAgingSample); iv.Poll > 0 {
				dumps = 2 * (2 + int(iv.Timeout/iv.Poll) + 1)
			}
		}
		if cfg.Fragments.Enabled {
			flows++
		}
	}
	seconds := float64(windows)*(cfg.Traffic.Duration+cfg.Traffic.Omit).Seconds() + float64(flows)*cfg.Offload.FlowDuration.Seconds()
	streamSeconds := int64(0)
	for _, c := range cfg.Connections.Counts {
		streamSeconds += int64(c) * int64((cfg.Connections.Duration + cfg.Connections.OffloadWait).Seconds())
	}
	n := artifactsSafetyRate * (artifactsFixed + int64(flows)*artifactsPerFlow + int64(seconds)*artifactsPerSecond + streamSeconds*artifactsPerStreamSecond + int64(dumps)*artifactsPerDump)
	rule := fmt.Sprintf("2 × (16 MiB of logs, topology and reports + %d evidence flow(s) × 8 MiB + %.0fs of windows × 64 KiB/s", flows, seconds)
	if streamSeconds > 0 {
		rule += fmt.Sprintf(" + %d connection-scale stream-seconds × 1 KiB", streamSeconds)
	}
	if dumps > 0 {
		rule += fmt.Sprintf(" + %d aging dumps × 512 KiB", dumps)
	}
	return n, rule + ")" + pairs
}

// MiB prints a byte count in mebibytes.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
