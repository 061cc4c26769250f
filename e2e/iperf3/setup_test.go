package iperf3

import (
	"strings"
	"testing"
)

// Samples: testdata/README.md ("UDP stream setup and guards") says how each
// was recorded with the real iperf3 3.12 in a network namespace, the loss
// made by an nftables rule.
func TestUDPSetupFailure(t *testing.T) {
	cases := []struct {
		file   string
		setup  bool
		reason string
	}{
		// the client's connect datagram dropped: the client's 30 s wait ends with EAGAIN
		{"v3.12-udp-setup-request-lost.json", true, "unable to read from stream socket: Resource temporarily unavailable"},
		// the server's reply dropped (2 processes' worth of streams, -l 700): the same
		{"v3.12-udp-setup-reply-lost.json", true, "unable to read from stream socket: Resource temporarily unavailable"},
		// the same message family after three intervals of traffic: not setup
		{"v3.12-udp-refused-after-intervals.json", false, ""},
		// TCP's own stream connect failing: no test_start says TCP, so the
		// message alone matches; Run asks only for UDP profiles (TestRunNeverRetriesTCP)
		{"v3.12-tcp-stream-connect-timeout.json", true, "unable to connect stream: Connection timed out"},
		// --snd-timeout fired after intervals (TCP, test_start present)
		{"v3.12-tcp-snd-timeout.json", false, ""},
		// the control connection, not a stream
		{"v3.12-refused.json", false, ""},
		{"v3.12-server-busy.json", false, ""},
		{"v3.12-interrupted.json", false, ""},
		// successful runs
		{"v3.12-udp-b0-p1.json", false, ""},
		{"v3.12-tcp-p1.json", false, ""},
		// the server's own JSON of the request-lost run: its --rcv-timeout fired
		{"v3.12-udp-setup-request-lost.server.json", false, ""},
		// a lab server whose UDP flow ran 5 intervals, then lost its control
		// connection to a 5 s --snd-timeout: not setup, never retried
		{"v3.12-udp-control-user-timeout.json", false, ""},
	}
	for _, c := range cases {
		reason, ok := UDPSetupFailure(load(t, c.file))
		if ok != c.setup || reason != c.reason {
			t.Errorf("%s: (%q, %v), want (%q, %v)", c.file, reason, ok, c.reason, c.setup)
		}
	}
}

// Edited from testdata/v3.12-udp-setup-request-lost.json here: the 3.1.7
// client of esnet/iperf#862 wrote "error - " before the message; a test_start
// naming TCP, or bytes in end, rule a run out; input that is not iperf3's
// JSON is never a setup failure.
func TestUDPSetupFailureEdges(t *testing.T) {
	rec := string(load(t, "v3.12-udp-setup-request-lost.json"))
	cases := []struct {
		name  string
		data  string
		setup bool
	}{
		{"3.1.7 prefix", strings.Replace(rec, `"error":	"unable`, `"error":	"error - unable`, 1), true},
		{"listener, not a lost datagram", strings.Replace(rec, "unable to read from stream socket", "unable to start stream listener", 1), false},
		{"server accept relayed", strings.Replace(rec, "unable to read from stream socket", "unable to accept stream connection", 1), true},
		{"test_start says TCP", strings.Replace(rec, `"connected":	[],`, `"connected":	[], "test_start": {"protocol": "TCP"},`, 1), false},
		{"test_start says UDP", strings.Replace(rec, `"connected":	[],`, `"connected":	[], "test_start": {"protocol": "UDP"},`, 1), true},
		{"bytes in end", strings.Replace(rec, `"end":	{`, `"end":	{"sum_sent": {"bytes": 1200},`, 1), false},
		{"no error", strings.Replace(rec, `"error":`, `"note":`, 1), false},
		{"empty", "", false},
		{"not JSON", "iperf3: error - unable to read from stream socket", false},
		{"error not a string", `{"error": 5}`, false},
	}
	for _, c := range cases {
		if _, ok := UDPSetupFailure([]byte(c.data)); ok != c.setup {
			t.Errorf("%s: %v, want %v", c.name, ok, c.setup)
		}
	}
}

