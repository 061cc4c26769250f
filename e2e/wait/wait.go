// Package wait holds the harness's one poll loop (Poll over an Interval,
// terminal states that stop it at once) and the context-aware sleep every
// poll and retry loop uses.
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
