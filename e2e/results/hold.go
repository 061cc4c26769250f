package results

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The family's id (its config section's key) and its results.
const (
	FamilyRuleScale = "rule_scale"
	FamilyChurn     = "churn"
)

func init() {
	Families.Register(30, Family{Key: "rule_scale", Validate: validateHold}, FamilyRuleScale)
	Families.Register(31, Family{Key: "churn"}, FamilyChurn)
}

// Offload that holds (issue 38): the rule-scale profile (rule-scale-<N>)
// and the long window without churn (churn). Each is its own evidence
// window: the hypervisors are read during it, so neither is a throughput
// number.

// Insertion is one table's insertion timeline as e2e/offload's
// JudgeInsertion judged it.
type Insertion struct {
	// Table is what was counted: TableDatapathFlows or TableConntrack.
	Table           string `json:"table"`
	Final           int    `json:"final"`
	FinalInHardware int    `json:"final_in_hardware"`
	// RulesPerSecond is the insertion rate over the growth phase (0 when
	// the count never grew).
	RulesPerSecond float64 `json:"rules_per_second"`
	Plateau        bool    `json:"plateau"`
	// PlateauSeconds and PlateauCount: where growth stopped (from the
	// guest's start); BelowTarget: it stopped below N.
	PlateauSeconds float64 `json:"plateau_seconds,omitempty"`
	PlateauCount   int     `json:"plateau_count,omitempty"`
	BelowTarget    bool    `json:"below_target,omitempty"`
	// HardwareSeconds is when the hardware share of the final count was
	// first in hardware; nil = never.
	HardwareSeconds *float64 `json:"hardware_seconds"`
	Statement       string   `json:"statement"`
}

// What an Insertion counted.
const (
	// TableDatapathFlows: the pair's datapath flows (dpctl/dump-flows -m,
	// offloaded:yes in hardware). NORMAL forwarding wildcards the L4 ports,
	// so N 5-tuples can be a handful of flows.
	TableDatapathFlows = "datapath-flows"
	// TableConntrack: the run's 5-tuples in the conntrack table
	// ([HW_OFFLOAD] in hardware), with port security.
	TableConntrack = "conntrack"
)

// RuleScaleResult is one N of the rule-scale profile.
type RuleScaleResult struct {
	N    int  `json:"n"`
	Path Path `json:"path"`
	// Rate is rule_scale.rate (new 5-tuples a second; 0 = as fast as the
	// guest opened them); HoldSeconds rule_scale.hold.
	Rate        int       `json:"rate"`
	HoldSeconds float64   `json:"hold_seconds"`
	StartedAt   time.Time `json:"started_at,omitzero"`
	// Opened is the 5-tuples the guest's sender opened (its own count);
	// BindFailures the source ports it could not bind; OpenSeconds its
	// time to open the last.
	Opened       int     `json:"opened"`
	BindFailures int     `json:"bind_failures,omitempty"`
	OpenSeconds  float64 `json:"open_seconds"`
	// KeptOpen says the sender kept a socket per 5-tuple open (the
	// receiver's answers reached it); false: each was closed after its
	// datagram (the guest's open-file limit), the answers met ICMP errors.
	KeptOpen bool `json:"kept_open"`
	// Judged is the table rules_per_second reads: conntrack with port
	// security (every 5-tuple is an entry), else the datapath flows.
	Judged       string          `json:"judged"`
	Hosts        []RuleScaleHost `json:"hosts,omitempty"`
	EvidenceFile string          `json:"evidence_file,omitempty"`
	Error        string          `json:"error,omitempty"`
}

