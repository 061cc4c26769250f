package offload

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The insertion timeline of the rule-scale profile (issue 38 item 3): the
// guest opens N distinct flows, the hypervisor is sampled over time (the
// pair's datapath flows, and how many of them are in hardware), and this
// says how fast rules were inserted, when growth stopped and at what
// count, and when the hardware caught up. Pure: the samples come from the
// profile's reads (dpctl/dump-flows -m, tc), the rules from config.

// InsertionSample is one read of the hypervisor.
type InsertionSample struct {
	// At is the read's time since the guest started opening flows.
	At time.Duration
	// Flows is the pair's datapath flows; InHardware those of them in
	// hardware (offloaded:yes).
	Flows, InHardware int
}

// InsertionRules are the definitions the judge applies (from config; see
// DefaultInsertionRules).
type InsertionRules struct {
	// PlateauSamples and PlateauGrowth define where growth stopped: at the
	// first sample with flows whose next PlateauSamples samples all stay
	// below its count × (1 + PlateauGrowth).
	PlateauSamples int
	PlateauGrowth  float64
	// HardwareShare is the share of the final count that must be in
	// hardware for the table to count as offloaded (0.97).
	HardwareShare float64
}

// DefaultInsertionRules are issue 38's: growth stopped when the next 3
// samples grow by less than 1 %; in hardware at ≥ 97 % of the final count.
func DefaultInsertionRules() InsertionRules {
	return InsertionRules{PlateauSamples: 3, PlateauGrowth: 0.01, HardwareShare: 0.97}
}

// InsertionInput is the timeline to judge.
type InsertionInput struct {
	Samples []InsertionSample
	// Target is N, the distinct flows the guest opened.
	Target int
	// Software says the hypervisor's datapath is software only (the lab's
	// userspace datapath): in hardware is 0 by construction, and the
	// statement says so.
	Software bool
	Rules    InsertionRules
}

// Insertion is the judged timeline.
type Insertion struct {
	// FinalFlows and FinalInHardware are the last sample's counts.
	FinalFlows, FinalInHardware int
	// GrowthFrom and GrowthTo bound the growth phase: the last sample
	// before the first increase, and the plateau's sample (when growth
	// never stopped, the first sample with the highest count). Grown is
	// the flows added between them (0 when the count there is not higher).
	GrowthFrom, GrowthTo time.Duration
	Grown                int
	// Rate is Grown over the growth phase, in rules per second (0 when
	// the count never grew).
	Rate float64
	// Plateau says growth stopped within the samples, at PlateauAt with
	// PlateauFlows flows; BelowTarget that it stopped below Target: no
	// sample came within PlateauGrowth of it.
	Plateau      bool
	PlateauAt    time.Duration
	PlateauFlows int
	BelowTarget  bool
	// HardwareAt is the first sample with ≥ HardwareShare of the final
	// count in hardware; HardwareNever when no sample reached it.
	HardwareAt    time.Duration
	HardwareNever bool
	// Statement is the result in one sentence.
	Statement string
}

// Validate names every problem of the rules at once.
func (r InsertionRules) Validate() error {
	var bad []string
	if r.PlateauSamples < 1 {
		bad = append(bad, fmt.Sprintf("plateau samples must be ≥ 1, got %d", r.PlateauSamples))
	}
	if !(r.PlateauGrowth > 0 && r.PlateauGrowth < 1) {
		bad = append(bad, fmt.Sprintf("plateau growth must be in (0, 1), got %v", r.PlateauGrowth))
	}
	if !(r.HardwareShare > 0 && r.HardwareShare <= 1) {
		bad = append(bad, fmt.Sprintf("hardware share must be in (0, 1], got %v", r.HardwareShare))
	}
	if len(bad) > 0 {
		return fmt.Errorf("insertion rules: %s", strings.Join(bad, "; "))
	}
	return nil
}

