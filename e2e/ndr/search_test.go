package ndr

import (
	"context"
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// curve is a path that loses nothing up to capBps and, above it, the share
// of the offered rate it cannot carry; the sender reaches at most senderBps.
func curve(capBps, senderBps float64) TrialFunc {
	return func(_ context.Context, rate float64) (Outcome, error) {
		off := rate
		if rate == 0 || rate > senderBps {
			off = senderBps
		}
		del := math.Min(off, capBps)
		return Outcome{OfferedBps: off, DeliveredBps: del, LossPercent: 100 * (off - del) / off}, nil
	}
}

// checkInvariants holds for every search: the trial budget, a found rate
// that passed a verification trial at exactly that rate, and rate 0 when
// nothing was found.
func checkInvariants(t *testing.T, c Config, r Result) {
	t.Helper()
	if len(r.Trials) > c.MaxTrials {
		t.Errorf("%d trials, budget %d", len(r.Trials), c.MaxTrials)
	}
	for i, tr := range r.Trials {
		if tr.N != i+1 {
			t.Errorf("trial %d numbered %d", i+1, tr.N)
		}
	}
	if r.StopReason == "" {
		t.Error("no stop reason")
	}
	if !r.Found {
		if r.RateBps != 0 || r.Verified != nil {
			t.Errorf("not found but rate %v verified %v", r.RateBps, r.Verified)
		}
		return
	}
	last := r.Trials[len(r.Trials)-1]
	if last.Phase != PhaseVerify || !last.Pass || last.RateBps != r.RateBps || r.Verified == nil || r.Verified.N != last.N {
		t.Errorf("found %v but the last trial is %+v", r.RateBps, last)
	}
	if last.LossPercent > c.LossPercent {
		t.Errorf("verified with loss %v above %v", last.LossPercent, c.LossPercent)
	}
}

func TestMonotoneCurveFindsTheCapacity(t *testing.T) {
	c := Config{ResolutionBps: 10e6, MaxTrials: 20}
	r, err := Search(context.Background(), c, curve(3e9, 8e9))
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, c, r)
	if !r.Found || r.RateBps > 3e9 || r.RateBps < 3e9-10e6 {
		t.Fatalf("found %v %v, want within 10 Mbit/s below 3 Gbit/s; %s", r.Found, r.RateBps, r.StopReason)
	}
	if r.UpperBps != 8e9 || r.Trials[0].Phase != PhaseUnlimited || r.Trials[0].RateBps != 0 {
		t.Errorf("upper bound %v from %+v, want the unlimited trial's 8e9", r.UpperBps, r.Trials[0])
	}
	// TST009: the first probe is the rate the unlimited trial delivered.
	if r.Trials[1].RateBps != 3e9 {
		t.Errorf("first probe at %v, want the delivered 3e9", r.Trials[1].RateBps)
	}
	if !strings.Contains(r.StopReason, "resolution reached") {
		t.Errorf("stop reason %q", r.StopReason)
	}
	if r.FinalUpperBps-r.FinalLowerBps > c.ResolutionBps {
		t.Errorf("final bounds %v..%v wider than the resolution", r.FinalLowerBps, r.FinalUpperBps)
	}
}

func TestPDRAcceptsTheConfiguredLoss(t *testing.T) {
	// capacity 1 Gbit/s: offered 1.004 Gbit/s loses 0.4 %, within 0.5 %.
	c := Config{LossPercent: 0.5, ResolutionBps: 1e6, MaxTrials: 30}
	r, _ := Search(context.Background(), c, curve(1e9, 4e9))
	checkInvariants(t, c, r)
	want := 1e9 / (1 - 0.005) // highest offered rate with loss <= 0.5 %
	if !r.Found || r.RateBps > want || r.RateBps < want-1e6 || r.RateBps <= 1e9 {
		t.Fatalf("PDR %v, want within 1 Mbit/s below %v", r.RateBps, want)
	}
}

