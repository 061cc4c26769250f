package sockperf

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

const ssCmd = "ss -lun 2>/dev/null || netstat -lun"

// guests is a fake pair: the server guest answers `ss -lun` with the port
// bound only while a started sockperf server runs (after listenAfter
// polls); the client answers the ping-pong with out after sleeping.
type guests struct {
	w              *fakeremote.World
	server, client *fakeremote.Runner
	mu             sync.Mutex
	started        []*fakeremote.Background
}

func newGuests(t *testing.T, in *RunInput, out []byte, sleep time.Duration) *guests {
	t.Helper()
	g := &guests{w: fakeremote.NewWorld()}
	g.server = fakeremote.New("guest server-a", g.w)
	g.client = fakeremote.New("guest client-b", g.w)
	version := fakeremote.Reply{Stdout: sample(t, "v3.7-version.txt")}
	g.server.On("sockperf --version", version)
	g.client.On("sockperf --version", version)
	g.server.Starts = func(ctx context.Context, cmd string) (remote.Process, bool) {
		if !strings.HasPrefix(cmd, "sockperf server ") {
			return nil, false
		}
		b := fakeremote.NewBackground(ctx, cmd)
		g.mu.Lock()
		g.started = append(g.started, b)
		g.mu.Unlock()
		return b, true
	}
	notYet := fakeremote.Reply{Stdout: []byte("State  Recv-Q Send-Q Local Address:Port Peer Address:Port\n")}
	bound := fakeremote.Reply{Stdout: []byte("State  Recv-Q Send-Q Local Address:Port Peer Address:Port\nUNCONN 0      0      198.18.10.5:11111     0.0.0.0:*\n")}
	g.server.On(ssCmd, notYet, bound, bound, bound)
	g.client.On(ClientCommand(in.ServerAddr, in.Port, in.MessageSize, in.Duration), fakeremote.Reply{Stdout: out, Sleep: sleep})
	in.Server, in.Client = g.server, remote.Bounded(g.client, time.Minute, "intervals.command")
	return g
}

func (g *guests) allStopped(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, b := range g.started {
		if !b.Exited() {
			t.Errorf("sockperf server still running: %v", b)
		}
	}
}

func input() RunInput {
	return RunInput{ServerAddr: "198.18.10.5", Port: 11111, MessageSize: 64, Duration: time.Second,
		Grace: 500 * time.Millisecond, ListenTimeout: 2 * time.Second, ListenPoll: 10 * time.Millisecond}
}

func TestRunPingPong(t *testing.T) {
	in := input()
	var starting time.Time
	in.ClientStarting = func(at time.Time) { starting = at }
	g := newGuests(t, &in, sample(t, "v3.7-pp-udp-m64-t2.txt"), 50*time.Millisecond)
	m, err := Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if m.Result.P99() != 143.688 || m.Result.Observations != 53272 || m.ServerVersion != "3.7-no.git" || m.ClientVersion != "3.7-no.git" {
		t.Fatalf("measurement %+v", m)
	}
	if !strings.Contains(m.ClientCmd, "--full-rtt") || !strings.Contains(m.ClientCmd, "-m 64 -t 1") || m.ServerCmd != "sockperf server -i 198.18.10.5 -p 11111" {
		t.Errorf("commands %q / %q", m.ClientCmd, m.ServerCmd)
	}
	g.allStopped(t)
	if len(g.started) != 1 {
		t.Errorf("%d servers started", len(g.started))
	}
	// The measured window is undisturbed: no command reached either guest
	// between the client's launch and its return.
	if starting.IsZero() || !m.Started.Equal(starting) || m.Ended.Before(m.Started) {
		t.Fatalf("window %v..%v, ClientStarting %v", m.Started, m.Ended, starting)
	}
	for _, e := range g.w.Log() {
		if e.At.After(m.Started) && e.At.Before(m.Ended) && !strings.HasPrefix(e.Cmd, "sockperf ping-pong") {
			t.Errorf("%s ran %q inside the measured window", e.Runner, e.Cmd)
		}
	}
	if u := g.w.Unexpected(); len(u) > 0 {
		t.Errorf("unexpected commands %v", u)
	}
}

