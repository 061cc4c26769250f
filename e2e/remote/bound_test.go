package remote

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// hangRunner prints out and then blocks until its context ends, as a
// command on a peer that stopped answering does. Like a real Runner it may
// run commands at once (a bound's look runs while the command it looks at
// still does), so seen is guarded.
type hangRunner struct {
	out     string
	mu      sync.Mutex
	seen    []time.Time // the deadline each Run got (zero: none)
	entered []time.Time // when each Run was called
}

func (h *hangRunner) Name() string { return "guest vm1 (198.18.20.5)" }
func (h *hangRunner) Run(ctx context.Context, cmd string) (Result, error) {
	// The deadline itself, not the time left until it: a runner that got
	// the CPU only late (go test -race starved beside the lab) would read
	// "none left" of a bound it did get.
	seen, _ := ctx.Deadline()
	h.mu.Lock()
	h.seen = append(h.seen, seen)
	h.entered = append(h.entered, time.Now())
	h.mu.Unlock()
	<-ctx.Done()
	return Result{Target: h.Name(), Cmd: cmd, Stdout: []byte(h.out), ExitCode: -1}, ctx.Err()
}
func (h *hangRunner) Start(ctx context.Context, cmd string) (Process, error) {
	return nil, errors.New("unused")
}

// Issue 14: every remote command has a deadline. Without one of its own a
// command gets intervals.command; the failure names the target, the
// command, the bound, where it came from and what was last seen.
func TestBoundedRunNamesTargetCommandBoundAndLastOutput(t *testing.T) {
	h := &hangRunner{out: "connecting to 198.18.10.5\nstill waiting\n"}
	r := Bounded(h, 50*time.Millisecond, "intervals.command")
	before := time.Now()
	_, err := r.Run(context.Background(), "iperf3 -c 198.18.10.5")
	var be *BoundError
	if !errors.As(err, &be) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a BoundError", err)
	}
	want := `guest vm1 (198.18.20.5): "iperf3 -c 198.18.10.5" did not finish within 50ms (intervals.command) and was killed; last output: "still waiting"`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	// an explicit bound replaces the default, in both directions
	ctx := WithBound(context.Background(), 80*time.Millisecond, "iperf3 -t 0 + -O 0 + grace")
	_, err = r.Run(ctx, "iperf3 -c x")
	if !errors.As(err, &be) || be.Bound != 80*time.Millisecond || be.Why != "iperf3 -t 0 + -O 0 + grace" {
		t.Errorf("explicit bound: %v", err)
	}
	// the caller's own cancellation is not a bound
	cctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	_, err = r.Run(cctx, "sleep 9")
	if !errors.Is(err, context.Canceled) || errors.As(err, &be) {
		t.Errorf("cancelled by the caller: %v", err)
	}
	// The default bound's deadline was set between the first Run's start
	// and the runner's call: 50ms after a moment in between, however late
	// the runner got the CPU.
	if d, in := h.seen[0], h.entered[0]; d.Before(before.Add(50*time.Millisecond)) || d.After(in.Add(50*time.Millisecond)) {
		t.Errorf("the default bound did not reach the runner: its deadline %v, want 50ms after a moment in [%v, %v]", d, before, in)
	}
	if got := Bounded(h, 0, "off").(*bounded); got.def.d != 0 {
		t.Fatal("zero bound")
	}
}

// The bound kills the real remote command, with its process group, as a
// cancellation does: no orphan is left on the remote side.
func TestBoundedRunKillsTheRemoteCommand(t *testing.T) {
	e := newEnv(t)
	srv := newTestServer(t, []ssh.PublicKey{e.pub})
	c := e.dial(t, e.opts(srv))
	pidFIFO := filepath.Join(e.dir, "pid.fifo")
	holdFIFO := filepath.Join(e.dir, "hold.fifo")
	for _, f := range []string{pidFIFO, holdFIFO} {
		if err := mkfifo(f); err != nil {
			t.Fatal(err)
		}
	}
	r := Bounded(c, 2*time.Second, "intervals.command")
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := r.Run(context.Background(), "echo started; sleep 3600 >"+holdFIFO+" & echo $! > "+pidFIFO+"; wait")
		done <- out{res, err}
	}()
	f, err := os.Open(pidFIFO)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	hold, err := os.Open(holdFIFO)
	if err != nil {
		t.Fatal(err)
	}
	gone := closedOnEOF(hold)
	o := <-done
	var be *BoundError
	if !errors.As(o.err, &be) || be.LastSeen != "started" || be.Bound != 2*time.Second {
		t.Fatalf("Run: %v (result %+v)", o.err, o.res)
	}
	expectGone(t, pid, gone, "after its bound")
}

// A bound with a look (issue 32) runs the look when the bound is reached,
// while the command still runs, and kills the command only after it: the
// look's own commands get their own bound and no look of their own. A
// command that ends before its bound is never looked at, and a caller's
// cancellation is not a bound (no look either).
func TestBoundedRunLooksBeforeTheKill(t *testing.T) {
	h := &hangRunner{out: "connecting\n"}
	r := Bounded(h, time.Hour, "intervals.command")
	var looks int
	var stillRunning bool
	var lookErr error
	look := func(ctx context.Context) {
		looks++
		stillRunning = ctx.Err() == nil
		// the look's own command: its bound, no look of its own
		_, lookErr = r.Run(WithBound(ctx, 20*time.Millisecond, "the look's bound"), "ss -tan")
	}
	start := time.Now()
	_, err := r.Run(WithBoundLook(context.Background(), 50*time.Millisecond, "iperf3 -t 0 + grace", look), "iperf3 -c x")
	var be *BoundError
	if !errors.As(err, &be) || be.Bound != 50*time.Millisecond || be.LastSeen != "connecting" {
		t.Fatalf("err = %v, want the BoundError of 50ms", err)
	}
	if looks != 1 || !stillRunning {
		t.Fatalf("looks = %d (ctx alive %v), want one look before the kill", looks, stillRunning)
	}
	if !errors.As(lookErr, &be) || be.Bound != 20*time.Millisecond {
		t.Errorf("the look's command: %v, want its own bound", lookErr)
	}
	if d := time.Since(start); d < 70*time.Millisecond {
		t.Errorf("killed after %s: before the look (20ms) had ended", d)
	}

	// A command that ends before its bound: no look.
	ok := runnerFunc(func(ctx context.Context, cmd string) (Result, error) { return Result{Cmd: cmd}, nil })
	looks = 0
	if _, err := Bounded(ok, time.Hour, "x").Run(WithBoundLook(context.Background(), time.Second, "y", look), "true"); err != nil || looks != 0 {
		t.Errorf("a command within its bound: err %v, %d looks", err, looks)
	}
	// The caller's cancellation: no look, no BoundError.
	cctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if _, err := r.Run(WithBoundLook(cctx, time.Second, "y", look), "sleep 9"); !errors.Is(err, context.Canceled) || errors.As(err, &be) || looks != 0 {
		t.Errorf("cancelled by the caller: %v, %d looks", err, looks)
	}
}

// runnerFunc is a Runner whose Run is the function.
type runnerFunc func(ctx context.Context, cmd string) (Result, error)

func (f runnerFunc) Name() string                                        { return "func" }
func (f runnerFunc) Run(ctx context.Context, cmd string) (Result, error) { return f(ctx, cmd) }
func (f runnerFunc) Start(context.Context, string) (Process, error)      { return nil, errors.New("unused") }
