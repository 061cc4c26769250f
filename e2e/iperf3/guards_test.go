package iperf3

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func ver(minor int) Version { return Version{Major: 3, Minor: minor} }

// Each guard appears exactly from the release that added it (RELNOTES.md:
// --connect-timeout 3.2, --rcv-timeout 3.10, --snd-timeout 3.12), on the side
// iperf3 accepts it: --rcv-timeout on the receiving server only (a sending
// client refuses it), --snd-timeout on both sides of TCP only (an unlimited
// UDP flow starves its own control connection: see Guards.Stall).
func TestGuardFlagsByVersion(t *testing.T) {
	tcp, _ := Lookup("tcp-p1")
	udp, _ := Lookup("udp-b0-p1")
	g := Guards{Connect: 30 * time.Second, Stall: 5 * time.Second}
	cases := []struct {
		name           string
		p              Profile
		v              Version
		client, server string
		missing        int
	}{
		{"3.1 TCP: none", tcp, ver(1), "", "", 4},
		{"3.2 TCP: connect", tcp, ver(2), "--connect-timeout 30000", "", 3},
		{"3.9 UDP: connect", udp, ver(9), "--connect-timeout 30000", "", 1},
		{"3.10 UDP: + server rcv", udp, ver(10), "--connect-timeout 30000", "--rcv-timeout 5000", 0},
		{"3.11 TCP: no snd yet", tcp, ver(11), "--connect-timeout 30000", "--rcv-timeout 5000", 2},
		{"3.12 TCP: all", tcp, ver(12), "--connect-timeout 30000 --snd-timeout 5000", "--rcv-timeout 5000 --snd-timeout 5000", 0},
		{"3.12 UDP: no snd for UDP", udp, ver(12), "--connect-timeout 30000", "--rcv-timeout 5000", 0},
		{"3.19 TCP: all", tcp, ver(19), "--connect-timeout 30000 --snd-timeout 5000", "--rcv-timeout 5000 --snd-timeout 5000", 0},
		{"4.0 TCP: all", tcp, Version{Major: 4}, "--connect-timeout 30000 --snd-timeout 5000", "--rcv-timeout 5000 --snd-timeout 5000", 0},
	}
	for _, c := range cases {
		f := g.Flags(c.p, c.v, c.v)
		if got := strings.Join(f.Client, " "); got != c.client {
			t.Errorf("%s: client %q, want %q", c.name, got, c.client)
		}
		if got := strings.Join(f.Server, " "); got != c.server {
			t.Errorf("%s: server %q, want %q", c.name, got, c.server)
		}
		if len(f.Missing) != c.missing || (c.missing > 0) != (f.warning() != "") {
			t.Errorf("%s: missing %q, warning %q", c.name, f.Missing, f.warning())
		}
	}
	if f := (Guards{}).Flags(tcp, ver(12), ver(12)); len(f.Client)+len(f.Server)+len(f.Missing) != 0 || f.String() != "" {
		t.Errorf("zero guards gave flags %+v", f)
	}
	// iperf3 takes milliseconds; a fraction is rounded up, never to 0
	if f := (Guards{Connect: 1500 * time.Microsecond}).Flags(tcp, ver(12), ver(12)); !slices.Equal(f.Client, []string{"--connect-timeout", "2"}) {
		t.Errorf("1.5ms: %q", f.Client)
	}
}

func TestCommandsCarryTheGuardsOfTheirVersion(t *testing.T) {
	tcp, _ := Lookup("tcp-p1")
	f := Guards{Connect: 30 * time.Second, Stall: 5 * time.Second}.Flags(tcp, ver(9), ver(12))
	if got, want := ClientCommand("198.18.10.5", 5201, tcp, 1, 10*time.Second, 0, f.Client),
		"iperf3 -c 198.18.10.5 -p 5201 -J --get-server-output -t 10 --connect-timeout 30000 -P 1"; got != want {
		t.Errorf("3.9 client:\n%s\nwant\n%s", got, want)
	}
	if got, want := ServerCommand("198.18.10.5", 5201, f.Server),
		"iperf3 -s -1 -J -B 198.18.10.5 -p 5201 --rcv-timeout 5000 --snd-timeout 5000"; got != want {
		t.Errorf("3.12 server:\n%s\nwant\n%s", got, want)
	}
	if got, want := ServerCommand("198.18.10.5", 5201, nil), "iperf3 -s -1 -J -B 198.18.10.5 -p 5201"; got != want {
		t.Errorf("no guards: %q, want %q", got, want)
	}
	if got, want := f.String(), "client --connect-timeout 30000; server --rcv-timeout 5000 --snd-timeout 5000; without client --snd-timeout (iperf3 3.9; needs 3.12)"; got != want {
		t.Errorf("record:\n%s\nwant\n%s", got, want)
	}
}

// A Run between a 3.9 client and a 3.12 server gives each side what its
// version has, records it, and warns that the client goes without
// --snd-timeout.
func TestRunRecordsGuardsPerSide(t *testing.T) {
	s, c := pair(v312, "iperf 3.9 (cJSON 1.7.13)\n", recorded(t, map[int]string{5201: "v3.12-tcp-p1.json"}))
	m, err := Run(context.Background(), input(s, c, "tcp-p1"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	pr := m.Processes[0]
	if !strings.HasSuffix(pr.ServerCmd, " -p 5201 --rcv-timeout 5000 --snd-timeout 5000") || strings.Contains(pr.ClientCmd, "--snd-timeout") || !strings.Contains(pr.ClientCmd, "--connect-timeout 60000") {
		t.Errorf("commands:\n%s\n%s", pr.ServerCmd, pr.ClientCmd)
	}
	if want := "client --connect-timeout 60000; server --rcv-timeout 5000 --snd-timeout 5000; without client --snd-timeout (iperf3 3.9; needs 3.12)"; m.Guards.String() != want {
		t.Errorf("guards %q\nwant %q", m.Guards, want)
	}
	if !slices.ContainsFunc(m.Warnings, func(w string) bool { return strings.Contains(w, "client --snd-timeout") }) {
		t.Errorf("no warning about the missing guard: %q", m.Warnings)
	}
}

func TestRunRejectsStallTimeoutNotBelowListenTimeout(t *testing.T) {
	s, c := pair(v312, v312, nil)
	for _, stall := range []time.Duration{50 * time.Millisecond, time.Minute} {
		in := input(s, c, "tcp-p1")
		in.StallTimeout = stall
		if _, err := Run(context.Background(), in); err == nil || !strings.Contains(err.Error(), "stall timeout") {
			t.Errorf("stall %s: err = %v", stall, err)
		}
	}
	if len(c.ran) != 0 {
		t.Errorf("commands ran: %q", c.ran)
	}
}
