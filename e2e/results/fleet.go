package results

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Fleet is a fleet sweep's section of the results file (issue 21; schema
// version 2): the nodes, the pairs, each pair's rate per profile, every
// offload verdict attributed to the node it was taken on, each node's
// rate against the fleet median with the outliers named, and each node's
// configuration with the values that differ from the fleet's majority.
// Absent (nil) in a single-pair run and in every version 1 file.
type Fleet struct {
	// Mode is FleetIsolated or FleetConcurrent.
	Mode string `json:"mode"`
	// Shard is this file's part of the run, "i/n" ("1/1": the whole run).
	Shard string `json:"shard"`
	// RunGroup is the id every shard of one sharded run shares (config
	// fleet.run_group), each shard keeping its own run id; what a merge
	// joins files by. Absent in a run without one and in older files.
	RunGroup string `json:"run_group,omitempty"`
	// Plan is every shard's nodes as this shard planned them (fleet.Plan
	// for each i of n over the nodes it resolved), so that a merge can name
	// the nodes of a shard whose file is missing. Only in a sharded run.
	Plan []FleetShardPlan `json:"plan,omitempty"`
	// Shards, in a merged file only, are the run's shards in order: each
	// with its run id and file, or not measured with why and its nodes.
	Shards []FleetShard `json:"shards,omitempty"`
	// Rule is the outlier rule Rates were judged with.
	Rule    FleetRule        `json:"rule"`
	Nodes   []FleetNode      `json:"nodes"`
	Pairs   []FleetPair      `json:"pairs"`
	Results []FleetPairRate  `json:"results"`
	Checks  []FleetCheck     `json:"checks"`
	Rates   []FleetNodeRate  `json:"rates"`
	Notes   []string         `json:"notes,omitempty"`
	Drift   []FleetNodeDrift `json:"drift,omitempty"`
	// Rounds are the offload checks' rounds (fleet.Rounds): pairs that
	// share no node, whose evidence windows ran together. Absent in files
	// written before the checks ran in rounds (they ran pair by pair) and
	// in a run whose checks did not run.
	Rounds []FleetRound `json:"rounds,omitempty"`
}

// FleetRound is one round of the offload checks: pairs that share no
// node, whose evidence windows ran together, each evidence flow's
// window opened for all of them at once by the start barrier.
type FleetRound struct {
	// Round counts from 1 within Shard's file.
	Round int    `json:"round"`
	Shard string `json:"shard"`
	// Pairs are the pair ids planned into the round.
	Pairs []string `json:"pairs"`
	// FlowSeconds is offload.flow_duration, each flow window's length
	// (SkewGoal's base).
	FlowSeconds float64 `json:"flow_seconds"`
	// Windows are its flows' windows in the order they opened (none when
	// no pair's flow started).
	Windows []FleetRoundWindow `json:"windows,omitempty"`
	// SkewSeconds is the largest of its windows' start skews.
	SkewSeconds float64 `json:"skew_seconds"`
	// Error joins the round's pairs' failures, each led by its pair.
	Error string `json:"error,omitempty"`
}

// FleetRoundWindow is one evidence flow's window in a round: opened when
// the last pair's servers listened (Start), closed when the last pair's
// clients returned (End, absent when it never closed).
type FleetRoundWindow struct {
	Flow  string     `json:"flow"`
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end,omitempty"`
	// Pairs are the pair ids whose clients ran in it.
	Pairs []string `json:"pairs"`
	// SkewSeconds is the spread of those pairs' client starts.
	SkewSeconds float64 `json:"skew_seconds"`
}

// FleetShardPlan is one shard's nodes in a shard's plan.
type FleetShardPlan struct {
	Shard string   `json:"shard"`
	Nodes []string `json:"nodes"`
}

// FleetShard is one shard of a merged file: measured (its RunID and the
// file it came from) or not (NotMeasured says why; Nodes are its nodes as
// the other shards planned them, empty when none could say).
type FleetShard struct {
	Shard       string   `json:"shard"`
	RunID       string   `json:"run_id,omitempty"`
	File        string   `json:"file,omitempty"`
	NotMeasured string   `json:"not_measured,omitempty"`
	Nodes       []string `json:"nodes,omitempty"`
}

