package harness

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/conntrack"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// connPair is the fake pair running one connection (iperf3 -P 1 on port
// 5001, the recorded v3.12 tcp-p1 output), each hypervisor's kernel table
// empty at the first read and then the mlx5 mail's two [HW_OFFLOAD]
// connections (e2e/conntrack/testdata/hw, its addresses rewritten to the
// pair's: the stream and its control connection), every command logged.
func connPair(t *testing.T, portSecurity bool) (*Pair, string) {
	s, path, _ := connPairFakes(t, portSecurity)
	return s, path
}

// connPairFakes is connPair with its fakes.
func connPairFakes(t *testing.T, portSecurity bool) (*Pair, string, *pair) {
	wd := newPair(t)
	wd.cfg.Traffic.Port = 5001
	wd.cfg.DataPort.PortSecurity = portSecurity
	wd.cfg.Connections = config.Connections{Counts: []int{1}, Duration: time.Second, OffloadWait: 2 * time.Second}
	wd.cfg.Traffic.StallTimeout = 2 * time.Second // the seed profiles' guard; connection scale goes without it
	wd.cfg.Intervals[config.IntervalConntrackSample] = wait.Interval{Timeout: time.Second, Poll: 500 * time.Millisecond}
	out := iperfJSON(t, "v3.12-tcp-p1.json")
	// The fake client lasts -O and -t, as iperf3 does (the fake's secs is -t).
	sleep := fakeremote.SleepThen(func(bool) remote.Result { return remote.Result{Stdout: out} })
	wd.guests[1].Play.Client = func(ctx context.Context, secs int, udp bool) (remote.Result, error) {
		return sleep(ctx, secs+int(wd.cfg.Connections.OffloadWait/time.Second), udp)
	}
	table := strings.NewReplacer("1.1.1.17", wd.topo.Servers[1].DataIP, "1.1.1.16", wd.topo.Servers[0].DataIP).
		Replace(string(readFile(t, filepath.Join("..", "conntrack", "testdata", "hw", "proc-hw-offload-mlx5-2020.txt"))))
	for _, hv := range wd.hvs {
		hv.On(offload.DpctlFlowsCommand, fakeremote.Reply{Stdout: []byte("")})
		// Test input, not a recording: the table's fill (count, max).
		hv.On(conntrack.SizeCommand, fakeremote.Reply{Stdout: []byte("2\n262144\n")})
		hv.On(conntrack.ReadCommand, fakeremote.Reply{Stdout: nil}, fakeremote.Reply{Stdout: []byte(table)}, fakeremote.Reply{Stdout: []byte(table)},
			fakeremote.Reply{Stdout: []byte(table)}, fakeremote.Reply{Stdout: []byte(table)}, fakeremote.Reply{Stdout: []byte(table)},
			fakeremote.Reply{Stdout: []byte(table)}, fakeremote.Reply{Stdout: []byte(table)}, fakeremote.Reply{Stdout: []byte(table)})
	}
	s := wd.session()
	path := filepath.Join(s.Dir, "commands.jsonl")
	log, err := remote.OpenCommandLog(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	s.Guests = []remote.Runner{logged{wd.guests[0], log}, logged{wd.guests[1], log}}
	s.run.Hypervisors = map[string]remote.Runner{hvNames[0]: logged{wd.hvs[0], log}, hvNames[1]: logged{wd.hvs[1], log}}
	return s, path, wd
}

// With port security every table read runs inside the omit period: by
// commands.jsonl's own timestamps each ends before the client's start plus
// connections.offload_wait (the measured seconds begin no sooner), and the
// share and the time until offloaded are the reads'.
func TestConnectionsReadTheTablesOnlyInTheOmitPeriod(t *testing.T) {
	s, logPath := connPair(t, true)
	cr, err := s.RunConnections(context.Background(), 1)
	if err != nil {
		t.Fatalf("RunConnections: %v", err)
	}
	if cr.N != 1 || cr.Processes != 1 || cr.Opened != 2 || cr.DeliveredBps <= 0 || cr.NotApplicable != "" {
		t.Fatalf("result %+v", cr)
	}
	if len(cr.Hosts) != 2 {
		t.Fatalf("hosts %+v", cr.Hosts)
	}
	for _, h := range cr.Hosts {
		if h.Share != 1 || h.Offloaded != 2 || h.Source != conntrack.SourceKernel || h.TimeToOffloadSeconds == nil || h.Samples < 2 {
			t.Errorf("%s: %+v", h.Hypervisor, h)
			continue
		}
		// The first read saw an empty table; the second, half a second on, both.
		if at := *h.TimeToOffloadSeconds; at < 0.5 || at > 2 {
			t.Errorf("%s: offloaded at %.2f s, want the second read's (0.5 s on)", h.Hypervisor, at)
		}
		if h.TableCount != 2 || h.TableMax != 262144 || !strings.Contains(h.Reason, "table 2 of 262144 entries") {
			t.Errorf("%s: the table's fill %d of %d: %s", h.Hypervisor, h.TableCount, h.TableMax, h.Reason)
		}
		if h.SamplesFile == "" {
			t.Errorf("%s: no samples file", h.Hypervisor)
		}
	}
	entries := readLog(t, logPath)
	var client time.Time
	for _, e := range entries {
		if strings.HasPrefix(e.Cmd, "iperf3 -c ") {
			client = e.Start
		}
	}
	if client.IsZero() {
		t.Fatal("no client command in commands.jsonl")
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Cmd, "iperf3 ") && (strings.Contains(e.Cmd, "--snd-timeout") || strings.Contains(e.Cmd, "--rcv-timeout")) {
			t.Errorf("%s: %q carries traffic.stall_timeout's guard: many streams in one process starve one past it", e.Target, e.Cmd)
		}
	}
	omitEnd := client.Add(s.run.Config.Connections.OffloadWait)
	reads := 0
	for _, e := range entries {
		if e.Cmd != conntrack.ReadCommand {
			continue
		}
		reads++
		end := e.Start.Add(time.Duration(e.DurationSeconds * float64(time.Second)))
		if end.After(omitEnd) {
			t.Errorf("%s read the table until %s, after the omit period's end %s (the measured seconds)", e.Target,
				end.Format(time.StampMicro), omitEnd.Format(time.StampMicro))
		}
	}
	if reads < 4 {
		t.Errorf("%d table reads, want one per hypervisor every 0.5 s of the 2 s omit period", reads)
	}
	got, err := results.Load(filepath.Join(s.Dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Connections) != 1 || got.Connections[0].Hosts[0].TimeToOffloadSeconds == nil {
		t.Errorf("results.json connections %+v", got.Connections)
	}
}

// Without port security nothing reads a table and the share says why.
func TestConnectionsWithoutPortSecurityMeasureOnly(t *testing.T) {
	s, logPath := connPair(t, false)
	cr, err := s.RunConnections(context.Background(), 1)
	if err != nil {
		t.Fatalf("RunConnections: %v", err)
	}
	if cr.NotApplicable != NoConntrack || len(cr.Hosts) != 0 || cr.DeliveredBps <= 0 {
		t.Errorf("result %+v", cr)
	}
	for _, e := range readLog(t, logPath) {
		if e.Cmd == conntrack.ReadCommand || e.Cmd == offload.DpctlFlowsCommand {
			t.Errorf("%s ran %q without port security", e.Target, e.Cmd)
		}
	}
}

// connections.bitrate_per_connection caps every stream (iperf3 -b on each
// client process) and the result keeps the cap; unset, no -b at all. Every
// connection writes 16 KiB at a time (-l).
func TestConnectionsCapEachConnection(t *testing.T) {
	for _, cap := range []int64{0, 2_000_000} {
		s, logPath := connPair(t, false)
		s.run.Config.Connections.BitratePerConnection = cap
		cr, err := s.RunConnections(context.Background(), 1)
		if err != nil {
			t.Fatalf("cap %d: RunConnections: %v", cap, err)
		}
		if cr.BitratePerConnectionBps != cap {
			t.Errorf("cap %d: result keeps %d", cap, cr.BitratePerConnectionBps)
		}
		clients := 0
		for _, e := range readLog(t, logPath) {
			if !strings.Contains(e.Cmd, "iperf3") || !strings.Contains(e.Cmd, " -c ") {
				continue
			}
			clients++
			if !strings.Contains(e.Cmd, " -l 16384") {
				t.Errorf("cap %d: client command %q writes more than 16 KiB (one buffer per stream in the guest's /tmp)", cap, e.Cmd)
			}
			if has := strings.Contains(e.Cmd, " -b 2000000"); has != (cap > 0) {
				t.Errorf("cap %d: client command %q (-b %v)", cap, e.Cmd, has)
			}
			if cap == 0 && strings.Contains(e.Cmd, " -b ") {
				t.Errorf("unlimited: client command %q has -b", e.Cmd)
			}
		}
		if clients == 0 {
			t.Errorf("cap %d: no iperf3 client command ran", cap)
		}
	}
}

// Issue 32: a client that cannot connect is cut at its bound (-t + -O +
// iperf_server + iperf3's setup allowance), after one look at its guest:
// the result's error names the client, its port and what the look saw
// (here the recorded look of a control connection whose SYNs go
// unanswered), and the look is kept beside the client's JSON.
func TestConnectionsClientAtItsBoundIsLookedAt(t *testing.T) {
	s, _, wd := connPairFakes(t, false)
	s.run.Config.Intervals[config.IntervalIperfServer] = wait.Interval{Timeout: 200 * time.Millisecond, Poll: 20 * time.Millisecond}
	s.run.Config.Connections.OffloadWait = time.Second
	wd.guests[1].Play.Client = func(ctx context.Context, _ int, _ bool) (remote.Result, error) {
		<-ctx.Done()
		return remote.Result{ExitCode: -1}, ctx.Err()
	}
	server := wd.topo.Servers[0].DataIP
	look := strings.NewReplacer(":5204 ", ":5001 ", "-p 5204 ", "-p 5001 ", "198.19.250.1", server).
		Replace(string(readFile(t, filepath.Join("..", "iperf3", "testdata", "look-v3.12-control-stuck.txt"))))
	wd.guests[1].On(iperf3.LookCommand, fakeremote.Reply{Stdout: []byte(look)})
	s.Guests[1] = remote.Bounded(s.Guests[1], time.Hour, "intervals.command")
	cr, err := s.RunConnections(context.Background(), 1)
	want := "iperf3 client 1 of 1 (port 5001) stuck connecting its control connection (1 SYN-SENT) after 4.2s; guest load 8.16; iperf3 pid 6359 state S in poll_schedule_timeout.constprop.0: "
	if err == nil || !strings.Contains(cr.Error, want) || !strings.Contains(cr.Error, "the setup allowance of 2 connections") {
		t.Fatalf("RunConnections: %v\nresult error %q\nwant it to contain %q", err, cr.Error, want)
	}
	kept := readFile(t, filepath.Join(s.Dir, "iperf3", "connections-1-p1-client-look.txt"))
	if string(kept) != look {
		t.Errorf("the look kept:\n%s\nwant the look's output", kept)
	}
}

// The flows of 10000 connections: 79 processes from the base port, 78 or
// 79 streams... as SplitStreams divides them, each with its control
// connection: 10079 opened.
func TestConnectionFlows(t *testing.T) {
	flows, split, err := connectionFlows(10000, 5201, "198.18.210.1", "198.18.210.2")
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	for i, f := range flows {
		opened += f.Opened
		if f.Proto != "tcp" || int(f.ServerPort) != 5201+i || f.Opened != split[i]+1 || split[i] > config.StreamsPerProcess {
			t.Errorf("flow %d: %+v (split %d)", i, f, split[i])
		}
	}
	if len(flows) != 79 || len(flows) != config.ConnectionProcesses(10000) || opened != 10079 {
		t.Errorf("%d flows opening %d", len(flows), opened)
	}
	if _, _, err := connectionFlows(1, 5201, "not an address", "198.18.210.2"); err == nil {
		t.Error("a bad address accepted")
	}
}
