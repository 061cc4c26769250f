// Package wait holds the harness's one poll loop (Poll over an Interval,
// terminal states that stop it at once) and the context-aware sleep every
// poll and retry loop uses.
//
// Poll probes at once, then waits the interval's poll after each answer, until
// done, a terminal state marked with Stop (a server in ERROR, a refused host
// key, an iperf3 server that exited) or the timeout; the probe's context ends
// at the timeout, and the caller's cancel is not a timeout. A PollError
// carries the attempts and the last error, so the SSH dial keeps its "not
// reachable within … (N attempts, every …)" wording. Its users: the fixtures'
// waits (servers and ports ACTIVE, deletes), remote.Dial's ready wait,
// iperf3's waitListening. Sleep serves back-offs and sample spacing;
// e2e/cloud's API retry keeps its own loop, since it returns the last
// response, honours Retry-After and runs on an injected clock.
package wait

import (
	"context"
	"time"
)

// Interval is a named wait: how long at most, how often to look. The
// config file names them under `intervals:` (config.Interval is this type;
// the yaml keys are its).
type Interval struct {
	Timeout time.Duration `yaml:"timeout"`
	Poll    time.Duration `yaml:"poll"`
}

// Sleep waits for d, or until ctx is done (then it returns ctx.Err()). A
// non-positive d only reports whether ctx is already done.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
