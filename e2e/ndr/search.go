// Package ndr is the zero-loss search: RFC 2544 section 26.1 "throughput"
// (the highest offered rate at which no frame is lost) as ETSI GS NFV-TST
// 009 runs it, a binary search between bounds with a final verification
// trial at the rate found, and the same search with a loss ratio above zero
// (TST009's "partial drop rate", PDR).
//
// The search is pure: a trial is a function the caller injects (the harness
// runs iperf3 between the guests; the tests run curves). It never reports a
// rate that did not pass a verification trial: a search that finds none
// reports rate 0 with Found false and the reason.
//
// Search(ctx, Config, TrialFunc) takes its upper bound from an unlimited first
// trial unless the Config gives one; the trial budget and the resolution are
// its stop rules.
package ndr

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Config bounds one search. Rates are bit/s of payload, as iperf3 -b counts.
type Config struct {
	// LossPercent is the criterion: a trial passes when its loss is at most
	// this (0 = no drop, NDR; 0.5 = TST009's usual PDR).
	LossPercent float64
	// UpperBps is the highest rate tried. 0 = the first trial runs
	// unlimited (iperf3 -b 0) and the rate its sender reached is the upper
	// bound, the rate it delivered the first rate tried.
	UpperBps float64
	// LowerBps is the lowest rate the search considers (normally 0); it is
	// never reported unless a trial passed at it.
	LowerBps float64
	// ResolutionBps stops the search when the rate that failed and the rate
	// that passed are at most this far apart. When 0, ResolutionPercent of
	// the upper bound (known after the unlimited trial) is used.
	ResolutionBps     float64
	ResolutionPercent float64
	// MaxTrials bounds every trial of the search, the unlimited one and the
	// verifications included.
	MaxTrials int
	// MinOfferedRatio: a trial whose sender reached less than this share of
	// the requested rate fails (the rate was not offered, so its loss says
	// nothing about it). 0 = DefaultMinOfferedRatio.
	MinOfferedRatio float64
}

// DefaultMinOfferedRatio is the share of a trial's requested rate its
// sender must reach for the trial to count.
const DefaultMinOfferedRatio = 0.95

// Validate lists every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if math.IsNaN(c.LossPercent) || c.LossPercent < 0 || c.LossPercent >= 100 {
		errs = append(errs, fmt.Errorf("loss percent must be in [0, 100), got %v", c.LossPercent))
	}
	switch {
	case c.ResolutionBps < 0 || math.IsNaN(c.ResolutionBps):
		errs = append(errs, fmt.Errorf("resolution must be > 0 bit/s, got %v", c.ResolutionBps))
	case c.ResolutionBps == 0 && !(c.ResolutionPercent > 0 && c.ResolutionPercent < 100):
		errs = append(errs, fmt.Errorf("resolution must be > 0 bit/s or a percentage of the upper bound in (0, 100), got %v bit/s and %v%%", c.ResolutionBps, c.ResolutionPercent))
	}
	if !finite(c.LowerBps, c.UpperBps, c.ResolutionBps, c.ResolutionPercent, c.MinOfferedRatio) {
		errs = append(errs, fmt.Errorf("bounds, resolution and offered ratio must be finite numbers, got lower %v, upper %v, resolution %v bit/s / %v%%, ratio %v",
			c.LowerBps, c.UpperBps, c.ResolutionBps, c.ResolutionPercent, c.MinOfferedRatio))
	} else if c.LowerBps < 0 || c.UpperBps < 0 || (c.UpperBps > 0 && c.UpperBps <= c.LowerBps) {
		errs = append(errs, fmt.Errorf("bounds must satisfy 0 <= lower < upper (upper 0 = from an unlimited trial), got lower %v, upper %v", c.LowerBps, c.UpperBps))
	}
	if min := c.minTrials(); c.MaxTrials < min {
		errs = append(errs, fmt.Errorf("max trials must be >= %d (one probe and one verification%s), got %d", min, map[bool]string{true: " after the unlimited trial", false: ""}[c.UpperBps == 0], c.MaxTrials))
	}
	if c.MinOfferedRatio < 0 || c.MinOfferedRatio > 1 {
		errs = append(errs, fmt.Errorf("min offered ratio must be in [0, 1], got %v", c.MinOfferedRatio))
	}
	return errors.Join(errs...)
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func (c Config) minTrials() int {
	if c.UpperBps == 0 {
		return 3
	}
	return 2
}

