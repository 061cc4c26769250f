package config

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	sections.Register(190, section{defaults: (*Config).applyHoldDefaults, validate: (*validator).hold,
		metric: results.IsHoldMetric, profile: (*validator).holdProfile}, results.FamilyRuleScale, results.FamilyChurn)
}

// Offload that holds (issue 38): the rule-scale profile (item 3) and the
// long window without churn (item 2). Each is its own evidence window, not
// a throughput window: the hypervisors are read during it.

// RuleScale is the rule-scale profile: for each N in Counts the client
// guest opens N distinct UDP 5-tuples to the server guest (source ports
// FirstSourcePort.. to traffic.port), Rate new ones a second, keeps every
// one alive (re-sent every Refresh) for Hold after the last, while the
// pair's hypervisors are read every intervals.rule_scale_sample.poll.
// Absent or Counts empty = no rule-scale profile.
type RuleScale struct {
	Counts []int `yaml:"counts"`
	// Rate is new 5-tuples a second; 0 = as fast as the guest opens them.
	Rate int `yaml:"rate"`
	// Hold is how long every 5-tuple is kept alive after the last opened;
	// default 20s.
	Hold time.Duration `yaml:"hold"`
	// Refresh is how often every opened 5-tuple is sent again, below OVS's
	// max-idle (10 s) so no flow idles out; default 2s.
	Refresh time.Duration `yaml:"refresh"`
	// FirstSourcePort is the first UDP source port; default 20000.
	FirstSourcePort int `yaml:"first_source_port"`
	// PlateauSamples, PlateauGrowth and HardwareShare are
	// offload.InsertionRules: growth stopped where the next PlateauSamples
	// reads grow by less than PlateauGrowth; in hardware at HardwareShare
	// of the final count. Defaults 3, 0.01, 0.97.
	PlateauSamples int     `yaml:"plateau_samples"`
	PlateauGrowth  float64 `yaml:"plateau_growth"`
	HardwareShare  float64 `yaml:"hardware_share"`
	// VswitchdLog is ovs-vswitchd's log on the hypervisor, read after the
	// window for its scale lines; "" = not read.
	VswitchdLog string `yaml:"vswitchd_log"`
}

// Churn is the long window: one steady UDP flow (iperf3, Bitrate, Length)
// for Duration while the pair's datapath flows, OVS's coverage counters
// and the representors' packet counters are read every
// intervals.churn_sample.poll. Duration 0 (absent) = no churn profile.
type Churn struct {
	Duration time.Duration `yaml:"duration"`
	// Bitrate is the steady flow's iperf3 -b (bit/s); default 10 Mbit/s.
	Bitrate int64 `yaml:"bitrate"`
	// Length is its datagram payload (iperf3 -l); default 1000 bytes.
	Length int `yaml:"length"`
	// SlowPathShare is the most of the flow's packets a representor may
	// carry per SlowPathPeriod; defaults 0.01 and 10s.
	SlowPathShare  float64       `yaml:"slow_path_share"`
	SlowPathPeriod time.Duration `yaml:"slow_path_period"`
}

const (
	// MaxRuleScaleFlows bounds N: the source ports must fit below 65536.
	MaxRuleScaleFlows = 40000

	DefaultRuleScaleHold      = 20 * time.Second
	DefaultRuleScaleRefresh   = 2 * time.Second
	DefaultRuleScaleFirstPort = 20000
	// VswitchdLogAuto: the log file of the ovs-vswitchd in the
	// hypervisor's network namespace, from its --log-file.
	VswitchdLogAuto            = "auto"
	DefaultVswitchdLog         = VswitchdLogAuto
	DefaultChurnBitrate        = 10_000_000
	DefaultChurnLength         = 1000
	DefaultChurnSlowPathShare  = 0.01
	DefaultChurnSlowPathPeriod = 10 * time.Second
)

// FlowPPS is the churn flow's offered packets a second.
func (c Churn) FlowPPS() float64 {
	if c.Length <= 0 {
		return 0
	}
	return float64(c.Bitrate) / float64(8*c.Length)
}

func (c *Config) applyHoldDefaults() {
	r := &c.RuleScale
	if !c.has("rule_scale.hold") {
		r.Hold = DefaultRuleScaleHold
	}
	if !c.has("rule_scale.refresh") {
		r.Refresh = DefaultRuleScaleRefresh
	}
	if !c.has("rule_scale.first_source_port") {
		r.FirstSourcePort = DefaultRuleScaleFirstPort
	}
	if !c.has("rule_scale.plateau_samples") {
		r.PlateauSamples = 3
	}
	if !c.has("rule_scale.plateau_growth") {
		r.PlateauGrowth = 0.01
	}
	if !c.has("rule_scale.vswitchd_log") {
		r.VswitchdLog = DefaultVswitchdLog
	}
	if !c.has("rule_scale.hardware_share") {
		r.HardwareShare = 0.97
	}
	ch := &c.Churn
	if !c.has("churn.bitrate") {
		ch.Bitrate = DefaultChurnBitrate
	}
	if !c.has("churn.length") {
		ch.Length = DefaultChurnLength
	}
	if !c.has("churn.slow_path_share") {
		ch.SlowPathShare = DefaultChurnSlowPathShare
	}
	if !c.has("churn.slow_path_period") {
		ch.SlowPathPeriod = DefaultChurnSlowPathPeriod
	}
}

