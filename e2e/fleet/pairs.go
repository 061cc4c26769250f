package fleet

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Pair is one measured pair: the sender's guest runs the iperf3 clients,
// the receiver's the servers. Each guest is pinned to its node.
type Pair struct {
	Sender   string `yaml:"sender" json:"sender"`
	Receiver string `yaml:"receiver" json:"receiver"`
}

func (p Pair) String() string { return p.Sender + "→" + p.Receiver }

// Ring pairs the nodes so that every node sends once and receives once:
// sorted by name, node k sends to node k+1 and the last to the first. The
// same nodes give the same pairs whatever their order. With 2 nodes the two
// pairs are the two directions between them. Fewer than 2 nodes, an empty
// or a repeated name is an error.
func Ring(nodes []string) ([]Pair, error) {
	sorted := slices.Clone(nodes)
	slices.Sort(sorted)
	var errs []string
	for i, n := range sorted {
		if strings.TrimSpace(n) == "" {
			errs = append(errs, "an empty node name")
		} else if i > 0 && sorted[i-1] == n {
			errs = append(errs, fmt.Sprintf("node %q named twice", n))
		}
	}
	if len(sorted) < 2 {
		errs = append(errs, fmt.Sprintf("a ring needs at least 2 nodes, got %d", len(sorted)))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("fleet: ring of %v: %s", nodes, strings.Join(errs, "; "))
	}
	out := make([]Pair, len(sorted))
	for i, n := range sorted {
		out[i] = Pair{Sender: n, Receiver: sorted[(i+1)%len(sorted)]}
	}
	return out, nil
}

// PairProblem is one thing wrong with explicit pairs. Pair is the index of
// the pair it is about and Key "sender" or "receiver", or Pair is -1 when it
// is about a node of the fleet (never sends, never receives).
type PairProblem struct {
	Pair    int
	Key     string
	Node    string
	Message string
}

func (p PairProblem) Error() string {
	if p.Pair < 0 {
		return fmt.Sprintf("node %q %s", p.Node, p.Message)
	}
	return fmt.Sprintf("pair %d %s %q: %s", p.Pair, p.Key, p.Node, p.Message)
}

// CheckPairs returns every problem of explicit pairs over the fleet's
// nodes at once: an empty or unknown node, a node paired with itself, a
// pair given twice, and each node that never sends or never receives (a
// self-pair, refused, counts for neither).
// When nodes is nil the fleet is not known yet (a zone, an aggregate, all)
// and only the pairs' own form is checked.
func CheckPairs(nodes []string, pairs []Pair) []PairProblem {
	var probs []PairProblem
	known := map[string]bool{}
	for _, n := range nodes {
		known[n] = true
	}
	sends, receives := map[string]bool{}, map[string]bool{}
	seen := map[Pair]int{}
	for i, p := range pairs {
		for _, side := range []struct{ key, node string }{{"sender", p.Sender}, {"receiver", p.Receiver}} {
			switch {
			case strings.TrimSpace(side.node) == "":
				probs = append(probs, PairProblem{Pair: i, Key: side.key, Node: side.node, Message: "is empty"})
			case nodes != nil && !known[side.node]:
				probs = append(probs, PairProblem{Pair: i, Key: side.key, Node: side.node, Message: "is not a node of the fleet " + fmt.Sprint(nodes)})
			}
		}
		if p.Sender != "" && p.Sender == p.Receiver {
			probs = append(probs, PairProblem{Pair: i, Key: "receiver", Node: p.Receiver, Message: "is the pair's sender: a pair needs two nodes"})
			continue // refused: it covers nothing
		}
		if j, dup := seen[p]; dup {
			probs = append(probs, PairProblem{Pair: i, Key: "sender", Node: p.Sender, Message: fmt.Sprintf("pair %s is also pair %d", p, j)})
		} else {
			seen[p] = i
		}
		sends[p.Sender], receives[p.Receiver] = true, true
	}
	if len(pairs) == 0 {
		probs = append(probs, PairProblem{Pair: -1, Message: "no pairs given"})
	}
	for _, n := range nodes {
		switch {
		case !sends[n] && !receives[n]:
			probs = append(probs, PairProblem{Pair: -1, Node: n, Message: "is in no pair: every node must send and receive"})
		case !sends[n]:
			probs = append(probs, PairProblem{Pair: -1, Node: n, Message: "never sends: every node must send and receive"})
		case !receives[n]:
			probs = append(probs, PairProblem{Pair: -1, Node: n, Message: "never receives: every node must send and receive"})
		}
	}
	return probs
}

// PairsError joins CheckPairs' problems into one error (nil when none).
func PairsError(probs []PairProblem) error {
	if len(probs) == 0 {
		return nil
	}
	msgs := make([]string, len(probs))
	for i, p := range probs {
		msgs[i] = p.Error()
	}
	return errors.New("fleet: explicit pairs: " + strings.Join(msgs, "; "))
}

