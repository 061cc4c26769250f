package fleet

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// PairResult is one pair's delivered rate in one profile.
type PairResult struct {
	Pair
	Profile string
	BPS     float64 // delivered bits per second; 0 is a pair that moved nothing
}

// Role is which end of its pairs a node's rate was taken at.
type Role string

const (
	AsSender   Role = "sender"
	AsReceiver Role = "receiver"
)

// NodeRate is one node's rate in one profile and role, against the fleet.
type NodeRate struct {
	Node    string
	Profile string
	Role    Role
	// BPS is the mean of the node's pairs in this role (a ring has one;
	// explicit pairs may have more), Pairs how many.
	BPS   float64
	Pairs int
	// Median is the fleet's median over every node's BPS in this profile
	// and role; Ratio is BPS / Median (NaN when the median is 0).
	Median float64
	Ratio  float64
	// Score is the modified z-score under the MAD rule (NaN under the
	// ratio rule, or when the spread is 0).
	Score   float64
	Outlier bool
}

// Line is the sentence the report names an outlier with:
// "compute7: tcp-p1 4.1 Gbit/s as sender, 0.25× the fleet median 16.4".
// The median is in the unit of the node's own rate where it has one.
func (r NodeRate) Line() string {
	ratio := "—"
	if !math.IsNaN(r.Ratio) {
		ratio = strconv.FormatFloat(r.Ratio, 'f', 2, 64) + "×"
	}
	return fmt.Sprintf("%s: %s %s as %s, %s the fleet median %s", r.Node, r.Profile, results.FormatBpsShort(r.BPS), r.Role, ratio, medianIn(r.Median, r.BPS))
}

// medianIn writes the median as a number in the unit FormatBpsShort gives
// rate (or the median's own when rate is 0): "16.4".
func medianIn(median, rate float64) string {
	ref := rate
	if ref <= 0 {
		ref = median
	}
	unit := rateUnit(ref)
	return strconv.FormatFloat(results.RoundSig(median/unit, 3), 'f', -1, 64) + unitSuffix(unit, rate <= 0)
}

func rateUnit(bps float64) float64 {
	u := 1.0
	for bps/u >= 1000 && u < 1e12 {
		u *= 1000
	}
	// FormatBps moves up a unit when rounding reaches 1000 (999.7 M -> 1 G).
	if results.RoundSig(bps/u, 3) >= 1000 && u < 1e12 {
		u *= 1000
	}
	return u
}

func unitSuffix(unit float64, show bool) string {
	if !show {
		return ""
	}
	return " " + strings.TrimPrefix(results.FormatBpsShort(unit), "1 ")
}

// Rule decides which nodes are outliers (config's fleet.outlier).
type Rule struct {
	// Kind is RuleMAD or RuleRatio.
	Kind string
	// Threshold (MAD): a node is named when its modified z-score
	// 0.6745·(rate − median)/MAD is below −Threshold (Iglewicz and
	// Hoaglin's 3.5 is the usual choice).
	Threshold float64
	// MinDrop (MAD): and it is at least this fraction below the median,
	// so that a fleet whose rates barely differ (MAD near 0) does not name
	// a node 1 % below the rest.
	MinDrop float64
	// Ratio (ratio): a node is named when its rate is below Ratio × median.
	Ratio float64
}

// Outlier rules.
const (
	RuleMAD   = "mad"
	RuleRatio = "ratio"
)

// madScale turns a mean absolute deviation into the MAD's scale when the
// MAD is 0 (more than half the nodes at the median): 1.253314 = √(π/2), the
// ratio of the two for normal data (IBM's modified z-score).
const madScale = 1.253314

// Verdict is the judged fleet: every node's rate in every profile and role
// (profile order as first seen in the results, then role, then node) and
// notes on what the rule could not judge.
type Verdict struct {
	Rates []NodeRate
	Notes []string
}

// Outliers are the named nodes' rates, lowest ratio first.
func (v Verdict) Outliers() []NodeRate {
	var out []NodeRate
	for _, r := range v.Rates {
		if r.Outlier {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b NodeRate) int {
		switch {
		case a.Ratio < b.Ratio:
			return -1
		case a.Ratio > b.Ratio:
			return 1
		}
		return 0
	})
	return out
}