// Line is the sentence that names a shard not measured ("" for a
// measured one): "shard 2/3 not measured: its nodes compute3, compute4
// (no results file of it was merged)".
func (s FleetShard) Line() string {
	if s.NotMeasured == "" {
		return ""
	}
	nodes := "its nodes are unknown (no shard recorded a plan)"
	if len(s.Nodes) > 0 {
		nodes = "its nodes " + strings.Join(s.Nodes, ", ")
	}
	return fmt.Sprintf("shard %s not measured: %s (%s)", s.Shard, nodes, s.NotMeasured)
}

// SkewGoal is the start skew a round of windows of flowSeconds each
// should keep within: max(1 s, 10 % of the window).
func SkewGoal(flowSeconds float64) float64 { return max(1, flowSeconds/10) }

// Fleet traffic modes (config fleet.mode).
const (
	FleetIsolated   = "isolated"
	FleetConcurrent = "concurrent"
)

// FleetRule is the outlier rule (config fleet.outlier; fleet.Rule).
type FleetRule struct {
	Kind      string  `json:"kind"` // mad | ratio
	Threshold float64 `json:"threshold,omitempty"`
	MinDrop   float64 `json:"min_drop,omitempty"`
	Ratio     float64 `json:"ratio,omitempty"`
}

// FleetNode is one node the source named: measured, or skipped with why.
type FleetNode struct {
	Name        string `json:"name"`
	ServiceHost string `json:"service_host,omitempty"`
	Skipped     bool   `json:"skipped,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// FleetPair is one measured pair, the sender's guest running the clients.
type FleetPair struct {
	ID       string `json:"id"` // "p01"
	Sender   string `json:"sender"`
	Receiver string `json:"receiver"`
	Shard    string `json:"shard"`
}

// FleetPairRate is one pair's result in one profile, in a compact form: a
// ProfileResult per pair and profile with every repeat's intervals is
// ~100 pairs × profiles × repeats of series nobody reads in a fleet report;
// the node judgement needs the delivered median, the table the spread, and
// the raw iperf3 -J stays in EvidenceFiles.
type FleetPairRate struct {
	Pair    string `json:"pair"`
	Profile string `json:"profile"`
	// Repeats succeeded, Failed did not.
	Repeats   int  `json:"repeats"`
	Failed    int  `json:"failed,omitempty"`
	Delivered Stat `json:"delivered_bps"`
	Offered   Stat `json:"offered_bps"`
	// LossPercent (UDP) and Retransmits (TCP) are medians over repeats.
	LossPercent   float64  `json:"loss_percent"`
	Retransmits   float64  `json:"retransmits"`
	EvidenceFiles []string `json:"evidence_files,omitempty"`
	Error         string   `json:"error,omitempty"`
}

// FleetCheck is one offload verdict, attributed to the node it was taken
// on (a pair's checks look at both of its nodes; each line is one node's).
type FleetCheck struct {
	Node    string  `json:"node"`
	Pair    string  `json:"pair,omitempty"`
	Check   string  `json:"check"`
	Flow    string  `json:"flow,omitempty"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
}

// FleetNodeRate is one node's rate in one profile and role against the
// fleet (fleet.NodeRate). Ratio and Score are absent where they are not
// numbers (a median of 0; the ratio rule; a spread of 0).
type FleetNodeRate struct {
	Node    string   `json:"node"`
	Profile string   `json:"profile"`
	Role    string   `json:"role"` // sender | receiver
	BPS     float64  `json:"bps"`
	Pairs   int      `json:"pairs"`
	Median  float64  `json:"median_bps"`
	Ratio   *float64 `json:"ratio,omitempty"`
	Score   *float64 `json:"score,omitempty"`
	Outlier bool     `json:"outlier,omitempty"`
}

// FleetNodeDrift is one node's configuration as a release engineer
// compares it (DriftKeys), and which keys differ from the fleet's majority.
type FleetNodeDrift struct {
	Node    string            `json:"node"`
	Values  map[string]string `json:"values"`
	Differs []string          `json:"differs,omitempty"`
}