// Outcome is what one trial measured.
type Outcome struct {
	OfferedBps   float64 // the sender's rate
	DeliveredBps float64 // the receiver's rate
	LossPercent  float64 // share of datagrams sent that did not arrive, 0..100
}

// TrialFunc runs one trial at rateBps (0 = unlimited). An error means the
// trial did not measure (the tool failed), not that it lost packets: the
// search stops on it.
type TrialFunc func(ctx context.Context, rateBps float64) (Outcome, error)

// Phase says why a trial ran.
type Phase string

// The phases of a search.
const (
	PhaseUnlimited Phase = "unlimited" // -b 0: sets the upper bound
	PhaseSearch    Phase = "search"    // a binary-search probe
	PhaseVerify    Phase = "verify"    // TST009's confirmation at the rate found
)

// Trial is one trial of a search.
type Trial struct {
	N       int     // 1-based
	Phase   Phase   //
	RateBps float64 // requested; 0 = unlimited
	Outcome
	Pass   bool
	Reason string // why it passed or failed
	Err    string // the trial did not measure
}

// Result is a finished (or stopped) search.
type Result struct {
	Config Config
	// Found is true only when a verification trial passed; RateBps is that
	// trial's requested rate. Otherwise RateBps is 0.
	Found   bool
	RateBps float64
	// Verified is the verification trial that passed (nil unless Found).
	Verified *Trial
	// LowerBps and UpperBps are the starting bounds (UpperBps from the
	// unlimited trial when Config.UpperBps was 0).
	LowerBps, UpperBps float64
	// FinalLowerBps is the highest rate that passed and was not refuted by
	// a failed verification (LowerBps if none); FinalUpperBps the lowest
	// rate that failed (UpperBps if none).
	FinalLowerBps, FinalUpperBps float64
	Trials                       []Trial
	StopReason                   string
}

// Search runs the binary search with verification. The error is non-nil
// when the config is invalid, a trial errored or ctx ended; the Result then
// still carries every trial run and says why it stopped.
func Search(ctx context.Context, c Config, trial TrialFunc) (Result, error) {
	if c.MinOfferedRatio == 0 {
		c.MinOfferedRatio = DefaultMinOfferedRatio
	}
	res := Result{Config: c, LowerBps: c.LowerBps, UpperBps: c.UpperBps}
	if err := c.Validate(); err != nil {
		res.StopReason = "invalid search config: " + err.Error()
		return res, err
	}
	s := &state{c: c, trial: trial, res: &res, lo: c.LowerBps, hi: c.UpperBps}
	err := s.run(ctx)
	res.Config = s.c
	res.FinalLowerBps, res.FinalUpperBps = s.lo, s.hi
	if !res.Found {
		res.RateBps, res.Verified = 0, nil
	}
	return res, err
}

type state struct {
	c        Config
	trial    TrialFunc
	res      *Result
	lo, hi   float64
	loPassed bool // lo is a rate that passed (not only the configured floor)
}

func (s *state) left() int { return s.c.MaxTrials - len(s.res.Trials) }

func (s *state) do(ctx context.Context, phase Phase, rate float64) (Trial, error) {
	t := Trial{N: len(s.res.Trials) + 1, Phase: phase, RateBps: rate}
	if err := ctx.Err(); err != nil {
		return t, err
	}
	o, err := s.trial(ctx, rate)
	t.Outcome = o
	if err != nil {
		t.Err = err.Error()
		t.Reason = "the trial did not measure"
		s.res.Trials = append(s.res.Trials, t)
		return t, fmt.Errorf("trial %d (%s at %s): %w", t.N, phase, rateWord(rate), err)
	}
	t.Pass, t.Reason = s.judge(rate, o)
	s.res.Trials = append(s.res.Trials, t)
	return t, nil
}

// judge applies the criterion: something arrived, the sender offered the
// requested rate (unlimited: whatever it reached), and loss within the ratio.
func (s *state) judge(rate float64, o Outcome) (bool, string) {
	switch {
	case math.IsNaN(o.LossPercent) || math.IsNaN(o.OfferedBps) || math.IsNaN(o.DeliveredBps):
		return false, "the trial's numbers are not numbers"
	case o.DeliveredBps <= 0:
		return false, "nothing was delivered"
	case rate > 0 && o.OfferedBps < s.c.MinOfferedRatio*rate:
		return false, fmt.Sprintf("the sender offered only %.1f%% of the requested rate (below %.0f%%): the rate was not tested", 100*o.OfferedBps/rate, 100*s.c.MinOfferedRatio)
	case o.LossPercent > s.c.LossPercent:
		return false, fmt.Sprintf("loss %.4g%% above %.4g%%", o.LossPercent, s.c.LossPercent)
	}
	return true, fmt.Sprintf("loss %.4g%% within %.4g%%", o.LossPercent, s.c.LossPercent)
}

