package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func budgetConfig() *config.Config {
	return &config.Config{
		Traffic: config.Traffic{Profiles: []string{"tcp-p1", "udp-b0-p1"}, Duration: 30 * time.Second, Repeats: 3,
			UDPSetupRetries: 2, UDPSetupBackoff: 2 * time.Second},
		Offload: config.Offload{Checks: []string{results.CheckTC}, FlowDuration: 20 * time.Second},
	}
}

func budgetLine(b Budget, step string) (BudgetLine, bool) {
	for _, l := range b.Lines {
		if l.Step == step {
			return l, true
		}
	}
	return BudgetLine{}, false
}

// The allowance adds up, from the default intervals: the cloud's waits at
// their bounds, each window at its length plus iperf_server, the longest
// single bound once more, and the margin.
func TestRunBudgetAddsTheSteps(t *testing.T) {
	b := RunBudget(budgetConfig())
	want := map[string]time.Duration{
		"build the topology":              10*time.Minute + 2*time.Minute,
		"reach guests and hypervisors":    10*time.Minute + 2*time.Minute + time.Minute, // ssh_ready + 2 × data_path + hypervisor_ssh
		"record the environment":          2 * time.Minute,
		"prove the path (offload checks)": 2*time.Minute + 2*(20+30)*time.Second,
		"measure the profiles":            2 * 3 * (30 + 30) * time.Second,
		"tear down":                       5*time.Minute + 2*time.Minute,
		// 2 retries × (30s + 30s + 2s) = 2m4s beats a command's 2m
		"one step at its bound": 2 * (30*time.Second + 30*time.Second + 2*time.Second),
		"margin":                budgetMargin,
	}
	var sum time.Duration
	for step, d := range want {
		l, ok := budgetLine(b, step)
		if !ok {
			t.Errorf("no line %q", step)
			continue
		}
		if l.Bound != d || l.Rule == "" {
			t.Errorf("%s: %s (%s), want %s with its rule", step, l.Bound, l.Rule, d)
		}
		sum += d
	}
	if len(b.Lines) != len(want) || b.Total != sum {
		t.Errorf("%d lines, total %s; want %d lines adding up to %s", len(b.Lines), b.Total, len(want), sum)
	}
}

// Without checks there is no evidence window; more profiles, repeats or a
// longer duration make the allowance grow by exactly their windows.
func TestRunBudgetFollowsTheConfig(t *testing.T) {
	cfg := budgetConfig()
	base := RunBudget(cfg).Total
	cfg.Offload.Checks = nil
	if _, ok := budgetLine(RunBudget(cfg), "prove the path (offload checks)"); ok {
		t.Error("a run without checks got an evidence window")
	}
	cfg = budgetConfig()
	cfg.Traffic.Repeats = 4
	if got := RunBudget(cfg).Total - base; got != 2*60*time.Second {
		t.Errorf("one more repeat of 2 profiles added %s, want 2m0s", got)
	}
	cfg = budgetConfig()
	cfg.Traffic.UDPSetupRetries = 0
	if l, _ := budgetLine(RunBudget(cfg), "one step at its bound"); l.Bound != 2*time.Minute || l.Rule != "intervals.command" {
		t.Errorf("without UDP retries: %s (%s), want intervals.command's 2m0s", l.Bound, l.Rule)
	}
	cfg.Traffic.Duration = 5 * time.Minute
	if l, _ := budgetLine(RunBudget(cfg), "one step at its bound"); l.Bound != 5*time.Minute+30*time.Second || l.Rule != "one window cut at its bound" {
		t.Errorf("5m windows: %s (%s), want the 5m30s window", l.Bound, l.Rule)
	}
}

// The connection-scale profile adds one step: each count at its omit
// period, measured seconds and the iperf_server wait; none without counts.
func TestRunBudgetConnections(t *testing.T) {
	cfg := budgetConfig()
	if _, ok := budgetLine(RunBudget(cfg), "measure the connection scale"); ok {
		t.Error("a connection-scale step without connections.counts")
	}
	cfg.Connections = config.Connections{Counts: []int{1, 100, 10000}, Duration: 10 * time.Second, OffloadWait: 15 * time.Second}
	l, ok := budgetLine(RunBudget(cfg), "measure the connection scale")
	if !ok || l.Bound != 3*(15+10+30)*time.Second {
		t.Errorf("connection-scale step %+v", l)
	}
}

