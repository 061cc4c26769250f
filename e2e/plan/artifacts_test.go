package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
)

// The estimate grows with what a run measures and says it is an estimate.
func TestArtifactsEstimate(t *testing.T) {
	cfg := &config.Config{Traffic: config.Traffic{Duration: 60 * time.Second, Repeats: 3}}
	small, rule := ArtifactsEstimate(cfg)
	if !strings.HasPrefix(rule, "2 × (16 MiB") || small < 32<<20 {
		t.Errorf("estimate %s: %s", MiB(small), rule)
	}
	cfg.Offload = config.Offload{Checks: []string{"tc"}, FlowDuration: 30 * time.Second}
	if with, _ := ArtifactsEstimate(cfg); with <= small {
		t.Errorf("evidence flows add nothing: %s <= %s", MiB(with), MiB(small))
	}
	// 10000 connections for 20 s: 200000 stream-seconds of iperf3 JSON.
	before, _ := ArtifactsEstimate(cfg)
	cfg.Connections = config.Connections{Counts: []int{10000}, Duration: 10 * time.Second, OffloadWait: 10 * time.Second}
	with, rule := ArtifactsEstimate(cfg)
	if with-before != 2*200000<<10 || !strings.Contains(rule, "200000 connection-scale stream-seconds × 1 KiB") {
		t.Errorf("connections add %s: %s", MiB(with-before), rule)
	}
}

// A fleet's artifacts grow with its pairs: each has its own evidence flows
// and windows.
func TestArtifactsEstimateOfAFleet(t *testing.T) {
	cfg := &config.Config{
		Traffic: config.Traffic{Profiles: []string{"tcp-p1"}, Repeats: 2, Duration: 10 * time.Second},
		Offload: config.Offload{Checks: []string{"tc"}, FlowDuration: 20 * time.Second},
	}
	one, _ := ArtifactsEstimate(cfg)
	cfg.Fleet = &config.Fleet{Nodes: []string{"c1", "c2", "c3", "c4"}, Pairs: config.PairsRing}
	four, rule := ArtifactsEstimate(cfg)
	fixed := int64(artifactsSafetyRate * artifactsFixed)
	if four-fixed != 4*(one-fixed) || !strings.Contains(rule, "4 pair(s)") {
		t.Errorf("fleet of 4: %s (%s), want the single pair's variable part %s four times", MiB(four), rule, MiB(one-fixed))
	}
}

// The aging profile's dumps (before and after the idle, every poll after
// the restart, two hypervisors) and the two profiles' evidence flows are
// in the estimate.
func TestArtifactsEstimateAging(t *testing.T) {
	cfg := budgetConfig()
	before, _ := ArtifactsEstimate(cfg)
	cfg.Aging.Enabled, cfg.Fragments.Enabled = true, true
	cfg.Intervals = map[string]config.Interval{config.IntervalAgingSample: {Timeout: 10 * time.Second, Poll: 200 * time.Millisecond}}
	after, rule := ArtifactsEstimate(cfg)
	if !strings.Contains(rule, "106 aging dumps") || after <= before {
		t.Errorf("%s: %d -> %d (%s)", MiB(after), before, after, rule)
	}
}