func FuzzUDPSetupFailure(f *testing.F) {
	for _, name := range []string{"v3.12-udp-setup-request-lost.json", "v3.12-udp-refused-after-intervals.json", "v3.12-refused.json",
		"v3.12-lab-control-aborted-client.json"} {
		f.Add(load(f, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A control connection aborted in setup: a client that ended before its
		// test began with no stream connected, never a result.
		if ControlAbortedInSetup(data) {
			if n, ok := StreamsConnected(data); !ok || n != 0 {
				t.Fatalf("control aborted in setup, but StreamsConnected = (%d, %v): %q", n, ok, data)
			}
			if _, err := Parse(data); err == nil {
				t.Fatalf("control aborted in setup, but Parse accepts it as a result: %q", data)
			}
		}
		reason, ok := UDPSetupFailure(data)
		if ok != (reason != "") {
			t.Fatalf("ok %v with reason %q", ok, reason)
		}
		if ok {
			if _, err := Parse(data); err == nil {
				t.Fatalf("a setup failure that Parse accepts as a result: %q", data)
			}
		}
	})
}

// How far a client that ended before its test got with its streams.
func TestStreamsConnected(t *testing.T) {
	cases := []struct {
		file string
		n    int
		ok   bool
	}{
		// TERM (the harness's kill) in the 61st stream's connect
		{"v3.12-tcp-killed-in-setup.json", 60, true},
		// its only stream's SYNs unanswered past --snd-timeout
		{"v3.12-tcp-stream-connect-timeout.json", 0, true},
		// the control connection refused: no stream either
		{"v3.12-refused.json", 0, true},
		// a test that began (test_start), then failed or was stopped
		{"v3.12-interrupted.json", 0, false},
		{"v3.12-tcp-snd-timeout.json", 0, false},
		// a successful run
		{"v3.12-tcp-p15.json", 0, false},
	}
	for _, c := range cases {
		if n, ok := StreamsConnected(load(t, c.file)); n != c.n || ok != c.ok {
			t.Errorf("%s: %d, %v; want %d, %v", c.file, n, ok, c.n, c.ok)
		}
	}
	if _, ok := StreamsConnected([]byte("not json")); ok {
		t.Error("garbage read as a client")
	}
}

// StreamsDropped on the recorded drop, and on what is not one: a server
// without the receive timeout, one that accepted every stream, a client
// that began its test, output that is not JSON.
func TestStreamsDropped(t *testing.T) {
	client := load(t, "v3.18-lab-stream-cookie-late-client.json")
	server := load(t, "v3.18-lab-stream-cookie-late-server.json")
	if a, c, ok := StreamsDropped(client, server); !ok || a != 124 || c != 125 {
		t.Errorf("recorded drop: accepted %d, connected %d, ok %v; want 124, 125, true", a, c, ok)
	}
	otherError := []byte(strings.Replace(string(server), idleTimeoutError, "the server is busy running a test", 1))
	allAccepted := []byte(strings.Replace(string(client), `"connected":`, `"connected_was":`, 1))
	for name, tc := range map[string][2][]byte{
		"server error not the receive timeout": {client, otherError},
		"client that connected none":           {allAccepted, server},
		"client that began its test":           {load(t, "v3.12-tcp-p1.json"), server},
		"server output not JSON":               {client, []byte("iperf3: error")},
		"no server output":                     {client, nil},
	} {
		if a, c, ok := StreamsDropped(tc[0], tc[1]); ok {
			t.Errorf("%s: ok with accepted %d, connected %d", name, a, c)
		}
	}
}

// ControlAbortedInSetup on recorded output: only a client that got the
// server's PARAM_EXCHANGE, connected no stream and ended on iperf3 3.12's
// "unable to send control message".
func TestControlAbortedInSetup(t *testing.T) {
	cases := []struct {
		file string
		want bool
	}{
		{"v3.12-lab-control-aborted-client.json", true},
		{"v3.12-control-aborted-repro-client.json", true},
		// their servers: no connecting_to, another error
		{"v3.12-lab-control-aborted-server.json", false},
		{"v3.12-control-aborted-repro-server.json", false},
		// before the test began, for other reasons
		{"v3.12-tcp-killed-in-setup.json", false},
		{"v3.12-tcp-stream-connect-timeout.json", false},
		{"v3.12-server-busy.json", false},
		{"v3.12-refused.json", false},
		// a finished test, and one a guard ended mid-test
		{"v3.12-tcp-p1.json", false},
		{"v3.12-tcp-snd-timeout.json", false},
	}
	for _, c := range cases {
		if got := ControlAbortedInSetup(load(t, c.file)); got != c.want {
			t.Errorf("%s: %v, want %v", c.file, got, c.want)
		}
	}
	for _, b := range [][]byte{nil, []byte("{"), []byte(`{"error": "unable to send control message: x"}`)} {
		if ControlAbortedInSetup(b) {
			t.Errorf("%q: true", b)
		}
	}
}