// JudgeInsertion judges a timeline. The samples must be in increasing
// time, never negative, with at most as many in hardware as flows, and on
// a software datapath none in hardware; Target must be > 0. Every problem
// is named at once, with the sample's index.
func JudgeInsertion(in InsertionInput) (Insertion, error) {
	var bad []string
	if err := in.Rules.Validate(); err != nil {
		bad = append(bad, err.Error())
	}
	if in.Target <= 0 {
		bad = append(bad, fmt.Sprintf("target must be > 0 flows, got %d", in.Target))
	}
	if len(in.Samples) == 0 {
		bad = append(bad, "no samples")
	}
	for i, s := range in.Samples {
		switch {
		case s.At < 0:
			bad = append(bad, fmt.Sprintf("sample %d: time %v is before the start", i, s.At))
		case i > 0 && s.At <= in.Samples[i-1].At:
			bad = append(bad, fmt.Sprintf("sample %d: time %v is not after sample %d's %v", i, s.At, i-1, in.Samples[i-1].At))
		}
		switch {
		case s.Flows < 0 || s.InHardware < 0:
			bad = append(bad, fmt.Sprintf("sample %d: negative count (%d flows, %d in hardware)", i, s.Flows, s.InHardware))
		case s.InHardware > s.Flows:
			bad = append(bad, fmt.Sprintf("sample %d: %d in hardware of only %d flows", i, s.InHardware, s.Flows))
		case in.Software && s.InHardware > 0:
			bad = append(bad, fmt.Sprintf("sample %d: %d in hardware on a software datapath", i, s.InHardware))
		}
	}
	if len(bad) > 0 {
		return Insertion{}, fmt.Errorf("insertion timeline: %s", strings.Join(bad, "; "))
	}
	ss, r := in.Samples, in.Rules
	last := ss[len(ss)-1]
	out := Insertion{FinalFlows: last.Flows, FinalInHardware: last.InHardware}

	from := -1
	for i := 0; i+1 < len(ss); i++ {
		if ss[i+1].Flows > ss[i].Flows {
			from = i
			break
		}
	}
	to := len(ss) - 1
	for p := max(from, 0); p+r.PlateauSamples < len(ss); p++ {
		if ss[p].Flows > 0 && stays(ss[p+1:p+1+r.PlateauSamples], ss[p].Flows, r.PlateauGrowth) {
			out.Plateau, out.PlateauAt, out.PlateauFlows = true, ss[p].At, ss[p].Flows
			to = p
			break
		}
	}
	if !out.Plateau && from >= 0 {
		for i := from; i < len(ss); i++ {
			if ss[i].Flows > ss[to].Flows || ss[i].Flows == ss[to].Flows && i < to {
				to = i
			}
		}
	}
	if from >= 0 && to > from {
		out.GrowthFrom, out.GrowthTo = ss[from].At, ss[to].At
		if g := ss[to].Flows - ss[from].Flows; g > 0 {
			out.Grown = g
			out.Rate = float64(g) / (ss[to].At - ss[from].At).Seconds()
		}
	}
	out.BelowTarget = out.Plateau && belowTarget(ss, in.Target, r.PlateauGrowth)

	out.HardwareNever = true
	if last.Flows > 0 {
		need := r.HardwareShare * float64(last.Flows)
		for _, s := range ss {
			if float64(s.InHardware) >= need {
				out.HardwareAt, out.HardwareNever = s.At, false
				break
			}
		}
	}
	out.Statement = out.statement(in)
	return out, nil
}

// belowTarget says whether the table never came within growth of target:
// a plateau read a little before the last entries arrived (the lab's
// conntrack table: growth under 1 % per read from 9860, then 9979 of 10000)
// is no stop below N.
func belowTarget(ss []InsertionSample, target int, growth float64) bool {
	most := 0
	for _, s := range ss {
		most = max(most, s.Flows)
	}
	return float64(most) < float64(target)*(1-growth)
}

// stays says whether every count is below base × (1 + growth).
func stays(next []InsertionSample, base int, growth float64) bool {
	bound := float64(base) * (1 + growth)
	for _, s := range next {
		if float64(s.Flows) >= bound {
			return false
		}
	}
	return true
}

func (o Insertion) statement(in InsertionInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d flows at the last sample", o.FinalFlows, in.Target)
	switch {
	case o.Grown <= 0:
		b.WriteString("; the count did not grow")
	default:
		fmt.Fprintf(&b, "; inserted at %.0f rules/s (%d flows from %s to %s)", math.Round(o.Rate), o.Grown, secs(o.GrowthFrom), secs(o.GrowthTo))
	}
	switch {
	case o.BelowTarget:
		fmt.Fprintf(&b, "; growth stopped at %d flows (%s), below the target %d", o.PlateauFlows, secs(o.PlateauAt), in.Target)
	case o.Plateau:
		fmt.Fprintf(&b, "; growth stopped at %d flows (%s)", o.PlateauFlows, secs(o.PlateauAt))
	case o.Grown > 0:
		fmt.Fprintf(&b, "; still growing at the last sample (%s)", secs(in.Samples[len(in.Samples)-1].At))
	}
	share := fmt.Sprintf("%.0f %%", in.Rules.HardwareShare*100)
	switch {
	case in.Software:
		fmt.Fprintf(&b, "; in hardware: never %s (software datapath: none in hardware by construction)", share)
	case o.FinalFlows == 0:
		b.WriteString("; in hardware: nothing to offload (no flows at the last sample)")
	case o.HardwareNever:
		fmt.Fprintf(&b, "; in hardware: never %s (%d of %d at the last sample)", share, o.FinalInHardware, o.FinalFlows)
	default:
		fmt.Fprintf(&b, "; in hardware: %s of the final count after %s", share, secs(o.HardwareAt))
	}
	return b.String()
}

// secs writes d in seconds with millisecond precision.
func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
