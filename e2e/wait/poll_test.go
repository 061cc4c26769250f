package wait

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Generous bounds: a poll that should end "at once" or "promptly" must end
// well within this; nothing asserts speed beyond it.
const sanity = 10 * time.Second

func TestPollDoneAtOnce(t *testing.T) {
	calls := 0
	err := Poll(context.Background(), Interval{Timeout: time.Hour, Poll: time.Hour}, "thing", func(ctx context.Context) (bool, error) {
		calls++
		return true, nil
	})
	if err != nil || calls != 1 {
		t.Fatalf("Poll = %v after %d probes, want nil after 1", err, calls)
	}
}

func TestPollDoneAfterSomePolls(t *testing.T) {
	calls := 0
	err := Poll(context.Background(), Interval{Timeout: time.Hour, Poll: time.Millisecond}, "thing", func(ctx context.Context) (bool, error) {
		calls++
		switch {
		case calls < 3:
			return false, fmt.Errorf("not yet (%d)", calls) // kept as the last error, polling goes on
		case calls < 5:
			return false, nil
		}
		return true, nil
	})
	if err != nil || calls != 5 {
		t.Fatalf("Poll = %v after %d probes, want nil after 5", err, calls)
	}
}

// A done with an error is not done.
func TestPollDoneNeedsNilError(t *testing.T) {
	calls := 0
	err := Poll(context.Background(), Interval{Timeout: time.Hour, Poll: time.Millisecond}, "thing", func(ctx context.Context) (bool, error) {
		calls++
		if calls == 1 {
			return true, errors.New("half an answer")
		}
		return true, nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("Poll = %v after %d probes, want nil after 2", err, calls)
	}
}

func TestPollStopEndsAtOnce(t *testing.T) {
	inError := errors.New("server vm1 is in ERROR: fault 500: No valid host")
	calls := 0
	err := Poll(context.Background(), Interval{Timeout: time.Hour, Poll: time.Hour}, "wait for servers ACTIVE", func(ctx context.Context) (bool, error) {
		calls++
		return false, Stop(inError)
	})
	if err != inError || calls != 1 {
		t.Fatalf("Poll = %v after %d probes, want the terminal error itself after 1", err, calls)
	}

	// Wrapped further by the probe: returned as the probe wrote it.
	err = Poll(context.Background(), Interval{Timeout: time.Hour, Poll: time.Hour}, "dial", func(ctx context.Context) (bool, error) {
		return false, fmt.Errorf("hop 2: %w", Stop(inError))
	})
	if !errors.Is(err, inError) || err.Error() != "hop 2: "+inError.Error() {
		t.Fatalf("Poll = %v, want the probe's wrapped terminal error", err)
	}

	if Stop(nil) != nil {
		t.Error("Stop(nil) is not nil")
	}
}

func TestPollTimeoutNamesWhatTimeoutAttemptsAndLastError(t *testing.T) {
	building := errors.New("vm1 BUILD/spawning")
	calls := 0
	iv := Interval{Timeout: 30 * time.Millisecond, Poll: time.Millisecond}
	start := time.Now()
	err := Poll(context.Background(), iv, "wait for servers ACTIVE", func(ctx context.Context) (bool, error) {
		calls++
		if calls == 1 {
			return false, errors.New("first look")
		}
		return false, building
	})
	if took := time.Since(start); took > sanity {
		t.Errorf("Poll took %s", took)
	}
	var pe *PollError
	if !errors.As(err, &pe) || !pe.TimedOut {
		t.Fatalf("Poll = %v, want a *PollError that timed out", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, building) || errors.Is(err, context.Canceled) {
		t.Errorf("Poll = %v: want it to unwrap to DeadlineExceeded and the last error, not Canceled", err)
	}
	if pe.Attempts != calls || calls < 2 {
		t.Errorf("Attempts = %d, probes = %d", pe.Attempts, calls)
	}
	want := fmt.Sprintf("wait for servers ACTIVE: gave up after 30ms (%d attempts, every 1ms): context deadline exceeded (last error: vm1 BUILD/spawning)", calls)
	if err.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
}

// A probe that answers "not yet" without an error: the timeout says so
// without a last error.
func TestPollTimeoutWithoutError(t *testing.T) {
	err := Poll(context.Background(), Interval{Timeout: time.Millisecond, Poll: time.Millisecond}, "thing", func(ctx context.Context) (bool, error) {
		return false, nil
	})
	if want := "thing: gave up after 1ms (1 attempt, every 1ms): context deadline exceeded"; err == nil || err.Error() != want {
		t.Fatalf("Poll = %v, want %q", err, want)
	}
}

// The caller's cancel is not a timeout: the probe that cancels is the last.
func TestPollCallerCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	err := Poll(ctx, Interval{Timeout: time.Hour, Poll: time.Millisecond}, "delete port p1", func(ctx context.Context) (bool, error) {
		calls++
		if calls == 3 {
			cancel()
		}
		return false, errors.New("port p1 still exists")
	})
	var pe *PollError
	if !errors.As(err, &pe) || pe.TimedOut || !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll = %v, want a cancelled (not timed out) *PollError", err)
	}
	if want := "delete port p1: stopped after 3 attempts: context canceled (last error: port p1 still exists)"; err.Error() != want || calls != 3 {
		t.Errorf("after %d probes:\n got %s\nwant %s", calls, err, want)
	}

	// Already cancelled: one probe (it sees the dead context), then out.
	calls = 0
	err = Poll(ctx, Interval{Timeout: time.Hour, Poll: time.Hour}, "thing", func(ctx context.Context) (bool, error) {
		calls++
		return false, ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("Poll on a cancelled context = %v after %d probes", err, calls)
	}
}

// A cancel during the sleep between probes ends the poll then, not after
// the hour's poll interval.
func TestPollCallerCancelDuringSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	probed := make(chan struct{}, 1)
	res := make(chan error, 1)
	go func() {
		res <- Poll(ctx, Interval{Timeout: 2 * time.Hour, Poll: time.Hour}, "thing", func(ctx context.Context) (bool, error) {
			probed <- struct{}{}
			return false, nil
		})
	}()
	<-probed
	cancel()
	select {
	case err := <-res:
		if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "gave up after") {
			t.Errorf("Poll = %v, want a cancel, not a timeout", err)
		}
	case <-time.After(sanity):
		t.Fatal("Poll did not return after its context was cancelled")
	}
}

