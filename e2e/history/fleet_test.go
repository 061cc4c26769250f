package history

import (
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// fleetShard is one shard of a fleet run as the harness writes it: pairs,
// their compact rates and each node's checks.
func fleetShard(runID, shard string, pairs [][2]string, soft string) *results.Results {
	r := &results.Results{SchemaVersion: 2, RunID: runID, Config: results.ConfigSummary{ExpectedPath: "asap2", BuildLabel: "mosk-25.2"}}
	f := &results.Fleet{Mode: "isolated", Shard: shard}
	for i, p := range pairs {
		id := shard + "-p" + string(rune('a'+i))
		f.Pairs = append(f.Pairs, results.FleetPair{ID: id, Sender: p[0], Receiver: p[1], Shard: shard})
		f.Results = append(f.Results, results.FleetPairRate{Pair: id, Profile: "tcp-p1", Repeats: 3,
			Delivered: results.Stat{N: 3, Median: 9e9, Mean: 9e9, CVPercent: 1}})
		for _, n := range p {
			v := results.VerdictOffloaded
			if n == soft {
				v = results.VerdictSoftware
			}
			f.Checks = append(f.Checks, results.FleetCheck{Node: n, Pair: id, Check: "tc", Verdict: v})
		}
	}
	r.Fleet = f
	return r
}

func TestExtractFleetShards(t *testing.T) {
	a := fleetShard("run1", "1/2", [][2]string{{"cmp1", "cmp2"}}, "")
	b := fleetShard("run1", "2/2", [][2]string{{"cmp3", "cmp4"}}, "cmp4")
	keys := map[string]float64{}
	for _, r := range []*results.Results{a, b} {
		for _, p := range Extract(r) {
			if _, dup := keys[p.Series.Key()]; dup {
				t.Errorf("shards share series %s", p.Series.Key())
			}
			keys[p.Series.Key()] = p.Value
			if p.Series.Metric == MetricDelivered && (p.Lo >= p.Value || p.Hi <= p.Value || p.N != 3) {
				t.Errorf("%s: interval [%g, %g] n=%d around %g", p.Series.Key(), p.Lo, p.Hi, p.N, p.Value)
			}
		}
	}
	mode := a.Config.Mode()
	for k, want := range map[string]float64{
		"delivered_bps|tcp-p1|asap2|cmp1>cmp2|unknown|" + mode: 9e9,
		"delivered_bps|tcp-p1|asap2|cmp3>cmp4|unknown|" + mode: 9e9,
		"offloaded|fleet|asap2|cmp1|unknown|" + mode:           1,
		"offloaded|fleet|asap2|cmp4|unknown|" + mode:           0,
	} {
		if got, ok := keys[k]; !ok || got != want {
			t.Errorf("%s = %g (present %v), want %g; have %v", k, got, ok, want, keys)
		}
	}
}

func TestExtractConnections(t *testing.T) {
	tto := 2.5
	r := &results.Results{RunID: "r", Config: results.ConfigSummary{ExpectedPath: "asap2"}, Connections: []results.ConnectionResult{{
		N: 1000, Path: "asap2", Hosts: []results.ConnectionHost{
			{Hypervisor: "cmp1", Samples: 4, Share: 0.98, TimeToOffloadSeconds: &tto},
			{Hypervisor: "cmp2", Samples: 0, Reason: "no conntrack"},
		}}}}
	got := map[string]float64{}
	for _, p := range Extract(r) {
		got[p.Series.Metric+"@"+p.Series.Node+"@"+p.Series.Profile] = p.Value
	}
	if got["offloaded_share@cmp1@connections-1000"] != 0.98 || got["time_to_offload_s@cmp1@connections-1000"] != 2.5 || len(got) != 2 {
		t.Fatalf("connection points: %v", got)
	}
}

// The fleet of the lab (testdata/lab-fleet-isolated-results.json: Zed, four compute nodes in a
// ring, isolated, the checks in two rounds and tcp-p1 on every pair, recorded by make lab's fleet
// phase on 2026-12-06): one delivered-rate series a pair, named sender>receiver, one verdict
// series a node (software: 0 on the baseline path), the run's identity per hypervisor.
func TestExtractRecordedFleet(t *testing.T) {
	r := load(t, "testdata/lab-fleet-isolated-results.json")
	got := map[string]Point{}
	for _, p := range Extract(r) {
		if _, dup := got[p.Series.Key()]; dup {
			t.Errorf("series %s twice", p.Series.Key())
		}
		got[p.Series.Key()] = p
	}
	mode := r.Config.Mode()
	rates := map[string]float64{}
	for _, fr := range r.Fleet.Results {
		rates[fr.Pair] = fr.Delivered.Median
	}
	for _, pr := range r.Fleet.Pairs {
		k := "delivered_bps|tcp-p1|baseline|" + pr.Sender + ">" + pr.Receiver + "|ml2/ovs|" + mode
		p, ok := got[k]
		if !ok || p.Value != rates[pr.ID] || p.Value < 1e6 || p.N != 1 || p.RunID != r.RunKey() {
			t.Errorf("%s: %+v (present %v), want the pair's median %g", k, p, ok, rates[pr.ID])
		}
		delete(got, k)
	}
	for _, n := range []string{"compute1", "compute2", "compute3", "compute4"} {
		k := "offloaded|fleet|baseline|" + n + "|ml2/ovs|" + mode
		if p, ok := got[k]; !ok || p.Value != 0 {
			t.Errorf("%s: %+v (present %v), want 0 (software)", k, p, ok)
		}
		delete(got, k)
	}
	if len(got) != 0 {
		t.Errorf("series not accounted for: %v", got)
	}
	facts, err := Identity(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"compute1", "compute2", "compute3", "compute4"} {
		if facts["hv."+n+".ovs"] == "" || facts["hv."+n+".kernel"] == "" {
			t.Errorf("%s: no ovs or kernel fact in %v", n, facts)
		}
	}
}
