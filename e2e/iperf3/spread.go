package iperf3

import (
	"fmt"
	"time"
)

// A profile split over several processes (SplitStreams) is summed as if
// they ran at once, but each process begins its test when its own set-up is
// done (its control connection, its parameters, its streams): one after
// another, and later on a path the first ones already fill. Each then runs
// for -O + -t, so the spread of the clients' ends is the spread of their
// tests' starts, give or take their final exchanges. The harness clocks each
// client's end as its command returns (ProcessRun.ClientEnded).

// SpreadWarnShare is the share of -t past which EndSpreadWarning speaks: a
// split's sum then counts, for a tenth of the window or more, streams that
// were not sending together.
const SpreadWarnShare = 0.10

// EndSpread is the time between the first and the last of the clients to
// end, among those clocked; 0 with fewer than two.
func EndSpread(prs []ProcessRun) time.Duration {
	var first, last time.Time
	n := 0
	for _, pr := range prs {
		t := pr.ClientEnded
		if t.IsZero() {
			continue
		}
		if n == 0 || t.Before(first) {
			first = t
		}
		if n == 0 || t.After(last) {
			last = t
		}
		n++
	}
	if n < 2 {
		return 0
	}
	return last.Sub(first)
}

// EndSpreadWarning says that prs did not run at once when their clients'
// ends are more than SpreadWarnShare of the test's duration (-t) apart; ""
// otherwise.
func EndSpreadWarning(prs []ProcessRun, duration time.Duration) string {
	s := EndSpread(prs)
	if s <= 0 || duration <= 0 || float64(s) <= SpreadWarnShare*float64(duration) {
		return ""
	}
	return fmt.Sprintf("the %d iperf3 processes did not run at once: their clients ended %s apart, %.0f %% of the %s test each ran, so the summed rate counts their streams as concurrent for a window in which up to %s some of them were not sending yet or any more (each process of a split begins its test once its own set-up is done)",
		len(prs), s.Round(time.Millisecond), 100*s.Seconds()/duration.Seconds(), duration, s.Round(time.Millisecond))
}
