package config

import (
	"fmt"
	"regexp"
	"strconv"
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
	// $ASAP2E2E_FLEET_SHARD, or $JOB_COMPLETION_INDEX with
	// $ASAP2E2E_FLEET_SHARDS, overrides it (applyFleetEnv).
	Shard string `yaml:"shard"`
	// RunGroup is the id every shard of one sharded run shares (each shard
	// keeps its own run id): what tools/report merge joins and the sweeper
	// finds a whole run's leftovers by. Required when Shard has n > 1;
	// $ASAP2E2E_RUN_GROUP overrides it.
	RunGroup string       `yaml:"run_group"`
	Outlier  FleetOutlier `yaml:"outlier"`
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

// runGroupRE is what a run group may look like: a resource tag's part
// (fixtures.GroupTag) in Nova's and Neutron's limits, as a run id's.
var runGroupRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.]*(-[A-Za-z0-9_.]+)*$`)

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
	if sh, err := fleet.ParseShard(f.Shard); err != nil {
		v.bad("fleet.shard", "must be i/n with 1 <= i <= n, e.g. 2/4", f.Shard)
	} else if f.RunGroup == "" && sh.Count > 1 {
		v.missing("fleet.run_group", fmt.Sprintf("is required with fleet.shard %s (its value): every shard of one run needs the same run group, "+
			"so that tools/report merge joins them and the sweeper finds their leftovers; set $%s to one value for all the shards "+
			"(a CI job starting several workers: its pipeline or job id)", sh, EnvRunGroup))
	}
	if f.RunGroup != "" && (len(f.RunGroup) > 40 || !runGroupRE.MatchString(f.RunGroup)) {
		v.bad("fleet.run_group", "must be 1 to 40 characters of letters, digits, '.', '_' and inner '-' (it goes into resource tags)", f.RunGroup)
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

// applyFleetEnv applies the fleet's environment overrides: the run group
// ($ASAP2E2E_RUN_GROUP) and the shard, from $ASAP2E2E_FLEET_SHARD ("i/n",
// 1-based as fleet.shard) or from a Kubernetes Indexed Job's
// $JOB_COMPLETION_INDEX (0-based: index k is shard k+1) with the count in
// $ASAP2E2E_FLEET_SHARDS. The environment wins over the file, as every
// ASAP2E2E_ override; $JOB_COMPLETION_INDEX alone is ignored (Kubernetes
// sets it in every Indexed Job, sharded or not). Each bad value is a
// problem naming its variable and value.
func (c *Config) applyFleetEnv(getenv func(string) string) Problems {
	var probs Problems
	bad := func(path, env, msg, v string) {
		probs = append(probs, Problem{File: c.File, Path: path + " (from $" + env + ")", Message: msg, Value: formatValue(v), HasValue: true})
	}
	group, shard, shards := getenv(EnvRunGroup), getenv(EnvFleetShard), getenv(EnvFleetShards)
	if c.Fleet == nil {
		for _, e := range []struct{ path, env, v string }{
			{"fleet.run_group", EnvRunGroup, group}, {"fleet.shard", EnvFleetShard, shard}, {"fleet.shard", EnvFleetShards, shards},
		} {
			if e.v != "" {
				bad(e.path, e.env, "needs a fleet section in the file (the run is a single pair)", e.v)
			}
		}
		return probs
	}
	if group != "" {
		c.Fleet.RunGroup = group
		c.env["fleet.run_group"] = EnvRunGroup
	}
	switch {
	case shard != "" && shards != "":
		bad("fleet.shard", EnvFleetShards, "conflicts with $"+EnvFleetShard+"="+shard+": set the shard either as i/n there or as $"+
			EnvJobIndex+" with the count here", shards)
	case shard != "":
		if _, err := fleet.ParseShard(shard); err != nil {
			bad("fleet.shard", EnvFleetShard, "must be i/n with 1 <= i <= n, e.g. 2/4", shard)
			return probs
		}
		c.Fleet.Shard = strings.TrimSpace(shard)
		c.env["fleet.shard"] = EnvFleetShard
	case shards != "":
		s, err := ShardFromIndex(getenv(EnvJobIndex), shards)
		if err != nil {
			probs = append(probs, Problem{File: c.File, Path: "fleet.shard", Message: err.Error()})
			return probs
		}
		c.Fleet.Shard = s.String()
		c.env["fleet.shard"] = EnvJobIndex + " and $" + EnvFleetShards
	}
	return probs
}

// ShardFromIndex is the shard of a Kubernetes Indexed Job's pod: index is
// $JOB_COMPLETION_INDEX, 0-based (0..n-1), count $ASAP2E2E_FLEET_SHARDS;
// index k is shard k+1 of n (shards count from 1, as fleet.shard). The
// error names the variable and its value.
func ShardFromIndex(index, count string) (fleet.Shard, error) {
	n, err := strconv.Atoi(strings.TrimSpace(count))
	if err != nil || n < 1 {
		return fleet.Shard{}, fmt.Errorf("$%s must be the number of shards, an integer >= 1, got %q", EnvFleetShards, count)
	}
	if strings.TrimSpace(index) == "" {
		return fleet.Shard{}, fmt.Errorf("$%s=%s needs $%s, the 0-based index of this shard (a Kubernetes Indexed Job sets it), or use $%s=i/n", EnvFleetShards, count, EnvJobIndex, EnvFleetShard)
	}
	k, err := strconv.Atoi(strings.TrimSpace(index))
	if err != nil || k < 0 || k >= n {
		return fleet.Shard{}, fmt.Errorf("$%s must be a 0-based index below $%s=%d (0..%d), got %q", EnvJobIndex, EnvFleetShards, n, n-1, index)
	}
	return fleet.Shard{Index: k + 1, Count: n}, nil
}
