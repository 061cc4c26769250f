package fakeremote

import (
	"context"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// Background is a fake background command (a server): it runs until
// Stop, until its context ends, or until Exit says how it ended by itself.
type Background struct{ fakeProc }

// NewBackground starts a background command that ends when ctx does.
func NewBackground(ctx context.Context, cmd string) *Background {
	b := &Background{fakeProc{cmd: cmd, done: make(chan struct{})}}
	go func() {
		select {
		case <-ctx.Done():
			b.finish(remote.Result{Cmd: cmd, ExitCode: -1, Signal: "TERM"})
		case <-b.done:
		}
	}()
	return b
}

// Exit ends the command by itself with r (a server that failed to bind).
func (b *Background) Exit(r remote.Result) { r.Cmd = b.cmd; b.finish(r) }

// Exited reports whether the command has ended (stopped or by itself).
func (b *Background) Exited() bool { return b.exited() }
