package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// BoundError is a remote command that outlived its bound: it was killed
// (as on cancellation, with its whole process group) and this says where,
// what, how long it was allowed and the last thing it printed.
type BoundError struct {
	Target, Cmd string
	Bound       time.Duration
	Why         string // where the bound comes from, e.g. "intervals.command"
	LastSeen    string // the last non-empty output line, "" when it printed nothing
	// Stop is what went wrong while stopping the command ("" when it was
	// killed as planned): a server that stopped answering cannot be told
	// to kill anything.
	Stop string
}

func (e *BoundError) Error() string {
	seen := "it printed nothing"
	if e.LastSeen != "" {
		seen = fmt.Sprintf("last output: %q", e.LastSeen)
	}
	stopped := "and was killed"
	if e.Stop != "" {
		stopped = "and could not be killed (" + e.Stop + ")"
	}
	return fmt.Sprintf("%s: %q did not finish within %s (%s) %s; %s", e.Target, e.Cmd, e.Bound, e.Why, stopped, seen)
}

// StopError is a command that was to be stopped (cancelled, bounded or
// Stop called) where the stop did not go as planned: each note says what.
type StopError struct{ Notes []string }

func (e *StopError) Error() string { return strings.Join(e.Notes, "; ") }

// Unwrap makes a BoundError a context.DeadlineExceeded.
func (e *BoundError) Unwrap() error { return context.DeadlineExceeded }

type boundKey struct{}

type bound struct {
	d    time.Duration
	why  string
	look func(context.Context)
}

// WithBound gives the commands run with ctx their own bound instead of the
// runner's default: a command whose length is known in advance (an iperf3
// client runs -t + -O, plus a grace) says so here, why names the source of
// the number for the error message.
func WithBound(ctx context.Context, d time.Duration, why string) context.Context {
	return WithBoundLook(ctx, d, why, nil)
}

// WithBoundLook is WithBound with a look: when a command Run with ctx
// reaches its bound, look runs first (the command still running) and the
// command is killed once it returns, so that what the command was doing
// can be read before it is gone. look gets ctx (which has not ended) and
// must bound its own commands (WithBound: that also drops this look). The
// kill waits for it: the BoundError follows the bound by the look's time.
func WithBoundLook(ctx context.Context, d time.Duration, why string, look func(context.Context)) context.Context {
	return context.WithValue(ctx, boundKey{}, bound{d: d, why: why, look: look})
}

// Bounded wraps r so that no command runs without a deadline: Run gets the
// bound of its context (WithBound) or else def, named by defWhy (the config
// key it comes from). Start is bounded only by an explicit WithBound: a
// background process (an iperf3 server) lives until it is stopped.
func Bounded(r Runner, def time.Duration, defWhy string) Runner {
	return &bounded{r: r, def: bound{d: def, why: defWhy}}
}

type bounded struct {
	r   Runner
	def bound
}

func (b *bounded) Name() string { return b.r.Name() }

func (b *bounded) Run(ctx context.Context, cmd string) (Result, error) {
	bd, ok := ctx.Value(boundKey{}).(bound)
	if !ok {
		bd = b.def
	}
	if bd.d <= 0 {
		return b.r.Run(ctx, cmd)
	}
	bctx, stop := b.boundCtx(ctx, bd)
	res, err := b.r.Run(bctx, cmd)
	stop()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(bctx), context.DeadlineExceeded) {
		be := &BoundError{Target: b.r.Name(), Cmd: cmd, Bound: bd.d, Why: bd.why, LastSeen: lastLine(res.Stdout, res.Stderr)}
		var se *StopError
		if errors.As(err, &se) {
			be.Stop = se.Error()
		}
		err = be
	}
	return res, err
}

// boundCtx is ctx ended at bd's bound, after bd's look when it has one;
// stop releases it and, when the look has begun, waits for its end.
func (b *bounded) boundCtx(ctx context.Context, bd bound) (context.Context, func()) {
	if bd.look == nil {
		return context.WithTimeout(ctx, bd.d)
	}
	bctx, cancel := context.WithCancelCause(ctx)
	looked := make(chan struct{})
	t := time.AfterFunc(bd.d, func() {
		defer close(looked)
		bd.look(ctx)
		cancel(context.DeadlineExceeded)
	})
	return bctx, func() {
		if !t.Stop() {
			<-looked
		}
		cancel(nil)
	}
}

func (b *bounded) Start(ctx context.Context, cmd string) (Process, error) {
	bd, ok := ctx.Value(boundKey{}).(bound)
	if !ok || bd.d <= 0 {
		return b.r.Start(ctx, cmd)
	}
	bctx, cancel := context.WithTimeout(ctx, bd.d)
	p, err := b.r.Start(bctx, cmd)
	if err != nil {
		cancel()
		return p, err
	}
	return &boundedProcess{Process: p, cancel: cancel}, nil
}

// Unwrap returns the wrapped runner.
func (b *bounded) Unwrap() Runner { return b.r }

type boundedProcess struct {
	Process
	cancel context.CancelFunc
}

func (p *boundedProcess) Wait() (Result, error) {
	defer p.cancel()
	return p.Process.Wait()
}

func (p *boundedProcess) Stop() (Result, error) {
	defer p.cancel()
	return p.Process.Stop()
}

// lastLine is the last non-empty line of stdout, else of stderr.
func lastLine(outs ...[]byte) string {
	for _, out := range outs {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
			if len(l) > 200 {
				l = l[:200] + "..."
			}
			return l
		}
	}
	return ""
}