func TestRunMissingSockperfNamesGuestAndPackage(t *testing.T) {
	in := input()
	g := newGuests(t, &in, nil, 0)
	g.client.On("sockperf --version", fakeremote.Reply{Exit: 127, Stderr: []byte("sh: 1: sockperf: not found\n")})
	_, err := Run(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "guest client-b: sockperf is not installed") || !strings.Contains(err.Error(), `package "sockperf"`) {
		t.Fatalf("error %v", err)
	}
	if len(g.started) != 0 {
		t.Error("a server was started although the client has no sockperf")
	}
	g2 := newGuests(t, &in, nil, 0)
	g2.server.On("sockperf --version", fakeremote.Reply{Exit: 127})
	if _, err := Run(context.Background(), in); err == nil || !strings.Contains(err.Error(), "guest server-a: sockperf is not installed") {
		t.Fatalf("server error %v", err)
	}
}

// A client that does not return is cut at -t + latency.grace, the error
// names that bound, and the server is stopped.
func TestRunClientDeadline(t *testing.T) {
	in := input()
	g := newGuests(t, &in, sample(t, "v3.7-pp-udp-m64-t2.txt"), time.Minute)
	start := time.Now()
	_, err := Run(context.Background(), in)
	took := time.Since(start)
	var be *remote.BoundError
	if !errors.As(err, &be) || be.Bound != 1500*time.Millisecond || !strings.Contains(err.Error(), "sockperf -t 1s + latency.grace 500ms") {
		t.Fatalf("error %v", err)
	}
	if took > 5*time.Second {
		t.Errorf("took %s", took)
	}
	g.allStopped(t)
}

