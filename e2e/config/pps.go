package config

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	sections.Register(160, section{defaults: (*Config).applyPPSDefaults, validate: (*validator).pps,
		metric: results.IsSearchMetric, profile: (*validator).searchProfile}, results.FamilyPPS)
}

// PPS is the small-packet family and the zero-loss search (issue 12).
type PPS struct {
	// Profiles are the small-packet profiles that run (iperf3.PPSIDs);
	// default all of them; [] = none. traffic.profiles may name them too.
	Profiles []string  `yaml:"profiles"`
	Search   PPSSearch `yaml:"search"`
}

// PPSSearch configures the zero-loss search (RFC 2544 26.1 throughput as
// ETSI GS NFV-TST 009 searches it) and the partial-drop-rate search.
type PPSSearch struct {
	LengthBytes int `yaml:"length"`  // iperf3 -l; default 64
	Streams     int `yaml:"streams"` // iperf3 -P; default 1
	// LossPercent is the zero-loss search's criterion; default 0.
	LossPercent float64 `yaml:"loss_percent"`
	// PDRLossPercent is the partial-drop-rate search's; default 0.5; 0 = no PDR search.
	PDRLossPercent float64       `yaml:"pdr_loss_percent"`
	MaxTrials      int           `yaml:"max_trials"`     // per search, every trial counted; default 12
	TrialDuration  time.Duration `yaml:"trial_duration"` // iperf3 -t per trial; default 10s
	// ResolutionPercent stops a search when the rate that passed and the
	// rate that failed are within this share of the upper bound; default 1.
	ResolutionPercent float64 `yaml:"resolution_percent"`
	// UpperBps is the first rate tried (aggregate bit/s); default 0 = an
	// unlimited first trial gives it.
	UpperBps float64 `yaml:"upper_bps"`
}

// Defaults of the pps section.
var (
	// DefaultPPSProfiles are iperf3.PPSIDs() (config does not import
	// e2e/iperf3; a test in e2e/config pins the two).
	DefaultPPSProfiles = []string{"udp-b0-p1-l64", "udp-b0-p15-l64", "udp-b0-p30-l64", "udp-b0-p1-l700"}
)

const (
	DefaultSearchLength            = 64
	DefaultSearchStreams           = 1
	DefaultSearchLossPercent       = 0.0
	DefaultSearchPDRLossPercent    = 0.5
	DefaultSearchMaxTrials         = 12
	DefaultSearchTrialDuration     = 10 * time.Second
	DefaultSearchResolutionPercent = 1.0
	// MaxUDPPayload is the largest UDP payload over IPv4; MinSearchLength
	// leaves room for iperf3's own header in each datagram.
	MaxUDPPayload   = 65507
	MinSearchLength = 16
)

func (c *Config) applyPPSDefaults() {
	if !c.has("pps.profiles") {
		c.PPS.Profiles = slices.Clone(DefaultPPSProfiles)
	}
	s := &c.PPS.Search
	if !c.has("pps.search.length") {
		s.LengthBytes = DefaultSearchLength
	}
	if !c.has("pps.search.streams") {
		s.Streams = DefaultSearchStreams
	}
	if !c.has("pps.search.loss_percent") {
		s.LossPercent = DefaultSearchLossPercent
	}
	if !c.has("pps.search.pdr_loss_percent") {
		s.PDRLossPercent = DefaultSearchPDRLossPercent
	}
	if !c.has("pps.search.max_trials") {
		s.MaxTrials = DefaultSearchMaxTrials
	}
	if !c.has("pps.search.trial_duration") {
		s.TrialDuration = DefaultSearchTrialDuration
	}
	if !c.has("pps.search.resolution_percent") {
		s.ResolutionPercent = DefaultSearchResolutionPercent
	}
}

// KnownPPSProfiles gives the IDs pps.profiles may name (the callers pass
// iperf3.PPSIDs()). Without it they are only checked for form.
func KnownPPSProfiles(ids ...string) Option {
	return func(o *options) {
		o.ppsProfiles = append([]string(nil), ids...)
		o.ppsProfilesSet = true
	}
}

