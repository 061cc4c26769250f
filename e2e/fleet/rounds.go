package fleet

import (
	"slices"
)

// Rounds plans the pairs' offload evidence windows into rounds: each
// round holds pairs that share no node, so their windows can run at once
// (a window reads only its own pair's two hypervisors), and every pair is
// in exactly one round. The result is the pairs' indexes, each round in
// ascending order, the rounds ordered by their first pair.
//
// It colours the pairs (the edges of the fleet's graph) first-fit: each
// pair goes to the first round in which neither of its nodes is taken.
// In the order given, a ring (Ring, ShardRing: pair k is node k → k+1)
// comes out in 2 rounds when its node count is even and 3 when it is odd,
// which is the fewest possible. Explicit pairs are coloured twice, in
// the order given and with the pairs of the busiest nodes first, and the
// plan with fewer rounds is kept (the order given on a tie): never more
// than 2Δ−1 rounds, where Δ is the most pairs one node is in and no plan
// can do with fewer than Δ. The same pairs always give the same rounds.
func Rounds(pairs []Pair) [][]int {
	order := make([]int, len(pairs))
	for i := range order {
		order[i] = i
	}
	best := firstFit(pairs, order)
	degree := map[string]int{}
	for _, p := range pairs {
		degree[p.Sender]++
		if p.Receiver != p.Sender {
			degree[p.Receiver]++
		}
	}
	busy := slices.Clone(order)
	slices.SortStableFunc(busy, func(a, b int) int {
		da := max(degree[pairs[a].Sender], degree[pairs[a].Receiver])
		db := max(degree[pairs[b].Sender], degree[pairs[b].Receiver])
		if da != db {
			return db - da
		}
		return (degree[pairs[b].Sender] + degree[pairs[b].Receiver]) - (degree[pairs[a].Sender] + degree[pairs[a].Receiver])
	})
	if alt := firstFit(pairs, busy); len(alt) < len(best) {
		best = alt
	}
	return best
}

// firstFit puts each pair, in order, into the first round where neither
// of its nodes is taken; rounds sorted inside and by their first pair.
func firstFit(pairs []Pair, order []int) [][]int {
	var rounds [][]int
	var taken []map[string]bool
	for _, i := range order {
		p := pairs[i]
		k := slices.IndexFunc(taken, func(t map[string]bool) bool { return !t[p.Sender] && !t[p.Receiver] })
		if k < 0 {
			k = len(rounds)
			rounds = append(rounds, nil)
			taken = append(taken, map[string]bool{})
		}
		rounds[k] = append(rounds[k], i)
		taken[k][p.Sender], taken[k][p.Receiver] = true, true
	}
	for _, r := range rounds {
		slices.Sort(r)
	}
	slices.SortFunc(rounds, func(a, b []int) int { return a[0] - b[0] })
	return rounds
}

// RoundPairs are rounds (Rounds' indexes) as the pairs themselves.
func RoundPairs(pairs []Pair, rounds [][]int) [][]Pair {
	out := make([][]Pair, len(rounds))
	for k, r := range rounds {
		for _, i := range r {
			out[k] = append(out[k], pairs[i])
		}
	}
	return out
}
