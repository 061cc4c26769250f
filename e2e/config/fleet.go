package config

import (
	"fmt"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
)

// Fleet is the fleet sweep (issue 21): many compute nodes in one run, in
// pairs such that every node sends and receives. Absent (nil), the run is
// the single pair of placement, as before.
type Fleet struct {
	// The node source: exactly one of Nodes, AvailabilityZone, Aggregate,
	// All. Nodes are hypervisor names as Nova reports them; a zone or an
	// aggregate stands for its hypervisors that are up and enabled; All for
	// every hypervisor Nova reports up and enabled.
	Nodes            []string `yaml:"nodes"`
	AvailabilityZone string   `yaml:"availability_zone"`
	Aggregate        string   `yaml:"aggregate"`
	All              bool     `yaml:"all"`
	// Pairs is PairsRing (default: the nodes sorted by name, each sending
	// to the next, the last to the first) or PairsExplicit (ExplicitPairs).
	Pairs         string       `yaml:"pairs"`
	ExplicitPairs []fleet.Pair `yaml:"explicit_pairs"`
	// CloudParallel bounds how many pairs the cloud works on at once: the
	// pairs provisioned at once, and the pairs torn down at once; default
	// 4. It says nothing of traffic (that is Mode). It was "concurrency",
	// which read as the opposite of Mode's isolated (renamedKeys).
	CloudParallel int `yaml:"cloud_parallel"`
	// Mode is FleetIsolated (default: pairs measured one after another) or
	// FleetConcurrent (every pair starts each profile together).
	Mode string `yaml:"mode"`
	// Shard is "i/n": this run measures the i-th of n node-disjoint parts
	// of the fleet (fleet.ShardRing, fleet.ShardPairs); empty = all of it.
	Shard   string       `yaml:"shard"`
	Outlier FleetOutlier `yaml:"outlier"`
}

// FleetOutlier is the rule that names the odd node (fleet.Rule).
type FleetOutlier struct {
	// Rule is fleet.RuleMAD (default) or fleet.RuleRatio.
	Rule string `yaml:"rule"`
	// Threshold (mad): named below a modified z-score of −Threshold; default 3.5.
	Threshold float64 `yaml:"threshold"`
	// MinDrop (mad): and at least this fraction below the median; default 0.05.
	MinDrop float64 `yaml:"min_drop"`
	// Ratio (ratio): named below Ratio × the fleet median; default 0.8.
	Ratio float64 `yaml:"ratio"`
}

// Fleet enumerations and defaults (docs/CONFIG.md, fleet).
const (
	PairsRing       = "ring"
	PairsExplicit   = "explicit"
	FleetIsolated   = "isolated"
	FleetConcurrent = "concurrent"

	DefaultFleetCloudParallel = 4
	DefaultOutlierThreshold   = 3.5
	DefaultOutlierMinDrop     = 0.05
	DefaultOutlierRatio       = 0.8
)

var (
	FleetPairs   = []string{PairsRing, PairsExplicit}
	FleetModes   = []string{FleetIsolated, FleetConcurrent}
	OutlierRules = []string{fleet.RuleMAD, fleet.RuleRatio}
)

// Source is the fleet's node source for fleet.ResolveNodes.
func (f *Fleet) Source() fleet.Source {
	return fleet.Source{Nodes: f.Nodes, AvailabilityZone: f.AvailabilityZone, Aggregate: f.Aggregate, All: f.All}
}

// Rule is the outlier rule for fleet.Judge.
func (f *Fleet) Rule() fleet.Rule {
	return fleet.Rule{Kind: f.Outlier.Rule, Threshold: f.Outlier.Threshold, MinDrop: f.Outlier.MinDrop, Ratio: f.Outlier.Ratio}
}

func (c *Config) applyFleetDefaults() {
	f := c.Fleet
	if f == nil {
		return
	}
	if !c.has("fleet.pairs") {
		f.Pairs = PairsRing
	}
	if !c.has("fleet.cloud_parallel") {
		f.CloudParallel = DefaultFleetCloudParallel
	}
	if !c.has("fleet.mode") {
		f.Mode = FleetIsolated
	}
	o := &f.Outlier
	if !c.has("fleet.outlier.rule") {
		o.Rule = fleet.RuleMAD
	}
	if o.Rule == fleet.RuleMAD {
		if !c.has("fleet.outlier.threshold") {
			o.Threshold = DefaultOutlierThreshold
		}
		if !c.has("fleet.outlier.min_drop") {
			o.MinDrop = DefaultOutlierMinDrop
		}
	}
	if o.Rule == fleet.RuleRatio && !c.has("fleet.outlier.ratio") {
		o.Ratio = DefaultOutlierRatio
	}
}

