package offload

import (
	"strings"
	"testing"
)

func TestExpectPath(t *testing.T) {
	off := Check{Name: "tc", Verdict: Offloaded, Reason: "rules in hardware"}
	sw := Check{Name: "dpctl", Verdict: Software, Reason: "no offloaded flows"}
	inc := Check{Name: "representor", Verdict: Inconclusive, Reason: "tcpdump missing"}
	cases := []struct {
		name   string
		path   string
		checks []Check
		errHas []string // empty: no error
	}{
		{"asap2 all offloaded", PathASAP2, []Check{off, off, off}, nil},
		{"asap2 one software", PathASAP2, []Check{off, sw}, []string{"1 of 2", "dpctl: software: no offloaded flows"}},
		{"asap2 inconclusive fails too", PathASAP2, []Check{off, inc, sw}, []string{"2 of 3", "representor: inconclusive: tcpdump missing", "dpctl: software"}},
		{"baseline all software", PathBaseline, []Check{sw, sw}, nil},
		{"baseline software and inconclusive", PathBaseline, []Check{sw, inc}, nil},
		{"baseline one offloaded", PathBaseline, []Check{sw, off}, []string{"tc: offloaded: rules in hardware"}},
		{"baseline nothing proves software", PathBaseline, []Check{inc}, []string{"no check shows the software path", "tcpdump missing"}},
		{"no checks", PathASAP2, nil, []string{"no offload check ran"}},
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
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