// RuleScaleHost is one hypervisor's view of a RuleScaleResult.
type RuleScaleHost struct {
	Hypervisor string `json:"hypervisor"`
	// Software: the userspace datapath (nothing in hardware by
	// construction).
	Software  bool       `json:"software"`
	Flows     *Insertion `json:"flows,omitempty"`
	Conntrack *Insertion `json:"conntrack,omitempty"`
	// OVSFlows and OVSFlowLimit are upcall/show's current flows (every
	// flow of the datapath) and dynamic flow limit at the last read.
	OVSFlows     uint64 `json:"ovs_flows,omitempty"`
	OVSFlowLimit uint64 `json:"ovs_flow_limit,omitempty"`
	// LogEvents counts ovs-vswitchd's scale lines of the window by kind
	// (flow-limit, flow-limit-kill, long-dump, ukey-install,
	// offload-failed, put-failed): lower bounds, OVS rate-limits them;
	// LogLines are the first of them; LogNote says why the log was not read.
	LogEvents map[string]int `json:"log_events,omitempty"`
	LogLines  []string       `json:"log_lines,omitempty"`
	LogNote   string         `json:"log_note,omitempty"`
	// Coverage is the window's growth of OVS's upcall, ukey, revalidator
	// and dpif_flow counters (upcall_flow_limit_hit is the flow-limit's
	// count).
	Coverage map[string]uint64 `json:"coverage,omitempty"`
	// Steering is mlx5's flow_steering_mode (dmfs, smfs, hmfs) or why it
	// is not known.
	Steering string `json:"steering"`
	Samples  int    `json:"samples"`
	// ReadMeanMS and ReadMaxMS are the sampler's own cost: each read's
	// wall time on this hypervisor.
	ReadMeanMS  float64 `json:"read_mean_ms"`
	ReadMaxMS   float64 `json:"read_max_ms"`
	Reason      string  `json:"reason"`
	SamplesFile string  `json:"samples_file,omitempty"`
}

// Judged returns the host's insertion of the table the result judges.
func (h RuleScaleHost) Judged(table string) *Insertion {
	if table == TableConntrack {
		return h.Conntrack
	}
	return h.Flows
}

// ChurnResult is the long window.
type ChurnResult struct {
	Path            Path      `json:"path"`
	DurationSeconds float64   `json:"duration_seconds"`
	BitrateBps      int64     `json:"bitrate_bps"`
	LengthBytes     int       `json:"length_bytes"`
	SampleSeconds   float64   `json:"sample_seconds"`
	SlowPathShare   float64   `json:"slow_path_share"`
	StartedAt       time.Time `json:"started_at,omitzero"`
	DeliveredBps    float64   `json:"delivered_bps"`
	LossPercent     float64   `json:"loss_percent"`
	// Stable is every hypervisor's verdict: no counted event and no
	// slow-path period over the share.
	Stable       bool        `json:"stable"`
	Hosts        []ChurnHost `json:"hosts,omitempty"`
	EvidenceFile string      `json:"evidence_file,omitempty"`
	Error        string      `json:"error,omitempty"`
}

// ChurnHost is one hypervisor's view of the churn window.
type ChurnHost struct {
	Hypervisor string `json:"hypervisor"`
	Software   bool   `json:"software"`
	Stable     bool   `json:"stable"`
	// Count is the counted events: the datapath flows' or, where higher,
	// the representor's tc rules' (TCChurnCount).
	Count  int          `json:"churn_count"`
	Events []ChurnEvent `json:"events,omitempty"`
	// TCChurnCount and TCEvents are the representor's tc rules judged the
	// same way (the handle for the ufid); nil where no read found one of
	// the pair's (TCReason says why).
	TCChurnCount *int         `json:"tc_churn_count,omitempty"`
	TCEvents     []ChurnEvent `json:"tc_events,omitempty"`
	TCReason     string       `json:"tc_reason,omitempty"`
	Flows        int          `json:"flows"`
	Reads        int          `json:"reads"`
	// Deleted is coverage's dpif_flow_del over the window (every flow of
	// the hypervisor); -1 when not read at both ends.
	Deleted      int64   `json:"deleted"`
	SlowPathMax  float64 `json:"slow_path_max"`
	SlowPathOver int     `json:"slow_path_over"`
	SlowPathNote string  `json:"slow_path_note,omitempty"`
	BlindSpot    string  `json:"blind_spot"`
	ReadMeanMS   float64 `json:"read_mean_ms"`
	ReadMaxMS    float64 `json:"read_max_ms"`
	Reason       string  `json:"reason"`
	SamplesFile  string  `json:"samples_file,omitempty"`
}

