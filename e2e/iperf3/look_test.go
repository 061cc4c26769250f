package iperf3

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Samples: LookCommand's real output, recorded on this machine with iperf3
// 3.12 between two network namespaces (testdata/README.md, "The look at a
// client at its bound").
func TestParseLookRecorded(t *testing.T) {
	const server = "198.19.250.1"
	cases := []struct {
		file          string
		port, streams int
		est, syn      int
		load          float64
		words         string
	}{
		// one stream's SYN always dropped: 60 streams and the control
		// connection up, the 61st stream in connect(), the client in wait_woken
		{"look-v3.12-setup-stuck.txt", 5203, 125, 61, 1, 8.56,
			"stuck in connection setup: 60 of 125 streams established, 1 SYN-SENT after 40s; guest load 8.56; iperf3 pid 5195 state S in wait_woken"},
		// the same moment read by netstat (ss hidden from PATH)
		{"look-v3.12-setup-stuck-netstat.txt", 5203, 125, 61, 1, 8.56,
			"stuck in connection setup: 60 of 125 streams established, 1 SYN-SENT after 40s; guest load 8.56; iperf3 pid 5195 state S in wait_woken"},
		// every SYN to the port dropped: the control connection never came up
		{"look-v3.12-control-stuck.txt", 5204, 125, 0, 1, 8.16,
			"stuck connecting its control connection (1 SYN-SENT) after 40s; guest load 8.16; iperf3 pid 6359 state S in poll_schedule_timeout.constprop.0"},
		// 8 clients of 125 streams, 20% of SYNs dropped, 25 s in: every
		// client still connecting its streams one at a time
		{"look-v3.12-8x125-syn-loss.txt", 5203, 125, 87, 1, 8.82,
			"stuck in connection setup: 86 of 125 streams established, 1 SYN-SENT after 40s; guest load 8.82; iperf3 pid 7675 state S in wait_woken"},
		{"look-v3.12-8x125-syn-loss.txt", 5201, 125, 117, 1, 8.82,
			"stuck in connection setup: 116 of 125 streams established, 1 SYN-SENT after 40s; guest load 8.82; iperf3 pid 7666 state S"},
		// port 5204's client of that run had already exited
		{"look-v3.12-8x125-syn-loss.txt", 5204, 125, 0, 0, 8.82,
			"gone: no iperf3 client and no connection toward port 5204 on the guest after 40s; guest load 8.82; no iperf3 process with -c 198.19.250.1 -p 5204"},
		// the harness's own look at its bound (2m1s): the server had given
		// up after 120 s without a message and closed its side
		{"look-v3.12-server-gone.txt", 5201, 100, 0, 1, 0.02,
			"stuck in connection setup: 59 of 100 streams established, 1 SYN-SENT after 40s; not ESTAB: 60 CLOSE-WAIT; guest load 0.02; iperf3 pid 30080 state S in wait_woken"},
		// the same sockets read as 10 streams: past setup
		{"look-v3.12-setup-stuck.txt", 5203, 10, 61, 1, 8.56,
			"past connection setup (10 of 10 streams and the control connection established): in its test or its end after 40s; guest load 8.56; iperf3 pid 5195 state S in wait_woken"},
	}
	for _, c := range cases {
		l := ParseLook(load(t, c.file))
		n := l.Counts(netip.MustParseAddr(server), c.port)
		if n["ESTAB"] != c.est || n["SYN-SENT"] != c.syn || !l.HasLoad || l.Load1 != c.load || !l.HasProcesses {
			t.Errorf("%s port %d: counts %v, load %v (%v), processes %v", c.file, c.port, n, l.Load1, l.HasLoad, l.HasProcesses)
		}
		if got := l.Words(server, c.port, c.streams, 40*time.Second); got != c.words {
			t.Errorf("%s port %d:\n got  %s\n want %s", c.file, c.port, got, c.words)
		}
	}
	// the whole 8-client sample: every socket line read, by port
	l := ParseLook(load(t, "look-v3.12-8x125-syn-loss.txt"))
	est := 0
	for port := 5201; port <= 5208; port++ {
		est += l.Counts(netip.Addr{}, port)["ESTAB"]
	}
	if est != 714 || len(l.Sockets) != 722 || len(l.Processes) != 14 {
		t.Errorf("8x125: %d ESTAB, %d sockets, %d processes", est, len(l.Sockets), len(l.Processes))
	}
}

// What the look cannot see is said, not guessed: a failed ss, no load, no
// process section; an IPv4-mapped peer is the server's address.
func TestLookWordsPartial(t *testing.T) {
	out := "== tcp sockets\nsh: 1: ss: not found\nsh: 1: netstat: not found\n== /proc/loadavg\ncat: /proc/loadavg: No such file or directory\n"
	if got := ParseLook([]byte(out)).Words("10.0.0.5", 5201, 1, time.Second); got != "not connected: no connection toward port 5201 open after 1s" {
		t.Errorf("nothing seen: %q", got)
	}
	out = "== tcp sockets\nESTAB 0 0 [::ffff:10.0.0.9]:40000 [::ffff:10.0.0.5]:5201\nFIN-WAIT-1 0 1 10.0.0.9:40001 10.0.0.5:5201\n" +
		"ESTAB 0 0 10.0.0.9:40002 10.0.0.6:5201\n== iperf3 clients\n"
	got := ParseLook([]byte(out)).Words("10.0.0.5", 5201, 3, time.Second)
	want := "stuck in connection setup: 1 of 3 streams established, 0 SYN-SENT after 1s; not ESTAB: 1 FIN-WAIT-1; no iperf3 process with -c 10.0.0.5 -p 5201"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// FuzzParseLook: never panics; every socket has a known state and a peer;
// the counts by state of every port add up to the sockets parsed; the load
// is not negative; a process has a positive pid.
func FuzzParseLook(f *testing.F) {
	for _, name := range []string{"look-v3.12-setup-stuck.txt", "look-v3.12-setup-stuck-netstat.txt", "look-v3.12-control-stuck.txt"} {
		f.Add(load(f, name))
	}
	f.Add([]byte("== tcp sockets\ntcp6 0 0 ::ffff:1.2.3.4:1 ::ffff:1.2.3.5:5201 SYN_SENT\n== /proc/loadavg\n-1 0 0\n== iperf3 clients\n1 R - iperf3 -c -p\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		l := ParseLook(out)
		ports := map[int]bool{}
		for _, s := range l.Sockets {
			if !ssStates[s.State] || !s.Peer.IsValid() {
				t.Fatalf("socket %+v", s)
			}
			ports[int(s.Peer.Port())] = true
		}
		sum := 0
		for p := range ports {
			for st, n := range l.Counts(netip.Addr{}, p) {
				if n <= 0 || !ssStates[st] {
					t.Fatalf("port %d: %d %s", p, n, st)
				}
				sum += n
			}
		}
		if sum != len(l.Sockets) {
			t.Fatalf("counts add to %d, %d sockets parsed", sum, len(l.Sockets))
		}
		if l.HasLoad && l.Load1 < 0 {
			t.Fatalf("load %v", l.Load1)
		}
		for _, p := range l.Processes {
			if p.PID <= 0 || p.Port < 0 {
				t.Fatalf("process %+v", p)
			}
		}
		if w := l.Words("198.19.250.1", 5201, 125, time.Second); !strings.Contains(w, " after 1s") {
			t.Fatalf("words %q", w)
		}
	})
}