func TestLosslessAtTheSendersMaximumIsBoundBySender(t *testing.T) {
	c := Config{ResolutionBps: 1e6, MaxTrials: 5}
	r, _ := Search(context.Background(), c, curve(10e9, 2e9))
	checkInvariants(t, c, r)
	if !r.Found || r.RateBps != 2e9 || len(r.Trials) != 2 {
		t.Fatalf("got %v after %d trials, want 2e9 after unlimited + verify", r.RateBps, len(r.Trials))
	}
	if !strings.Contains(r.StopReason, "limited by the sender's unlimited rate") {
		t.Errorf("stop reason %q does not say the sender bound it", r.StopReason)
	}
}

func TestEveryTrialFailingReportsNoRate(t *testing.T) {
	lossy := func(_ context.Context, rate float64) (Outcome, error) {
		off := rate
		if rate == 0 {
			off = 5e9
		}
		return Outcome{OfferedBps: off, DeliveredBps: off * 0.99, LossPercent: 1}, nil
	}
	c := Config{ResolutionBps: 100e6, MaxTrials: 40}
	r, err := Search(context.Background(), c, lossy)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, c, r)
	if r.Found || r.RateBps != 0 {
		t.Fatalf("found %v from a path that always loses", r.RateBps)
	}
	if !strings.Contains(r.StopReason, "no rate passed") {
		t.Errorf("stop reason %q", r.StopReason)
	}
	for _, tr := range r.Trials {
		if tr.Phase == PhaseVerify || tr.Pass {
			t.Errorf("trial %+v: nothing passes, nothing is verified", tr)
		}
	}
}

func TestTrialBudgetIsRespectedAndVerificationKept(t *testing.T) {
	for budget := 3; budget <= 8; budget++ {
		c := Config{ResolutionBps: 1, MaxTrials: budget} // resolution never reached
		r, _ := Search(context.Background(), c, curve(3e9, 8e9))
		checkInvariants(t, c, r)
		if len(r.Trials) != budget {
			t.Errorf("budget %d: %d trials", budget, len(r.Trials))
		}
		if r.Found && !strings.Contains(r.StopReason, "trial budget") {
			t.Errorf("budget %d: stop reason %q", budget, r.StopReason)
		}
	}
}

func TestNonMonotoneCurveNeverReportsARateThatFailedVerification(t *testing.T) {
	// Loses in a band 2.0–2.5 Gbit/s only on every second visit, and
	// always above 4 Gbit/s: a rate that passed once may fail again.
	visits := map[float64]int{}
	f := func(_ context.Context, rate float64) (Outcome, error) {
		off := rate
		if rate == 0 {
			off = 6e9
		}
		visits[off]++
		loss := 0.0
		switch {
		case off > 4e9:
			loss = 10
		case off >= 2e9 && off <= 2.5e9 && visits[off]%2 == 0:
			loss = 0.1
		}
		return Outcome{OfferedBps: off, DeliveredBps: off * (1 - loss/100), LossPercent: loss}, nil
	}
	c := Config{ResolutionBps: 50e6, MaxTrials: 30}
	r, err := Search(context.Background(), c, f)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, c, r)
	for _, tr := range r.Trials {
		if tr.Phase == PhaseVerify && !tr.Pass && r.Found && r.RateBps >= tr.RateBps {
			t.Errorf("found %v at or above the refuted %v", r.RateBps, tr.RateBps)
		}
	}
	if !r.Found {
		t.Fatalf("nothing found: %s", r.StopReason)
	}
}

