package cli

import (
	"bytes"
	"flag"
	"fmt"
	"strings"
	"testing"
)

func newFS() *flag.FlagSet {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.String("o", "", "output file")
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "usage: demo [-o FILE] ARG"); fs.PrintDefaults() }
	return fs
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args               []string
		done               bool
		code               int
		wantOut, wantErr   string
		noStdout, noStderr bool
	}{
		{args: []string{"-h"}, done: true, code: 0, wantOut: "usage: demo", noStderr: true},
		{args: []string{"--help"}, done: true, code: 0, wantOut: "output file", noStderr: true},
		{args: []string{"--bogus"}, done: true, code: 2, wantErr: "demo: flag provided but not defined: -bogus", noStdout: true},
		{args: []string{"-o"}, done: true, code: 2, wantErr: "usage: demo", noStdout: true},
		{args: []string{"-o", "x", "arg"}, done: false, code: 0, noStdout: true, noStderr: true},
	} {
		var out, errb bytes.Buffer
		fs := newFS()
		done, code := Parse(fs, tc.args, &out, &errb)
		if done != tc.done || code != tc.code {
			t.Errorf("%q: done=%v code=%d, want %v %d", tc.args, done, code, tc.done, tc.code)
		}
		if !strings.Contains(out.String(), tc.wantOut) || !strings.Contains(errb.String(), tc.wantErr) {
			t.Errorf("%q: stdout %q stderr %q", tc.args, out.String(), errb.String())
		}
		if (tc.noStdout && out.Len() > 0) || (tc.noStderr && errb.Len() > 0) {
			t.Errorf("%q: output on the wrong stream: stdout %q stderr %q", tc.args, out.String(), errb.String())
		}
	}
}