// A fleet's allowance grows with its pairs: built fleet.cloud_parallel at a
// time, reached one after another, checked in rounds of pairs that share
// no node (3 for the 5-node ring, 2 for its 2-node second shard),
// measured one after another when isolated and together when concurrent.
func TestRunBudgetOfAFleet(t *testing.T) {
	single := RunBudget(budgetConfig())
	for _, tc := range []struct {
		mode                    string
		shard                   string
		pairs, rounds, measured int
	}{
		{config.FleetIsolated, "", 5, 3, 5},
		{config.FleetConcurrent, "", 5, 3, 1},
		{config.FleetIsolated, "2/2", 3, 2, 3},
	} {
		cfg := budgetConfig()
		cfg.Fleet = &config.Fleet{Nodes: []string{"c1", "c2", "c3", "c4", "c5"}, Pairs: config.PairsRing, Mode: tc.mode, Shard: tc.shard, CloudParallel: 2}
		b := RunBudget(cfg)
		for step, n := range map[string]int{
			"build the topology":              (tc.pairs + 1) / 2,
			"reach guests and hypervisors":    tc.pairs,
			"prove the path (offload checks)": tc.rounds,
			"measure the profiles":            tc.measured,
		} {
			one, _ := budgetLine(single, step)
			got, ok := budgetLine(b, step)
			if !ok || got.Bound != time.Duration(n)*one.Bound {
				t.Errorf("%s %s: %s = %s (%s), want %d × %s", tc.mode, tc.shard, step, got.Bound, got.Rule, n, one.Bound)
			}
		}
	}
	// Explicit pairs as the run plans them; a ring over Nova's nodes at
	// most 3 rounds.
	one, _ := budgetLine(single, "prove the path (offload checks)")
	for _, tc := range []struct {
		fleet  config.Fleet
		rounds int
	}{
		{config.Fleet{Nodes: []string{"a", "b", "h"}, Pairs: config.PairsExplicit, ExplicitPairs: []fleet.Pair{{Sender: "h", Receiver: "a"}, {Sender: "a", Receiver: "h"}, {Sender: "h", Receiver: "b"}, {Sender: "b", Receiver: "h"}}}, 4},
		{config.Fleet{AvailabilityZone: "az1", Pairs: config.PairsRing}, 3},
	} {
		cfg := budgetConfig()
		cfg.Fleet = &tc.fleet
		if got, ok := budgetLine(RunBudget(cfg), "prove the path (offload checks)"); !ok || got.Bound != time.Duration(tc.rounds)*one.Bound {
			t.Errorf("%+v: checks %s (%s), want %d × %s", tc.fleet, got.Bound, got.Rule, tc.rounds, one.Bound)
		}
	}
}

// The small-packet profiles add their windows, each search its trials.
func TestRunBudgetCountsPPSAndSearches(t *testing.T) {
	cfg := budgetConfig()
	base := RunBudget(cfg).Total
	cfg.PPS = config.PPS{Profiles: []string{"udp-b0-p1-l64", "udp-b0-p15-l64"},
		Search: config.PPSSearch{Streams: 1, LengthBytes: 64, PDRLossPercent: 0.5, MaxTrials: 5, TrialDuration: 10 * time.Second}}
	listen := cfg.Interval(config.IntervalIperfServer).Timeout
	window := cfg.Traffic.Duration + cfg.Traffic.Omit + listen
	want := time.Duration(2*cfg.Traffic.Repeats)*window + 2*5*(10*time.Second+listen) // NDR and PDR
	if got := RunBudget(cfg).Total - base; got != want {
		t.Errorf("pps and searches added %s, want %s", got, want)
	}
}

// The budget allows one connection count to run to its bound: the setup
// allowance of the largest client (128 streams of 10000) on top.
func TestConnectionsBudgetAllowsOneBound(t *testing.T) {
	cfg := budgetConfig()
	cfg.Connections = config.Connections{Counts: []int{1, 100, 10000}, Duration: 10 * time.Second, OffloadWait: 15 * time.Second}
	l, ok := budgetLine(RunBudget(cfg), "a connection count cut at its bound")
	if !ok || l.Bound != iperf3.SetupAllowance(127) || !strings.Contains(l.Rule, "127 streams") {
		t.Errorf("bound step %+v", l)
	}
}

