package remote

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The one process supervisor: a command wrapped by wrap.go, started by a
// transport (SSH here, Kubernetes exec in e2e/remote/kube), is waited for,
// or stopped on Stop or when its context ends, the same way over both:
//
//  1. the process group id from the wrapper's first stderr line (waited for
//     at most the grace period when the command was stopped at once);
//  2. TERM to the group by a command of its own, and the end of the
//     command's stdin (the wrapper's watchdog then sends TERM too);
//  3. KILL to the group when the command has not ended a grace period later;
//  4. the session or stream dropped when even that goes unanswered: at once
//     when the server did not open the signal's session (TERM's or KILL's),
//     after AfterKill otherwise.
//
// Every step that does not go as planned is a note of the StopError; the
// result goes to the command log.

// Transport is what the supervisor needs of the connection a wrapped
// command runs over.
type Transport interface {
	// Signal sends signal ("TERM", "KILL") to the process group pgid by a
	// command of its own, within a bound of its own.
	Signal(pgid int, signal string) error
	// Unanswered says whether a failed Signal shows that the remote side
	// does not answer at all: waiting for the command is then pointless and
	// it is dropped at once (with UnansweredNote).
	Unanswered(err error) bool
	// EndStdin closes the command's standard input.
	EndStdin()
	// Close releases the session or stream, without waiting for its end.
	Close()
	// ExitOf is the command's exit code and signal from the transport's wait
	// error: 0 for nil, -1 when there is no exit status.
	ExitOf(err error) (code int, signal string)
	// NoExit is the error of a command that ended without an exit status.
	NoExit(waitErr error) error
}

// Supervision is one started command for Supervise.
type Supervision struct {
	Ctx        context.Context // stopping it stops the command
	Target     string          // the runner's name
	Cmd        string          // the caller's command line
	Start      time.Time
	Background bool // started by Start (for the command log)
	Sudo       bool // run under sudo (for the command log)
	Log        *CommandLog

	Wrapped *Wrapped     // the wrapper: stderr and the process group id
	Stdout  *Output      // where the transport writes the command's stdout
	Exited  <-chan error // the transport's wait result (buffered: sent once)

	Transport Transport
	Grace     time.Duration // TERM to KILL
	AfterKill time.Duration // how long the end is waited for after KILL
	// The transport's words: NoPGIDNote when the group id never came,
	// UnansweredNote when Signal found no one answering, DroppedNote (a
	// format for AfterKill) when the end did not come after KILL; NoExitErr
	// is the wait error of a command dropped so.
	NoPGIDNote, UnansweredNote, DroppedNote string
	NoExitErr                               error
}

// Supervise watches the started command and returns it as a Process.
func Supervise(in Supervision) Process {
	p := &supervised{in: in, stopReq: make(chan struct{}), done: make(chan struct{})}
	go p.supervise()
	return p
}

type supervised struct {
	in Supervision

	stopOnce sync.Once
	stopReq  chan struct{}

	done chan struct{}
	res  Result
	err  error
}

func (p *supervised) Wait() (Result, error) {
	<-p.done
	return p.res, p.err
}

func (p *supervised) Stop() (Result, error) {
	p.stopOnce.Do(func() { close(p.stopReq) })
	return p.Wait()
}

// supervise waits for the command, or stops it when asked or cancelled.
func (p *supervised) supervise() {
	in := p.in
	var waitErr error
	var why error // non-nil when stopped because the context ended
	var notes []string
	select {
	case waitErr = <-in.Exited:
	case <-in.Ctx.Done():
		why = context.Cause(in.Ctx)
		waitErr, notes = p.kill()
	case <-p.stopReq:
		waitErr, notes = p.kill()
	}
	in.Transport.EndStdin()
	in.Transport.Close()

	res := Result{
		Target:   in.Target,
		Cmd:      in.Cmd,
		Stdout:   in.Stdout.Bytes(),
		Stderr:   in.Wrapped.StderrBytes(),
		Duration: time.Since(in.Start),
	}
	res.ExitCode, res.Signal = in.Transport.ExitOf(waitErr)
	var err error
	switch {
	case why != nil:
		res.ExitCode = -1
		err = fmt.Errorf("%s: %q stopped: %w", in.Target, in.Cmd, why)
	case waitErr != nil && res.ExitCode == -1 && res.Signal == "":
		err = fmt.Errorf("%s: %q: %w", in.Target, in.Cmd, in.Transport.NoExit(waitErr))
	}
	if len(notes) > 0 {
		se := &StopError{Notes: notes}
		if err != nil {
			err = fmt.Errorf("%w (%w)", err, se)
		} else {
			err = fmt.Errorf("%s: %q: %w", in.Target, in.Cmd, se)
		}
	}
	p.res, p.err = res, err
	in.Log.Record(res, in.Start, in.Sudo, in.Background, err)
	close(p.done)
}

// kill stops the command: TERM to its process group, KILL when it has not
// ended a grace period after the TERM was delivered, then waits for the end.
// It returns the wait's result and notes about anything that did not go as
// planned.
func (p *supervised) kill() (error, []string) {
	in := p.in
	var notes []string

	// The group id arrives on the first stderr line; a command cancelled
	// right after Start may not have printed it yet.
	pgid, ok := in.Wrapped.PGID()
	if !ok {
		idWait := time.NewTimer(in.Grace)
		select {
		case <-in.Wrapped.PGIDReady():
			pgid, ok = in.Wrapped.PGID()
		case err := <-in.Exited:
			idWait.Stop()
			return err, nil
		case <-idWait.C:
			notes = append(notes, in.NoPGIDNote)
		}
		idWait.Stop()
	}
	if ok {
		if err := in.Transport.Signal(pgid, "TERM"); err != nil {
			notes = append(notes, err.Error())
			if in.Transport.Unanswered(err) {
				in.Transport.EndStdin()
				in.Transport.Close()
				return in.NoExitErr, append(notes, in.UnansweredNote)
			}
		}
	}
	// Ending stdin makes the wrapper's watchdog stop the group as well
	// (TERM, then KILL after the same grace period).
	in.Transport.EndStdin()
	grace := time.NewTimer(in.Grace)
	defer grace.Stop()
	select {
	case err := <-in.Exited:
		return err, notes
	case <-grace.C:
	}
	if ok {
		if err := in.Transport.Signal(pgid, "KILL"); err != nil {
			notes = append(notes, err.Error())
			// The TERM got through (or its command opened and then went
			// silent: the server stopped between the two), the KILL's found
			// no one: the end would come only with the keepalive.
			if in.Transport.Unanswered(err) {
				in.Transport.Close()
				return in.NoExitErr, append(notes, in.UnansweredNote)
			}
		}
	}
	last := time.NewTimer(in.AfterKill)
	defer last.Stop()
	select {
	case err := <-in.Exited:
		return err, notes
	case <-last.C:
	}
	notes = append(notes, fmt.Sprintf(in.DroppedNote, in.AfterKill))
	in.Transport.Close()
	// Not waiting for Exited: on a server that stopped answering it comes
	// only when the transport gives the connection up (Exited is buffered,
	// so its sender still ends then).
	return in.NoExitErr, notes
}
