package plan

import (
	"slices"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

const (
	// artifactsPerStreamSecond: iperf3 -J writes one interval object per
	// stream and second, about 540 B each in the recordings
	// (e2e/iperf3/testdata/v3.12-tcp-p15.json: 40161 B for 15 streams × 5
	// intervals), the client's and the server's output each: the
	// connection-scale profile's N streams dominate its evidence.
	artifactsPerStreamSecond = 1 << 10
)

func init() {
	families.Register(20, family{
		budget:    func(cfg *config.Config, listen, _ time.Duration, add adder) { addConnectionsBudget(cfg, listen, add) },
		artifacts: connectionsArtifacts,
	}, results.FamilyConnections)
}

// addConnectionsBudget adds the connection-scale profiles to a run's
// budget: each N at its omit period, measured seconds and the listen wait;
// and, because a client that cannot connect its streams runs to its bound
// (iperf3's setup allowance on top of those), that allowance once for the
// largest process of the largest N.
func addConnectionsBudget(cfg *config.Config, listen time.Duration, add adder) {
	cc := cfg.Connections
	if len(cc.Counts) == 0 {
		return
	}
	add("measure the connection scale", time.Duration(len(cc.Counts))*(cc.OffloadWait+cc.Duration+listen),
		"%d connection count(s) × (connections.offload_wait + connections.duration + iperf_server)", len(cc.Counts))
	split, _ := iperf3.SplitStreams(slices.Max(cc.Counts), config.StreamsPerProcess, 0, iperf3.MultiThreadedSince)
	streams := slices.Max(split)
	add("a connection count cut at its bound", iperf3.SetupAllowance(streams),
		"iperf3's setup allowance for a client of %d streams (connections.counts %d)", streams, slices.Max(cc.Counts))
}

// connectionsArtifacts: iperf3's per-stream intervals of every N.
func connectionsArtifacts(cfg *config.Config) artifactShare {
	streamSeconds := int64(0)
	for _, c := range cfg.Connections.Counts {
		streamSeconds += int64(c) * int64((cfg.Connections.Duration + cfg.Connections.OffloadWait).Seconds())
	}
	return artifactShare{terms: []artifactTerm{{n: streamSeconds, each: artifactsPerStreamSecond, words: "%d connection-scale stream-seconds × 1 KiB"}}}
}
