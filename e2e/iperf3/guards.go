package iperf3

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// iperf3's own guards against a dead peer, and the release that added each
// (esnet/iperf RELNOTES.md):
//
//   - --connect-timeout ms (3.2, #216): the client gives up setting up its
//     control connection (src/iperf_client_api.c netdial with the timeout).
//     Its streams it does not bound: 3.12 .. 3.21 connect each with a
//     blocking connect() of its own (iperf_tcp_connect), so a stream whose
//     SYNs go unanswered waits out the kernel's SYN retries (about 2 min);
//     only --snd-timeout below, or the harness's bound, ends it sooner
//     (SetupAllowance, LookCommand).
//   - --rcv-timeout ms (3.10, #1101/#1125): the receiving side ends a running
//     test with "idle timeout for receiving data" (IENOMSG) when nothing
//     arrived for that long; the server's default is 120000 ms. A client that
//     sends refuses it ("client receive timeout is valid only in receiving
//     mode", IERVRSONLYRCVTIMEOUT in src/iperf_api.c, 3.10 .. 3.21), and every
//     catalogue profile has the client send, so it goes to the server only.
//     3.20 ignores it for --bidir, which no profile uses.
//   - --snd-timeout ms (3.12, #1215/#1282): TCP_USER_TIMEOUT, i.e. how long
//     sent data may stay unacknowledged, on the control connection and on every
//     TCP data stream (src/iperf_client_api.c, iperf_tcp.c,
//     iperf_server_api.c), client or server. It also ends a stream connect
//     whose SYNs go unanswered (recorded: testdata/v3.12-tcp-stream-connect-timeout.json).
//     UDP data streams have no acknowledgement for it to time, so UDP
//     profiles do not get it.
var (
	ConnectTimeoutSince = Version{Major: 3, Minor: 2}
	RcvTimeoutSince     = Version{Major: 3, Minor: 10}
	SndTimeoutSince     = Version{Major: 3, Minor: 12}
)

// MinRcvTimeout is the smallest --rcv-timeout iperf3 accepts
// (MIN_NO_MSG_RCVD_TIMEOUT in src/iperf_api.h, 3.10 .. 3.21).
const MinRcvTimeout = 100 * time.Millisecond

// AtLeast reports whether v is release o or later.
func (v Version) AtLeast(o Version) bool {
	return v.Major > o.Major || (v.Major == o.Major && v.Minor >= o.Minor)
}

// Guards are the timeouts Run hands iperf3 itself, so that the tool gives up
// on a dead peer with its own error instead of waiting for the kernel's TCP
// retransmissions (minutes) or for the harness's bound. Zero leaves a guard
// out.
type Guards struct {
	// Connect is --connect-timeout on the client. Run sets it to the
	// iperf_server interval (RunInput.ListenTimeout): the servers are known
	// to listen by the time the clients start.
	Connect time.Duration
	// Stall is how long a peer may stay silent: --rcv-timeout on the
	// receiver (the server) and, for TCP profiles, --snd-timeout on both
	// sides (config traffic.stall_timeout). --snd-timeout is
	// TCP_USER_TIMEOUT on the data streams and the control connection. Not
	// for UDP: an unlimited UDP flow overloads its own path by design, and
	// the control connection's segments share it; measured on the lab, a
	// healthy udp-b0-p1 flow lost its control connection to a 5 s
	// TCP_USER_TIMEOUT ("unable to receive control message: Connection
	// timed out", recorded: testdata/v3.12-udp-control-user-timeout.json).
	Stall time.Duration
}

// GuardFlags are the guard flags one run's commands carry, and the guards
// an iperf3 too old for them went without.
type GuardFlags struct {
	Client []string `json:"client,omitempty"`
	Server []string `json:"server,omitempty"`
	// Missing names each guard left out for the version, e.g.
	// "client --snd-timeout (iperf3 3.9; needs 3.12)".
	Missing []string `json:"missing,omitempty"`
}

// Flags decides the guard flags for profile p between a client and a server
// of the given iperf3 versions.
func (g Guards) Flags(p Profile, client, server Version) GuardFlags {
	var f GuardFlags
	add := func(side string, v Version, flag string, d time.Duration, since Version) {
		switch {
		case d <= 0:
		case !v.AtLeast(since):
			f.Missing = append(f.Missing, fmt.Sprintf("%s %s (iperf3 %s; needs %s)", side, flag, v, since))
		case side == "client":
			f.Client = append(f.Client, flag, millis(d))
		default:
			f.Server = append(f.Server, flag, millis(d))
		}
	}
	add("client", client, "--connect-timeout", g.Connect, ConnectTimeoutSince)
	add("server", server, "--rcv-timeout", g.Stall, RcvTimeoutSince)
	if p.Protocol == TCP {
		add("client", client, "--snd-timeout", g.Stall, SndTimeoutSince)
		add("server", server, "--snd-timeout", g.Stall, SndTimeoutSince)
	}
	return f
}

// millis is d in whole milliseconds (iperf3's unit for every guard), never
// rounded down to 0.
func millis(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10)
}

// String is the record of a run's guards, e.g. "client --connect-timeout
// 30000 --snd-timeout 5000; server --rcv-timeout 5000 --snd-timeout 5000",
// with the guards the versions lacked after "without"; "" when there are
// none.
func (f GuardFlags) String() string {
	var parts []string
	if len(f.Client) > 0 {
		parts = append(parts, "client "+strings.Join(f.Client, " "))
	}
	if len(f.Server) > 0 {
		parts = append(parts, "server "+strings.Join(f.Server, " "))
	}
	if len(f.Missing) > 0 {
		parts = append(parts, "without "+strings.Join(f.Missing, ", "))
	}
	return strings.Join(parts, "; ")
}

// warning says what a version without a guard means for the run, or "".
func (f GuardFlags) warning() string {
	if len(f.Missing) == 0 {
		return ""
	}
	return fmt.Sprintf("iperf3 guards missing for the version: %s; a dead peer there is caught only by the harness's bound (-t + -O + the iperf_server interval, + the setup allowance for TCP)",
		strings.Join(f.Missing, ", "))
}