// ChurnEvent is one event of a ChurnHost, in seconds from the window's
// start.
type ChurnEvent struct {
	Kind          string  `json:"kind"`
	AfterSeconds  float64 `json:"after_seconds"`
	BeforeSeconds float64 `json:"before_seconds"`
	Counted       bool    `json:"counted"`
	Flow          string  `json:"flow"`
	Detail        string  `json:"detail"`
}

// PutRuleScale stores a rule-scale result (replacing one with the same N
// and path) and writes the file.
func (w *Writer) PutRuleScale(c RuleScaleResult) error {
	c = deepCopy(c)
	return w.Update(func(r *Results) {
		for i := range r.RuleScale {
			if r.RuleScale[i].N == c.N && r.RuleScale[i].Path == c.Path {
				r.RuleScale[i] = c
				return
			}
		}
		r.RuleScale = append(r.RuleScale, c)
	})
}

// PutChurn stores the churn result (replacing one on the same path).
func (w *Writer) PutChurn(c ChurnResult) error {
	c = deepCopy(c)
	return w.Update(func(r *Results) {
		for i := range r.Churn {
			if r.Churn[i].Path == c.Path {
				r.Churn[i] = c
				return
			}
		}
		r.Churn = append(r.Churn, c)
	})
}

func validateHold(r *Results, add func(string, ...any)) {
	seen := map[string]int{}
	for i, c := range r.RuleScale {
		k := fmt.Sprintf("rule_scale[%d]", i)
		if c.N < 1 || c.Opened < 0 || c.Opened > c.N {
			add("%s: n must be >= 1 and opened 0..n, got n %d opened %d", k, c.N, c.Opened)
		}
		if c.Path != PathASAP2 && c.Path != PathBaseline {
			add("%s.path: must be asap2 or baseline, got %q", k, c.Path)
		}
		if c.Judged != TableDatapathFlows && c.Judged != TableConntrack {
			add("%s.judged: must be %s or %s, got %q", k, TableDatapathFlows, TableConntrack, c.Judged)
		}
		dk := fmt.Sprint(c.N, "\x00", c.Path)
		if j, dup := seen[dk]; dup {
			add("%s: n %d path %s duplicates rule_scale[%d]", k, c.N, c.Path, j)
		} else {
			seen[dk] = i
		}
		for j, h := range c.Hosts {
			hk := fmt.Sprintf("%s.hosts[%d]", k, j)
			if h.Hypervisor == "" {
				add("%s.hypervisor: must be set", hk)
			}
			for _, in := range []*Insertion{h.Flows, h.Conntrack} {
				if in == nil {
					continue
				}
				if math.IsNaN(in.RulesPerSecond) || in.RulesPerSecond < 0 || in.Final < 0 || in.FinalInHardware < 0 || in.FinalInHardware > in.Final {
					add("%s.%s: rules_per_second must be >= 0 and final_in_hardware 0..final, got %v, %d of %d", hk, in.Table, in.RulesPerSecond, in.FinalInHardware, in.Final)
				}
			}
		}
	}
	paths := map[Path]int{}
	for i, c := range r.Churn {
		k := fmt.Sprintf("churn[%d]", i)
		if c.Path != PathASAP2 && c.Path != PathBaseline {
			add("%s.path: must be asap2 or baseline, got %q", k, c.Path)
		}
		if j, dup := paths[c.Path]; dup {
			add("%s: path %s duplicates churn[%d]", k, c.Path, j)
		} else {
			paths[c.Path] = i
		}
		for j, h := range c.Hosts {
			if h.Hypervisor == "" || h.Count < 0 {
				add("%s.hosts[%d]: hypervisor must be set and churn_count >= 0, got %q %d", k, j, h.Hypervisor, h.Count)
			}
		}
	}
}

