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