func TestNoisyTrialsFoundRateAlwaysVerified(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 300; i++ {
		capBps := 1e9 + rng.Float64()*9e9
		noise := rng.Float64() * 0.3 // chance a trial below capacity loses anyway
		f := func(_ context.Context, rate float64) (Outcome, error) {
			off := rate
			if rate == 0 {
				off = 12e9
			}
			loss := 0.0
			if off > capBps {
				loss = 100 * (off - capBps) / off
			} else if rng.Float64() < noise {
				loss = 0.01
			}
			return Outcome{OfferedBps: off, DeliveredBps: off * (1 - loss/100), LossPercent: loss}, nil
		}
		c := Config{ResolutionBps: 20e6, MaxTrials: 3 + rng.Intn(15)}
		r, err := Search(context.Background(), c, f)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, c, r)
		if r.Found && r.RateBps > capBps {
			t.Fatalf("case %d: found %v above the capacity %v", i, r.RateBps, capBps)
		}
	}
}

func TestSenderShortfallIsNotAPass(t *testing.T) {
	// The sender never exceeds 1 Gbit/s but loses nothing: a probe at
	// 3 Gbit/s that only offered 1 must fail, not pass as "3 Gbit/s lossless".
	short := func(_ context.Context, rate float64) (Outcome, error) {
		off := math.Min(rate, 1e9)
		if rate == 0 {
			off = 1e9
		}
		return Outcome{OfferedBps: off, DeliveredBps: off}, nil
	}
	c := Config{UpperBps: 4e9, ResolutionBps: 10e6, MaxTrials: 20}
	r, _ := Search(context.Background(), c, short)
	checkInvariants(t, c, r)
	if !r.Found || r.RateBps > 1e9/DefaultMinOfferedRatio {
		t.Fatalf("found %v; a rate above what the sender offered is not tested", r.RateBps)
	}
	if r.Trials[0].Pass || !strings.Contains(r.Trials[0].Reason, "offered only") {
		t.Errorf("first probe at the upper bound: %+v", r.Trials[0])
	}
}

func TestNothingDeliveredIsNotAPass(t *testing.T) {
	dead := func(_ context.Context, rate float64) (Outcome, error) {
		return Outcome{OfferedBps: math.Max(rate, 1e9)}, nil // loss 0 but nothing arrived
	}
	c := Config{ResolutionBps: 100e6, MaxTrials: 10}
	r, _ := Search(context.Background(), c, dead)
	checkInvariants(t, c, r)
	if r.Found {
		t.Fatalf("found %v on a path that delivered nothing", r.RateBps)
	}
}

func TestTrialErrorStopsTheSearch(t *testing.T) {
	n := 0
	f := func(ctx context.Context, rate float64) (Outcome, error) {
		n++
		if n == 3 {
			return Outcome{}, errors.New("iperf3 reported: the server is busy")
		}
		return curve(3e9, 8e9)(ctx, rate)
	}
	c := Config{ResolutionBps: 1e6, MaxTrials: 20}
	r, err := Search(context.Background(), c, f)
	if err == nil || !strings.Contains(err.Error(), "server is busy") {
		t.Fatalf("error %v", err)
	}
	checkInvariants(t, c, r)
	if r.Found || len(r.Trials) != 3 || r.Trials[2].Err == "" || !strings.Contains(r.StopReason, "did not measure") {
		t.Fatalf("got %+v", r)
	}
}

func TestCancelledContextStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	f := func(ctx context.Context, rate float64) (Outcome, error) {
		n++
		if n == 2 {
			cancel()
		}
		return curve(3e9, 8e9)(ctx, rate)
	}
	c := Config{ResolutionBps: 1e6, MaxTrials: 20}
	r, err := Search(ctx, c, f)
	if !errors.Is(err, context.Canceled) || r.Found || len(r.Trials) != 2 {
		t.Fatalf("err %v found %v trials %d", err, r.Found, len(r.Trials))
	}
}

