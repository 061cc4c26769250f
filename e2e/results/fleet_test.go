package results

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func ptr(v float64) *float64 { return &v }

// sampleFleet is a 4-node ring: compute3 runs in software, compute4 is
// slow as sender, compute5 was skipped.
func sampleFleet() *Fleet {
	f := &Fleet{
		Mode: FleetConcurrent, Shard: "1/1", Rule: FleetRule{Kind: "mad", Threshold: 3.5, MinDrop: 0.05},
		Nodes: []FleetNode{{Name: "compute1", ServiceHost: "cmp-1"}, {Name: "compute2", ServiceHost: "cmp-2"},
			{Name: "compute3", ServiceHost: "cmp-3"}, {Name: "compute4", ServiceHost: "cmp-4"},
			{Name: "compute5", Skipped: true, Reason: "state down"}},
		Pairs: []FleetPair{{ID: "p01", Sender: "compute1", Receiver: "compute2", Shard: "1/1"},
			{ID: "p02", Sender: "compute2", Receiver: "compute3", Shard: "1/1"},
			{ID: "p03", Sender: "compute3", Receiver: "compute4", Shard: "1/1"},
			{ID: "p04", Sender: "compute4", Receiver: "compute1", Shard: "1/1"}},
	}
	for _, p := range f.Pairs {
		bps := 16.4e9
		if p.Sender == "compute4" {
			bps = 4.1e9
		}
		f.Results = append(f.Results, FleetPairRate{Pair: p.ID, Profile: "tcp-p1", Repeats: 1,
			Delivered: Stat{N: 1, Median: bps, Min: bps, Max: bps, Mean: bps}, Offered: Stat{N: 1, Median: bps, Min: bps, Max: bps, Mean: bps}})
		for _, n := range []string{p.Sender, p.Receiver} {
			v := VerdictOffloaded
			if n == "compute3" {
				v = VerdictSoftware
			}
			f.Checks = append(f.Checks, FleetCheck{Node: n, Pair: p.ID, Check: CheckTC, Flow: "tcp", Verdict: v, Reason: "tc says so"})
		}
	}
	f.Rates = []FleetNodeRate{
		{Node: "compute4", Profile: "tcp-p1", Role: "sender", BPS: 4.1e9, Pairs: 1, Median: 16.4e9, Ratio: ptr(0.25), Score: ptr(-9), Outlier: true},
		{Node: "compute1", Profile: "tcp-p1", Role: "sender", BPS: 16.4e9, Pairs: 1, Median: 16.4e9, Ratio: ptr(1)},
	}
	f.Drift = []FleetNodeDrift{
		{Node: "compute1", Values: map[string]string{DriftNICFirmware: "22.39.1002", DriftMTUUplink: "9000"}},
		{Node: "compute2", Values: map[string]string{DriftNICFirmware: "22.39.1002", DriftMTUUplink: "9000"}},
		{Node: "compute3", Values: map[string]string{DriftNICFirmware: "22.36.1010", DriftMTUUplink: "9000"}},
		{Node: "compute4", Values: map[string]string{DriftNICFirmware: "22.39.1002"}},
	}
	MarkDrift(f.Drift)
	at := func(sec float64) time.Time {
		return time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC).Add(time.Duration(sec * float64(time.Second)))
	}
	end := func(sec float64) *time.Time { t := at(sec); return &t }
	f.Rounds = []FleetRound{
		{Round: 1, Shard: "1/1", Pairs: []string{"p01", "p03"}, FlowSeconds: 20, SkewSeconds: 0.004, Windows: []FleetRoundWindow{
			{Flow: "tcp", Start: at(3), End: end(23.2), Pairs: []string{"p01", "p03"}, SkewSeconds: 0.004},
			{Flow: "udp", Start: at(27), End: end(47.1), Pairs: []string{"p01", "p03"}, SkewSeconds: 0.002}}},
		{Round: 2, Shard: "1/1", Pairs: []string{"p02", "p04"}, FlowSeconds: 20, Error: "pair p02 compute2→compute3: the sustained tcp flow failed",
			Windows: []FleetRoundWindow{{Flow: "tcp", Start: at(52), End: end(72), Pairs: []string{"p04"}}}},
	}
	return f
}

