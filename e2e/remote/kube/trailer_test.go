package kube

import (
	"bytes"
	"errors"
	"testing"

	utilexec "k8s.io/client-go/util/exec"
)

// The trailer is taken out of stderr however the stream cuts it, also
// after output that did not end its line; everything else passes, in
// order.
func TestTrailerWriter(t *testing.T) {
	const m = "asap2e2e-exit-0011223344556677"
	cases := []struct {
		name   string
		writes []string
		want   string
		seen   bool
	}{
		{"alone", []string{m + " 0\n"}, "", true},
		{"after lines", []string{"a\nb\n", m + " 3\n"}, "a\nb\n", true},
		{"split everywhere", []string{"err", "or\n" + m[:5], m[5:] + " 1", "7\n"}, "error\n", true},
		{"after an unended line", []string{"bbbb", m + " 0\n"}, "bbbb", true},
		{"none", []string{"x\n", "partial"}, "x\npartial", false},
		{"another marker is output", []string{"asap2e2e-exit-ffff 0\n"}, "asap2e2e-exit-ffff 0\n", false},
		{"output after it", []string{m + " 0\nlate\n"}, "late\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := newTrailerWriter(&out, m)
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if seen := w.end(); seen != tc.seen || out.String() != tc.want {
				t.Errorf("got %q (trailer %v), want %q (trailer %v)", out.String(), seen, tc.want, tc.seen)
			}
		})
	}
}

func TestUntrailed(t *testing.T) {
	exit137 := utilexec.CodeExitError{Err: errors.New("killed"), Code: 137}
	transport := errors.New("stream reset")
	for _, tc := range []struct {
		name              string
		err               error
		trailer, stopping bool
		wantExit          int
	}{
		{"exit 0 with trailer", nil, true, false, 0},
		{"exit 137 with trailer (the command's own)", exit137, true, false, 137},
		{"exit 0 without trailer: a dropped stream", nil, false, false, -1},
		{"exit 137 without trailer: killed from outside", exit137, false, false, -1},
		{"exit 137 without trailer while stopping: the KILL", exit137, false, true, 137},
		{"transport error", transport, false, false, -1},
	} {
		got := untrailed(tc.err, tc.trailer, tc.stopping)
		if exitOf(got) != tc.wantExit {
			t.Errorf("%s: untrailed = %v (exit %d), want exit %d", tc.name, got, exitOf(got), tc.wantExit)
		}
	}
}
