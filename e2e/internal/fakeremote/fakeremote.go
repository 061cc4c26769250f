// Package fakeremote holds the fakes of the evidence-window tests
// (e2e/evidence/window_test.go) and of the harness's tests of the look after
// a failed window: remote.Runners that replay recorded outputs
// (e2e/evidence/testdata/window/README.md names every file) and keep a
// time-stamped log of every command they receive, so the tests can check not
// only the verdicts but also when each command came. Only tests import it.
//
// World plays iperf3 servers and clients and logs every command with its time;
// PairTopology and PairRunners are the pair the window tests run on.
package fakeremote

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// Event is one command a fake received.
type Event struct {
	At     time.Time
	Runner string
	Cmd    string
}

// World is what the fakes of one scenario share: the command log and the
// moments the iperf3 clients started and returned (the hypervisor fakes
// judge the timing of their captures against them).
type World struct {
	Start time.Time

	mu         sync.Mutex
	events     []Event
	unexpected []string
	clientsAt  []time.Time // arrival of each iperf3 client command, in order
	clientsEnd []time.Time // return of each
}

// Unexpected are the commands no script answered ("runner: cmd").
func (w *World) Unexpected() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.unexpected...)
}

// NewWorld is the shared state of one scenario's fakes.
func NewWorld() *World { return &World{Start: time.Now()} }

func (w *World) record(runner, cmd string) time.Time {
	at := time.Now()
	w.mu.Lock()
	w.events = append(w.events, Event{At: at, Runner: runner, Cmd: cmd})
	w.mu.Unlock()
	return at
}

func (w *World) Log() []Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Event(nil), w.events...)
}

func (w *World) Clients() (at, end []time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Time(nil), w.clientsAt...), append([]time.Time(nil), w.clientsEnd...)
}

// LastClientStart is when the latest iperf3 client command arrived; ok is
// false before the first.
func (w *World) LastClientStart() (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.clientsAt) == 0 {
		return time.Time{}, false
	}
	return w.clientsAt[len(w.clientsAt)-1], true
}

