package wait

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Poll calls probe at once and then iv.Poll after each call returns, until
// probe reports done (with a nil error), returns a terminal error (marked
// with Stop), or iv.Timeout has passed since Poll began.
//
// probe gets a context that ends at the timeout, so a probe that blocks is
// cut there. An error probe returns unmarked means "not yet": polling goes
// on and the error is kept as the last one. Poll never sleeps into its
// deadline: when the next probe could not start before it, Poll gives up
// then.
//
// Poll returns nil on done; a terminal error as probe returned it, without
// the Stop mark; and otherwise a *PollError: TimedOut when iv.Timeout ended
// the poll (it unwraps to context.DeadlineExceeded), else the caller's ctx
// ended (it unwraps to ctx.Err(), e.g. context.Canceled, and returns as soon
// as the probe or the sleep in progress sees that). Either way it carries
// the number of probes and the last error, so a caller that has its own
// wording for a failed wait can write it from them.
func Poll(ctx context.Context, iv Interval, what string, probe func(ctx context.Context) (done bool, err error)) error {
	if iv.Timeout <= 0 || iv.Poll <= 0 {
		return fmt.Errorf("%s: a poll needs a timeout and a poll interval > 0, got %s and %s", what, iv.Timeout, iv.Poll)
	}
	deadline := time.Now().Add(iv.Timeout)
	pctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	pe := &PollError{What: what, Interval: iv}
	for {
		pe.Attempts++
		done, err := probe(pctx)
		if err == nil && done {
			return nil
		}
		var s stopError
		if errors.As(err, &s) {
			if err == error(s) {
				return s.err
			}
			return err
		}
		if err != nil {
			pe.Last = err
		}
		if ctx.Err() != nil {
			pe.Err = ctx.Err()
			return pe
		}
		if !time.Now().Add(iv.Poll).Before(deadline) {
			pe.Err, pe.TimedOut = context.DeadlineExceeded, true
			return pe
		}
		if err := Sleep(ctx, iv.Poll); err != nil {
			pe.Err = err
			return pe
		}
	}
}

// PollError is a poll that ended without done and without a terminal error.
type PollError struct {
	What     string
	Interval Interval
	Attempts int   // probes called
	Last     error // the last error a probe returned; nil if none did
	// TimedOut is true when Interval.Timeout ended the poll (Err is then
	// context.DeadlineExceeded); false when the caller's context ended it
	// (Err is that context's Err()).
	TimedOut bool
	Err      error
}

func (e *PollError) Error() string {
	var s string
	if e.TimedOut {
		s = fmt.Sprintf("%s: gave up after %s (%s, every %s): %v", e.What, e.Interval.Timeout, attempts(e.Attempts), e.Interval.Poll, e.Err)
	} else {
		s = fmt.Sprintf("%s: stopped after %s: %v", e.What, attempts(e.Attempts), e.Err)
	}
	if e.Last != nil {
		s += fmt.Sprintf(" (last error: %v)", e.Last)
	}
	return s
}

// Unwrap gives both why the poll ended and the last error.
func (e *PollError) Unwrap() []error {
	if e.Last == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Last}
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// Stop marks err as terminal: returned by a probe, it ends Poll at once
// with err (a server in ERROR, a refused host key). Stop(nil) is nil. A
// probe may wrap a stopped error further; Poll then returns the probe's
// error as it is.
func Stop(err error) error {
	if err == nil {
		return nil
	}
	return stopError{err}
}

type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }
