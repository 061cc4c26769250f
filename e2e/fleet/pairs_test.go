package fleet

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("compute%02d", i+1)
	}
	return out
}

// everyNodeSendsAndReceives fails unless each node of nodes is a sender and
// a receiver of pairs, and no pair is a self-pair.
func everyNodeSendsAndReceives(t *testing.T, nodes []string, pairs []Pair) {
	t.Helper()
	if probs := CheckPairs(nodes, pairs); len(probs) > 0 {
		t.Errorf("pairs %v over %v: %v", pairs, nodes, PairsError(probs))
	}
}

func TestRing(t *testing.T) {
	for _, tc := range []struct {
		nodes []string
		want  []Pair
	}{
		{[]string{"b", "a"}, []Pair{{"a", "b"}, {"b", "a"}}},
		{[]string{"c", "a", "b"}, []Pair{{"a", "b"}, {"b", "c"}, {"c", "a"}}},
		{[]string{"d", "b", "a", "c"}, []Pair{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "a"}}},
	} {
		got, err := Ring(tc.nodes)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Ring(%v) = %v, %v; want %v", tc.nodes, got, err, tc.want)
		}
	}
	for n := 2; n <= 9; n++ {
		nodes := names(n)
		pairs, err := Ring(nodes)
		if err != nil || len(pairs) != n {
			t.Fatalf("Ring of %d: %v, %v", n, pairs, err)
		}
		everyNodeSendsAndReceives(t, nodes, pairs)
		// The same nodes in another order give the same pairs.
		rev := slices.Clone(nodes)
		slices.Reverse(rev)
		again, _ := Ring(rev)
		if !reflect.DeepEqual(pairs, again) {
			t.Errorf("Ring of %d depends on the order: %v vs %v", n, pairs, again)
		}
	}
}

func TestRingRefuses(t *testing.T) {
	for _, tc := range []struct {
		nodes []string
		want  []string
	}{
		{nil, []string{"at least 2 nodes, got 0"}},
		{[]string{"a"}, []string{"at least 2 nodes, got 1"}},
		{[]string{"a", "b", "a", ""}, []string{`node "a" named twice`, "an empty node name"}},
	} {
		_, err := Ring(tc.nodes)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("Ring(%q) = %v; want it to say %q", tc.nodes, err, w)
			}
		}
	}
}

func TestCheckPairs(t *testing.T) {
	nodes := []string{"c1", "c2", "c3", "c4"}
	ok := []Pair{{"c1", "c2"}, {"c2", "c1"}, {"c3", "c4"}, {"c4", "c3"}}
	if probs := CheckPairs(nodes, ok); len(probs) != 0 {
		t.Fatalf("valid pairs refused: %v", PairsError(probs))
	}
	bad := []Pair{{"c1", "c2"}, {"c2", "c2"}, {"c1", "c9"}, {"", "c1"}, {"c1", "c2"}}
	got := PairsError(CheckPairs(nodes, bad)).Error()
	for _, w := range []string{
		`pair 1 receiver "c2": is the pair's sender`,
		`pair 2 receiver "c9": is not a node of the fleet`,
		`pair 3 sender "": is empty`,
		`pair 4 sender "c1": pair c1→c2 is also pair 0`,
		`node "c2" never sends`, // its only send is the refused c2→c2
		`node "c3" is in no pair`,
		`node "c4" is in no pair`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("problems %q\nlack %q", got, w)
		}
	}
	// A node that only receives, one that only sends.
	got = PairsError(CheckPairs([]string{"a", "b", "c"}, []Pair{{"a", "b"}, {"b", "a"}, {"a", "c"}})).Error()
	if !strings.Contains(got, `node "c" never sends`) || strings.Contains(got, `node "a"`) {
		t.Errorf("coverage: %q", got)
	}
	got = PairsError(CheckPairs([]string{"a", "b", "c"}, []Pair{{"a", "b"}, {"b", "a"}, {"c", "a"}})).Error()
	if !strings.Contains(got, `node "c" never receives`) {
		t.Errorf("coverage: %q", got)
	}
	// Nodes not known yet: only the form is checked.
	if probs := CheckPairs(nil, []Pair{{"x", "y"}}); len(probs) != 0 {
		t.Errorf("form only: %v", probs)
	}
	if probs := CheckPairs(nil, nil); len(probs) != 1 || !strings.Contains(probs[0].Error(), "no pairs") {
		t.Errorf("no pairs: %v", probs)
	}
}

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"": {1, 1}, "1/1": {1, 1}, "2/4": {2, 4}, " 3 / 3 ": {3, 3}} {
		if got, err := ParseShard(in); err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0/4", "5/4", "1/0", "2", "a/b", "-1/2", "1/2/3"} {
		if _, err := ParseShard(in); err == nil || !strings.Contains(err.Error(), in) {
			t.Errorf("ParseShard(%q) = %v; want an error naming it", in, err)
		}
	}
}