// A probe that blocks past the timeout gets a context that ends there.
func TestPollCutsABlockingProbe(t *testing.T) {
	calls := 0
	res := make(chan error, 1)
	go func() {
		res <- Poll(context.Background(), Interval{Timeout: 20 * time.Millisecond, Poll: time.Millisecond}, "thing", func(ctx context.Context) (bool, error) {
			calls++
			if _, ok := ctx.Deadline(); !ok {
				return false, Stop(errors.New("the probe's context has no deadline"))
			}
			<-ctx.Done()
			return false, fmt.Errorf("look cut short: %w", ctx.Err())
		})
	}()
	select {
	case err := <-res:
		var pe *PollError
		if !errors.As(err, &pe) || !pe.TimedOut || !errors.Is(err, context.DeadlineExceeded) || calls != 1 {
			t.Fatalf("Poll = %v after %d probes, want a timeout after 1", err, calls)
		}
		if !strings.Contains(err.Error(), "last error: look cut short: context deadline exceeded") {
			t.Errorf("Poll = %v, want the cut probe's error as the last", err)
		}
	case <-time.After(sanity):
		t.Fatal("a blocking probe's context did not end at the timeout")
	}
}

func TestPollRejectsAnEmptyInterval(t *testing.T) {
	for _, iv := range []Interval{{}, {Timeout: time.Second}, {Poll: time.Second}} {
		called := false
		err := Poll(context.Background(), iv, "thing", func(ctx context.Context) (bool, error) {
			called = true
			return true, nil
		})
		if err == nil || called || !strings.Contains(err.Error(), "thing: a poll needs a timeout and a poll interval > 0") {
			t.Errorf("Poll(%+v) = %v (probe called: %v)", iv, err, called)
		}
	}
}
