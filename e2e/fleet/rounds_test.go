package fleet

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// validRounds fails unless rounds hold every pair exactly once and no node
// twice in one round; it returns the most pairs one node is in (Δ, the
// fewest rounds any plan needs).
func validRounds(t *testing.T, pairs []Pair, rounds [][]int) int {
	t.Helper()
	seen := map[int]int{}
	for k, r := range rounds {
		if len(r) == 0 {
			t.Errorf("round %d is empty", k+1)
		}
		nodes := map[string]int{}
		for _, i := range r {
			if i < 0 || i >= len(pairs) {
				t.Fatalf("round %d names pair %d of %d", k+1, i, len(pairs))
			}
			if j, dup := seen[i]; dup {
				t.Errorf("pair %d %s in round %d and round %d", i, pairs[i], j+1, k+1)
			}
			seen[i] = k
			for _, n := range []string{pairs[i].Sender, pairs[i].Receiver} {
				if j, twice := nodes[n]; twice && j != i {
					t.Errorf("round %d: node %s in pair %s and pair %s", k+1, n, pairs[j], pairs[i])
				}
				nodes[n] = i
			}
		}
		if !slices.IsSorted(r) {
			t.Errorf("round %d %v: pairs not in order", k+1, r)
		}
		if k > 0 && rounds[k-1][0] > r[0] {
			t.Errorf("rounds %v not ordered by their first pair", rounds)
		}
	}
	if len(seen) != len(pairs) {
		t.Errorf("%d of %d pairs planned: %v", len(seen), len(pairs), rounds)
	}
	degree := map[string]int{}
	delta := 0
	for _, p := range pairs {
		for _, n := range PairNodes([]Pair{p}) {
			degree[n]++
			delta = max(delta, degree[n])
		}
	}
	return delta
}

// A ring's pairs split into 2 rounds when its node count is even and 3
// when it is odd (a triangle's three pairs all share nodes), the fewest
// possible; so do a shard's ring and a 100-node ring.
func TestRoundsOfARing(t *testing.T) {
	for n := 2; n <= 101; n++ {
		pairs, err := Ring(names(n))
		if err != nil {
			t.Fatal(err)
		}
		rounds := Rounds(pairs)
		validRounds(t, pairs, rounds)
		want := 2
		if n%2 == 1 {
			want = 3
		}
		if len(rounds) != want {
			t.Errorf("ring of %d: %d rounds %v, want %d", n, len(rounds), rounds, want)
		}
	}
	// The 4-node ring: the two pairs that share no node, then the other two.
	pairs, _ := Ring([]string{"compute1", "compute2", "compute3", "compute4"})
	if got, want := RoundPairs(pairs, Rounds(pairs)), [][]Pair{
		{{"compute1", "compute2"}, {"compute3", "compute4"}},
		{{"compute2", "compute3"}, {"compute4", "compute1"}},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("4-node ring: %v, want %v", got, want)
	}
	// The 2-node ring's two directions share both nodes: one round each.
	pairs, _ = Ring([]string{"a", "b"})
	if got := Rounds(pairs); !reflect.DeepEqual(got, [][]int{{0}, {1}}) {
		t.Errorf("2-node ring: %v", got)
	}
	// A shard is a ring of its own.
	for _, s := range []Shard{{1, 3}, {2, 3}, {3, 3}} {
		pairs, err := ShardRing(names(100), s)
		if err != nil {
			t.Fatal(err)
		}
		rounds := Rounds(pairs)
		validRounds(t, pairs, rounds)
		if want := 2 + len(pairs)%2; len(rounds) != want {
			t.Errorf("shard %s of 100 (%d pairs): %d rounds, want %d", s, len(pairs), len(rounds), want)
		}
	}
}

// Explicit pairs: every pair once, no node twice in a round, no more than
// 2Δ−1 rounds, and the fewest (Δ) where first-fit finds them.
func TestRoundsOfExplicitPairs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pairs []Pair
		want  int // rounds; 0: only the bounds
	}{
		{"none", nil, 0},
		{"one", []Pair{{"a", "b"}}, 1},
		{"both directions of one link", []Pair{{"a", "b"}, {"b", "a"}}, 2},
		{"two disjoint links both ways", []Pair{{"a", "b"}, {"b", "a"}, {"c", "d"}, {"d", "c"}}, 2},
		// A hub every node sends to and receives from: each of its six
		// pairs needs a round of its own.
		{"hub", []Pair{{"h", "a"}, {"a", "h"}, {"h", "b"}, {"b", "h"}, {"h", "c"}, {"c", "h"}}, 6},
		// A ring both ways: four pairs at every node.
		{"ring both ways", []Pair{{"a", "b"}, {"b", "a"}, {"b", "c"}, {"c", "b"}, {"c", "d"}, {"d", "c"}, {"d", "a"}, {"a", "d"}}, 4},
		// In the order given first-fit needs 4 rounds (b→d comes last, when
		// b is in round 1 and d in rounds 2 and 3); with the
		// busiest node's pairs first it needs 3, which is Δ (d is in 3 pairs).
		{"busiest first", []Pair{{"g", "e"}, {"b", "a"}, {"d", "g"}, {"d", "e"}, {"a", "c"}, {"b", "d"}}, 3},
		// Two rings of different sizes, as a sharded explicit plan has.
		{"two rings", []Pair{{"a", "b"}, {"b", "c"}, {"c", "a"}, {"d", "e"}, {"e", "f"}, {"f", "g"}, {"g", "d"}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rounds := Rounds(tc.pairs)
			delta := validRounds(t, tc.pairs, rounds)
			if tc.want > 0 && len(rounds) != tc.want {
				t.Errorf("%d rounds %v, want %d", len(rounds), RoundPairs(tc.pairs, rounds), tc.want)
			}
			if len(tc.pairs) > 0 && (len(rounds) < delta || len(rounds) > 2*delta-1) {
				t.Errorf("%d rounds for Δ %d: outside Δ..2Δ−1", len(rounds), delta)
			}
			if !reflect.DeepEqual(rounds, Rounds(slices.Clone(tc.pairs))) {
				t.Errorf("not deterministic")
			}
		})
	}
	// Random fleets: the same properties, and the same plan every time.
	r := rand.New(rand.NewPCG(21, 35))
	for trial := range 200 {
		n := 2 + r.IntN(40)
		var pairs []Pair
		seen := map[Pair]bool{}
		for range 1 + r.IntN(3*n) {
			p := Pair{fmt.Sprintf("n%02d", r.IntN(n)), fmt.Sprintf("n%02d", r.IntN(n))}
			if p.Sender == p.Receiver || seen[p] {
				continue
			}
			seen[p] = true
			pairs = append(pairs, p)
		}
		if len(pairs) == 0 {
			continue
		}
		rounds := Rounds(pairs)
		delta := validRounds(t, pairs, rounds)
		if len(rounds) > 2*delta-1 {
			t.Errorf("trial %d: %d rounds for Δ %d", trial, len(rounds), delta)
		}
		if !reflect.DeepEqual(rounds, Rounds(pairs)) {
			t.Errorf("trial %d: not deterministic", trial)
		}
	}
}
