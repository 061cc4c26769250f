package fleet

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// shardFile is shard s of a ring over nodes as a runner would store it:
// every pair delivers 16.4 Gbit/s in tcp-p1 except those sent by slow.
func shardFile(t *testing.T, nodes []string, s Shard, slow string) *results.Results {
	t.Helper()
	pairs, err := ShardRing(nodes, s)
	if err != nil {
		t.Fatal(err)
	}
	rule := Rule{Kind: RuleRatio, Ratio: 0.8}
	f := &results.Fleet{Mode: results.FleetIsolated, Shard: s.String(), Rule: StoredRule(rule)}
	var prs []PairResult
	for _, n := range PairNodes(pairs) {
		f.Nodes = append(f.Nodes, results.FleetNode{Name: n, ServiceHost: "host-" + n})
		f.Drift = append(f.Drift, results.FleetNodeDrift{Node: n, Values: map[string]string{results.DriftNICFirmware: "22.39.1002"}})
	}
	f.Nodes = append(f.Nodes, results.FleetNode{Name: "down9", Skipped: true, Reason: "state down"})
	for _, p := range pairs {
		bps := 16.4e9
		if p.Sender == slow || slow == "*" {
			bps = 4.1e9
			f.Drift[0].Values[results.DriftNICFirmware] = "22.36.1010" // not slow's own: the merge re-marks drift anyway
		}
		id := PairID(p)
		f.Pairs = append(f.Pairs, results.FleetPair{ID: id, Sender: p.Sender, Receiver: p.Receiver, Shard: s.String()})
		f.Results = append(f.Results, results.FleetPairRate{Pair: id, Profile: "tcp-p1", Repeats: 1, Delivered: results.Stat{N: 1, Median: bps, Min: bps, Max: bps, Mean: bps}})
		for _, n := range []string{p.Sender, p.Receiver} {
			f.Checks = append(f.Checks, results.FleetCheck{Node: n, Pair: id, Check: results.CheckTC, Verdict: results.VerdictOffloaded, Reason: "in_hw"})
		}
		prs = append(prs, PairResult{Pair: p, Profile: "tcp-p1", BPS: bps})
	}
	for k, round := range RoundPairs(pairs, Rounds(pairs)) {
		r := results.FleetRound{Round: k + 1, Shard: s.String(), FlowSeconds: 20}
		for _, p := range round {
			r.Pairs = append(r.Pairs, PairID(p))
		}
		f.Rounds = append(f.Rounds, r)
	}
	v, err := Judge(prs, rule)
	if err != nil {
		t.Fatal(err)
	}
	f.Rates, f.Notes = StoredRates(v), v.Notes
	start := time.Date(2026, 12, 4, 1, s.Index, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	r := &results.Results{SchemaVersion: results.SchemaVersion, RunID: "fleet-1", StartedAt: start, FinishedAt: &end,
		Config: results.ConfigSummary{ExpectedPath: results.PathASAP2, Profiles: []string{"tcp-p1"}, Repeats: 1},
		Errors: []string{"one error"}, Fleet: f}
	if err := results.Validate(r); err != nil {
		t.Fatal(err)
	}
	return r
}

var eight = []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"}

// Two shards of an 8-node ring merge into one fleet judged against the
// whole fleet's median; the slow node is named, and its line says so.
func TestMerge(t *testing.T) {
	a := shardFile(t, eight, Shard{1, 2}, "c2")
	b := shardFile(t, eight, Shard{2, 2}, "")
	m, err := Merge([]string{"b.json", "a.json"}, []*results.Results{b, a})
	if err != nil {
		t.Fatal(err)
	}
	f := m.Fleet
	if f.Shard != "all/2" || len(f.Pairs) != 8 || len(f.Results) != 8 || len(f.Checks) != 16 {
		t.Fatalf("merged shard %s, %d pairs, %d results, %d checks", f.Shard, len(f.Pairs), len(f.Results), len(f.Checks))
	}
	// Each shard's rounds, shard by shard: the shards ran at once.
	var rounds []string
	for _, r := range f.Rounds {
		rounds = append(rounds, fmt.Sprintf("%s#%d %v", r.Shard, r.Round, r.Pairs))
	}
	if want := "[1/2#1 [c1→c2 c3→c4] 1/2#2 [c2→c3 c4→c1] 2/2#1 [c5→c6 c7→c8] 2/2#2 [c6→c7 c8→c5]]"; fmt.Sprint(rounds) != want {
		t.Errorf("merged rounds %v, want %s", rounds, want)
	}
	if len(f.Nodes) != 9 || f.Nodes[8].Name != "down9" || !f.Nodes[8].Skipped {
		t.Errorf("nodes %+v: want c1..c8 and down9 skipped once", f.Nodes)
	}
	var outs []string
	for _, r := range f.Rates {
		if r.Median != 16.4e9 {
			t.Errorf("%s %s median %v, want the fleet's 16.4e9", r.Node, r.Role, r.Median)
		}
		if r.Outlier {
			outs = append(outs, StoredLine(r))
		}
	}
	want := "c2: tcp-p1 4.1 Gbit/s as sender, 0.25× the fleet median 16.4"
	if len(outs) != 2 || outs[0] != want || !strings.HasPrefix(outs[1], "c3: tcp-p1 4.1 Gbit/s as receiver") {
		t.Errorf("outliers %q, want %q and c3 as receiver", outs, want)
	}
	// Drift re-marked over the whole fleet: only c1 (shard 1's first node) differs.
	for _, d := range f.Drift {
		if (d.Node == "c1") != (len(d.Differs) == 1) {
			t.Errorf("%s differs %v", d.Node, d.Differs)
		}
	}
	if m.Errors[0] != "shard 1/2: one error" || m.StartedAt != a.StartedAt || !m.FinishedAt.Equal(*b.FinishedAt) {
		t.Errorf("errors %q started %v finished %v", m.Errors, m.StartedAt, m.FinishedAt)
	}
	v := results.JudgeFleet(f, results.PathASAP2, StoredLine)
	if fmt.Sprint(v.Failed()) != "[c2 c3]" {
		t.Errorf("verdict fails %v, want c2 and c3", v.Failed())
	}
}

// A shard whose every node is slow names nobody on its own (its median is
// its own); merged, the fleet's median names them all: the merge judges again.
func TestMergeJudgesAgainstTheFleet(t *testing.T) {
	nine := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"}
	var files []*results.Results
	var labels []string
	for i := 1; i <= 3; i++ {
		slow := ""
		if i == 3 {
			slow = "*"
		}
		f := shardFile(t, nine, Shard{i, 3}, slow)
		for _, r := range f.Fleet.Rates {
			if r.Outlier {
				t.Fatalf("shard %d names %s on its own", i, r.Node)
			}
		}
		files, labels = append(files, f), append(labels, fmt.Sprintf("s%d.json", i))
	}
	m, err := Merge(labels, files)
	if err != nil {
		t.Fatal(err)
	}
	v := results.JudgeFleet(m.Fleet, results.PathASAP2, StoredLine)
	if fmt.Sprint(v.Failed()) != "[c7 c8 c9]" {
		t.Errorf("merged verdict fails %v, want shard 3's nodes", v.Failed())
	}
}

// Every reason to refuse, named at once.
func TestMergeRefuses(t *testing.T) {
	a := shardFile(t, eight, Shard{1, 2}, "")
	b := shardFile(t, eight, Shard{2, 2}, "")
	b.RunID = "fleet-2"
	b.Config.Repeats = 3
	b.Fleet.Nodes = append(b.Fleet.Nodes, results.FleetNode{Name: "c1"}) // c1 is shard 1's
	dup := shardFile(t, eight, Shard{1, 2}, "")
	single := shardFile(t, eight, Shard{1, 2}, "")
	single.Fleet = nil
	_, err := Merge([]string{"a.json", "b.json", "dup.json", "single.json"}, []*results.Results{a, b, dup, single})
	for _, want := range []string{
		"single.json: has no fleet section",
		`b.json: run id "fleet-2", but a.json has "fleet-1"`,
		"b.json: config differs from a.json's in config.repeats (1 vs 3)",
		"b.json: node c1 is also measured in a.json",
		"dup.json: shard 1/2 is also a.json",
		"dup.json: node c1 is also measured in a.json",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// Files of one run id without a group (written before groups): a
	// missing shard is named, its nodes unknown (no plan recorded).
	m, err := Merge([]string{"a.json"}, []*results.Results{a})
	if err != nil {
		t.Fatal(err)
	}
	if v := results.JudgeFleet(m.Fleet, results.PathASAP2, StoredLine); v.Pass() ||
		v.Headline() != "shard 2/2 not measured: its nodes are unknown (no shard recorded a plan) (no results file of it was merged)" {
		t.Errorf("missing shard: %q", v.Headline())
	}
	c := shardFile(t, eight, Shard{2, 2}, "")
	c.Fleet.Rule.Ratio = 0.5
	c.Fleet.Mode = results.FleetConcurrent
	_, err = Merge([]string{"a.json", "c.json"}, []*results.Results{a, c})
	if err == nil || !strings.Contains(err.Error(), "c.json: fleet mode concurrent, but a.json has isolated") || !strings.Contains(err.Error(), "c.json: outlier rule") {
		t.Errorf("mode and rule: %v", err)
	}
}

func TestStoredRatesRoundTrip(t *testing.T) {
	r := NodeRate{Node: "c1", Profile: "tcp-p1", Role: AsSender, BPS: 1e9, Pairs: 1, Median: 0, Ratio: math.NaN(), Score: math.NaN()}
	s := StoredRates(Verdict{Rates: []NodeRate{r}})[0]
	if s.Ratio != nil || s.Score != nil {
		t.Fatalf("NaN stored as %v %v, want absent", s.Ratio, s.Score)
	}
	back := RateOf(s)
	if !math.IsNaN(back.Ratio) || back.Line() != r.Line() {
		t.Errorf("round trip %+v", back)
	}
}

// One node slow both ways (its underlay rate-limited, its MTU lowered) in
// a ring drags down the node before it as sender and the node after it as
// receiver; the verdict names exactly that node and notes the other two.
// A pair slow one way only names both of its ends: nothing tells them apart.
func TestVerdictNamesTheSlowNodeNotItsNeighbours(t *testing.T) {
	for _, c := range []struct {
		name     string
		slow     func(p Pair) bool
		failed   string
		notesFor []string
	}{
		{"both ways", func(p Pair) bool { return p.Sender == "n4" || p.Receiver == "n4" }, "[n4]", []string{"n3: tcp-p1 as sender is low only through n4", "n5: tcp-p1 as receiver is low only through n4"}},
		{"one pair", func(p Pair) bool { return p.Sender == "n4" }, "[n4 n5]", nil},
		{"two neighbours", func(p Pair) bool {
			return p.Sender == "n3" || p.Receiver == "n3" || p.Sender == "n4" || p.Receiver == "n4"
		}, "[n3 n4]", []string{"n2: tcp-p1 as sender is low only through n3", "n5: tcp-p1 as receiver is low only through n4"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			nodes := []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"}
			pairs, err := Ring(nodes)
			if err != nil {
				t.Fatal(err)
			}
			rule := Rule{Kind: RuleRatio, Ratio: 0.8}
			f := &results.Fleet{Mode: results.FleetIsolated, Shard: "1/1", Rule: StoredRule(rule)}
			for _, n := range nodes {
				f.Nodes = append(f.Nodes, results.FleetNode{Name: n})
			}
			for _, p := range pairs {
				bps := 16.4e9
				if c.slow(p) {
					bps *= 0.3
				}
				id := PairID(p)
				f.Pairs = append(f.Pairs, results.FleetPair{ID: id, Sender: p.Sender, Receiver: p.Receiver, Shard: "1/1"})
				f.Results = append(f.Results, results.FleetPairRate{Pair: id, Profile: "tcp-p1", Repeats: 1, Delivered: results.Stat{N: 1, Median: bps}})
				for _, n := range []string{p.Sender, p.Receiver} {
					f.Checks = append(f.Checks, results.FleetCheck{Node: n, Pair: id, Check: results.CheckTC, Verdict: results.VerdictOffloaded, Reason: "in_hw"})
				}
			}
			if err := Rejudge(f); err != nil {
				t.Fatal(err)
			}
			v := results.JudgeFleet(f, results.PathASAP2, StoredLine)
			if fmt.Sprint(v.Failed()) != c.failed {
				t.Errorf("fails %v, want %s", v.Failed(), c.failed)
			}
			notes := strings.Join(v.Notes, "\n")
			for _, want := range c.notesFor {
				if !strings.Contains(notes, want) {
					t.Errorf("notes lack %q:\n%s", want, notes)
				}
			}
		})
	}
}

// groupShard is shardFile as a shard of run group group writes it: its
// own run id, the group and every shard's plan.
func groupShard(t *testing.T, nodes []string, s Shard, group, runID string) *results.Results {
	t.Helper()
	r := shardFile(t, nodes, s, "")
	r.RunID, r.Fleet.RunGroup, r.Fleet.Plan = runID, group, PlanShards(nodes, nil, s.Count)
	return r
}

// Shards of one group, each with its own run id, merge into one verdict;
// the merged file is the group's run and lists each shard's run id.
func TestMergeByGroup(t *testing.T) {
	a := groupShard(t, eight, Shard{1, 2}, "ci-4711", "20261204t010000-aaaa")
	b := groupShard(t, eight, Shard{2, 2}, "ci-4711", "20261204t010002-bbbb")
	m, err := Merge([]string{"a.json", "b.json"}, []*results.Results{b, a})
	if err != nil {
		t.Fatal(err)
	}
	want := []results.FleetShard{{Shard: "1/2", RunID: a.RunID, File: "b.json"}, {Shard: "2/2", RunID: b.RunID, File: "a.json"}}
	if m.RunID != "ci-4711" || m.Fleet.RunGroup != "ci-4711" || fmt.Sprint(m.Fleet.Shards) != fmt.Sprint(want) {
		t.Errorf("merged run %s group %s shards %+v", m.RunID, m.Fleet.RunGroup, m.Fleet.Shards)
	}
	if v := results.JudgeFleet(m.Fleet, results.PathASAP2, StoredLine); !v.Pass() || len(m.Fleet.MeasuredNodes()) != 8 {
		t.Errorf("verdict %s over %v", v.Headline(), m.Fleet.MeasuredNodes())
	}
	if err := results.Validate(m); err != nil {
		t.Error(err)
	}
}

// A shard missing from a group is named with its nodes (from the other
// shards' plans) and the verdict cannot pass; the report's and JUnit's
// words come from the same line.
func TestMergeNamesAMissingShard(t *testing.T) {
	nine := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"}
	a := groupShard(t, nine, Shard{1, 3}, "g", "20261204t010000-aaaa")
	c := groupShard(t, nine, Shard{3, 3}, "g", "20261204t010000-cccc")
	m, err := Merge([]string{"a.json", "c.json"}, []*results.Results{a, c})
	if err != nil {
		t.Fatal(err)
	}
	v := results.JudgeFleet(m.Fleet, results.PathASAP2, StoredLine)
	want := "shard 2/3 not measured: its nodes c4, c5, c6 (no results file of it was merged)"
	if v.Pass() || len(v.Failures) != 0 || fmt.Sprint(v.Unmeasured) != "["+want+"]" {
		t.Errorf("verdict pass %v failures %v unmeasured %q, want %q", v.Pass(), v.Failed(), v.Unmeasured, want)
	}
}

// Files of different groups, or a file without a group among grouped
// ones, or a shard twice, are refused naming both files.
func TestMergeRefusesMixedGroups(t *testing.T) {
	a := groupShard(t, eight, Shard{1, 2}, "ci-1", "20261204t010000-aaaa")
	b := groupShard(t, eight, Shard{2, 2}, "ci-2", "20261204t010000-bbbb")
	none := shardFile(t, eight, Shard{2, 2}, "")
	dup := groupShard(t, eight, Shard{1, 2}, "ci-1", "20261204t010000-dddd")
	_, err := Merge([]string{"a.json", "b.json", "none.json", "dup.json"}, []*results.Results{a, b, none, dup})
	for _, want := range []string{
		`b.json: run group "ci-2", but a.json has "ci-1": files of different runs`,
		`none.json: has no run group, but a.json has "ci-1"`,
		"dup.json: shard 1/2 is also a.json",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestPlanShards(t *testing.T) {
	got := PlanShards([]string{"c1", "c2", "c3", "c4", "c5"}, nil, 2)
	if fmt.Sprint(got) != "[{1/2 [c1 c2 c3]} {2/2 [c4 c5]}]" {
		t.Errorf("plan %v", got)
	}
	if PlanShards(eight, nil, 1) != nil {
		t.Error("an unsharded run records no plan")
	}
	if got := PlanShards([]string{"c1", "c2", "c3"}, nil, 2); len(got[0].Nodes) != 0 {
		t.Errorf("an impossible plan has no nodes, got %v", got)
	}
}
