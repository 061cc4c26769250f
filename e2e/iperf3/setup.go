package iperf3

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// A UDP stream is set up with one datagram each way and no retransmission
// (src/iperf_udp.c: iperf_udp_connect writes UDP_CONNECT_MSG and waits for
// UDP_CONNECT_REPLY with a 30-second SO_RCVTIMEO; iperf_udp_accept learns
// the client from that datagram and writes the reply). On a loaded path
// either datagram can be lost and the whole run fails before any traffic
// (esnet/iperf#862, open; the retry pull requests #1144 and #1402 were never
// merged, so no release up to 3.21 retries by itself).
//
// UDPSetupReplyWait is how long the client waits for the reply before it
// fails; the harness's bound on a client must exceed it for iperf3's own
// error, and so a retry, to happen.
const UDPSetupReplyWait = 30 * time.Second

// udpSetupErrors are iperf3's messages (src/iperf_error.c, the same text in
// 3.9 .. 3.21) for the failures of those setup steps. Each is followed by
// ": " and strerror(errno).
var udpSetupErrors = []string{
	// IESTREAMREAD: the client's recv of the server's reply failed: nothing
	// arrived within UDPSetupReplyWait ("Resource temporarily unavailable",
	// recorded: testdata/v3.12-udp-setup-*-lost.json) or not the reply.
	"unable to read from stream socket",
	// IESTREAMWRITE: the client's connect datagram (or the server's reply)
	// could not be sent.
	"unable to write to stream socket",
	// IESTREAMCONNECT: the client's UDP socket could not be made.
	"unable to connect stream",
	// IESTREAMACCEPT: the server's recvfrom/connect of the client's datagram.
	"unable to accept stream connection",
}

// IESTREAMLISTEN ("unable to start stream listener") is left out on
// purpose: a port the server cannot bind is not a lost datagram, and a retry
// would meet it again.

// SetupRetry is a UDP run that failed at stream setup and was run again.
type SetupRetry struct {
	At     time.Time `json:"at"`     // when the failed attempt was given up (UTC)
	Reason string    `json:"reason"` // iperf3's message, with the port of the process that failed
	// Processes are the abandoned attempt's processes with their raw output,
	// for the evidence directory.
	Processes []ProcessRun `json:"-"`
}

// UDPSetupFailure reports whether clientJSON, the -J output of an iperf3
// client, is a UDP run that failed while setting up its streams: iperf3's
// error is one of the stream-setup errors above, and no interval and no
// byte was reported (the streams never carried traffic). reason is iperf3's
// message. A setup-like message after traffic (e.g. "unable to write to
// stream socket: Connection refused" once the peer is gone, recorded:
// testdata/v3.12-udp-refused-after-intervals.json) is not one, and neither
// is output whose test_start names another protocol.
//
// Input looks like (testdata/v3.12-udp-setup-request-lost.json):
//
//	{"start": {"connected": [], "version": "iperf 3.12", ...},
//	 "intervals": [], "end": {},
//	 "error": "unable to read from stream socket: Resource temporarily unavailable"}
//
// It is pure and never panics.
func UDPSetupFailure(clientJSON []byte) (reason string, ok bool) {
	clean, _ := sanitizeNonFinite(clientJSON)
	var doc rawDoc
	if json.Unmarshal(clean, &doc) != nil || doc.Error == nil || len(doc.Intervals) > 0 {
		return "", false
	}
	if doc.Start != nil && doc.Start.TestStart != nil && Protocol(doc.Start.TestStart.Protocol) != UDP {
		return "", false
	}
	if e := doc.End; e != nil {
		for _, s := range []*rawSum{e.Sum, e.SumSent, e.SumReceived} {
			if s != nil && s.Bytes > 0 {
				return "", false
			}
		}
	}
	// A 3.12 client writes the message bare (its server writes "error - "
	// before it); the 3.1.7 client of esnet/iperf#862 wrote the prefix too.
	msg := strings.TrimPrefix(strings.TrimSpace(*doc.Error), "error - ")
	for _, e := range udpSetupErrors {
		if strings.HasPrefix(msg, e) {
			return msg, true
		}
	}
	return "", false
}

// StreamsConnected reads a client's -J output that ended before its test
// began (an error, no start.test_start, which iperf3 writes when every
// stream is up): how many of its streams had connected (start.connected
// lists each as its connect returns; the control connection is not in it).
// ok is false for output that is not such a client's. Recorded: a client
// stopped (TERM) in its 61st stream's connect lists 60
// (testdata/v3.12-tcp-killed-in-setup.json; its one interval is the TERM
// handler's, with a bogus 1503 s length); a client whose only stream timed
// out lists none (testdata/v3.12-tcp-stream-connect-timeout.json). It is
// pure and never panics.
func StreamsConnected(clientJSON []byte) (n int, ok bool) {
	doc, ok := endedInSetup(clientJSON)
	if !ok {
		return 0, false
	}
	return len(doc.Start.Connected), true
}