// PairNodes are the nodes the pairs touch, sorted.
func PairNodes(pairs []Pair) []string {
	var out []string
	for _, p := range pairs {
		out = append(out, p.Sender, p.Receiver)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Shard is one of Count parts of a run, Index counted from 1 ("2/4").
type Shard struct {
	Index, Count int
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ParseShard reads "i/n" (1 <= i <= n). The empty string is the whole run, 1/1.
func ParseShard(s string) (Shard, error) {
	if strings.TrimSpace(s) == "" {
		return Shard{Index: 1, Count: 1}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 1 <= i <= n, e.g. 2/4", s)
	}
	return Shard{Index: i, Count: n}, nil
}

// ShardRing is shard s of a ring over the nodes: the sorted nodes cut into
// s.Count consecutive blocks (sizes differing by at most one), each block its
// own Ring. Shards never share a node, so CI workers running them at once
// do not load one node twice (an isolated run stays isolated), and every
// node still sends and receives. The same nodes and shard always give the
// same pairs. A block of fewer than 2 nodes is an error.
func ShardRing(nodes []string, s Shard) ([]Pair, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	sorted := slices.Clone(nodes)
	slices.Sort(sorted)
	if len(sorted) < 2*s.Count {
		return nil, fmt.Errorf("fleet: shard %s: %d nodes cannot make %d rings of at least 2 nodes each", s, len(sorted), s.Count)
	}
	lo, hi := blockBounds(len(sorted), s)
	return Ring(sorted[lo:hi])
}

// ShardPairs is shard s of explicit pairs. Shards never share a node: the
// pairs are cut into their groups of connected nodes, and each group goes,
// largest first, to the shard with the fewest nodes so far (the lower index
// on a tie). The same pairs and shard always give the same pairs. Fewer
// groups than shards is an error.
func ShardPairs(pairs []Pair, s Shard) ([]Pair, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if s.Count == 1 {
		return slices.Clone(pairs), nil
	}
	groups := components(pairs)
	if len(groups) < s.Count {
		return nil, fmt.Errorf("fleet: shard %s: the explicit pairs form %d group(s) of connected nodes, fewer than %d shards: a shard would share nodes with another or be empty", s, len(groups), s.Count)
	}
	load := make([]int, s.Count)
	var out []Pair
	for _, g := range groups {
		best := 0
		for k := range load {
			if load[k] < load[best] {
				best = k
			}
		}
		load[best] += len(g.nodes)
		if best == s.Index-1 {
			out = append(out, g.pairs...)
		}
	}
	return out, nil
}

func (s Shard) check() error {
	if s.Count < 1 || s.Index < 1 || s.Index > s.Count {
		return fmt.Errorf("fleet: shard %s: want i/n with 1 <= i <= n", s)
	}
	return nil
}

// blockBounds are the node indexes [lo, hi) of shard s over n sorted nodes:
// consecutive blocks whose sizes differ by at most one.
func blockBounds(n int, s Shard) (lo, hi int) {
	base, extra := n/s.Count, n%s.Count
	i := s.Index - 1
	lo = i*base + min(i, extra)
	hi = lo + base
	if i < extra {
		hi++
	}
	return lo, hi
}

type group struct {
	nodes []string
	pairs []Pair
}

// components groups the pairs by connected nodes; groups sorted by size
// (most nodes first), then by their first node; pairs keep their order.
func components(pairs []Pair) []group {
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		if parent[x] == "" || parent[x] == x {
			parent[x] = x
			return x
		}
		r := find(parent[x])
		parent[x] = r
		return r
	}
	for _, p := range pairs {
		a, b := find(p.Sender), find(p.Receiver)
		if a != b {
			if b < a {
				a, b = b, a
			}
			parent[b] = a
		}
	}
	byRoot := map[string]*group{}
	var roots []string
	for _, n := range PairNodes(pairs) {
		r := find(n)
		if byRoot[r] == nil {
			byRoot[r] = &group{}
			roots = append(roots, r)
		}
		byRoot[r].nodes = append(byRoot[r].nodes, n)
	}
	for _, p := range pairs {
		g := byRoot[find(p.Sender)]
		g.pairs = append(g.pairs, p)
	}
	out := make([]group, len(roots))
	for i, r := range roots {
		out[i] = *byRoot[r]
	}
	slices.SortStableFunc(out, func(a, b group) int {
		if len(a.nodes) != len(b.nodes) {
			return len(b.nodes) - len(a.nodes)
		}
		return strings.Compare(a.nodes[0], b.nodes[0])
	})
	return out
}

// Plan is the pairs a run measures: over the resolved nodes, the ring
// (explicit nil) or the explicit pairs checked against the nodes (every
// problem at once), then shard s of them. The same inputs always give the
// same pairs.
func Plan(nodes []string, explicit []Pair, s Shard) ([]Pair, error) {
	if explicit == nil {
		return ShardRing(nodes, s)
	}
	if err := PairsError(CheckPairs(nodes, explicit)); err != nil {
		return nil, err
	}
	return ShardPairs(explicit, s)
}