// Drift keys: what is collected once per node, outside every window.
const (
	DriftNICDriver     = "nic_driver"
	DriftNICFirmware   = "nic_firmware"
	DriftEswitchMode   = "eswitch_mode"
	DriftHWOffload     = "ovs_hw_offload"
	DriftTCPolicy      = "ovs_tc_policy"
	DriftMTURep        = "mtu_representor"
	DriftMTUUplink     = "mtu_uplink"
	DriftMTUBond       = "mtu_bond"
	DriftBondState     = "bond_state"
	DriftOVSVersion    = "ovs_version"
	DriftKernelVersion = "kernel"
)

// DriftKeys are the drift keys in the order the report shows them.
var DriftKeys = []string{DriftNICDriver, DriftNICFirmware, DriftEswitchMode, DriftHWOffload, DriftTCPolicy,
	DriftMTURep, DriftMTUUplink, DriftMTUBond, DriftBondState, DriftOVSVersion, DriftKernelVersion}

// MarkDrift fills each node's Differs: for each key, the value more than
// half of the nodes that report the key hold is the fleet's majority and
// every other value differs; a key with no such value (e.g. 2 nodes, 2
// values) marks every node's value, since none can be called the odd one.
// A node that does not report a key is not marked for it.
func MarkDrift(nodes []FleetNodeDrift) {
	keys := map[string]map[string]int{}
	reporting := map[string]int{}
	for _, n := range nodes {
		for k, v := range n.Values {
			if keys[k] == nil {
				keys[k] = map[string]int{}
			}
			keys[k][v]++
			reporting[k]++
		}
	}
	majority := map[string]*string{}
	for k, counts := range keys {
		for v, c := range counts {
			if 2*c > reporting[k] {
				majority[k] = &v
			}
		}
	}
	for i := range nodes {
		n := &nodes[i]
		n.Differs = nil
		for k, v := range n.Values {
			if m := majority[k]; m == nil || *m != v {
				n.Differs = append(n.Differs, k)
			}
		}
		sort.Strings(n.Differs)
	}
}

// DriftMajority is the fleet's majority value of key ("", false when there
// is none), as MarkDrift decides it.
func DriftMajority(nodes []FleetNodeDrift, key string) (string, bool) {
	counts, n := map[string]int{}, 0
	for _, d := range nodes {
		if v, ok := d.Values[key]; ok {
			counts[v]++
			n++
		}
	}
	for v, c := range counts {
		if 2*c > n {
			return v, true
		}
	}
	return "", false
}

// MeasuredNodes are the nodes not skipped, in file order.
func (f *Fleet) MeasuredNodes() []string {
	var out []string
	for _, n := range f.Nodes {
		if !n.Skipped {
			out = append(out, n.Name)
		}
	}
	return out
}

// FleetFailure is one node the fleet verdict fails, with every reason.
type FleetFailure struct {
	Node    string
	Reasons []string
}

// FleetVerdict is the fleet's judgement: it names nodes, never pairs.
type FleetVerdict struct {
	Failures []FleetFailure
	// Notes are what did not fail a node but a reader must see (skipped
	// nodes, the outlier rule's own notes).
	Notes []string
	// Unmeasured name each shard of a merged run that was not measured
	// (FleetShard.Line): the fleet is not proven while one is.
	Unmeasured []string
}

// Pass is true when no node failed and every shard was measured.
func (v FleetVerdict) Pass() bool { return len(v.Failures) == 0 && len(v.Unmeasured) == 0 }

// Failed are the failed nodes' names, in order.
func (v FleetVerdict) Failed() []string {
	out := make([]string, len(v.Failures))
	for i, f := range v.Failures {
		out[i] = f.Node
	}
	return out
}

// Headline is a failed verdict's sentence: the failed nodes, then each
// shard not measured ("1 node(s) failed: compute3; shard 2/2 not
// measured: its nodes compute3, compute4 (…)").
func (v FleetVerdict) Headline() string {
	var parts []string
	if len(v.Failures) > 0 {
		parts = append(parts, fmt.Sprintf("%d node(s) failed: %s", len(v.Failures), strings.Join(v.Failed(), ", ")))
	}
	return strings.Join(append(parts, v.Unmeasured...), "; ")
}

