package framework

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A failure reads as a sentence: the step, then the error's message chain
// once, never the Go structure of the wrapped error.
func TestExplain(t *testing.T) {
	base := errors.New("iperf3 reported: unable to send control message: Broken pipe")
	wrapped := fmt.Errorf("tcp-p1 repeat 1: %w", fmt.Errorf("guest vm1: %w", base))
	got := Explain(wrapped, "running %s", "TCP 1 stream")
	want := "running TCP 1 stream: tcp-p1 repeat 1: guest vm1: iperf3 reported: unable to send control message: Broken pipe"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for _, bad := range []string{"wrapError", "0x", "msg:", "err:"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q shows the error's structure (%q)", got, bad)
		}
	}
	joined := errors.Join(errors.New("tc: software: no rule"), errors.New("dpctl: software: dp:ovs flows"))
	if got := Explain(joined, "proving the path"); got != "proving the path:\n  tc: software: no rule\n  dpctl: software: dp:ovs flows" {
		t.Errorf("joined: %q", got)
	}
	if got := Explain(nil, "nothing"); got != "nothing" {
		t.Errorf("nil: %q", got)
	}
}
