package plan

import (
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// TestSelected: one question for every family of profile.
func TestSelected(t *testing.T) {
	cfg := &config.Config{PPS: config.PPS{Profiles: []string{"udp-b0-p1-l64"}}, Traffic: config.Traffic{Profiles: []string{"udp-b0-p15-l64"}}}
	if !Selected(cfg, "udp-b0-p1-l64") || !Selected(cfg, "udp-b0-p15-l64") || Selected(cfg, "udp-b0-p30-l64") {
		t.Error("pps.profiles or traffic.profiles select a small-packet profile, nothing else does")
	}
	if Selected(cfg, "tcp-p1") || len(SelectedProfiles(cfg)) != 0 {
		t.Error("a traffic.profiles naming only a small-packet profile selects no seed profile")
	}
	all := &config.Config{Latency: config.Latency{Profiles: []string{results.LatencyIdleID}}}
	if !Selected(all, "tcp-p1") || !Selected(all, "udp-500m-p30-l700") || len(SelectedProfiles(all)) != 14 {
		t.Error("an empty traffic.profiles selects every seed profile")
	}
	if Selected(all, "udp-b0-p1-l64") || Selected(all, "tcp-p64") {
		t.Error("an empty traffic.profiles selects no small-packet profile and no unknown id")
	}
	if !Selected(all, results.LatencyIdleID) || Selected(all, results.LatencyLoadID) || len(SelectedLatency(all)) != 1 {
		t.Error("latency.profiles alone selects the latency profiles")
	}
}
