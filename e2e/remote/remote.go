// Package remote runs commands on guests and hypervisors.
//
// Everything above this package (iperf3, offload checks, environment
// collection) talks to a Runner, never to an SSH client directly, so it can be
// unit-tested with a fake Runner and used over SSH in a real run.
//
// The SSH implementation: NewDialer (one per run: host key policy, auth,
// command log in the run's artifacts) and Dialer.DialEndpoint for a
// config.SSHEndpoint with its jump chain; or Dial with DialOptions. The
// returned *Client is a Runner. Host keys: known_hosts, trust on first use
// (recorded in <artifacts>/ssh_known_hosts, a changed key is refused) or the
// explicit insecure opt-in (HostKeys.Insecure reports it). Every command is
// appended to <artifacts>/commands.jsonl. Cancelling a command kills its
// whole remote process group (see wrap.go).
//
// Beside the SSH client (jump hosts, key file or agent):
//
//   - supervise.go: the one process supervisor, Supervise over a Transport
//     (SSH's session here, e2e/remote/kube's exec stream), which waits for a
//     wrapped command or stops it: TERM to its group and the end of its stdin,
//     KILL a grace later, dropped when unanswered.
//   - listen.go: "is the server listening" (ListenCommand, ListeningPorts: ss
//     or netstat), for the iperf3 and sockperf runners.
//   - bound.go: Bounded gives every command a deadline (intervals.command, or
//     its own via WithBound); a BoundError names target, command, bound and
//     last output. A server that stops answering (its sshd frozen) fails the
//     command at its bound plus one kill grace, since opening a session takes
//     the context and the kill gives up when the TERM's session does not open
//     (BoundError.Stop says so, and the remote watchdog ends the command if
//     the server runs again).
package remote

import (
	"context"
	"fmt"
	"time"
)

// Result is what one remote command produced.
type Result struct {
	Target   string        // who ran it, e.g. "guest server-a (198.18.20.5)"
	Cmd      string        // the command line as sent
	Stdout   []byte        // complete standard output
	Stderr   []byte        // complete standard error
	ExitCode int           // remote exit status; -1 when the command was killed or the transport failed
	Signal   string        // signal that ended the remote command ("TERM", "KILL"), when the server reported one
	Duration time.Duration // wall time of the command
}

// OK reports whether the command exited with status 0.
func (r Result) OK() bool { return r.ExitCode == 0 }

// Err returns nil when the command exited 0, otherwise an error that names the
// target, the command, the exit code and the start of stderr.
func (r Result) Err() error {
	if r.ExitCode == 0 {
		return nil
	}
	return &ExitError{Result: r}
}

// ExitError is a remote command that exited non-zero.
type ExitError struct{ Result Result }

func (e *ExitError) Error() string {
	stderr := string(e.Result.Stderr)
	if len(stderr) > 400 {
		stderr = stderr[:400] + "..."
	}
	return fmt.Sprintf("%s: %q exited %d: %s", e.Result.Target, e.Result.Cmd, e.Result.ExitCode, stderr)
}

// Runner executes shell command lines on one remote machine.
//
// Run returns a transport error (connection lost, context cancelled) as err;
// a command that ran and exited non-zero is NOT an error of Run: check
// Result.ExitCode or Result.Err(). Cancelling ctx must stop the remote command
// (no orphan process is left on the remote side).
type Runner interface {
	// Name identifies the remote side in logs and errors.
	Name() string
	// Run runs cmd to completion (or until ctx is cancelled).
	Run(ctx context.Context, cmd string) (Result, error)
	// Start runs cmd in the background; the returned Process is stopped by
	// Stop or by cancelling ctx.
	Start(ctx context.Context, cmd string) (Process, error)
}

// Process is a command started with Runner.Start.
type Process interface {
	// Wait blocks until the command exits and returns its complete result.
	Wait() (Result, error)
	// Stop asks the remote command to end (SIGTERM, then SIGKILL after a grace
	// period), then waits for it; it returns what Wait would return.
	Stop() (Result, error)
}
