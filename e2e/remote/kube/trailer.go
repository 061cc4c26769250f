package kube

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"
)

// An exec stream that breaks (the API server stopped, its connection
// reset) ends, over SPDY and WebSocket alike, the way a command that
// exited 0 ends: client-go reads the status stream to its end, finds it
// empty and returns no error. So the command runs under a trailer: its
// shell prints "<marker> <status>" as the last line of stderr once the
// command has ended, and a stream that ends without it is a dropped
// stream (errNoTrailer), not a success. The trailer line is taken out of
// the command's stderr. The trailer's shell keeps running when TERM comes
// (its trap does nothing; the command, started after it was set, has TERM
// at its default or its own trap), so a stopped command's status is still
// reported; KILL ends both, and the error of the stop says so already.

// withTrailer is the line that runs cmd (a shell command) and then prints
// the trailer.
func withTrailer(cmd, marker string) string {
	return "trap : TERM; (" + cmd + "\n); s=$?; echo " + marker + " $s >&2; exit $s"
}

func newTrailerMarker() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "asap2e2e-exit-" + hex.EncodeToString(b)
}

var errNoTrailer = errors.New("the exec stream ended before the command did: its connection through the API server dropped")

// untrailed is the wait error of a command whose exec ended with err,
// trailer saying whether the trailer came: a stream without it is a
// dropped stream, or, with an exit status, a command whose shell was
// killed from outside (its container or pod ended: the trailer's shell
// survives TERM and only a KILL, stopping the command (stopping), or the
// end of its container ends it first). Either is an error without an exit
// status, which the runner explains (a vanished pod, the API server).
func untrailed(err error, trailer, stopping bool) error {
	switch {
	case trailer || stopping:
		return err
	case err == nil:
		return errNoTrailer
	}
	if code := exitOf(err); code >= 0 {
		return fmt.Errorf("the command's shell ended with exit status %d before the command reported its own: killed from outside the command (did its container or pod end?)", code)
	}
	return err
}

// trailerWriter passes stderr on line by line, without the trailer (at
// the end of a line: the command's last output may not end its own), and
// notes that it came.
type trailerWriter struct {
	to     io.Writer
	re     *regexp.Regexp
	mu     sync.Mutex
	line   []byte // the incomplete last line
	closed bool
	seen   bool
}

func newTrailerWriter(to io.Writer, marker string) *trailerWriter {
	return &trailerWriter{to: to, re: regexp.MustCompile(marker + ` [0-9]+\n$`)}
}

func (w *trailerWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		l := w.line[:i+1]
		// The trailer follows output that did not end its line.
		if loc := w.re.FindIndex(l); loc != nil {
			w.seen = true
			l = l[:loc[0]]
		}
		if _, err := w.to.Write(l); err != nil {
			return len(p), err
		}
		w.line = w.line[i+1:]
	}
}

// end passes on what is left of an incomplete line and says whether the
// trailer came.
func (w *trailerWriter) end() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.line) > 0 && !w.closed {
		w.to.Write(w.line)
	}
	w.line, w.closed = nil, true
	return w.seen
}