// The latency profiles add one step, named with each profile's rule; none
// without latency profiles.
func TestLatencyBudget(t *testing.T) {
	cfg := budgetConfig()
	cfg.Latency = config.Latency{Profiles: results.LatencyProfileIDs(), MessageSize: 64, Duration: time.Second, Port: 11111, Grace: 2 * time.Second,
		LoadProfile: "tcp-p1", Settle: 500 * time.Millisecond, FirstPacketFlows: 2, FirstPacketPings: 5, FirstPacketIdle: 20 * time.Millisecond}
	b := RunBudget(cfg)
	found := false
	for _, l := range b.Lines {
		if l.Step == "measure latency" {
			found = true
			if l.Bound < 2*time.Second+cfg.Latency.Settle || !strings.Contains(l.Rule, "lat-first") {
				t.Errorf("latency budget %+v", l)
			}
		}
	}
	if !found {
		t.Error("no latency line in the run budget")
	}
	cfg.Latency.Profiles = nil
	for _, l := range RunBudget(cfg).Lines {
		if l.Step == "measure latency" {
			t.Error("a latency line without latency profiles")
		}
	}
}

func TestGinkgoTimeoutRoundsUpToAMinute(t *testing.T) {
	for _, c := range []struct{ total, want time.Duration }{
		{90 * time.Minute, 90 * time.Minute},
		{90*time.Minute + time.Second, 91 * time.Minute},
		{90*time.Minute + 31*time.Second, 91 * time.Minute},
		{59 * time.Second, time.Minute},
	} {
		if got := (Budget{Total: c.total}).GinkgoTimeout(); got != c.want {
			t.Errorf("GinkgoTimeout of %s = %s, want %s", c.total, got, c.want)
		}
	}
}

func TestTeardownIsRunBudgetsStep(t *testing.T) {
	cfg := budgetConfig()
	cfg.Intervals = map[string]config.Interval{config.IntervalDelete: {Timeout: 9 * time.Minute, Poll: time.Second}}
	td := Teardown(cfg)
	if td.Bound != 9*time.Minute+2*time.Minute {
		t.Fatalf("Teardown = %s, want the file's delete (9m) + the default api_retry (2m)", td.Bound)
	}
	for _, l := range RunBudget(cfg).Lines {
		if l.Step == td.Step {
			if l != td {
				t.Fatalf("RunBudget's %q = %+v, Teardown = %+v", l.Step, l, td)
			}
			return
		}
	}
	t.Fatalf("RunBudget has no %q step", td.Step)
}

func TestAfterSIGTERM(t *testing.T) {
	cfg := budgetConfig()
	d, rule := AfterSIGTERM(cfg)
	if d != 90*time.Second+7*time.Minute || !strings.Contains(rule, "intervals delete + api_retry") {
		t.Fatalf("AfterSIGTERM with the default intervals = %s (%s), want 8m30s", d, rule)
	}
}

// The aging profile's idle and flows are in the budget; without it the
// budget is what it was.
func TestAgingBudget(t *testing.T) {
	cfg := budgetConfig()
	before := RunBudget(cfg).Total
	cfg.Aging = config.Aging{Enabled: true, FlowtableTimeout: 30 * time.Second, IdleMargin: 5 * time.Second, RestartDuration: 10 * time.Second}
	cfg.Fragments.Enabled = true
	b := RunBudget(cfg)
	var aging, frag time.Duration
	for _, l := range b.Lines {
		switch l.Step {
		case "aging and re-offload":
			aging = l.Bound
		case "fragmented UDP":
			frag = l.Bound
		}
	}
	if aging < 45*time.Second || frag < cfg.Offload.FlowDuration {
		t.Errorf("aging %s, fragments %s", aging, frag)
	}
	if b.Total != before+aging+frag {
		t.Errorf("total %s, want %s + %s + %s", b.Total, before, aging, frag)
	}
}
