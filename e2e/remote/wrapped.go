package remote

import (
	"io"
	"time"
)

// Wrapped is one command made stoppable by the wrapper of wrap.go, for any
// transport (SSH sends Line as the session's command; e2e/remote/kube runs
// it with `sh -c` in a container); Supervise watches it. The transport sends Line as the shell command, writes the
// command's stderr to Stderr, and keeps the command's stdin open until the
// command is to stop: when stdin ends, the wrapper's watchdog sends TERM to
// the command's process group and KILL a grace period later. KillLine gives
// the command that signals the group directly (from PGID, reported on the
// first stderr line and never shown to the caller).
type Wrapped struct {
	Line   string
	stderr *pgidWriter
}

// Wrap wraps cmd; grace is the time between the watchdog's TERM and KILL.
func Wrap(cmd string, grace time.Duration) *Wrapped { return wrap(cmd, grace, false) }

// wrap is Wrap, under sudo -n when sudo is set (SSH's hypervisors.sudo).
func wrap(cmd string, grace time.Duration, sudo bool) *Wrapped {
	marker := newMarker()
	return &Wrapped{Line: wrapCommand(cmd, marker, grace, sudo), stderr: newPGIDWriter(marker)}
}

// Stderr is the writer for the command's standard error.
func (w *Wrapped) Stderr() io.Writer { return w.stderr }

// StderrBytes is the command's standard error without the wrapper's line.
func (w *Wrapped) StderrBytes() []byte { return w.stderr.bytes() }

// PGID is the command's process group id, once the wrapper reported it.
func (w *Wrapped) PGID() (int, bool) { return w.stderr.id() }

// PGIDReady is closed when the process group id has been reported.
func (w *Wrapped) PGIDReady() <-chan struct{} { return w.stderr.ready }

// KillLine is the shell command that sends signal ("TERM", "KILL") to the
// process group pgid.
func KillLine(pgid int, signal string) string { return killCommand(pgid, signal, false) }

// Output is a buffer for a command's standard output, safe for the
// transport's writer and a later reader.
type Output struct{ b lockedBuffer }

func (o *Output) Write(p []byte) (int, error) { return o.b.Write(p) }

// Bytes is a copy of what was written.
func (o *Output) Bytes() []byte { return o.b.bytes() }