// A fleet section written through the Writer loads back equal, at the
// current schema version.
func TestFleetRoundTrip(t *testing.T) {
	file := filepath.Join(t.TempDir(), "results.json")
	w, err := NewWriter(file, Results{RunID: "fleet", Config: ConfigSummary{ExpectedPath: PathASAP2}})
	if err != nil {
		t.Fatal(err)
	}
	want := sampleFleet()
	if err := w.Update(func(r *Results) { r.Fleet = want }); err != nil {
		t.Fatal(err)
	}
	got, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if got.SchemaVersion != 2 || !reflect.DeepEqual(got.Fleet, want) {
		t.Fatalf("version %d, fleet\n%+v\nwant\n%+v", got.SchemaVersion, got.Fleet, want)
	}
}

// Version 1 files written before the fleet section load unchanged.
func TestVersion1FilesLoad(t *testing.T) {
	r, err := Load(filepath.Join("testdata", "lab-baseline-results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.SchemaVersion != 1 || r.Fleet != nil {
		t.Fatalf("version %d fleet %v, want 1 and none", r.SchemaVersion, r.Fleet)
	}
}

// Every problem of a fleet section at once, each with its key.
func TestFleetValidate(t *testing.T) {
	f := sampleFleet()
	f.Mode = "parallel"
	f.Nodes = append(f.Nodes, FleetNode{Name: "compute1"}, FleetNode{Name: "compute9", Skipped: true})
	f.Pairs = append(f.Pairs, FleetPair{ID: "p01", Sender: "compute5", Receiver: "compute5"})
	f.Results = append(f.Results, FleetPairRate{Pair: "p99", Profile: "tcp-p1", LossPercent: 120})
	f.Checks = append(f.Checks, FleetCheck{Node: "ghost", Check: "tc", Verdict: "maybe"})
	f.Rates = append(f.Rates, FleetNodeRate{Node: "compute1", Role: "both", BPS: -1})
	early := f.Rounds[0].Windows[0].Start.Add(-time.Second)
	f.Rounds = append(f.Rounds,
		FleetRound{Round: 1, Shard: "1/1", Pairs: []string{"p02", "p03", "p99"}, SkewSeconds: -1,
			Windows: []FleetRoundWindow{{Start: f.Rounds[0].Windows[0].Start, End: &early, Pairs: []string{"p01"}}}},
		FleetRound{Round: 0, Shard: "1/1"})
	err := Validate(&Results{SchemaVersion: SchemaVersion, RunID: "x", Fleet: f})
	for _, want := range []string{
		`fleet.mode: must be isolated or concurrent, got "parallel"`,
		`fleet.nodes[5].name: node "compute1" is listed twice`,
		`fleet.nodes[6].reason: a skipped node must say why`,
		`fleet.pairs[4].id: must be set and unique, got "p01"`,
		`fleet.pairs[4].sender: must be a measured node of fleet.nodes, got "compute5"`,
		`fleet.pairs[4].receiver: must differ from the sender`,
		`fleet.results[4].pair: must be a pair id of fleet.pairs, got "p99"`,
		`fleet.results[4].loss_percent: must be within 0..100, got 120`,
		`fleet.checks[8].node: must be a measured node of fleet.nodes, got "ghost"`,
		`fleet.checks[8].verdict: must be offloaded, software or inconclusive, got "maybe"`,
		`fleet.rates[2].role: must be sender or receiver, got "both"`,
		`fleet.rates[2].bps: must be a finite number >= 0, got -1`,
		`fleet.rounds[2]: round 1 of shard 1/1 is also fleet.rounds[0]`,
		`fleet.rounds[2].pairs[0]: pair p02 is also in round 2 of shard 1/1`,
		`fleet.rounds[2].pairs[1]: pair p03 is also in round 1 of shard 1/1`,
		`fleet.rounds[2].pairs[1]: pair p03 shares node compute3 with pair p02 in the same round`,
		`fleet.rounds[2].pairs[2]: must be a pair id of fleet.pairs, got "p99"`,
		`fleet.rounds[2].skew_seconds: must be a finite number >= 0, got -1`,
		`fleet.rounds[2].windows[0].flow: must be set`,
		`fleet.rounds[2].windows[0].end: must not be before its start`,
		`fleet.rounds[2].windows[0].pairs: pair "p01" is not one of the round's [p02 p03 p99]`,
		`fleet.rounds[3].round: must be >= 1, got 0`,
		`fleet.rounds[3].pairs: must name at least one pair`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if err := Validate(&Results{SchemaVersion: SchemaVersion, RunID: "x", Fleet: sampleFleet()}); err != nil {
		t.Errorf("valid fleet: %v", err)
	}
}

func TestMarkDrift(t *testing.T) {
	f := sampleFleet()
	got := map[string][]string{}
	for _, d := range f.Drift {
		got[d.Node] = d.Differs
	}
	want := map[string][]string{"compute3": {DriftNICFirmware}}
	for n, d := range got {
		if !slices.Equal(d, want[n]) {
			t.Errorf("%s differs %v, want %v", n, d, want[n])
		}
	}
	if m, ok := DriftMajority(f.Drift, DriftNICFirmware); !ok || m != "22.39.1002" {
		t.Errorf("majority %q %v", m, ok)
	}
	// Two nodes, two values: no majority, both marked.
	two := []FleetNodeDrift{{Node: "a", Values: map[string]string{DriftKernelVersion: "5.15"}}, {Node: "b", Values: map[string]string{DriftKernelVersion: "6.1"}}}
	MarkDrift(two)
	if len(two[0].Differs) != 1 || len(two[1].Differs) != 1 {
		t.Errorf("no majority: %+v", two)
	}
	if _, ok := DriftMajority(two, DriftKernelVersion); ok {
		t.Error("a tie has a majority")
	}
}

func TestJudgeFleet(t *testing.T) {
	line := func(r FleetNodeRate) string { return r.Node + " slow" }
	f := sampleFleet()
	v := JudgeFleet(f, PathASAP2, line)
	if v.Pass() || !slices.Equal(v.Failed(), []string{"compute3", "compute4"}) {
		t.Fatalf("failed %v, want compute3 (software) and compute4 (outlier)", v.Failed())
	}
	if r := v.Failures[0].Reasons; len(r) != 2 || !strings.Contains(r[0], "tc (tcp) in pair p02 says software under an asap2 expectation") {
		t.Errorf("compute3 reasons %q", r)
	}
	if r := v.Failures[1].Reasons; len(r) != 1 || r[0] != "outlier: compute4 slow" {
		t.Errorf("compute4 reasons %q", r)
	}
	if !slices.Contains(v.Notes, "compute5 skipped: state down") {
		t.Errorf("notes %q lack the skipped node", v.Notes)
	}
	// Under a baseline expectation the offloaded nodes fail, the software one passes.
	b := JudgeFleet(f, PathBaseline, line)
	if !slices.Equal(b.Failed(), []string{"compute1", "compute2", "compute4"}) {
		t.Errorf("baseline failed %v", b.Failed())
	}
	// A healthy fleet passes; a node with no check under asap2 and a pair that moved nothing fail.
	ok := sampleFleet()
	for i := range ok.Checks {
		ok.Checks[i].Verdict = VerdictOffloaded
	}
	ok.Rates[0].Outlier = false
	if v := JudgeFleet(ok, PathASAP2, line); !v.Pass() {
		t.Errorf("healthy fleet failed: %+v", v.Failures)
	}
	ok.Checks = slices.DeleteFunc(ok.Checks, func(c FleetCheck) bool { return c.Node == "compute2" })
	ok.Results[0].Repeats, ok.Results[0].Error = 0, "iperf3: connect timed out"
	v = JudgeFleet(ok, PathASAP2, line)
	if !slices.Equal(v.Failed(), []string{"compute1", "compute2"}) {
		t.Fatalf("failed %v", v.Failed())
	}
	if r := v.Failures[1].Reasons; len(r) != 2 || !strings.Contains(r[0], "no offload check") || !strings.Contains(r[1], "pair p01 (compute1→compute2) moved nothing in tcp-p1: iperf3: connect timed out") {
		t.Errorf("compute2 reasons %q", r)
	}
}

// A round's start skew should keep within max(1 s, 10 % of its window).
func TestSkewGoal(t *testing.T) {
	for _, tc := range []struct{ flow, want float64 }{{5, 1}, {10, 1}, {20, 2}, {45, 4.5}} {
		if got := SkewGoal(tc.flow); got != tc.want {
			t.Errorf("SkewGoal(%v) = %v, want %v", tc.flow, got, tc.want)
		}
	}
}