// Searches returns the searches the config asks for: the zero-loss one,
// and the partial-drop one unless pdr_loss_percent is 0. Kind is
// results.SearchNDR or results.SearchPDR.
func (s PPSSearch) Searches() []struct {
	Kind, ID    string
	LossPercent float64
} {
	type one = struct {
		Kind, ID    string
		LossPercent float64
	}
	out := []one{{results.SearchNDR, results.SearchID(results.SearchNDR, s.Streams, s.LengthBytes), s.LossPercent}}
	if s.PDRLossPercent > 0 {
		out = append(out, one{results.SearchPDR, results.SearchID(results.SearchPDR, s.Streams, s.LengthBytes), s.PDRLossPercent})
	}
	return out
}

func (v *validator) pps() {
	p := v.c.PPS
	seen := map[string]bool{}
	for i, id := range p.Profiles {
		path := fmt.Sprintf("pps.profiles[%d]", i)
		switch {
		case id == "":
			v.missing(path, "is empty")
		case seen[id]:
			v.bad(path, "is repeated", id)
		case v.o.ppsProfilesSet && !slices.Contains(v.o.ppsProfiles, id):
			v.bad(path, fmt.Sprintf("is not a small-packet profile (known: %v)", v.o.ppsProfiles), id)
		}
		seen[id] = true
	}
	s := p.Search
	if s.LengthBytes < MinSearchLength || s.LengthBytes > MaxUDPPayload {
		v.bad("pps.search.length", fmt.Sprintf("must be %d..%d (UDP payload bytes, iperf3 -l)", MinSearchLength, MaxUDPPayload), s.LengthBytes)
	}
	if s.Streams < 1 || s.Streams > 128 {
		v.bad("pps.search.streams", "must be 1..128 (iperf3 -P)", s.Streams)
	}
	if math.IsNaN(s.LossPercent) || s.LossPercent < 0 || s.LossPercent >= 100 {
		v.bad("pps.search.loss_percent", "must be >= 0 and < 100 (0 = no drop)", s.LossPercent)
	}
	if math.IsNaN(s.PDRLossPercent) || s.PDRLossPercent < 0 || s.PDRLossPercent >= 100 {
		v.bad("pps.search.pdr_loss_percent", "must be >= 0 and < 100 (0 = no partial-drop search)", s.PDRLossPercent)
	} else if s.PDRLossPercent > 0 && s.PDRLossPercent <= s.LossPercent {
		v.bad("pps.search.pdr_loss_percent", fmt.Sprintf("must be above pps.search.loss_percent (%v) or 0", s.LossPercent), s.PDRLossPercent)
	}
	minTrials := 3 // the unlimited trial, a probe, a verification
	if s.UpperBps > 0 {
		minTrials = 2
	}
	if s.MaxTrials < minTrials {
		v.bad("pps.search.max_trials", fmt.Sprintf("must be >= %d (with upper_bps %v: %s)", minTrials, s.UpperBps,
			map[bool]string{true: "a probe and a verification", false: "the unlimited trial, a probe and a verification"}[s.UpperBps > 0]), s.MaxTrials)
	}
	if s.TrialDuration < time.Second || s.TrialDuration%time.Second != 0 {
		v.bad("pps.search.trial_duration", "must be whole seconds >= 1s (iperf3 -t)", s.TrialDuration)
	}
	if math.IsNaN(s.ResolutionPercent) || s.ResolutionPercent <= 0 || s.ResolutionPercent >= 100 {
		v.bad("pps.search.resolution_percent", "must be > 0 and < 100 (a share of the upper bound)", s.ResolutionPercent)
	}
	if math.IsNaN(s.UpperBps) || math.IsInf(s.UpperBps, 0) || s.UpperBps < 0 {
		v.bad("pps.search.upper_bps", "must be >= 0 (0 = from an unlimited first trial)", s.UpperBps)
	}
}

// searchProfile checks a threshold on a search's rate: its profile is the
// ID of a search this config runs.
func (v *validator) searchProfile(path, metric, id string) {
	var ids []string
	for _, s := range v.c.PPS.Search.Searches() {
		if (s.Kind == results.SearchNDR) == (metric == results.MetricNDR) {
			ids = append(ids, s.ID)
		}
	}
	if !slices.Contains(ids, id) {
		v.bad(path, fmt.Sprintf("must name a %s search this config runs (%v; from pps.search.streams, length and pdr_loss_percent)", metric, ids), id)
	}
}
