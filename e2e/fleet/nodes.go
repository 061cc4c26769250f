// Package fleet is the fleet sweep's pure logic (issue 21): which compute
// nodes a run covers (ResolveNodes, from what Nova reports), which pairs
// measure them so that every node sends and receives (Ring, CheckPairs),
// how a run is split over CI workers (Shard), and, from the pairs' rates,
// each node's rate against the fleet median with the odd node named
// (NodeRates, Judge). Nothing here calls a cloud or a host: fixtures reads
// the Inventory, the harness measures the pairs.
//
// Where things are:
//
//   - nodes.go: ResolveNodes, a Source (an explicit list of hypervisor names,
//     an availability zone, a host aggregate, all) over the Inventory that
//     fixtures reads from Nova: hypervisors up and enabled, zones and
//     aggregates by service host mapped to hypervisor names, the others
//     Skipped with the reason; every bad name at once.
//   - pairs.go: Ring (sorted nodes, each sending to the next); CheckPairs
//     (explicit pairs against the fleet: unknown, empty, self-pair, repeated,
//     every node that never sends or receives); ShardRing and ShardPairs (i/n
//     shards that never share a node, the same for the same inputs); Plan (the
//     ring or the explicit pairs checked against the resolved nodes, then the
//     shard).
//   - rounds.go: Rounds, the pairs' evidence windows in rounds of pairs that
//     share no node, first-fit in the order given (a ring in 2 rounds when
//     even, 3 when odd), and for explicit pairs also with the busiest nodes'
//     pairs first, the fewer rounds kept: never more than 2Δ−1; deterministic.
//   - outliers.go: Judge, each node's rate as sender and as receiver per
//     profile against the fleet median: RuleMAD (modified z-score below
//     −threshold and at least min_drop below the median, the mean absolute
//     deviation's scale when the MAD is 0, no outlier among fewer than 3
//     nodes) or RuleRatio; only rates below the median are named;
//     NodeRate.Line.
//   - stored.go: the results file's fleet words (PairID, StoredRule,
//     StoredRates, RateOf, StoredLine, Rejudge over a stored section);
//     PlanShards, every shard's nodes, recorded by each shard as fleet.plan;
//     Merge, the shard files of one run group into one, each shard with its
//     own run id (files without a group only of one run id) and its checks
//     rounds kept, refusing different groups, configs, modes, rules, shard
//     counts, repeated shards and shared nodes, every problem named by file. A
//     missing shard is listed not measured in fleet.shards with its nodes from
//     the plans, which keeps results.JudgeFleet's verdict from passing
//     (FleetVerdict.Unmeasured); the merged file is then judged again over the
//     whole fleet, its run id the group.
package fleet

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Source is where the fleet's nodes come from: exactly one of its fields is
// set (config validates it).
type Source struct {
	Nodes            []string // hypervisor names, as Nova reports them
	AvailabilityZone string
	Aggregate        string
	All              bool
}

// Describe names the source in messages: `availability zone "az1"`.
func (s Source) Describe() string {
	switch {
	case len(s.Nodes) > 0:
		return fmt.Sprintf("the node list %v", s.Nodes)
	case s.AvailabilityZone != "":
		return fmt.Sprintf("availability zone %q", s.AvailabilityZone)
	case s.Aggregate != "":
		return fmt.Sprintf("host aggregate %q", s.Aggregate)
	case s.All:
		return "every hypervisor Nova reports"
	}
	return "no source"
}

// Hypervisor is one row of Nova's hypervisor list.
type Hypervisor struct {
	Name        string // hypervisor_hostname: what a server is pinned to
	ServiceHost string // the compute service's host: what aggregates and zones list
	State       string // "up" | "down"
	Status      string // "enabled" | "disabled"
}

// usable says why a hypervisor cannot carry a pair ("" when it can).
func (h Hypervisor) usable() string {
	var why []string
	if h.State != "up" {
		why = append(why, "state "+quoteOr(h.State))
	}
	if h.Status != "enabled" {
		why = append(why, "status "+quoteOr(h.Status))
	}
	return strings.Join(why, ", ")
}

