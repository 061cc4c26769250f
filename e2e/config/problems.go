package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Problem is one thing wrong with a configuration file. Its Error() reads
//
//	<file>: <key.path>: <message>, got <value>
//
// or, for problems found while decoding (unknown keys, wrong types), with the
// line number:
//
//	<file>:<line>: <key.path>: <message>
type Problem struct {
	File    string // the config file as given to Load
	Line    int    // 1-based line, 0 when not known (validation problems)
	Path    string // dotted key path, e.g. "flavor.vcpus", "thresholds[2].op"
	Message string // what is wrong, e.g. "must be > 0"
	// Value is the offending value as written in messages; empty when
	// HasValue is false (e.g. a missing required key).
	Value    string
	HasValue bool
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	if p.HasValue {
		b.WriteString(", got ")
		b.WriteString(p.Value)
	}
	return b.String()
}

// Problems is every problem found in one file. It is the error returned by
// Load and Validate: errors.As(err, &problems) gives the list; Error() is one
// problem per line.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.Is / errors.As see each Problem.
func (ps Problems) Unwrap() []error {
	out := make([]error, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}

// Messages returns Error() of each problem, in order.
func (ps Problems) Messages() []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Error()
	}
	return out
}

// formatValue renders a value the way messages show it: strings quoted,
// durations in Go syntax, slices and maps in Go's %v form.
func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case results.Path, BindingProfile, GuestAccessMode:
		return fmt.Sprintf("%q", fmt.Sprint(x))
	case time.Duration:
		return x.String()
	case []string:
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = fmt.Sprintf("%q", s)
		}
		return "[" + strings.Join(q, " ") + "]"
	case nil:
		return "nothing"
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.IsNil() {
		return "nothing"
	}
	return fmt.Sprintf("%v", v)
}