// Cancelling the run kills the client (the fake's context ends) and stops
// the server.
func TestRunCancelled(t *testing.T) {
	in := input()
	g := newGuests(t, &in, sample(t, "v3.7-pp-udp-m64-t2.txt"), time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	in.ClientStarting = func(time.Time) { time.AfterFunc(50*time.Millisecond, cancel) }
	_, err := Run(ctx, in)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	g.allStopped(t)
}

// sockperf exits 0 when nothing answered: the text decides.
func TestRunNoServerReply(t *testing.T) {
	in := input()
	g := newGuests(t, &in, sample(t, "v3.7-pp-udp-noserver.txt"), 0)
	m, err := Run(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "No messages were received") {
		t.Fatalf("error %v", err)
	}
	if len(m.ClientOutput) == 0 {
		t.Error("the failed run's output is not kept")
	}
	g.allStopped(t)
}

// Without --full-rtt sockperf halves the round trip; a half-RTT summary is
// refused rather than reported as a round trip.
func TestRunRefusesHalfRTT(t *testing.T) {
	in := input()
	newGuests(t, &in, sample(t, "v3.7-pp-udp-m64-t2-halfrtt.txt"), 0)
	if _, err := Run(context.Background(), in); err == nil || !strings.Contains(err.Error(), "half round trips") {
		t.Fatalf("error %v", err)
	}
}

func TestRunServerExitsEarly(t *testing.T) {
	in := input()
	g := newGuests(t, &in, nil, 0)
	g.server.Starts = func(ctx context.Context, cmd string) (remote.Process, bool) {
		b := fakeremote.NewBackground(ctx, cmd)
		b.Exit(remote.Result{ExitCode: 1, Stdout: []byte("sockperf: ERROR: Can`t bind socket, IP to bind: 198.18.10.5:11111\n (errno=98 Address already in use)\n")})
		return b, true
	}
	_, err := Run(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "sockperf server exited before the test (exit 1)") {
		t.Fatalf("error %v", err)
	}
}

func TestRunValidates(t *testing.T) {
	in := input()
	in.MessageSize, in.Duration, in.Port = 8, 1500*time.Millisecond, 0
	_, err := Run(context.Background(), in)
	for _, want := range []string{"server and client runners", "message size: sockperf -m takes 14..65507 bytes, got 8", "whole seconds", "port: must be 1..65535"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}

func TestFirstPacket(t *testing.T) {
	w := fakeremote.NewWorld()
	c := fakeremote.New("guest client-b", w)
	c.On("ping -V", fakeremote.Reply{Stdout: []byte("ping from iputils 20221126\n")})
	in := FirstInput{Client: c, ServerAddr: "198.18.10.5", Flows: 3, Pings: 5, IdleGap: 30 * time.Millisecond, Grace: time.Second}
	// Three flows: the first echo slow (the miss path), then one whose first
	// echo was lost. The outputs are the recorded one with times edited.
	rec := string(sample(t, "ping-iputils20221126-c5.txt"))
	slow := strings.NewReplacer("198.19.250.2", "198.18.10.5", "time=0.043 ms", "time=1.500 ms").Replace(rec)
	slower := strings.NewReplacer("198.19.250.2", "198.18.10.5", "time=0.043 ms", "time=2.500 ms").Replace(rec)
	lost := strings.NewReplacer("64 bytes from 198.19.250.2: icmp_seq=1 ttl=64 time=0.043 ms\n", "", "5 received", "4 received").Replace(rec)
	c.On(PingCommand(in.ServerAddr, 5), fakeremote.Reply{Stdout: []byte(slow)}, fakeremote.Reply{Stdout: []byte(lost)}, fakeremote.Reply{Stdout: []byte(slower)})
	var starts []time.Time
	in.FlowStarting = func(_ int, at time.Time) { starts = append(starts, at) }
	m, err := FirstPacket(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Flows) != 3 || m.FirstLost != 1 || m.FirstMedianUs != 2000 || m.FirstMaxUs != 2500 {
		t.Fatalf("first median %v max %v lost %d flows %d", m.FirstMedianUs, m.FirstMaxUs, m.FirstLost, len(m.Flows))
	}
	// Steady: 56 192 55 52 from each flow (12 values): median 55.5.
	if m.SteadyP50Us != 55.5 {
		t.Errorf("steady p50 %v", m.SteadyP50Us)
	}
	if !strings.Contains(m.Cmd, "-c 5 -i 0.2 -W 1") {
		t.Errorf("cmd %q", m.Cmd)
	}
	// Each flow comes after an idle gap with nothing sent to the guest.
	prev := w.Start
	for i, s := range starts {
		if s.Sub(prev) < in.IdleGap {
			t.Errorf("flow %d started %s after the previous command, want >= %s", i+1, s.Sub(prev), in.IdleGap)
		}
		prev = s
	}

	c2 := fakeremote.New("guest client-b", w)
	c2.On("ping -V", fakeremote.Reply{Exit: 127})
	in.Client = c2
	if _, err := FirstPacket(context.Background(), in); err == nil || !strings.Contains(err.Error(), `guest client-b: ping is not installed (install the package "iputils-ping"`) {
		t.Fatalf("missing ping: %v", err)
	}
}

// A ping-pong that lost one message in its warm-up (recorded on the lab)
// runs once more against the same server; the result says so. A second
// loss fails with the lost counts.
func TestRunAgainAfterALostMessage(t *testing.T) {
	in := input()
	g := newGuests(t, &in, nil, 0)
	lost, good := sample(t, "v3.7-lab-pp-udp-novalid.txt"), sample(t, "v3.7-pp-udp-m64-t2.txt")
	g.client.On(ClientCommand(in.ServerAddr, in.Port, in.MessageSize, in.Duration), fakeremote.Reply{Stdout: lost}, fakeremote.Reply{Stdout: good})
	m, err := Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if m.Result.Observations != 53272 || len(m.Warnings) == 0 || !strings.Contains(m.Warnings[0], "28 of its 29 messages were answered") {
		t.Fatalf("observations %d, warnings %q", m.Result.Observations, m.Warnings)
	}
	if !strings.Contains(string(m.ClientOutput), "SentMessages=29; ReceivedMessages=28") || !strings.Contains(string(m.ClientOutput), "it ran once more") {
		t.Errorf("the evidence lacks the lost run:\n%s", m.ClientOutput)
	}
	g.allStopped(t)
	if len(g.started) != 1 {
		t.Errorf("%d servers started, want the same server for both runs", len(g.started))
	}

	in = input()
	g = newGuests(t, &in, nil, 0)
	g.client.On(ClientCommand(in.ServerAddr, in.Port, in.MessageSize, in.Duration), fakeremote.Reply{Stdout: lost}, fakeremote.Reply{Stdout: lost})
	_, err = Run(context.Background(), in)
	var le *LostMessageError
	if !errors.As(err, &le) || le.Sent != 29 || le.Received != 28 {
		t.Fatalf("two losses gave %v", err)
	}
	g.allStopped(t)
}