// Judge computes each node's rate as sender and as receiver in each
// profile, the fleet median of each, and the outliers under rule. Only
// rates below the median are named: a node faster than its fleet is not
// what holds a release back.
func Judge(pairs []PairResult, rule Rule) (Verdict, error) {
	switch rule.Kind {
	case RuleMAD:
		if !(rule.Threshold > 0) || rule.MinDrop < 0 || rule.MinDrop >= 1 {
			return Verdict{}, fmt.Errorf("fleet: outlier rule mad: threshold must be > 0 and min_drop in [0, 1), got %v and %v", rule.Threshold, rule.MinDrop)
		}
	case RuleRatio:
		if !(rule.Ratio > 0 && rule.Ratio < 1) {
			return Verdict{}, fmt.Errorf("fleet: outlier rule ratio: ratio must be in (0, 1), got %v", rule.Ratio)
		}
	default:
		return Verdict{}, fmt.Errorf("fleet: outlier rule %q: want %s or %s", rule.Kind, RuleMAD, RuleRatio)
	}
	type key struct {
		profile string
		role    Role
		node    string
	}
	sum, count := map[key]float64{}, map[key]int{}
	var profiles []string
	for _, p := range pairs {
		if math.IsNaN(p.BPS) || math.IsInf(p.BPS, 0) || p.BPS < 0 {
			return Verdict{}, fmt.Errorf("fleet: pair %s profile %s: rate %v is not a rate", p.Pair, p.Profile, p.BPS)
		}
		if !slices.Contains(profiles, p.Profile) {
			profiles = append(profiles, p.Profile)
		}
		for _, k := range []key{{p.Profile, AsSender, p.Sender}, {p.Profile, AsReceiver, p.Receiver}} {
			sum[k] += p.BPS
			count[k]++
		}
	}
	var v Verdict
	for _, prof := range profiles {
		for _, role := range []Role{AsSender, AsReceiver} {
			var rows []NodeRate
			for k, n := range count {
				if k.profile == prof && k.role == role {
					rows = append(rows, NodeRate{Node: k.node, Profile: prof, Role: role, BPS: sum[k] / float64(n), Pairs: n})
				}
			}
			slices.SortFunc(rows, func(a, b NodeRate) int { return strings.Compare(a.Node, b.Node) })
			v.Notes = append(v.Notes, judgeGroup(rows, rule)...)
			v.Rates = append(v.Rates, rows...)
		}
	}
	return v, nil
}

// judgeGroup fills one profile and role's medians, ratios, scores and
// outliers, and says what it could not judge.
func judgeGroup(rows []NodeRate, rule Rule) []string {
	if len(rows) == 0 {
		return nil
	}
	what := fmt.Sprintf("%s as %s", rows[0].Profile, rows[0].Role)
	rates := make([]float64, len(rows))
	for i, r := range rows {
		rates[i] = r.BPS
	}
	med := median(rates)
	dev := make([]float64, len(rates))
	meanAD := 0.0
	for i, x := range rates {
		dev[i] = math.Abs(x - med)
		meanAD += dev[i] / float64(len(rates))
	}
	mad := median(dev)
	scale := mad / 0.6745
	if mad == 0 {
		scale = madScale * meanAD
	}
	var notes []string
	if med == 0 {
		notes = append(notes, what+": the fleet median is 0 bit/s: every node is judged by the fleet's failure, not named as an outlier")
	}
	if rule.Kind == RuleMAD && len(rows) < 3 {
		notes = append(notes, fmt.Sprintf("%s: %d nodes: the MAD rule cannot name an outlier among fewer than 3 (each is as far from the median as the other); outlier.rule ratio can", what, len(rows)))
	}
	for i := range rows {
		r := &rows[i]
		r.Median = med
		r.Ratio, r.Score = math.NaN(), math.NaN()
		if med > 0 {
			r.Ratio = r.BPS / med
		}
		switch rule.Kind {
		case RuleMAD:
			if scale > 0 {
				r.Score = (r.BPS - med) / scale
			}
			r.Outlier = len(rows) >= 3 && med > 0 && !math.IsNaN(r.Score) && r.Score < -rule.Threshold && r.Ratio <= 1-rule.MinDrop
		case RuleRatio:
			r.Outlier = med > 0 && r.Ratio < rule.Ratio
		}
	}
	return notes
}

// median of xs (not modified); the mean of the middle two for an even count.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
