package remote

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTransport answers Signal from a table and records what the
// supervisor did; Exited is sent only by the test.
type fakeTransport struct {
	mu      sync.Mutex
	answers map[string]error // signal → Signal's error
	sent    []string
	closed  bool
}

var errFakeSilent = errors.New("fake: no one opened the signal's session")

func (f *fakeTransport) Signal(pgid int, signal string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, signal)
	return f.answers[signal]
}
func (f *fakeTransport) Unanswered(err error) bool { return errors.Is(err, errFakeSilent) }
func (f *fakeTransport) EndStdin()                 {}
func (f *fakeTransport) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}
func (f *fakeTransport) ExitOf(err error) (int, string) { return exitOf(err) }
func (f *fakeTransport) NoExit(err error) error         { return err }

// superviseFake starts a supervised command whose wrapper already reported
// its process group, and cancels it at once.
func superviseFake(t *testing.T, tr *fakeTransport, afterKill time.Duration) (Process, chan error) {
	t.Helper()
	w := wrap("sleep 3600", time.Second, false)
	if _, err := w.Stderr().Write([]byte(w.stderr.marker + " 4242\n")); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.PGID(); !ok {
		t.Fatal("the wrapper did not take the group id line")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	exited := make(chan error, 1)
	p := Supervise(Supervision{
		Ctx: ctx, Target: "fake", Cmd: "sleep 3600", Start: time.Now(), Log: nil,
		Wrapped: w, Stdout: &Output{}, Exited: exited, Transport: tr,
		Grace: 50 * time.Millisecond, AfterKill: afterKill,
		UnansweredNote: "unanswered: dropped", DroppedNote: "no end within %s after KILL", NoExitErr: errNoExit,
	})
	return p, exited
}

// A server that ran the TERM's session and then stopped answering before
// the KILL's: the command is dropped when the KILL finds no one, not after
// AfterKill (on SSH the connect timeout), let alone the keepalive.
func TestSuperviseKillUnansweredDropsAtOnce(t *testing.T) {
	tr := &fakeTransport{answers: map[string]error{
		"TERM": context.DeadlineExceeded, // the session opened, the kill command never reported
		"KILL": errFakeSilent,
	}}
	start := time.Now()
	p, _ := superviseFake(t, tr, time.Hour)
	done := make(chan struct{})
	var res Result
	var err error
	go func() { res, err = p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the supervisor waited for the end after an unanswered KILL (AfterKill is an hour)")
	}
	if !strings.Contains(err.Error(), "unanswered: dropped") || strings.Contains(err.Error(), "no end within") {
		t.Errorf("err = %v, want the unanswered note and not the after-KILL one", err)
	}
	if res.ExitCode != -1 {
		t.Errorf("exit code %d, want -1 (no exit status)", res.ExitCode)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if strings.Join(tr.sent, ",") != "TERM,KILL" || !tr.closed {
		t.Errorf("sent %v, closed %v: want TERM then KILL, then the session closed", tr.sent, tr.closed)
	}
	t.Logf("dropped after %s", time.Since(start).Round(time.Millisecond))
}

// A KILL that fails otherwise (the server answered with an error) still
// waits AfterKill for the end: the end may come.
func TestSuperviseKillFailedWaitsForTheEnd(t *testing.T) {
	tr := &fakeTransport{answers: map[string]error{"KILL": errors.New("fake: kill exited 1")}}
	p, exited := superviseFake(t, tr, time.Hour)
	go func() {
		for {
			tr.mu.Lock()
			n := len(tr.sent)
			tr.mu.Unlock()
			if n == 2 {
				exited <- nil
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	res, err := p.Wait()
	if err == nil || !strings.Contains(err.Error(), "kill exited 1") || strings.Contains(err.Error(), "unanswered") {
		t.Errorf("err = %v, want the KILL's error as a note and no drop", err)
	}
	if res.ExitCode != -1 {
		t.Errorf("exit code %d, want -1 (stopped by its context)", res.ExitCode)
	}
}