// JudgeFleet is the fleet's verdict under the expected path. A node fails
// when, under asap2, a check taken on it says software or inconclusive, or
// no check was taken on it at all (nothing proves it offloads); under
// baseline, when a check taken on it says offloaded; when it is named as
// an outlier (line says how: outlierLine(rate)) and its low rate is not
// explained by its pairs' other ends (ExplainedBy: then it is a note);
// and when a pair it is in
// moved nothing (every repeat failed). Nodes sorted by name, reasons in
// the order checks, outliers, failed pairs.
func JudgeFleet(f *Fleet, expected Path, outlierLine func(FleetNodeRate) string) FleetVerdict {
	var v FleetVerdict
	if f == nil {
		return v
	}
	reasons := map[string][]string{}
	add := func(node, why string) {
		if !slices.Contains(reasons[node], why) {
			reasons[node] = append(reasons[node], why)
		}
	}
	checked := map[string]bool{}
	for _, c := range f.Checks {
		checked[c.Node] = true
		what := c.Check
		if c.Flow != "" {
			what += " (" + c.Flow + ")"
		}
		if c.Pair != "" {
			what += " in pair " + c.Pair
		}
		bad := false
		switch expected {
		case PathASAP2:
			bad = c.Verdict != VerdictOffloaded
		case PathBaseline:
			bad = c.Verdict == VerdictOffloaded
		}
		if bad {
			add(c.Node, fmt.Sprintf("%s says %s under an %s expectation: %s", what, c.Verdict, orWord(string(expected), "unset"), c.Reason))
		}
	}
	if expected == PathASAP2 {
		for _, n := range f.MeasuredNodes() {
			if !checked[n] {
				add(n, "no offload check was taken on it: nothing proves it offloads")
			}
		}
	}
	pairs := map[string]FleetPair{}
	for _, p := range f.Pairs {
		pairs[p.ID] = p
	}
	var explained []string
	for _, r := range f.Rates {
		if !r.Outlier {
			continue
		}
		if by := ExplainedBy(f, r); by != "" {
			explained = append(explained, fmt.Sprintf("%s: %s as %s is low only through %s, itself low as sender and as receiver in %s: not named", r.Node, r.Profile, r.Role, by, r.Profile))
			continue
		}
		add(r.Node, "outlier: "+outlierLine(r))
	}
	for _, r := range f.Results {
		if r.Repeats > 0 {
			continue
		}
		p := pairs[r.Pair]
		why := fmt.Sprintf("pair %s (%s→%s) moved nothing in %s", r.Pair, p.Sender, p.Receiver, r.Profile)
		if r.Error != "" {
			why += ": " + r.Error
		}
		for _, n := range []string{p.Sender, p.Receiver} {
			if n != "" {
				add(n, why)
			}
		}
	}
	nodes := make([]string, 0, len(reasons))
	for n := range reasons {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		v.Failures = append(v.Failures, FleetFailure{Node: n, Reasons: reasons[n]})
	}
	for _, n := range f.Nodes {
		if n.Skipped {
			v.Notes = append(v.Notes, fmt.Sprintf("%s skipped: %s", n.Name, n.Reason))
		}
	}
	v.Notes = append(v.Notes, explained...)
	v.Notes = append(v.Notes, f.Notes...)
	for _, s := range f.Shards {
		if l := s.Line(); l != "" {
			v.Unmeasured = append(v.Unmeasured, l)
		}
	}
	return v
}

// ExplainedBy names the counterpart that explains an outlier rate, or "".
// A pair's rate is both its sender's rate as sender and its receiver's as
// receiver: in a ring, a node whose NIC or link is slow both ways drags
// down the node after it (as receiver) and the node before it (as sender).
// A node's low rate in a role is explained when every pair it has in that
// role is with a node that is itself an outlier in that profile both as
// sender and as receiver, and it is not one such node itself; that node is
// named, this one is noted. A fault
// seen one way only (one pair slow) explains neither end: both are named.
func ExplainedBy(f *Fleet, r FleetNodeRate) string {
	low := map[string]map[string]bool{} // node -> role -> outlier in r.Profile
	for _, o := range f.Rates {
		if o.Profile == r.Profile && o.Outlier {
			if low[o.Node] == nil {
				low[o.Node] = map[string]bool{}
			}
			low[o.Node][o.Role] = true
		}
	}
	if low[r.Node]["sender"] && low[r.Node]["receiver"] {
		return "" // low both ways itself: named, whatever its pairs
	}
	var by []string
	for _, p := range f.Pairs {
		var other string
		switch {
		case r.Role == "sender" && p.Sender == r.Node:
			other = p.Receiver
		case r.Role == "receiver" && p.Receiver == r.Node:
			other = p.Sender
		default:
			continue
		}
		if !low[other]["sender"] || !low[other]["receiver"] {
			return ""
		}
		if !slices.Contains(by, other) {
			by = append(by, other)
		}
	}
	return strings.Join(by, ", ")
}