func quoteOr(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// HostGroup is a host aggregate or an availability zone: a name and the
// compute service hosts in it.
type HostGroup struct {
	Name  string
	Hosts []string
}

// Inventory is what Nova reports that ResolveNodes needs (fixtures.ReadInventory
// reads it with admin credentials).
type Inventory struct {
	Hypervisors []Hypervisor
	Aggregates  []HostGroup
	// Zones hold the hosts of each availability zone that run nova-compute.
	Zones []HostGroup
}

// Node is one compute node of the fleet.
type Node struct {
	Name        string // hypervisor name
	ServiceHost string
}

// Skipped is a node the source holds but the run cannot use, and why.
type Skipped struct {
	Name   string
	Reason string
}

// Resolved is the fleet a source stands for, nodes sorted by name.
type Resolved struct {
	Nodes   []Node
	Skipped []Skipped
}

// Names are the nodes' hypervisor names, in order.
func (r Resolved) Names() []string {
	out := make([]string, len(r.Nodes))
	for i, n := range r.Nodes {
		out[i] = n.Name
	}
	return out
}

// ResolveNodes turns the source into the fleet's nodes. An explicit list
// must name hypervisors that are up and enabled (every problem named at
// once); a zone, an aggregate or all take their up and enabled hypervisors
// and report the others in Skipped. Fewer than 2 usable nodes is an error.
func ResolveNodes(src Source, inv Inventory) (Resolved, error) {
	byName := map[string]Hypervisor{}
	byHost := map[string][]Hypervisor{}
	for _, h := range inv.Hypervisors {
		byName[h.Name] = h
		byHost[h.ServiceHost] = append(byHost[h.ServiceHost], h)
	}
	var res Resolved
	var errs []error
	take := func(h Hypervisor) {
		if why := h.usable(); why != "" {
			res.Skipped = append(res.Skipped, Skipped{Name: h.Name, Reason: why})
			return
		}
		res.Nodes = append(res.Nodes, Node{Name: h.Name, ServiceHost: h.ServiceHost})
	}
	fromHosts := func(kind string, groups []HostGroup, name string) {
		i := slices.IndexFunc(groups, func(g HostGroup) bool { return g.Name == name })
		if i < 0 {
			names := make([]string, len(groups))
			for j, g := range groups {
				names[j] = g.Name
			}
			slices.Sort(names)
			errs = append(errs, fmt.Errorf("%s %q is not one Nova reports (it reports %s)", kind, name, listOrNone(names)))
			return
		}
		for _, host := range groups[i].Hosts {
			hs := byHost[host]
			if len(hs) == 0 {
				res.Skipped = append(res.Skipped, Skipped{Name: host, Reason: "in " + kind + " " + name + " but no hypervisor has this service host"})
				continue
			}
			for _, h := range hs {
				take(h)
			}
		}
	}
	switch {
	case len(src.Nodes) > 0:
		for _, n := range src.Nodes {
			h, ok := byName[n]
			if !ok {
				msg := fmt.Sprintf("node %q is not a hypervisor Nova reports", n)
				if hs := byHost[n]; len(hs) > 0 {
					msg += fmt.Sprintf(" (it is the service host of %s: the list takes hypervisor names)", hs[0].Name)
				}
				errs = append(errs, errors.New(msg))
				continue
			}
			if why := h.usable(); why != "" {
				errs = append(errs, fmt.Errorf("node %q cannot carry a pair: %s", n, why))
				continue
			}
			res.Nodes = append(res.Nodes, Node{Name: h.Name, ServiceHost: h.ServiceHost})
		}
	case src.AvailabilityZone != "":
		fromHosts("availability zone", inv.Zones, src.AvailabilityZone)
	case src.Aggregate != "":
		fromHosts("host aggregate", inv.Aggregates, src.Aggregate)
	case src.All:
		for _, h := range inv.Hypervisors {
			take(h)
		}
	default:
		return Resolved{}, errors.New("fleet: no node source (nodes, availability_zone, aggregate or all)")
	}
	slices.SortFunc(res.Nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	res.Nodes = slices.CompactFunc(res.Nodes, func(a, b Node) bool { return a.Name == b.Name })
	slices.SortFunc(res.Skipped, func(a, b Skipped) int { return strings.Compare(a.Name, b.Name) })
	if len(errs) == 0 && len(res.Nodes) < 2 {
		msg := fmt.Sprintf("%s gives %d usable node(s) %v; a fleet needs at least 2", src.Describe(), len(res.Nodes), res.Names())
		for _, s := range res.Skipped {
			msg += fmt.Sprintf("; %s skipped: %s", s.Name, s.Reason)
		}
		errs = append(errs, errors.New(msg))
	}
	if len(errs) > 0 {
		return Resolved{}, fmt.Errorf("fleet: %s: %w", src.Describe(), errors.Join(errs...))
	}
	return res, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