// endedInSetup decodes a client's -J output that ended with an error before
// its test began (a start without test_start); ok is false for any other.
func endedInSetup(clientJSON []byte) (doc rawDoc, ok bool) {
	clean, _ := sanitizeNonFinite(clientJSON)
	if json.Unmarshal(clean, &doc) != nil || doc.Error == nil || doc.Start == nil || doc.Start.TestStart != nil {
		return rawDoc{}, false
	}
	return doc, true
}

// sendMessageError is iperf3's IESENDMESSAGE: a state message it could not
// write on its control connection.
const sendMessageError = "unable to send control message"

// ControlAbortedInSetup reads a TCP client's -J output: true when it ended
// before its test began with its control connection dead after the parameter
// exchange had begun. Its on_connect ran (connecting_to: the server's
// PARAM_EXCHANGE arrived, and the client answered with the test's
// parameters), no stream connected, and the error is "unable to send control
// message". iperf3 3.12 writes that last one whenever the first error left the
// control connection dead: its cleanup (iperf_client_end) sends IPERF_DONE
// there, and that write's error replaces the first. Recorded: the lab's
// (testdata/v3.12-lab-control-aborted-client.json, its server never read the
// parameters) and the same made on purpose by dropping them
// (v3.12-control-aborted-repro-client.json: TcpExtTCPAbortOnTimeout 1 in the
// client's namespace, the kernel's abort at --snd-timeout). Pure; never panics.
func ControlAbortedInSetup(clientJSON []byte) bool {
	doc, ok := endedInSetup(clientJSON)
	return ok && doc.Start.ConnectingTo != nil && len(doc.Start.Connected) == 0 && strings.HasPrefix(*doc.Error, sendMessageError)
}

// idleTimeoutError is iperf3's server error when a test's receiving side
// got nothing for its receive timeout (--rcv-timeout, 120 s by default):
// IENOMSG, "idle timeout for receiving data".
const idleTimeoutError = "idle timeout for receiving data"

// StreamsDropped reads a client that ended before its test began and its
// server's -J output: when the server gave up on its receive timeout
// having accepted fewer streams than the client connected, accepted and
// connected are those counts and ok is true. This is iperf3's own stream
// drop: from 3.16 the server reads each accepted stream's 37-byte cookie
// with a 10 s timeout (src/net.c Nread, nread_read_timeout), and a cookie
// that has not arrived by then reads as a wrong one, so the server closes
// that stream (iperf_tcp_accept: ACCESS_DENIED) and does not count it; the
// client, whose connect had returned, waits for a test start that never
// comes, until the server's receive timeout closes the control connection
// ("control socket has closed unexpectedly"). A stream's first segment
// late by 10 s is a lossy path: its retransmissions backed off past it.
// Recorded: testdata/v3.18-lab-stream-cookie-late-{client,server}.json
// (the Epoxy lab, 8 clients of 125 streams at 1 Mbit/s each, 2026-12-05:
// 124 of 125). Pure; never panics.
func StreamsDropped(clientJSON, serverJSON []byte) (accepted, connected int, ok bool) {
	connected, ok = StreamsConnected(clientJSON)
	if !ok {
		return 0, 0, false
	}
	clean, _ := sanitizeNonFinite(serverJSON)
	var doc rawDoc
	if json.Unmarshal(clean, &doc) != nil || doc.Error == nil || !strings.Contains(*doc.Error, idleTimeoutError) || doc.Start == nil {
		return 0, 0, false
	}
	accepted = len(doc.Start.Connected)
	if accepted >= connected {
		return 0, 0, false
	}
	return accepted, connected, true
}

// droppedWords explains a client's setup failure by its server's dropped
// streams (StreamsDropped), "" when that is not what happened.
func droppedWords(pr *ProcessRun) string {
	accepted, connected, ok := StreamsDropped(pr.ClientJSON, pr.ServerJSON)
	if !ok {
		return ""
	}
	return fmt.Sprintf("the server on port %d accepted %d of the %d streams the client connected and gave up on its receive timeout: "+
		"iperf3 from 3.16 closes a stream whose first bytes (its cookie) do not arrive within 10 s of its accept and never counts it, "+
		"so the client waited for a test start that could not come; the data path lost that stream's first segment and its retransmissions for 10 s",
		pr.Port, accepted, connected)
}
