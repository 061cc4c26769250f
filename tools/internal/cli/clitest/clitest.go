// Package clitest checks the command-line convention of package cli on a
// command's run function, for the tests of every command under tools/.
package clitest

import (
	"bytes"
	"io"
	"testing"
)

// HelpConvention runs the command with -h, --help and an unknown flag: help
// must print a usage on stdout only and exit 0; the unknown flag must be
// reported on stderr only with exit status 2.
func HelpConvention(t *testing.T, run func(args []string, stdout, stderr io.Writer) int) {
	t.Helper()
	for _, tc := range []struct {
		args []string
		code int
	}{{[]string{"-h"}, 0}, {[]string{"--help"}, 0}, {[]string{"--no-such-flag"}, 2}} {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tc.args, code, tc.code, errb.String())
		}
		if tc.code == 0 && (out.Len() == 0 || errb.Len() != 0 || !bytes.Contains(out.Bytes(), []byte("usage"))) {
			t.Errorf("%q: usage must go to stdout only; stdout %q stderr %q", tc.args, out.String(), errb.String())
		}
		if tc.code == 2 && (errb.Len() == 0 || out.Len() != 0) {
			t.Errorf("%q: a wrong flag must be reported on stderr only; stdout %q stderr %q", tc.args, out.String(), errb.String())
		}
	}
}