func TestConfiguredUpperBound(t *testing.T) {
	c := Config{UpperBps: 2e9, ResolutionBps: 1e6, MaxTrials: 4}
	r, _ := Search(context.Background(), c, curve(3e9, 8e9))
	checkInvariants(t, c, r)
	if !r.Found || r.RateBps != 2e9 || r.Trials[0].Phase != PhaseSearch || r.Trials[0].RateBps != 2e9 {
		t.Fatalf("got %v, trials %+v", r.RateBps, r.Trials)
	}
	if !strings.Contains(r.StopReason, "configured upper bound") {
		t.Errorf("stop reason %q", r.StopReason)
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	err := Config{LossPercent: -1, ResolutionBps: 0, MaxTrials: 1, LowerBps: 5, UpperBps: 3, MinOfferedRatio: 2}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"loss percent", "resolution", "bounds", "max trials must be >= 2", "min offered ratio"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
	if err := (Config{ResolutionBps: 1, MaxTrials: 2}).Validate(); err == nil || !strings.Contains(err.Error(), ">= 3") {
		t.Errorf("unlimited start needs 3 trials: %v", err)
	}
	if err := (Config{UpperBps: math.NaN(), ResolutionPercent: 1, MaxTrials: 5}).Validate(); err == nil {
		t.Error("a NaN upper bound was accepted")
	}
	if err := (Config{UpperBps: math.Inf(1), ResolutionPercent: 1, MaxTrials: 5}).Validate(); err == nil {
		t.Error("an infinite upper bound was accepted")
	}
	if _, err := Search(context.Background(), Config{}, curve(1, 1)); err == nil {
		t.Error("Search ran with an invalid config")
	}
}

func TestResolutionAsAShareOfTheUpperBound(t *testing.T) {
	c := Config{ResolutionPercent: 1, MaxTrials: 30}
	r, err := Search(context.Background(), c, curve(3e9, 8e9))
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, c, r)
	if r.Config.ResolutionBps != 80e6 {
		t.Errorf("resolution %v, want 1 %% of the 8e9 upper bound", r.Config.ResolutionBps)
	}
	if !r.Found || r.RateBps > 3e9 || r.RateBps < 3e9-80e6 {
		t.Errorf("found %v", r.RateBps)
	}
	if err := (Config{ResolutionPercent: 100, MaxTrials: 5}).Validate(); err == nil {
		t.Error("a resolution of 100 % of the bound was accepted")
	}
}

// FuzzSearch: any loss curve (random per trial, from the fuzzer's seed),
// budget, criterion and bounds keep the search's promises.
func FuzzSearch(f *testing.F) {
	f.Add(int64(1), uint8(5), 0.0, 0.0, 1.0)
	f.Add(int64(7), uint8(12), 0.5, 3e9, 0.1)
	f.Add(int64(42), uint8(3), 0.0, 0.0, 50.0)
	f.Add(int64(3), uint8(9), 0.0, math.NaN(), 1.0)
	f.Fuzz(func(t *testing.T, seed int64, budget uint8, lossPct, upper, resPct float64) {
		c := Config{LossPercent: lossPct, UpperBps: upper, ResolutionPercent: resPct, MaxTrials: int(budget % 40)}
		rng := rand.New(rand.NewSource(seed))
		trial := func(_ context.Context, rate float64) (Outcome, error) {
			off := rate
			if rate == 0 {
				off = 1e9 + rng.Float64()*9e9
			}
			if rng.Intn(8) == 0 { // a sender that falls short
				off *= rng.Float64()
			}
			loss := 0.0
			if rng.Intn(3) == 0 {
				loss = rng.Float64() * 5
			}
			return Outcome{OfferedBps: off, DeliveredBps: off * (1 - loss/100), LossPercent: loss}, nil
		}
		r, err := Search(context.Background(), c, trial)
		if err != nil {
			if c.Validate() == nil {
				t.Fatalf("valid config %+v failed: %v", c, err)
			}
			if len(r.Trials) != 0 || r.Found {
				t.Fatalf("invalid config ran trials: %+v", r)
			}
			return
		}
		checkInvariants(t, c, r)
		if r.Found && (r.Verified.OfferedBps < DefaultMinOfferedRatio*r.RateBps || r.Verified.DeliveredBps <= 0) {
			t.Fatalf("verified %+v at %v", r.Verified, r.RateBps)
		}
	})
}