// TestShardRing: the shards of a ring cover every node exactly once (as
// sender and receiver), share no node, differ in size by at most one node,
// and are the same for the same inputs in any order.
func TestShardRing(t *testing.T) {
	for _, tc := range []struct{ nodes, count int }{{4, 2}, {5, 2}, {7, 3}, {100, 8}, {6, 1}} {
		nodes := names(tc.nodes)
		shuffled := slices.Clone(nodes)
		slices.Reverse(shuffled)
		seen := map[string]int{}
		sizes := []int{}
		for i := 1; i <= tc.count; i++ {
			s := Shard{i, tc.count}
			pairs, err := ShardRing(nodes, s)
			if err != nil {
				t.Fatalf("%d nodes shard %s: %v", tc.nodes, s, err)
			}
			again, _ := ShardRing(shuffled, s)
			if !reflect.DeepEqual(pairs, again) {
				t.Errorf("shard %s depends on node order", s)
			}
			own := PairNodes(pairs)
			everyNodeSendsAndReceives(t, own, pairs)
			for _, n := range own {
				seen[n]++
			}
			sizes = append(sizes, len(own))
		}
		for _, n := range nodes {
			if seen[n] != 1 {
				t.Errorf("%d nodes in %d shards: %s in %d shards", tc.nodes, tc.count, n, seen[n])
			}
		}
		if slices.Max(sizes)-slices.Min(sizes) > 1 {
			t.Errorf("%d nodes in %d shards: sizes %v", tc.nodes, tc.count, sizes)
		}
	}
	if _, err := ShardRing(names(5), Shard{1, 3}); err == nil || !strings.Contains(err.Error(), "5 nodes cannot make 3 rings") {
		t.Errorf("too many shards: %v", err)
	}
	if _, err := ShardRing(names(4), Shard{3, 2}); err == nil {
		t.Error("shard 3/2 accepted")
	}
}

func TestShardPairs(t *testing.T) {
	// Three groups: {a,b,c} (3 nodes), {d,e}, {f,g}.
	pairs := []Pair{{"d", "e"}, {"a", "b"}, {"e", "d"}, {"b", "c"}, {"c", "a"}, {"f", "g"}, {"g", "f"}}
	s1, err1 := ShardPairs(pairs, Shard{1, 2})
	s2, err2 := ShardPairs(pairs, Shard{2, 2})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	// The largest group goes to shard 1 (3 nodes), {d,e} to the emptier
	// shard 2 (2 nodes), {f,g} again to shard 2 (2 < 3).
	want1 := []Pair{{"a", "b"}, {"b", "c"}, {"c", "a"}}
	want2 := []Pair{{"d", "e"}, {"e", "d"}, {"f", "g"}, {"g", "f"}}
	if !reflect.DeepEqual(s1, want1) || !reflect.DeepEqual(s2, want2) {
		t.Errorf("shards %v / %v; want %v / %v", s1, s2, want1, want2)
	}
	if whole, _ := ShardPairs(pairs, Shard{1, 1}); !reflect.DeepEqual(whole, pairs) {
		t.Errorf("1/1 = %v", whole)
	}
	if _, err := ShardPairs(pairs, Shard{1, 4}); err == nil || !strings.Contains(err.Error(), "3 group(s)") {
		t.Errorf("more shards than groups: %v", err)
	}
}

func TestPlan(t *testing.T) {
	nodes := names(6)
	ring, err := Plan(nodes, nil, Shard{1, 1})
	if want, _ := Ring(nodes); err != nil || !reflect.DeepEqual(ring, want) {
		t.Errorf("ring: %v, %v", ring, err)
	}
	half, err := Plan(nodes, nil, Shard{2, 2})
	if want, _ := Ring(nodes[3:]); err != nil || !reflect.DeepEqual(half, want) {
		t.Errorf("ring shard 2/2: %v, %v", half, err)
	}
	// Explicit pairs are checked against the discovered nodes: compute06
	// (found by discovery, not in the pairs) is named.
	explicit := []Pair{{"compute01", "compute02"}, {"compute02", "compute01"}, {"compute03", "compute04"}, {"compute04", "compute05"}, {"compute05", "compute03"}}
	if _, err := Plan(nodes, explicit, Shard{1, 1}); err == nil || !strings.Contains(err.Error(), `node "compute06" is in no pair`) {
		t.Errorf("explicit pairs leaving a node out: %v", err)
	}
	got, err := Plan(nodes[:5], explicit, Shard{2, 2})
	if err != nil || !reflect.DeepEqual(got, explicit[:2]) {
		t.Errorf("explicit shard 2/2: %v, %v", got, err)
	}
}
