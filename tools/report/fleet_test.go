package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// writeShard writes shard s of a ring over nodes as the runner stores it
// (every pair 16.4 Gbit/s in tcp-p1, the pair sent by slow a quarter of
// it; checks offloaded) and returns its path.
func writeShard(t *testing.T, dir string, nodes []string, s fleet.Shard, slow string, edit func(*results.Results)) string {
	t.Helper()
	pairs, err := fleet.ShardRing(nodes, s)
	if err != nil {
		t.Fatal(err)
	}
	rule := fleet.Rule{Kind: fleet.RuleRatio, Ratio: 0.8}
	f := &results.Fleet{Mode: results.FleetIsolated, Shard: s.String(), Rule: fleet.StoredRule(rule)}
	for _, n := range fleet.PairNodes(pairs) {
		f.Nodes = append(f.Nodes, results.FleetNode{Name: n})
	}
	var prs []fleet.PairResult
	for _, p := range pairs {
		bps := 16.4e9
		if p.Sender == slow {
			bps /= 4
		}
		id := fleet.PairID(p)
		f.Pairs = append(f.Pairs, results.FleetPair{ID: id, Sender: p.Sender, Receiver: p.Receiver, Shard: s.String()})
		f.Results = append(f.Results, results.FleetPairRate{Pair: id, Profile: "tcp-p1", Repeats: 1, Delivered: results.Stat{N: 1, Median: bps, Min: bps, Max: bps, Mean: bps}})
		for _, n := range []string{p.Sender, p.Receiver} {
			f.Checks = append(f.Checks, results.FleetCheck{Node: n, Pair: id, Check: results.CheckTC, Verdict: results.VerdictOffloaded, Reason: "in_hw"})
		}
		prs = append(prs, fleet.PairResult{Pair: p, Profile: "tcp-p1", BPS: bps})
	}
	v, err := fleet.Judge(prs, rule)
	if err != nil {
		t.Fatal(err)
	}
	f.Rates, f.Notes = fleet.StoredRates(v), v.Notes
	r := results.Results{RunID: "fleet-7", StartedAt: time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC),
		Config: results.ConfigSummary{ExpectedPath: results.PathASAP2, Profiles: []string{"tcp-p1"}}, Fleet: f}
	if edit != nil {
		edit(&r)
	}
	file := filepath.Join(dir, fmt.Sprintf("shard-%d.json", s.Index))
	if _, err := results.NewWriter(file, r); err != nil {
		t.Fatal(err)
	}
	return file
}

var six = []string{"cmp1", "cmp2", "cmp3", "cmp4", "cmp5", "cmp6"}

// Two shards merge into one report and one verdict naming the slow node
// and its receiver, judged against the whole fleet's median.
func TestMergeShards(t *testing.T) {
	dir := t.TempDir()
	a := writeShard(t, dir, six, fleet.Shard{Index: 1, Count: 2}, "", nil)
	b := writeShard(t, dir, six, fleet.Shard{Index: 2, Count: 2}, "cmp5", nil)
	// -o and -results into a directory that does not exist yet: both made.
	outDir := filepath.Join(dir, "merged")
	merged := filepath.Join(outDir, "results.json")
	code, out, errs := runCmd(t, "merge", "-o", outDir, "-results", merged, b, a)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the fleet fails); stderr %s\n%s", code, errs, out)
	}
	for _, want := range []string{
		"fleet verdict FAIL: run fleet-7: 2 node(s) failed: cmp5, cmp6",
		"  cmp5: outlier: cmp5: tcp-p1 4.1 Gbit/s as sender, 0.25× the fleet median 16.4",
		"  cmp6: outlier: cmp6: tcp-p1 4.1 Gbit/s as receiver, 0.25× the fleet median 16.4",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	r, err := results.Load(merged)
	if err != nil {
		t.Fatal(err)
	}
	if r.Fleet.Shard != "all/2" || len(r.Fleet.MeasuredNodes()) != 6 {
		t.Errorf("merged shard %s nodes %v", r.Fleet.Shard, r.Fleet.MeasuredNodes())
	}
	md, err := os.ReadFile(filepath.Join(outDir, "fleet-report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "Run fleet-7, shard all/2: isolated mode, 6 node(s) measured") {
		t.Errorf("report:\n%s", md)
	}
	// render of the same shard files merges them too; -fail-on-fleet gates.
	code, out, errs = runCmd(t, "render", "-o", dir, "-fail-on-fleet", a, b)
	if code != 1 || !strings.Contains(out, "fleet verdict FAIL: run fleet-7: 2 node(s) failed: cmp5, cmp6") {
		t.Errorf("render: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runCmd(t, "render", "-o", dir, a, b)
	if code != 0 || !strings.Contains(out, "fleet verdict FAIL") {
		t.Errorf("render without -fail-on-fleet: exit %d\n%s", code, out)
	}
	// A healthy fleet passes.
	c := writeShard(t, t.TempDir(), six, fleet.Shard{Index: 2, Count: 2}, "", nil)
	code, out, errs = runCmd(t, "merge", "-o", dir, a, c)
	if code != 0 || !strings.Contains(out, "fleet verdict PASS: run fleet-7, 6 node(s)") {
		t.Errorf("healthy: exit %d\n%s%s", code, out, errs)
	}
}

// Shards of different runs or configs, or sharing nodes, are refused
// (exit 2) with every problem named by file.
func TestMergeRefusesShards(t *testing.T) {
	dir := t.TempDir()
	a := writeShard(t, dir, six, fleet.Shard{Index: 1, Count: 2}, "", nil)
	b := writeShard(t, dir, six, fleet.Shard{Index: 2, Count: 2}, "", func(r *results.Results) {
		r.RunID = "fleet-8"
		r.Config.Repeats = 5
		r.Fleet.Nodes = append(r.Fleet.Nodes, results.FleetNode{Name: "cmp1"})
	})
	code, out, errs := runCmd(t, "merge", "-o", dir, a, b)
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, out)
	}
	for _, want := range []string{
		"report merge: refused: fleet merge:",
		b + `: run id "fleet-8", but ` + a + ` has "fleet-7"`,
		b + ": config differs from " + a + "'s in config.repeats (0 vs 5)",
		b + ": node cmp1 is also measured in " + a,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	code, out, errs = runCmd(t, "merge", "-o", dir, a)
	if code != 1 || !strings.Contains(out, "fleet verdict FAIL: run fleet-7: shard 2/2 not measured") {
		t.Errorf("one of two shards: exit %d %s%s", code, out, errs)
	}
	code, _, errs = runCmd(t, "merge", seedASAP2)
	if code != 2 || !strings.Contains(errs, seedASAP2+": has no fleet section") {
		t.Errorf("a single-pair file: exit %d %s", code, errs)
	}
}
