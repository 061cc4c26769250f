package harness

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// runFakeShard measures shard s of the 4-node ring in run group group
// (tcp-p1, no checks: the test judges it under baseline, on the rates) and returns its
// results file as the process would leave it.
func runFakeShard(t *testing.T, nodes []string, s fleet.Shard, group string) *results.Results {
	t.Helper()
	fast := iperfJSON(t, "v3.12-tcp-p15.json")
	ff := newFakeShard(t, nodes, s, group, config.FleetIsolated, func(fleet.Pair) []byte { return fast }, func(fleet.Pair) time.Duration { return 0 })
	if err := ff.f.RunProfile(context.Background(), tcpP1(t)); err != nil {
		t.Fatalf("shard %s: RunProfile: %v", s, err)
	}
	r, err := results.Load(ff.f.Results.Path())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Two shards of one run group, each its own process with its own run id,
// merge into one fleet verdict over all four nodes; with one shard
// missing, the merge names it and its nodes, and the verdict cannot pass.
func TestShardsOfOneGroupMergeIntoOneVerdict(t *testing.T) {
	nodes := []string{"compute1", "compute2", "compute3", "compute4"}
	a := runFakeShard(t, nodes, fleet.Shard{Index: 1, Count: 2}, "ci-4711")
	b := runFakeShard(t, nodes, fleet.Shard{Index: 2, Count: 2}, "ci-4711")
	for b.RunID == a.RunID { // one run id in 65536 per second: draw again
		b = runFakeShard(t, nodes, fleet.Shard{Index: 2, Count: 2}, "ci-4711")
	}
	if a.Fleet.RunGroup != "ci-4711" || len(a.Fleet.Plan) != 2 || !slices.Equal(a.Fleet.Plan[1].Nodes, []string{"compute3", "compute4"}) {
		t.Fatalf("shard 1/2 records group %q plan %+v", a.Fleet.RunGroup, a.Fleet.Plan)
	}
	m, err := fleet.Merge([]string{"a.json", "b.json"}, []*results.Results{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if m.RunID != "ci-4711" || len(m.Fleet.MeasuredNodes()) != 4 || m.Fleet.Shards[0].RunID != a.RunID || m.Fleet.Shards[1].RunID != b.RunID {
		t.Fatalf("merged run %s nodes %v shards %+v", m.RunID, m.Fleet.MeasuredNodes(), m.Fleet.Shards)
	}
	if v := results.JudgeFleet(m.Fleet, results.PathBaseline, fleet.StoredLine); !v.Pass() {
		t.Errorf("merged verdict fails: %s %+v", v.Headline(), v.Failures)
	}
	half, err := fleet.Merge([]string{"a.json"}, []*results.Results{a})
	if err != nil {
		t.Fatal(err)
	}
	v := results.JudgeFleet(half.Fleet, results.PathBaseline, fleet.StoredLine)
	want := "shard 2/2 not measured: its nodes compute3, compute4 (no results file of it was merged)"
	if v.Pass() || !strings.Contains(v.Headline(), want) {
		t.Errorf("one shard of two: pass %v, %q; want %q", v.Pass(), v.Headline(), want)
	}
}