func (v *validator) fleet() {
	f := v.c.Fleet
	if f == nil {
		return
	}
	var sources []string
	if len(f.Nodes) > 0 || v.c.has("fleet.nodes") {
		sources = append(sources, "nodes")
	}
	for _, s := range []struct {
		key string
		set bool
	}{{"availability_zone", f.AvailabilityZone != ""}, {"aggregate", f.Aggregate != ""}, {"all", f.All}} {
		if s.set {
			sources = append(sources, s.key)
		}
	}
	if len(sources) != 1 {
		v.bad("fleet", "needs exactly one node source: nodes, availability_zone, aggregate or all: true", sources)
	}
	var nodes []string // known at load only for an explicit list: its distinct names
	if len(sources) == 1 && sources[0] == "nodes" {
		nodes = []string{}
		if len(f.Nodes) < 2 {
			v.bad("fleet.nodes", "must name at least 2 hypervisors", f.Nodes)
		}
		seen := map[string]int{}
		for i, n := range f.Nodes {
			p := fmt.Sprintf("fleet.nodes[%d]", i)
			if strings.TrimSpace(n) == "" {
				v.missing(p, "is empty")
			} else if j, dup := seen[n]; dup {
				v.bad(p, fmt.Sprintf("repeats fleet.nodes[%d]", j), n)
			} else {
				seen[n] = i
				nodes = append(nodes, n)
			}
		}
	}
	if v.oneOf("fleet.pairs", f.Pairs, FleetPairs) {
		if f.Pairs == PairsExplicit {
			if len(f.ExplicitPairs) == 0 {
				v.missing("fleet.explicit_pairs", "is required with fleet.pairs: explicit")
			}
			for _, p := range fleet.CheckPairs(nodes, f.ExplicitPairs) {
				if p.Pair < 0 && p.Node == "" {
					continue // no pairs: said above
				} else if p.Pair < 0 {
					v.bad("fleet.explicit_pairs", fmt.Sprintf("node %s %s", p.Node, p.Message), p.Node)
				} else {
					v.bad(fmt.Sprintf("fleet.explicit_pairs[%d].%s", p.Pair, p.Key), p.Message, p.Node)
				}
			}
		} else if len(f.ExplicitPairs) > 0 {
			v.bad("fleet.explicit_pairs", "is only read with fleet.pairs: explicit", len(f.ExplicitPairs))
		}
	}
	if f.CloudParallel < 1 {
		v.bad("fleet.cloud_parallel", "must be >= 1 (pairs provisioned or torn down at once)", f.CloudParallel)
	}
	v.oneOf("fleet.mode", f.Mode, FleetModes)
	if _, err := fleet.ParseShard(f.Shard); err != nil {
		v.bad("fleet.shard", "must be i/n with 1 <= i <= n, e.g. 2/4", f.Shard)
	}
	o := f.Outlier
	if v.oneOf("fleet.outlier.rule", o.Rule, OutlierRules) {
		own := map[string][]string{fleet.RuleMAD: {"threshold", "min_drop"}, fleet.RuleRatio: {"ratio"}}
		for rule, keys := range own {
			for _, k := range keys {
				if rule != o.Rule && v.c.has("fleet.outlier."+k) {
					v.bad("fleet.outlier."+k, "is only read with fleet.outlier.rule: "+rule, o.Rule)
				}
			}
		}
		if o.Rule == fleet.RuleMAD {
			if !(o.Threshold > 0) {
				v.bad("fleet.outlier.threshold", "must be > 0 (a modified z-score; 3.5 is the usual bound)", o.Threshold)
			}
			if !(o.MinDrop >= 0 && o.MinDrop < 1) {
				v.bad("fleet.outlier.min_drop", "must be in [0, 1) (a fraction of the fleet median)", o.MinDrop)
			}
		} else if !(o.Ratio > 0 && o.Ratio < 1) {
			v.bad("fleet.outlier.ratio", "must be in (0, 1) (a fraction of the fleet median)", o.Ratio)
		}
	}
	if v.c.Cloud.Admin == "" {
		v.missing("cloud.admin", "is required with fleet (Nova's hypervisor list and each pair pinned to its hosts are admin operations)")
	}
	if len(v.c.Placement.Hosts) > 0 {
		v.bad("placement.hosts", "must be empty with fleet (each pair is pinned to its own nodes)", v.c.Placement.Hosts)
	}
	if v.c.Hypervisors.Access != HypervisorAccessKubernetes && len(v.c.Offload.Checks) > 0 && len(v.c.Hypervisors.Hosts) > 0 {
		for i, n := range nodes {
			if _, ok := v.c.Hypervisors.Hosts[n]; !ok && n != "" {
				v.bad(fmt.Sprintf("fleet.nodes[%d]", i), "is not in hypervisors.hosts (the offload checks need SSH to it)", n)
			}
		}
	}
}