// WaitClientReturn blocks until the running iperf3 client has returned
// (every client that arrived has returned), or ctx ends.
func (w *World) WaitClientReturn(ctx context.Context) {
	for {
		w.mu.Lock()
		done := len(w.clientsAt) > 0 && len(w.clientsEnd) == len(w.clientsAt)
		w.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Dump writes the command log to the test log, times relative to the start.
func (w *World) Dump(t *testing.T) {
	t.Helper()
	var b strings.Builder
	for _, e := range w.Log() {
		cmd := e.Cmd
		if len(cmd) > 160 {
			cmd = cmd[:160] + "..."
		}
		fmt.Fprintf(&b, "  %8.3fs %-16s %s\n", e.At.Sub(w.Start).Seconds(), e.Runner, cmd)
	}
	t.Logf("commands received by the fakes:\n%s", b.String())
}

// Reply is one scripted answer.
type Reply struct {
	Stdout, Stderr []byte
	Exit           int
	// Sleep is how long the command runs (a capture's window); the context
	// cuts it short like a killed remote command.
	Sleep time.Duration
	// Before, when set, runs (and may block) before the answer.
	Before func(ctx context.Context)
	// Choose, when set, picks the answer from the moment the command arrived.
	Choose func(at time.Time) Reply
	// Err is a transport failure (the SSH connection lost): no result.
	Err error
}

// Runner is a guest or a hypervisor. script maps a command to the
// sequence of its answers: call n gets answer n modulo the length (two
// samples repeat for the second evidence flow). A guest (Play != nil) also
// plays iperf3 servers and clients.
type Runner struct {
	name string
	w    *World

	mu     sync.Mutex
	script map[string][]Reply
	calls  map[string]int

	Play *IperfPlay
	// Starts, when set, answers background commands other than the iperf3
	// servers Play serves (a sockperf server): ok false = not its command.
	Starts func(ctx context.Context, cmd string) (p remote.Process, ok bool)
}

// New is a fake guest or hypervisor called name, with no script.
func New(name string, w *World) *Runner {
	return &Runner{name: name, w: w, script: map[string][]Reply{}, calls: map[string]int{}}
}

func (f *Runner) Name() string { return f.name }

// On scripts the answers of cmd.
func (f *Runner) On(cmd string, answers ...Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[cmd] = answers
}

func (f *Runner) Run(ctx context.Context, cmd string) (remote.Result, error) {
	at := f.w.record(f.name, cmd)
	if err := ctx.Err(); err != nil {
		return remote.Result{Target: f.name, Cmd: cmd, ExitCode: -1}, err
	}
	f.mu.Lock()
	_, scripted := f.script[cmd]
	f.mu.Unlock()
	if f.Play != nil && !scripted {
		switch {
		case strings.HasPrefix(cmd, "iperf3 -c "):
			return f.Play.runClient(ctx, f, cmd)
		case strings.HasPrefix(cmd, "ss "):
			return remote.Result{Target: f.name, Cmd: cmd, Stdout: f.Play.listening()}, nil
		}
	}
	f.mu.Lock()
	answers, ok := f.script[cmd]
	n := f.calls[cmd]
	f.calls[cmd]++
	f.mu.Unlock()
	if !ok || len(answers) == 0 {
		f.w.mu.Lock()
		f.w.unexpected = append(f.w.unexpected, f.name+": "+cmd)
		f.w.mu.Unlock()
		return remote.Result{Target: f.name, Cmd: cmd, ExitCode: 127, Stderr: []byte("fake: unexpected command: " + cmd + "\n")}, nil
	}
	r := answers[n%len(answers)]
	if r.Before != nil {
		r.Before(ctx)
	}
	if r.Choose != nil {
		r = r.Choose(at)
	}
	if r.Sleep > 0 {
		select {
		case <-ctx.Done():
			return remote.Result{Target: f.name, Cmd: cmd, ExitCode: -1, Duration: time.Since(at)}, ctx.Err()
		case <-time.After(r.Sleep):
		}
	}
	if r.Err != nil {
		return remote.Result{Target: f.name, Cmd: cmd, ExitCode: -1, Duration: time.Since(at)}, r.Err
	}
	return remote.Result{Target: f.name, Cmd: cmd, Stdout: r.Stdout, Stderr: r.Stderr, ExitCode: r.Exit, Duration: time.Since(at)}, nil
}

func (f *Runner) Start(ctx context.Context, cmd string) (remote.Process, error) {
	f.w.record(f.name, "start: "+cmd)
	if f.Starts != nil {
		if p, ok := f.Starts(ctx, cmd); ok {
			return p, nil
		}
	}
	if f.Play == nil || !strings.HasPrefix(cmd, "iperf3 -s ") {
		f.w.mu.Lock()
		f.w.unexpected = append(f.w.unexpected, f.name+": start: "+cmd)
		f.w.mu.Unlock()
		return nil, fmt.Errorf("fake %s: unexpected background command %q", f.name, cmd)
	}
	return f.Play.startServer(ctx, cmd), nil
}

// IperfPlay is the iperf3 side of a guest: servers started in the
// background listen listenDelay after their start and exit when their
// client is done; a client runs client().
type IperfPlay struct {
	Addr        string        // the data address servers bind to
	ListenDelay time.Duration // a server shows in `ss` only this long after its start
	// ExitDelay is how long a server takes to exit after its client is done.
	ExitDelay time.Duration
	// Client answers a client command that asked for secs seconds (-t) of
	// TCP or UDP (-u).
	Client func(ctx context.Context, secs int, udp bool) (remote.Result, error)
	Peer   *Runner // the server guest, for the client guest

	mu      sync.Mutex
	servers map[int]*fakeProc
}

var (
	portFlagRE = regexp.MustCompile(` -p (\d+)`)
	timeFlagRE = regexp.MustCompile(` -t (\d+)`)
)

func intFlag(re *regexp.Regexp, cmd string) int {
	m := re.FindStringSubmatch(cmd)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func (p *IperfPlay) startServer(ctx context.Context, cmd string) *fakeProc {
	proc := &fakeProc{cmd: cmd, started: time.Now(), done: make(chan struct{})}
	p.mu.Lock()
	if p.servers == nil {
		p.servers = map[int]*fakeProc{}
	}
	p.servers[intFlag(portFlagRE, cmd)] = proc
	p.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
			proc.Stop()
		case <-proc.done:
		}
	}()
	return proc
}

// listening is `ss -ltn`: every running server that has been up for
// listenDelay.
func (p *IperfPlay) listening() []byte {
	var b strings.Builder
	b.WriteString("State  Recv-Q Send-Q Local Address:Port Peer Address:Port\n")
	p.mu.Lock()
	ports := make([]int, 0, len(p.servers))
	for port := range p.servers {
		ports = append(ports, port)
	}
	sort.Ints(ports)
	for _, port := range ports {
		s := p.servers[port]
		if !s.exited() && time.Since(s.started) >= p.ListenDelay {
			fmt.Fprintf(&b, "LISTEN 0      5      %s:%d      0.0.0.0:*\n", p.Addr, port)
		}
	}
	p.mu.Unlock()
	return []byte(b.String())
}

func (p *IperfPlay) runClient(ctx context.Context, f *Runner, cmd string) (remote.Result, error) {
	f.w.mu.Lock()
	f.w.clientsAt = append(f.w.clientsAt, time.Now())
	f.w.mu.Unlock()
	res, err := p.Client(ctx, intFlag(timeFlagRE, cmd), strings.Contains(cmd, " -u "))
	res.Target, res.Cmd = f.name, cmd
	f.w.mu.Lock()
	f.w.clientsEnd = append(f.w.clientsEnd, time.Now())
	f.w.mu.Unlock()
	// The real server (-1) exits after its one test.
	if p.Peer != nil && p.Peer.Play != nil {
		p.Peer.Play.mu.Lock()
		s := p.Peer.Play.servers[intFlag(portFlagRE, cmd)]
		p.Peer.Play.mu.Unlock()
		if s != nil {
			exit := func() { s.finish(remote.Result{Target: p.Peer.name, Cmd: s.cmd}) }
			if d := p.Peer.Play.ExitDelay; d > 0 {
				time.AfterFunc(d, exit)
			} else {
				exit()
			}
		}
	}
	return res, err
}

// fakeProc is a background iperf3 server.
type fakeProc struct {
	cmd     string
	started time.Time
	done    chan struct{}
	once    sync.Once
	res     remote.Result
}

func (p *fakeProc) finish(r remote.Result) { p.once.Do(func() { p.res = r; close(p.done) }) }

func (p *fakeProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *fakeProc) Wait() (remote.Result, error) {
	<-p.done
	return p.res, nil
}

func (p *fakeProc) Stop() (remote.Result, error) {
	p.finish(remote.Result{Cmd: p.cmd, ExitCode: -1, Signal: "TERM"})
	return p.Wait()
}

// SleepThen is a client that runs for its -t seconds (or until cancelled)
// and then answers with out().
func SleepThen(out func(udp bool) remote.Result) func(context.Context, int, bool) (remote.Result, error) {
	return SleepScaledThen(time.Second, out)
}

// SleepScaledThen is SleepThen on a scaled clock: each of its -t seconds
// lasts second (the simulated fleet's clock runs faster than the wall's).
func SleepScaledThen(second time.Duration, out func(udp bool) remote.Result) func(context.Context, int, bool) (remote.Result, error) {
	return func(ctx context.Context, secs int, udp bool) (remote.Result, error) {
		select {
		case <-ctx.Done():
			return remote.Result{ExitCode: -1}, ctx.Err()
		case <-time.After(time.Duration(secs) * second):
		}
		return out(udp), nil
	}
}
