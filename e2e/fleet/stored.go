package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The fleet's words in the results file (results.Fleet) and back: what the
// runner stores, what the report reads, and the merge of shard files.

// PairID is a pair's id in the results file: its sender→receiver, unique
// over a run's pairs and, shards being node-disjoint, over its shards.
func PairID(p Pair) string { return p.String() }

// StoredRule is rule as the results file records it.
func StoredRule(rule Rule) results.FleetRule {
	return results.FleetRule{Kind: rule.Kind, Threshold: rule.Threshold, MinDrop: rule.MinDrop, Ratio: rule.Ratio}
}

// RuleOf is the rule a results file records.
func RuleOf(r results.FleetRule) Rule {
	return Rule{Kind: r.Kind, Threshold: r.Threshold, MinDrop: r.MinDrop, Ratio: r.Ratio}
}

func optional(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func orNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// StoredRates are a verdict's rates as the results file records them.
func StoredRates(v Verdict) []results.FleetNodeRate {
	out := make([]results.FleetNodeRate, len(v.Rates))
	for i, r := range v.Rates {
		out[i] = results.FleetNodeRate{Node: r.Node, Profile: r.Profile, Role: string(r.Role), BPS: r.BPS, Pairs: r.Pairs,
			Median: r.Median, Ratio: optional(r.Ratio), Score: optional(r.Score), Outlier: r.Outlier}
	}
	return out
}

// RateOf is a stored rate as Judge made it (absent ratio and score are NaN).
func RateOf(r results.FleetNodeRate) NodeRate {
	return NodeRate{Node: r.Node, Profile: r.Profile, Role: Role(r.Role), BPS: r.BPS, Pairs: r.Pairs,
		Median: r.Median, Ratio: orNaN(r.Ratio), Score: orNaN(r.Score), Outlier: r.Outlier}
}

// StoredLine is Line of a stored rate: the sentence the report and the
// fleet verdict name an outlier with.
func StoredLine(r results.FleetNodeRate) string { return RateOf(r).Line() }

// PairResultsOf are the stored pair rates as Judge takes them: each pair's
// delivered median in each profile; a pair whose every repeat failed moved
// 0 bit/s. A result naming no pair of the section is an error.
func PairResultsOf(f *results.Fleet) ([]PairResult, error) {
	pairs := map[string]Pair{}
	for _, p := range f.Pairs {
		pairs[p.ID] = Pair{Sender: p.Sender, Receiver: p.Receiver}
	}
	var out []PairResult
	var errs []string
	for i, r := range f.Results {
		p, ok := pairs[r.Pair]
		if !ok {
			errs = append(errs, fmt.Sprintf("fleet.results[%d].pair: %q is not a pair of fleet.pairs", i, r.Pair))
			continue
		}
		bps := r.Delivered.Median
		if r.Repeats == 0 {
			bps = 0
		}
		out = append(out, PairResult{Pair: p, Profile: r.Profile, BPS: bps})
	}
	if len(errs) > 0 {
		return nil, errors.New("fleet: " + strings.Join(errs, "; "))
	}
	return out, nil
}

// Rejudge recomputes the section's rates, outliers and notes from its pair
// results under its own rule, and its drift marks, over every node it
// holds: what a merge of shards needs, since a shard's median is not the
// fleet's.
func Rejudge(f *results.Fleet) error {
	prs, err := PairResultsOf(f)
	if err != nil {
		return err
	}
	v, err := Judge(prs, RuleOf(f.Rule))
	if err != nil {
		return err
	}
	f.Rates, f.Notes = StoredRates(v), v.Notes
	results.MarkDrift(f.Drift)
	return nil
}

// AllShards is the shard of a merged file: every one of n.
func AllShards(n int) string { return fmt.Sprintf("all/%d", n) }

// PlanShards is every shard's nodes of a fleet cut into count shards
// (Plan for each i of count), as the results file's fleet.plan records
// them; a shard whose plan fails has no nodes. Nil when count < 2.
func PlanShards(nodes []string, explicit []Pair, count int) []results.FleetShardPlan {
	if count < 2 {
		return nil
	}
	out := make([]results.FleetShardPlan, count)
	for i := range count {
		s := Shard{Index: i + 1, Count: count}
		out[i] = results.FleetShardPlan{Shard: s.String(), Nodes: []string{}}
		if pairs, err := Plan(nodes, explicit, s); err == nil {
			out[i].Nodes = PairNodes(pairs)
		}
	}
	return out
}

// Merge combines the shard files of one fleet run into one results file
// whose fleet section covers every node, judged against the whole fleet's
// median (Rejudge). The shards of a run share its run group
// (fleet.run_group), each with its own run id; files without a group
// merge only when they share a run id (files written before groups). It
// refuses, naming each problem at once: a file without a fleet section,
// shards of different run groups (or run ids), configurations, modes or
// outlier rules, of different shard counts, a shard given twice, a node
// measured in two shards (or measured in one and skipped in another).
// A shard missing is not refused: the merged section's shards name it
// not measured, with its nodes from the other shards' plans, and its
// verdict cannot pass (results.JudgeFleet). Files are named by label
// (their paths). The shards' checks rounds are kept shard by shard (each
// round names its shard): the shards ran at once, their rounds side by
// side.
func Merge(labels []string, files []*results.Results) (*results.Results, error) {
	if len(files) == 0 || len(files) != len(labels) {
		return nil, fmt.Errorf("fleet merge: want one label per file, got %d file(s) and %d label(s)", len(files), len(labels))
	}
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	first := -1
	for i, f := range files {
		if f.Fleet == nil {
			add("%s: has no fleet section: not a fleet run's shard", labels[i])
		} else if first < 0 {
			first = i
		}
	}
	if first < 0 {
		return nil, fmt.Errorf("fleet merge: %s", strings.Join(probs, "; "))
	}
	ref, refLabel := files[first], labels[first]
	group := ref.Fleet.RunGroup
	count := -1
	byIndex := map[int]int{}     // shard index -> file
	owner := map[string]string{} // measured node -> label
	skipped := map[string]results.FleetNode{}
	for i, f := range files {
		if f.Fleet == nil {
			continue
		}
		l := labels[i]
		switch g := f.Fleet.RunGroup; {
		case g != group && group == "":
			add("%s: run group %q, but %s has none: shards of one run share a group", l, g, refLabel)
		case g != group && g == "":
			add("%s: has no run group, but %s has %q: shards of one run share a group", l, refLabel, group)
		case g != group:
			add("%s: run group %q, but %s has %q: files of different runs", l, g, refLabel, group)
		case group == "" && f.RunID != ref.RunID:
			add("%s: run id %q, but %s has %q, and neither has a run group: shards of one run set the same fleet.run_group ($ASAP2E2E_RUN_GROUP)",
				l, f.RunID, refLabel, ref.RunID)
		}
		if d := configDiff(ref.Config, f.Config); len(d) > 0 {
			add("%s: config differs from %s's in %s", l, refLabel, strings.Join(d, ", "))
		}
		if f.Fleet.Mode != ref.Fleet.Mode {
			add("%s: fleet mode %s, but %s has %s", l, f.Fleet.Mode, refLabel, ref.Fleet.Mode)
		}
		if f.Fleet.Rule != ref.Fleet.Rule {
			add("%s: outlier rule %+v, but %s has %+v", l, f.Fleet.Rule, refLabel, ref.Fleet.Rule)
		}
		s, err := ParseShard(f.Fleet.Shard)
		if err != nil {
			add("%s: fleet.shard: %v", l, err)
			continue
		}
		if count < 0 {
			count = s.Count
		} else if s.Count != count {
			add("%s: shard %s is of %d shards, but %s's is of %d", l, s, s.Count, refLabel, count)
		}
		if other, dup := byIndex[s.Index]; dup {
			add("%s: shard %s is also %s", l, s, labels[other])
		} else {
			byIndex[s.Index] = i
		}
		for _, n := range f.Fleet.Nodes {
			if n.Skipped {
				skipped[n.Name] = n
				continue
			}
			if other, dup := owner[n.Name]; dup {
				add("%s: node %s is also measured in %s: shards must not share a node", l, n.Name, other)
			} else {
				owner[n.Name] = l
			}
		}
	}
	for name := range skipped {
		if l, measured := owner[name]; measured {
			add("node %s is measured in %s and skipped in another shard", name, l)
		}
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("fleet merge: %s", strings.Join(probs, "; "))
	}
	order := slices.Clone(files)
	sort.SliceStable(order, func(a, b int) bool {
		sa, _ := ParseShard(order[a].Fleet.Shard)
		sb, _ := ParseShard(order[b].Fleet.Shard)
		return sa.Index < sb.Index
	})
	runID := ref.RunID
	if group != "" {
		runID = group // the merged file is the group's run
	}
	out := &results.Results{SchemaVersion: results.SchemaVersion, RunID: runID, StartedAt: order[0].StartedAt,
		Config: ref.Config, Environment: ref.Environment}
	out.Environment.Hypervisors, out.Environment.Guests = nil, nil
	fl := &results.Fleet{Mode: ref.Fleet.Mode, Shard: AllShards(count), RunGroup: group, Rule: ref.Fleet.Rule,
		Shards: shardsOf(labels, files, byIndex, count)}
	finished := true
	for _, f := range order {
		if f.StartedAt.Before(out.StartedAt) {
			out.StartedAt = f.StartedAt
		}
		if f.FinishedAt == nil {
			finished = false
		} else if out.FinishedAt == nil || f.FinishedAt.After(*out.FinishedAt) {
			t := *f.FinishedAt
			out.FinishedAt = &t
		}
		out.Environment.Hypervisors = append(out.Environment.Hypervisors, f.Environment.Hypervisors...)
		out.Environment.Guests = append(out.Environment.Guests, f.Environment.Guests...)
		out.Profiles = append(out.Profiles, f.Profiles...)
		out.Offload = append(out.Offload, f.Offload...)
		out.Timings = append(out.Timings, f.Timings...)
		out.Thresholds = append(out.Thresholds, f.Thresholds...)
		for _, e := range f.Errors {
			out.Errors = append(out.Errors, "shard "+f.Fleet.Shard+": "+e)
		}
		for _, n := range f.Fleet.Nodes {
			if !n.Skipped {
				fl.Nodes = append(fl.Nodes, n)
			}
		}
		fl.Pairs = append(fl.Pairs, f.Fleet.Pairs...)
		fl.Results = append(fl.Results, f.Fleet.Results...)
		fl.Checks = append(fl.Checks, f.Fleet.Checks...)
		fl.Drift = append(fl.Drift, f.Fleet.Drift...)
		fl.Rounds = append(fl.Rounds, f.Fleet.Rounds...)
	}
	if !finished {
		out.FinishedAt = nil
	}
	names := make([]string, 0, len(skipped))
	for n := range skipped {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fl.Nodes = append(fl.Nodes, skipped[n])
	}
	slices.SortStableFunc(fl.Nodes, func(a, b results.FleetNode) int { return strings.Compare(a.Name, b.Name) })
	if err := Rejudge(fl); err != nil {
		return nil, fmt.Errorf("fleet merge: %w", err)
	}
	out.Fleet = fl
	if err := results.Validate(out); err != nil {
		return nil, fmt.Errorf("fleet merge: the merged file: %w", err)
	}
	return out, nil
}

// shardsOf are the merged run's shards 1..count: each measured one with
// its run id and file, each missing one not measured, with its nodes from
// the first shard (by index) that planned it.
func shardsOf(labels []string, files []*results.Results, byIndex map[int]int, count int) []results.FleetShard {
	out := make([]results.FleetShard, count)
	for i := 1; i <= count; i++ {
		s := Shard{Index: i, Count: count}.String()
		if k, ok := byIndex[i]; ok {
			out[i-1] = results.FleetShard{Shard: s, RunID: files[k].RunID, File: labels[k]}
			continue
		}
		out[i-1] = results.FleetShard{Shard: s, NotMeasured: "no results file of it was merged"}
		for j := 1; j <= count && out[i-1].Nodes == nil; j++ {
			k, ok := byIndex[j]
			if !ok {
				continue
			}
			for _, p := range files[k].Fleet.Plan {
				if p.Shard == s && len(p.Nodes) > 0 {
					out[i-1].Nodes = slices.Clone(p.Nodes)
				}
			}
		}
	}
	return out
}

// configDiff names the config keys whose values differ.
func configDiff(a, b results.ConfigSummary) []string {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var ma, mb map[string]json.RawMessage
	_ = json.Unmarshal(ja, &ma)
	_ = json.Unmarshal(jb, &mb)
	var out []string
	for k, v := range ma {
		if string(mb[k]) != string(v) {
			out = append(out, fmt.Sprintf("config.%s (%s vs %s)", k, v, orAbsent(mb[k])))
		}
	}
	for k, v := range mb {
		if _, ok := ma[k]; !ok {
			out = append(out, fmt.Sprintf("config.%s (absent vs %s)", k, v))
		}
	}
	sort.Strings(out)
	return out
}

func orAbsent(v json.RawMessage) string {
	if v == nil {
		return "absent"
	}
	return string(v)
}