func (s *state) stop(reason string, args ...any) { s.res.StopReason = fmt.Sprintf(reason, args...) }

func (s *state) run(ctx context.Context) error {
	next := s.hi
	bound := "the configured upper bound"
	if s.c.UpperBps == 0 {
		t, err := s.do(ctx, PhaseUnlimited, 0)
		if err != nil {
			s.stop("the unlimited trial did not measure: %s", t.Err)
			return err
		}
		s.hi, s.res.UpperBps = t.OfferedBps, t.OfferedBps
		bound = "the sender's unlimited rate"
		if s.hi <= s.lo {
			s.stop("the unlimited trial offered %s, not above the lower bound %s: nothing to search", rateWord(t.OfferedBps), rateWord(s.lo))
			return nil
		}
		if t.Pass {
			// Lossless at the sender's maximum: no higher rate can be
			// offered, so the search is bound by the sender; verify it.
			s.lo, s.loPassed = s.hi, true
		} else {
			next = t.DeliveredBps // TST009: start at the rate that got through
			if !(next > s.lo && next < s.hi) {
				next = (s.lo + s.hi) / 2
			}
		}
	}
	if s.c.ResolutionBps == 0 {
		s.c.ResolutionBps = s.c.ResolutionPercent / 100 * s.res.UpperBps
	}
	for {
		for s.hi-s.lo > s.c.ResolutionBps && s.left() > 1 {
			t, err := s.do(ctx, PhaseSearch, next)
			if err != nil {
				s.stop("trial %d did not measure: %s", t.N, t.Err)
				return err
			}
			if t.Pass {
				s.lo, s.loPassed = next, true
			} else {
				s.hi = next
			}
			next = (s.lo + s.hi) / 2
		}
		why := fmt.Sprintf("resolution reached (%s between the rate that passed and the rate that failed, at most %s)", rateWord(s.hi-s.lo), rateWord(s.c.ResolutionBps))
		if s.hi-s.lo > s.c.ResolutionBps {
			why = fmt.Sprintf("trial budget: %d of %d trials used, the last kept for verification", len(s.res.Trials), s.c.MaxTrials)
		}
		if !s.loPassed {
			s.stop("no rate passed (loss above %.4g%% or not offered at every rate tried down to %s); %s", s.c.LossPercent, rateWord(s.hi), why)
			return nil
		}
		if s.left() < 1 {
			s.stop("trial budget: %d trials used and none left to verify %s", len(s.res.Trials), rateWord(s.lo))
			return nil
		}
		t, err := s.do(ctx, PhaseVerify, s.lo)
		if err != nil {
			s.stop("verification trial %d did not measure: %s", t.N, t.Err)
			return err
		}
		if t.Pass {
			s.res.Found, s.res.RateBps = true, s.lo
			v := t
			s.res.Verified = &v
			if s.lo >= s.res.UpperBps {
				s.stop("%s passed and its verification passed: the rate found is limited by %s, the path may carry more", rateWord(s.lo), bound)
			} else {
				s.stop("%s; verified by trial %d", why, t.N)
			}
			return nil
		}
		// Refuted: the rate failed when tried again (noise or a
		// non-monotone loss curve). It is an upper bound now; fall back to
		// the best rate below it that passed, and search again.
		s.hi = s.lo
		s.lo, s.loPassed = s.c.LowerBps, false
		for _, p := range s.res.Trials {
			if p.Pass && p.Phase != PhaseVerify && p.RateBps > 0 && p.RateBps < s.hi && p.RateBps > s.lo {
				s.lo, s.loPassed = p.RateBps, true
			}
		}
		next = (s.lo + s.hi) / 2
		if s.left() < 1 {
			s.stop("verification trial %d at %s failed and no trial is left", t.N, rateWord(t.RateBps))
			return nil
		}
	}
}

func rateWord(bps float64) string {
	if bps == 0 {
		return "unlimited"
	}
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%.3g Gbit/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.3g Mbit/s", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%.3g kbit/s", bps/1e3)
	}
	return fmt.Sprintf("%.3g bit/s", bps)
}
