package remote

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// How a remote command is made stoppable.
//
// OpenSSH ignores "signal" channel requests for commands without a pty, and
// killing one process leaves its children (iperf3 servers, tcpdump) behind.
// So every command runs inside a small POSIX sh wrapper that
//
//  1. makes sure it leads its own process group (sshd already starts exec
//     commands as session leaders; otherwise it re-executes itself under
//     setsid, which then does not fork, so the exit status is preserved);
//  2. prints "<marker> <pgid>" as the first line of stderr; the client strips
//     that line and keeps the id;
//  3. starts a watchdog in the group that blocks reading the session's stdin:
//     when stdin ends (the client closed it, or the connection dropped and
//     sshd closed the pipe) it sends TERM to the group, waits the grace
//     period if the command was still running, then KILL;
//  4. runs the caller's command with stdin from /dev/null.
//
// On cancellation the client also sends TERM and then KILL to the group over
// a fresh session, so stopping works even if the watchdog could not.
// Result.Cmd and the command log show the caller's command only.
//
// Consequence for callers: anything a command leaves running in its process
// group ends when the command's session ends (no `cmd &` survives Run); use
// Start for background work. Daemons that start their own session
// (iperf3 -D, setsid) are outside the group and are the caller's to stop.
// The remote needs /bin/sh, /proc and, unless sshd already made the command a
// session leader (OpenSSH and Dropbear do), setsid(1).

// stage1 runs under /bin/sh: $1 = stage2 script, $2 = grace seconds,
// $3 = marker, $4 = the command.
const stage1 = `s=$1; shift; g=; read -r _ _ _ _ g _ </proc/$$/stat 2>/dev/null; ` +
	`if [ "$g" = "$$" ]; then exec /bin/sh -c "$s" asap2e2e "$@"; fi; ` +
	`if command -v setsid >/dev/null 2>&1; then exec setsid /bin/sh -c "$s" asap2e2e "$@"; fi; ` +
	`echo "asap2e2e: not a process group leader and setsid is missing: refusing to run a command that could not be stopped" >&2; exit 127`

// stage2 runs as process group leader: $1 = grace seconds, $2 = marker, $3 = the command.
const stage2 = `echo "$2 $$" >&2; exec 3<&0; ` +
	`{ trap '' TERM; cat <&3 >/dev/null 2>&1; a=; kill -0 $$ 2>/dev/null && a=1; kill -s TERM -- -$$; ` +
	`if [ -n "$a" ]; then sleep "$1"; fi; kill -s KILL -- -$$; } </dev/null >/dev/null 2>&1 & ` +
	`exec 3<&- </dev/null; exec /bin/sh -c "$3"`

// ShellQuote quotes s as one word for any POSIX shell. A word of only
// letters, digits and -_.:/=@+, is returned as it is, so the commands in
// evidence files and the command log stay readable; anything else is
// single-quoted. e2e/offload builds its hypervisor commands with it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("-_.:/=@+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// wrapCommand returns the line sent to the server for cmd.
func wrapCommand(cmd, marker string, grace time.Duration, sudo bool) string {
	secs := int(math.Ceil(grace.Seconds()))
	if secs < 1 {
		secs = 1
	}
	prefix := "exec "
	if sudo {
		prefix = "exec sudo -n "
	}
	return prefix + "/bin/sh -c " + ShellQuote(stage1) + " asap2e2e " + ShellQuote(stage2) + " " +
		strconv.Itoa(secs) + " " + ShellQuote(marker) + " " + ShellQuote(cmd)
}

// killCommand signals a whole process group.
func killCommand(pgid int, signal string, sudo bool) string {
	c := fmt.Sprintf("kill -s %s -- -%d 2>/dev/null; true", signal, pgid)
	if sudo {
		return "sudo -n /bin/sh -c " + ShellQuote(c)
	}
	return c
}

// newMarker returns a marker no command output will contain by accident.
func newMarker() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on Linux; fall back to the clock.
		return "ASAP2E2E-PGID-" + strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	return "ASAP2E2E-PGID-" + hex.EncodeToString(b)
}

// maxPreMarker bounds how much stderr is held back while looking for the
// marker line; longer lines pass through unchanged.
const maxPreMarker = 4096

// pgidWriter is the session's stderr: it removes the wrapper's marker line,
// records the process group id, and keeps everything else.
type pgidWriter struct {
	marker string

	mu    sync.Mutex
	out   bytes.Buffer // stderr as the command wrote it
	line  []byte       // pending partial line before the marker is found
	found bool
	pgid  int
	ready chan struct{} // closed when the marker was seen
}

func newPGIDWriter(marker string) *pgidWriter {
	return &pgidWriter{marker: marker, ready: make(chan struct{})}
}

func (w *pgidWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.found {
		w.out.Write(p)
		return len(p), nil
	}
	w.line = append(w.line, p...)
	for !w.found {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			if len(w.line) > maxPreMarker {
				w.out.Write(w.line)
				w.line = w.line[:0]
			}
			break
		}
		l := w.line[:i]
		if rest, ok := bytes.CutPrefix(l, []byte(w.marker+" ")); ok {
			if n, err := strconv.Atoi(string(bytes.TrimSpace(rest))); err == nil && n > 1 {
				w.pgid = n
				w.found = true
				close(w.ready)
				w.out.Write(w.line[i+1:])
				w.line = nil
				break
			}
		}
		w.out.Write(w.line[:i+1])
		w.line = w.line[i+1:]
	}
	return len(p), nil
}

// bytes returns stderr without the marker line (call after the session ended).
func (w *pgidWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append([]byte(nil), w.out.Bytes()...)
	return append(out, w.line...)
}

func (w *pgidWriter) id() (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pgid, w.found
}

// lockedBuffer is a bytes.Buffer safe for one writer and a later reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.b.Bytes()...)
}

// addressRE is what a command may name as a peer without quoting: an IP
// address (v4, v6 with an optional %zone) or a host name.
var addressRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.:%-]*$`)

// ValidAddress says whether s can stand in a command line as a peer's
// address (the iperf3 and sockperf runners put it there unquoted).
func ValidAddress(s string) bool { return addressRE.MatchString(s) }