func orWord(s, w string) string {
	if s == "" {
		return w
	}
	return s
}

// validateFleet adds every problem of the fleet section.
func validateFleet(f *Fleet, add func(string, ...any)) {
	if f == nil {
		return
	}
	switch f.Mode {
	case FleetIsolated, FleetConcurrent:
	default:
		add("fleet.mode: must be isolated or concurrent, got %q", f.Mode)
	}
	if f.Shard == "" {
		add("fleet.shard: must be set (\"1/1\" for the whole run)")
	}
	for i, p := range f.Plan {
		if p.Shard == "" {
			add("fleet.plan[%d].shard: must be set", i)
		}
	}
	shards := map[string]bool{}
	for i, s := range f.Shards {
		k := fmt.Sprintf("fleet.shards[%d]", i)
		if s.Shard == "" || shards[s.Shard] {
			add("%s.shard: must be set and unique, got %q", k, s.Shard)
		}
		shards[s.Shard] = true
		if (s.RunID == "") == (s.NotMeasured == "") {
			add("%s: needs exactly one of run_id (measured) and not_measured (why not)", k)
		}
	}
	switch f.Rule.Kind {
	case "mad", "ratio":
	default:
		add("fleet.rule.kind: must be mad or ratio, got %q", f.Rule.Kind)
	}
	nodes := map[string]bool{}
	for i, n := range f.Nodes {
		k := fmt.Sprintf("fleet.nodes[%d]", i)
		switch {
		case strings.TrimSpace(n.Name) == "":
			add("%s.name: must be set", k)
		case nodes[n.Name]:
			add("%s.name: node %q is listed twice", k, n.Name)
		}
		if n.Skipped && n.Reason == "" {
			add("%s.reason: a skipped node must say why", k)
		}
		nodes[n.Name] = !n.Skipped
	}
	measured := func(key, node string) {
		if on, ok := nodes[node]; !ok || !on {
			add("%s: must be a measured node of fleet.nodes, got %q", key, node)
		}
	}
	pairs := map[string]bool{}
	for i, p := range f.Pairs {
		k := fmt.Sprintf("fleet.pairs[%d]", i)
		if p.ID == "" || pairs[p.ID] {
			add("%s.id: must be set and unique, got %q", k, p.ID)
		}
		pairs[p.ID] = true
		measured(k+".sender", p.Sender)
		measured(k+".receiver", p.Receiver)
		if p.Sender == p.Receiver {
			add("%s.receiver: must differ from the sender, got %q", k, p.Receiver)
		}
	}
	nonNeg := func(key string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			add("%s: must be a finite number >= 0, got %v", key, v)
		}
	}
	seen := map[string]int{}
	for i, r := range f.Results {
		k := fmt.Sprintf("fleet.results[%d]", i)
		if !pairs[r.Pair] {
			add("%s.pair: must be a pair id of fleet.pairs, got %q", k, r.Pair)
		}
		if r.Profile == "" {
			add("%s.profile: must be set", k)
		}
		if j, dup := seen[r.Pair+"\x00"+r.Profile]; dup {
			add("%s: pair %s profile %s duplicates fleet.results[%d]", k, r.Pair, r.Profile, j)
		} else {
			seen[r.Pair+"\x00"+r.Profile] = i
		}
		if r.Repeats < 0 || r.Failed < 0 {
			add("%s: repeats and failed must be >= 0, got %d and %d", k, r.Repeats, r.Failed)
		}
		nonNeg(k+".delivered_bps.median", r.Delivered.Median)
		nonNeg(k+".offered_bps.median", r.Offered.Median)
		if math.IsNaN(r.LossPercent) || r.LossPercent < 0 || r.LossPercent > 100 {
			add("%s.loss_percent: must be within 0..100, got %v", k, r.LossPercent)
		}
		nonNeg(k+".retransmits", r.Retransmits)
	}
	for i, c := range f.Checks {
		k := fmt.Sprintf("fleet.checks[%d]", i)
		measured(k+".node", c.Node)
		if c.Check == "" {
			add("%s.check: must be set", k)
		}
		switch c.Verdict {
		case VerdictOffloaded, VerdictSoftware, VerdictInconclusive:
		default:
			add("%s.verdict: must be offloaded, software or inconclusive, got %q", k, c.Verdict)
		}
		if c.Pair != "" && !pairs[c.Pair] {
			add("%s.pair: must be a pair id of fleet.pairs, got %q", k, c.Pair)
		}
	}
	for i, r := range f.Rates {
		k := fmt.Sprintf("fleet.rates[%d]", i)
		measured(k+".node", r.Node)
		if r.Role != "sender" && r.Role != "receiver" {
			add("%s.role: must be sender or receiver, got %q", k, r.Role)
		}
		nonNeg(k+".bps", r.BPS)
		nonNeg(k+".median_bps", r.Median)
		if r.Ratio != nil {
			nonNeg(k+".ratio", *r.Ratio)
		}
	}
	for i, d := range f.Drift {
		measured(fmt.Sprintf("fleet.drift[%d].node", i), d.Node)
	}
	validateRounds(f, add, nonNeg)
}