// Threshold metrics of issue 38's profiles.
const (
	// MetricRulesPerSecond is the slowest hypervisor's insertion rate of
	// the judged table (profile rule-scale-<N>).
	MetricRulesPerSecond = "rules_per_second"
	// MetricChurnCount is the churn window's counted events on the worse
	// hypervisor (profile churn): "churn_count <= 0" gates a stable window.
	MetricChurnCount = "churn_count"
)

// ChurnProfileID is the churn window's profile id (log lines, evidence,
// Ginkgo label, thresholds).
const ChurnProfileID = "churn"

// HoldMetrics are the threshold metrics of issue 38's profiles.
func HoldMetrics() []string { return []string{MetricRulesPerSecond, MetricChurnCount} }

// IsHoldMetric reports whether metric is one of HoldMetrics.
func IsHoldMetric(metric string) bool { return slices.Contains(HoldMetrics(), metric) }

// RuleScaleProfileID names the rule-scale profile of n 5-tuples.
func RuleScaleProfileID(n int) string { return fmt.Sprintf("rule-scale-%d", n) }

// evaluateHoldMetric is a hold metric's actual value and its words, or ok
// false with why there is none.
func evaluateHoldMetric(r ThresholdRule, files []*Results) (actual float64, what string, ok bool) {
	if r.Metric == MetricChurnCount {
		var c *ChurnResult
		for _, f := range files {
			for i := range f.Churn {
				if f.Churn[i].Path == Path(r.Path) && r.Profile == ChurnProfileID {
					c = &f.Churn[i]
				}
			}
		}
		if c == nil {
			return 0, fmt.Sprintf("no %s result for profile %s", r.Path, r.Profile), false
		}
		if why := holdMissing(r, c.Error, len(c.Hosts)); why != "" {
			return 0, why, false
		}
		var parts []string
		for _, h := range c.Hosts {
			if h.Reads < 2 {
				return 0, fmt.Sprintf("profile %s %s: %s was read %d time(s), a churn count needs 2: %s", r.Profile, r.Path, h.Hypervisor, h.Reads, h.Reason), false
			}
			if h.Flows == 0 {
				return 0, fmt.Sprintf("profile %s %s: %s: no flow of the pair in any read, nothing to count: %s", r.Profile, r.Path, h.Hypervisor, h.Reason), false
			}
			actual = max(actual, float64(h.Count))
			parts = append(parts, fmt.Sprintf("%s %d", h.Hypervisor, h.Count))
		}
		return actual, fmt.Sprintf("churn count %d (the worse: %s)", int(actual), strings.Join(parts, ", ")), true
	}
	var c *RuleScaleResult
	for _, f := range files {
		for i := range f.RuleScale {
			if RuleScaleProfileID(f.RuleScale[i].N) == r.Profile && f.RuleScale[i].Path == Path(r.Path) {
				c = &f.RuleScale[i]
			}
		}
	}
	if c == nil {
		return 0, fmt.Sprintf("no %s result for profile %s", r.Path, r.Profile), false
	}
	if why := holdMissing(r, c.Error, len(c.Hosts)); why != "" {
		return 0, why, false
	}
	var parts []string
	for i, h := range c.Hosts {
		in := h.Judged(c.Judged)
		if in == nil {
			return 0, fmt.Sprintf("profile %s %s: %s has no %s timeline: %s", r.Profile, r.Path, h.Hypervisor, c.Judged, h.Reason), false
		}
		if i == 0 || in.RulesPerSecond < actual {
			actual = in.RulesPerSecond
		}
		parts = append(parts, fmt.Sprintf("%s %.0f/s", h.Hypervisor, in.RulesPerSecond))
	}
	return actual, fmt.Sprintf("%s inserted at %.0f rules/s (the slowest: %s)", c.Judged, actual, strings.Join(parts, ", ")), true
}

// holdMissing says why a found result has no value for r: it failed, or
// no hypervisor was read.
func holdMissing(r ThresholdRule, failed string, hosts int) string {
	switch {
	case failed != "":
		return fmt.Sprintf("profile %s %s failed: %s", r.Profile, r.Path, failed)
	case hosts == 0:
		return fmt.Sprintf("profile %s %s: no hypervisor was read", r.Profile, r.Path)
	}
	return ""
}
