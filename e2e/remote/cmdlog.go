package remote

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DefaultLogOutputCap is how many bytes of each of stdout and stderr one
// command log entry keeps (first half and last half) when no cap is given.
const DefaultLogOutputCap = 64 * 1024

// CommandLog appends one JSON object per remote command to a file (JSON
// lines), normally <run artifacts>/commands.jsonl. It is safe for concurrent
// use. A nil *CommandLog records nothing.
//
// It records what the caller asked to run (never the internal wrapper) and
// the command's output; no authentication data passes through it.
type CommandLog struct {
	path string
	cap  int

	mu  sync.Mutex
	f   *os.File
	err error // first write error, reported by Close
	// refused, when set and non-nil, stops every later write; failed is
	// told of a failed write (SetGuard).
	refused func() error
	failed  func(error) error
}

// SetGuard makes the log write nothing once refused returns non-nil, and
// tells failed of a write that failed: the harness stops a run whose output
// directory became unwritable.
func (l *CommandLog) SetGuard(refused func() error, failed func(error) error) {
	l.mu.Lock()
	l.refused, l.failed = refused, failed
	l.mu.Unlock()
}

// LogEntry is one line of the command log.
type LogEntry struct {
	Target          string    `json:"target"`
	Cmd             string    `json:"cmd"`
	Sudo            bool      `json:"sudo,omitempty"`
	Background      bool      `json:"background,omitempty"` // started with Runner.Start
	Start           time.Time `json:"start"`
	DurationSeconds float64   `json:"duration_seconds"`
	ExitCode        int       `json:"exit_code"`
	Signal          string    `json:"signal,omitempty"`
	Error           string    `json:"error,omitempty"` // transport error / cancellation
	Stdout          string    `json:"stdout"`
	Stderr          string    `json:"stderr"`
	StdoutBytes     int       `json:"stdout_bytes"`
	StderrBytes     int       `json:"stderr_bytes"`
	Note            string    `json:"note,omitempty"` // e.g. what was cut from the output
}

// OpenCommandLog opens (creating it and its directory) the log at path for
// appending. outputCap <= 0 means DefaultLogOutputCap.
func OpenCommandLog(path string, outputCap int) (*CommandLog, error) {
	if outputCap <= 0 {
		outputCap = DefaultLogOutputCap
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("command log: creating directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("command log: opening %s: %w", path, err)
	}
	return &CommandLog{path: path, cap: outputCap, f: f}, nil
}

// Path is the log file.
func (l *CommandLog) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// Record appends the entry for one finished command.
func (l *CommandLog) Record(r Result, start time.Time, sudo, background bool, runErr error) {
	if l == nil {
		return
	}
	e := LogEntry{
		Target:          r.Target,
		Cmd:             r.Cmd,
		Sudo:            sudo,
		Background:      background,
		Start:           start.UTC(),
		DurationSeconds: r.Duration.Seconds(),
		ExitCode:        r.ExitCode,
		Signal:          r.Signal,
		StdoutBytes:     len(r.Stdout),
		StderrBytes:     len(r.Stderr),
	}
	if runErr != nil {
		e.Error = runErr.Error()
	}
	var notes []string
	var note string
	e.Stdout, note = capOutput("stdout", r.Stdout, l.cap)
	if note != "" {
		notes = append(notes, note)
	}
	e.Stderr, note = capOutput("stderr", r.Stderr, l.cap)
	if note != "" {
		notes = append(notes, note)
	}
	for i, n := range notes {
		if i > 0 {
			e.Note += "; "
		}
		e.Note += n
	}
	l.write(e)
}

func (l *CommandLog) write(e LogEntry) {
	line, err := json.Marshal(e)
	if err != nil { // cannot happen for these field types; keep the first error
		l.mu.Lock()
		if l.err == nil {
			l.err = fmt.Errorf("command log %s: encoding entry for %q: %w", l.path, e.Cmd, err)
		}
		l.mu.Unlock()
		return
	}
	line = append(line, '\n')
	l.mu.Lock()
	if l.f == nil {
		if l.err == nil {
			l.err = fmt.Errorf("command log %s: entry for %q written after Close", l.path, e.Cmd)
		}
		l.mu.Unlock()
		return
	}
	if l.refused != nil && l.refused() != nil {
		l.mu.Unlock()
		return
	}
	_, err = l.f.Write(line)
	if err != nil && l.err == nil {
		l.err = fmt.Errorf("command log %s: writing entry for %q: %w", l.path, e.Cmd, err)
	}
	failed := l.failed
	l.mu.Unlock()
	if err != nil && failed != nil {
		_ = failed(err)
	}
}

// Close closes the file and returns the first error any write met.
func (l *CommandLog) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		if err := l.f.Close(); err != nil && l.err == nil {
			l.err = fmt.Errorf("command log: closing %s: %w", l.path, err)
		}
		l.f = nil
	}
	return l.err
}

// capOutput keeps the first and last halves of out when it exceeds max bytes.
func capOutput(name string, out []byte, max int) (string, string) {
	if len(out) <= max {
		return string(out), ""
	}
	head, tail := max/2, max-max/2
	omitted := len(out) - head - tail
	s := string(out[:head]) + fmt.Sprintf("\n[... %d bytes omitted ...]\n", omitted) + string(out[len(out)-tail:])
	return s, fmt.Sprintf("%s truncated: kept first %d and last %d of %d bytes", name, head, tail, len(out))
}