// validateRounds: each round numbered once per shard, its pairs pairs of
// the file, in no other round, sharing no node; its windows' pairs its
// own; the numbers finite and >= 0.
func validateRounds(f *Fleet, add func(string, ...any), nonNeg func(string, float64)) {
	byID := map[string]FleetPair{}
	for _, p := range f.Pairs {
		byID[p.ID] = p
	}
	numbered := map[string]int{}
	inRound := map[string]string{}
	for i, r := range f.Rounds {
		k := fmt.Sprintf("fleet.rounds[%d]", i)
		name := fmt.Sprintf("round %d of shard %s", r.Round, r.Shard)
		if r.Round < 1 {
			add("%s.round: must be >= 1, got %d", k, r.Round)
		}
		if j, dup := numbered[r.Shard+"\x00"+fmt.Sprint(r.Round)]; dup {
			add("%s: %s is also fleet.rounds[%d]", k, name, j)
		} else {
			numbered[r.Shard+"\x00"+fmt.Sprint(r.Round)] = i
		}
		if len(r.Pairs) == 0 {
			add("%s.pairs: must name at least one pair", k)
		}
		node := map[string]string{}
		for j, id := range r.Pairs {
			pk := fmt.Sprintf("%s.pairs[%d]", k, j)
			p, ok := byID[id]
			if !ok {
				add("%s: must be a pair id of fleet.pairs, got %q", pk, id)
				continue
			}
			if other, dup := inRound[id]; dup {
				add("%s: pair %s is also in %s", pk, id, other)
			}
			inRound[id] = name
			for _, n := range []string{p.Sender, p.Receiver} {
				if other, shared := node[n]; shared && other != id {
					add("%s: pair %s shares node %s with pair %s in the same round", pk, id, n, other)
				}
				node[n] = id
			}
		}
		nonNeg(k+".flow_seconds", r.FlowSeconds)
		nonNeg(k+".skew_seconds", r.SkewSeconds)
		for j, w := range r.Windows {
			wk := fmt.Sprintf("%s.windows[%d]", k, j)
			if w.Flow == "" {
				add("%s.flow: must be set", wk)
			}
			if w.End != nil && w.End.Before(w.Start) {
				add("%s.end: must not be before its start %s, got %s", wk, w.Start.Format(time.RFC3339Nano), w.End.Format(time.RFC3339Nano))
			}
			nonNeg(wk+".skew_seconds", w.SkewSeconds)
			for _, id := range w.Pairs {
				if !slices.Contains(r.Pairs, id) {
					add("%s.pairs: pair %q is not one of the round's %v", wk, id, r.Pairs)
				}
			}
		}
	}
}