func (v *validator) hold() {
	r := v.c.RuleScale
	seen := map[int]bool{}
	most := 0
	for i, n := range r.Counts {
		p := fmt.Sprintf("rule_scale.counts[%d]", i)
		switch {
		case n < 1 || n > MaxRuleScaleFlows:
			v.bad(p, fmt.Sprintf("must be 1..%d (distinct UDP source ports)", MaxRuleScaleFlows), n)
		case seen[n]:
			v.bad(p, "is repeated", n)
		default:
			most = max(most, n)
		}
		seen[n] = true
	}
	if r.Rate < 0 {
		v.bad("rule_scale.rate", "must be >= 0 new 5-tuples a second (0 = as fast as the guest opens them)", r.Rate)
	}
	if r.Hold < time.Second {
		v.bad("rule_scale.hold", "must be >= 1s (every 5-tuple kept alive after the last opened: the plateau is read in it)", r.Hold)
	}
	if r.Refresh <= 0 || r.Refresh >= 10*time.Second {
		v.bad("rule_scale.refresh", "must be > 0 and below 10s (OVS's max-idle: a flow not sent again within it is removed)", r.Refresh)
	}
	if p := r.FirstSourcePort; p < 1024 || p > 65535 {
		v.bad("rule_scale.first_source_port", "must be 1024..65535 (a guest's unprivileged UDP source port)", p)
	} else if most > 0 && p+most-1 > 65535 {
		v.bad("rule_scale.first_source_port", fmt.Sprintf("must leave room for rule_scale.counts %d source ports: at most %d", most, 65535-most+1), p)
	} else if most > 0 && v.c.Traffic.Port >= p && v.c.Traffic.Port <= p+most-1 {
		v.bad("rule_scale.first_source_port", fmt.Sprintf("the source ports %d..%d must not contain traffic.port %d (the receiver's port)", p, p+most-1, v.c.Traffic.Port), p)
	}
	if r.PlateauSamples < 1 {
		v.bad("rule_scale.plateau_samples", "must be >= 1", r.PlateauSamples)
	}
	if !(r.PlateauGrowth > 0 && r.PlateauGrowth < 1) {
		v.bad("rule_scale.plateau_growth", "must be in (0, 1) (0.01 = growth below 1 % is a plateau)", r.PlateauGrowth)
	}
	if !(r.HardwareShare > 0 && r.HardwareShare <= 1) {
		v.bad("rule_scale.hardware_share", "must be in (0, 1] (0.97 = 97 % of the final count in hardware)", r.HardwareShare)
	}
	if iv := v.c.Intervals[IntervalRuleScaleSample]; len(r.Counts) > 0 && iv.Poll > 0 && r.Hold > 0 && time.Duration(r.PlateauSamples+1)*iv.Poll > r.Hold {
		v.bad("rule_scale.hold", fmt.Sprintf("must hold at least rule_scale.plateau_samples + 1 reads (%d × intervals.%s.poll %s): the plateau is read in it", r.PlateauSamples+1, IntervalRuleScaleSample, iv.Poll), r.Hold)
	}

	c := v.c.Churn
	if c.Duration < 0 || c.Duration%time.Second != 0 {
		v.bad("churn.duration", "must be whole seconds >= 0 (iperf3 -t; 0 = no churn window)", c.Duration)
	}
	if c.Bitrate <= 0 {
		v.bad("churn.bitrate", "must be > 0 bit/s (the steady flow is capped: its packet rate is what the slow path's share is of)", c.Bitrate)
	}
	if c.Length < 16 || c.Length > 65507 {
		v.bad("churn.length", "must be 16..65507 bytes (iperf3 -l of a UDP datagram)", c.Length)
	}
	if math.IsNaN(c.SlowPathShare) || !(c.SlowPathShare > 0 && c.SlowPathShare < 1) {
		v.bad("churn.slow_path_share", "must be in (0, 1) (0.01 = 1 % of the flow's packets per period on the representor)", c.SlowPathShare)
	}
	if c.SlowPathPeriod < time.Second {
		v.bad("churn.slow_path_period", "must be >= 1s", c.SlowPathPeriod)
	}
	if iv := v.c.Intervals[IntervalChurnSample]; c.Duration > 0 && iv.Poll > 0 && 2*iv.Poll > c.Duration {
		v.bad("churn.duration", fmt.Sprintf("must hold at least two reads (2 × intervals.%s.poll %s)", IntervalChurnSample, iv.Poll), c.Duration)
	}
}

// holdProfile checks a threshold of issue 38's profiles: rules_per_second
// names rule-scale-<N> for an N of rule_scale.counts, churn_count the churn
// window when churn.duration is set.
func (v *validator) holdProfile(path, metric, id string) {
	var ids []string
	switch metric {
	case results.MetricRulesPerSecond:
		for _, n := range v.c.RuleScale.Counts {
			if id := results.RuleScaleProfileID(n); n >= 1 && n <= MaxRuleScaleFlows && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	case results.MetricChurnCount:
		if v.c.Churn.Duration > 0 {
			ids = append(ids, results.ChurnProfileID)
		}
	}
	if !slices.Contains(ids, id) {
		v.bad(path, fmt.Sprintf("must name a profile this config runs for %s (%v)", metric, ids), id)
	}
}
