package main

import (
	"bytes"
	"testing"
)

// Go's flag convention: help on stdout with status 0, a wrong flag on stderr with status 2.
func TestHelpAndBadFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{{[]string{"-h"}, 0}, {[]string{"--help"}, 0}, {[]string{"--no-such-flag"}, 2}} {
		var out, errb bytes.Buffer
		args := tc.args
		code := run(args, &out, &errb)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", args, code, tc.code, errb.String())
		}
		if tc.code == 0 && (out.Len() == 0 || errb.Len() != 0 || !bytes.Contains(out.Bytes(), []byte("usage"))) {
			t.Errorf("%q: usage must go to stdout only; stdout %q stderr %q", args, out.String(), errb.String())
		}
		if tc.code == 2 && (errb.Len() == 0 || out.Len() != 0) {
			t.Errorf("%q: a wrong flag must be reported on stderr only; stdout %q stderr %q", args, out.String(), errb.String())
		}
	}
}
