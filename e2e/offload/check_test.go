package offload

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func TestExpectPath(t *testing.T) {
	off := Check{Name: "tc", Verdict: results.VerdictOffloaded, Reason: "rules in hardware"}
	sw := Check{Name: "dpctl", Verdict: results.VerdictSoftware, Reason: "no offloaded flows"}
	inc := Check{Name: "representor", Verdict: results.VerdictInconclusive, Reason: "tcpdump missing"}
	cases := []struct {
		name   string
		path   results.Path
		checks []Check
		errHas []string // empty: no error
	}{
		{"asap2 all offloaded", results.PathASAP2, []Check{off, off, off}, nil},
		{"asap2 one software", results.PathASAP2, []Check{off, sw}, []string{"1 of 2", "dpctl: software: no offloaded flows"}},
		{"asap2 inconclusive fails too", results.PathASAP2, []Check{off, inc, sw}, []string{"2 of 3", "representor: inconclusive: tcpdump missing", "dpctl: software"}},
		{"baseline all software", results.PathBaseline, []Check{sw, sw}, nil},
		{"baseline software and inconclusive", results.PathBaseline, []Check{sw, inc}, nil},
		{"baseline one offloaded", results.PathBaseline, []Check{sw, off}, []string{"tc: offloaded: rules in hardware"}},
		{"baseline nothing proves software", results.PathBaseline, []Check{inc}, []string{"no check shows the software path", "tcpdump missing"}},
		{"no checks", results.PathASAP2, nil, []string{"no offload check ran"}},
		{"unknown path", "nic-standard", []Check{sw}, []string{`unknown value "nic-standard"`}},
	}
	for _, c := range cases {
		err := ExpectPath(c.path, c.checks)
		if len(c.errHas) == 0 {
			if err != nil {
				t.Errorf("%s: unexpected error: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, s := range c.errHas {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q lacks %q", c.name, err, s)
			}
		}
	}
}

// Issue 9 point 2: dpctl's offloaded:yes is OVS's claim; an asap2 verdict
// stands only where tc's in_hw agrees for the same flow and hypervisor. The
// old ExpectPath accepted a dpctl-only "offloaded" (a run configured with
// dpctl alone, or checks whose places do not match).
func TestExpectPathASAP2NeedsTCWhereDpctlSaysOffloaded(t *testing.T) {
	at := func(name, flow, host string, v results.Verdict) Check {
		return Check{Name: name, Verdict: v, Reason: "r", Flow: flow, Host: host}
	}
	agree := []Check{at("tc", "tcp", "compute1", results.VerdictOffloaded), at("dpctl", "tcp", "compute1", results.VerdictOffloaded),
		at("tc", "tcp", "compute2", results.VerdictOffloaded), at("dpctl", "tcp", "compute2", results.VerdictOffloaded)}
	if err := ExpectPath(results.PathASAP2, agree); err != nil {
		t.Fatalf("tc and dpctl agree at every place: %v", err)
	}
	dpctlOnly := []Check{at("dpctl", "tcp", "compute1", results.VerdictOffloaded), at("dpctl", "udp", "compute1", results.VerdictOffloaded)}
	err := ExpectPath(results.PathASAP2, dpctlOnly)
	if err == nil || !strings.Contains(err.Error(), "tcp flow on compute1: dpctl offloaded, tc did not run there") ||
		!strings.Contains(err.Error(), "udp flow on compute1") || !strings.Contains(err.Error(), "OVS's own claim") {
		t.Errorf("dpctl alone must not prove asap2: %v", err)
	}
	// tc offloaded on the other hypervisor only does not confirm this one
	crossed := []Check{at("tc", "tcp", "compute2", results.VerdictOffloaded), at("dpctl", "tcp", "compute1", results.VerdictOffloaded)}
	if err := ExpectPath(results.PathASAP2, crossed); err == nil || !strings.Contains(err.Error(), "tcp flow on compute1: dpctl offloaded, tc did not run there") {
		t.Errorf("tc on compute2 cannot confirm dpctl on compute1: %v", err)
	}
}

func TestMACHelpers(t *testing.T) {
	set, err := newMACSet([]string{"CA:2E:A7:3F:F5:0F"})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]bool{
		"ca:2e:a7:3f:f5:0f":                   true,
		"ca:2e:a7:3f:f5:0f/48":                true,
		"ca:2e:a7:3f:f5:0f/ff:ff:ff:ff:ff:ff": true,
		"ca:2e:a7:3f:f5:0f/ff:ff:ff:00:00:00": false, // partial mask is not this guest
		"0a:40:bd:30:89:99":                   false,
		"garbage":                             false,
	} {
		if got := set.has(in); got != want {
			t.Errorf("has(%q) = %v, want %v", in, got, want)
		}
	}
	if _, err := newMACSet([]string{"aa", "bb:cc"}); err == nil || !strings.Contains(err.Error(), `"aa"`) || !strings.Contains(err.Error(), `"bb:cc"`) {
		t.Errorf("all bad MACs named: %v", err)
	}
	for in, want := range map[string]string{"eth0": "eth0", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "x;rm": "'x;rm'"} {
		if got := remote.ShellQuote(in); got != want {
			t.Errorf("remote.ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
