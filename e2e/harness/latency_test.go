package harness

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/sockperf"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// latencyPair is the evidence-window pair (fakeremote.PairTopology)
// playing sockperf from the recorded 3.7 samples (e2e/sockperf/testdata)
// and iperf3 from the recorded 3.12 tcp-p1 client output (e2e/iperf3/testdata).
// loadSecs is how long the load's iperf3 client runs before it answers.
func latencyPair(t *testing.T, loadFor func(secs int) time.Duration) (*Pair, *fakeremote.World, [2]*fakeremote.Runner) {
	t.Helper()
	w := fakeremote.NewWorld()
	topo := fakeremote.PairTopology()
	guests, _ := fakeremote.PairRunners(t, w, topo, "../offload/testdata", string(fakeremote.ReadFile(t, "testdata/ip-o-link-addr.txt")))
	tcp := fakeremote.ReadFile(t, "../iperf3/testdata/v3.12-tcp-p1.json")
	guests[1].Play.Client = func(ctx context.Context, secs int, udp bool) (remote.Result, error) {
		select {
		case <-ctx.Done():
			return remote.Result{ExitCode: -1}, ctx.Err()
		case <-time.After(loadFor(secs)):
		}
		return remote.Result{Stdout: tcp}, nil
	}
	version := fakeremote.Reply{Stdout: fakeremote.ReadFile(t, "../sockperf/testdata/v3.7-version.txt")}
	for _, g := range guests {
		g.On("sockperf --version", version)
	}
	guests[0].Starts = func(ctx context.Context, cmd string) (remote.Process, bool) {
		if !strings.HasPrefix(cmd, "sockperf server ") {
			return nil, false
		}
		return fakeremote.NewBackground(ctx, cmd), true
	}
	guests[0].On("ss -lun 2>/dev/null || netstat -lun", fakeremote.Reply{Stdout: []byte("UNCONN 0 0 " + topo.Servers[0].DataIP + ":11111 0.0.0.0:*\n")})
	cfg := &config.Config{
		Run:     config.Run{ExpectedPath: results.PathBaseline},
		Traffic: config.Traffic{Port: 5201},
		Latency: config.Latency{Profiles: results.LatencyProfileIDs(), MessageSize: 64, Duration: time.Second, Port: 11111, Grace: 2 * time.Second,
			LoadProfile: "tcp-p1", Settle: 500 * time.Millisecond, FirstPacketFlows: 2, FirstPacketPings: 5, FirstPacketIdle: 20 * time.Millisecond},
		Intervals: map[string]wait.Interval{
			config.IntervalIperfServer: {Timeout: 2 * time.Second, Poll: 10 * time.Millisecond},
			config.IntervalCommand:     {Timeout: time.Second, Poll: 10 * time.Millisecond},
		},
	}
	pp := sockperf.ClientCommand(topo.Servers[0].DataIP, 11111, 64, time.Second)
	guests[1].On(pp, fakeremote.Reply{Stdout: fakeremote.ReadFile(t, "../sockperf/testdata/v3.7-pp-udp-m64-t2.txt"), Sleep: time.Second})
	dir := t.TempDir()
	res, err := results.NewWriter(filepath.Join(dir, ResultsFile), results.Results{SchemaVersion: results.SchemaVersion, RunID: topo.RunID, StartedAt: time.Now().UTC(),
		Config: results.ConfigSummary{ExpectedPath: results.PathBaseline}})
	if err != nil {
		t.Fatal(err)
	}
	var console strings.Builder
	run := &Run{Config: cfg, RunID: topo.RunID, Dir: dir, Results: res, console: &console}
	s := run.singlePair()
	s.Topology, s.Guests = topo, []remote.Runner{guests[0], remote.Bounded(guests[1], time.Minute, "intervals.command")}
	return s, w, guests
}

func shape(id string) results.LatencyShape {
	for _, l := range results.LatencyCatalogue() {
		if l.ID == id {
			return l
		}
	}
	panic(id)
}

// Under load: the sockperf server listens before the load starts, sockperf
// starts latency.settle after the load's client, nothing else reaches a
// guest while sockperf measures, and the load's own result is recorded.
func TestLatencyUnderLoad(t *testing.T) {
	s, w, _ := latencyPair(t, func(secs int) time.Duration { return time.Duration(secs) * time.Second })
	lr, err := s.RunLatency(context.Background(), shape(results.LatencyLoadID))
	if err != nil {
		w.Dump(t)
		t.Fatal(err)
	}
	if lr.P99Us != 143.688 || lr.Samples != 53272 || lr.Load == nil || lr.Load.Profile != "tcp-p1" || lr.Load.DeliveredBps <= 0 || lr.Load.DurationSeconds != 4 { // settle 0.5 + 1 + grace 2, up
		t.Fatalf("result %+v load %+v", lr, lr.Load)
	}
	var ppAt, ppEnd, loadAt, ssLast time.Time
	for _, e := range w.Log() {
		switch {
		case strings.HasPrefix(e.Cmd, "sockperf ping-pong"):
			ppAt = e.At
		case strings.HasPrefix(e.Cmd, "iperf3 -c"):
			loadAt = e.At
		case strings.HasPrefix(e.Cmd, "ss -lun"):
			ssLast = e.At
		}
	}
	ppEnd = ppAt.Add(time.Second)
	// The settle counts from the moment iperf3.Run launches its clients,
	// which is a goroutine start before the fake records the client's
	// command: allow that much.
	const launch = 250 * time.Millisecond
	if loadAt.IsZero() || ppAt.Sub(loadAt) < s.run.Config.Latency.Settle-launch {
		t.Errorf("sockperf started %s after the load, want >= settle %s", ppAt.Sub(loadAt), s.run.Config.Latency.Settle)
	}
	if !ssLast.Before(loadAt) {
		t.Errorf("the sockperf server was polled at %s, after the load started at %s", ssLast, loadAt)
	}
	for _, e := range w.Log() {
		if e.At.After(ppAt) && e.At.Before(ppEnd) {
			t.Errorf("%s ran %q inside the latency window", e.Runner, e.Cmd)
		}
	}
	snap := s.Results.Snapshot()
	if len(snap.Latency) != 1 || snap.Latency[0].Load == nil || snap.Latency[0].EvidenceFile != "latency/lat-load.txt" {
		t.Errorf("results file %+v", snap.Latency)
	}
	if err := results.Validate(&snap); err != nil {
		t.Error(err)
	}
}

// A load that ends before sockperf does makes no under-load measurement.
func TestLatencyLoadEndsEarly(t *testing.T) {
	s, _, _ := latencyPair(t, func(int) time.Duration { return 700 * time.Millisecond })
	lr, err := s.RunLatency(context.Background(), shape(results.LatencyLoadID))
	if err == nil || !strings.Contains(err.Error(), "before the latency window did") || !strings.Contains(err.Error(), "not a measurement under load") {
		t.Fatalf("error %v", err)
	}
	if lr.Error == "" || lr.OK() {
		t.Errorf("failed profile recorded as usable: %+v", lr)
	}
}

func TestLatencyIdleAndFirstPacket(t *testing.T) {
	s, _, guests := latencyPair(t, func(int) time.Duration { return 0 })
	lr, err := s.RunLatency(context.Background(), shape(results.LatencyIdleID))
	if err != nil || lr.P50Us != 20.317 || lr.Tool != "sockperf 3.7-no.git" || lr.Load != nil || lr.MessageBytes != 64 {
		t.Fatalf("idle %+v %v", lr, err)
	}
	rec := string(fakeremote.ReadFile(t, "../sockperf/testdata/ping-iputils20221126-c5.txt"))
	guests[1].On("ping -V", fakeremote.Reply{Stdout: []byte("ping from iputils 20221126\n")})
	guests[1].On(sockperf.PingCommand(s.Topology.Servers[0].DataIP, 5), fakeremote.Reply{Stdout: []byte(strings.Replace(rec, "time=0.043 ms", "time=0.900 ms", 1))})
	lr, err = s.RunLatency(context.Background(), shape(results.LatencyFirstID))
	if err != nil || lr.First == nil || lr.First.FirstMedianUs != 900 || lr.First.SteadyP50Us != 55.5 || lr.First.Flows != 2 {
		t.Fatalf("first %+v %+v %v", lr, lr.First, err)
	}
	snap := s.Results.Snapshot()
	got := results.EvaluateThresholds([]results.ThresholdRule{
		{Profile: results.LatencyIdleID, Path: "baseline", Metric: results.MetricLatencyP99, Op: "<=", Value: 100},
		{Profile: results.LatencyFirstID, Path: "baseline", Metric: results.MetricFirstPacketRatio, Op: "<=", Value: 20},
	}, &snap)
	if got[0].Pass || !got[1].Pass {
		t.Errorf("thresholds %+v", got)
	}
}

// When sockperf fails under load, the harness stops the load: that is not
// reported as a failure of the load (the lab showed "context canceled").
func TestLatencyUnderLoadSockperfFails(t *testing.T) {
	s, _, guests := latencyPair(t, func(secs int) time.Duration { return time.Duration(secs) * time.Second })
	pp := sockperf.ClientCommand(s.Topology.Servers[0].DataIP, 11111, 64, time.Second)
	guests[1].On(pp, fakeremote.Reply{Stdout: fakeremote.ReadFile(t, "../sockperf/testdata/v3.7-pp-udp-noserver.txt")})
	start := time.Now()
	lr, err := s.RunLatency(context.Background(), shape(results.LatencyLoadID))
	if err == nil || !strings.Contains(err.Error(), "No messages were received") || strings.Contains(err.Error(), "the load") {
		t.Fatalf("error %v", err)
	}
	if lr.Load == nil || lr.Load.Error != "stopped by the harness: the latency measurement did not complete" {
		t.Errorf("load %+v", lr.Load)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the load was not stopped: %s", took)
	}
}

// A ping-pong that lost a message in its warm-up and ran once more names
// the OVS that dropped packets meanwhile: the hypervisors' drop counters
// are read before the sockperf server starts and after the client
// returned, never while the ping-pong runs (recorded readings: compute1's
// lab switch dropped nothing, compute2's switch, whose tunnel next hop
// does not answer ARP, dropped 22 packets).
func TestLatencyLostMessageNamesOVSDrops(t *testing.T) {
	s, w, guests := latencyPair(t, func(int) time.Duration { return 0 })
	pp := sockperf.ClientCommand(s.Topology.Servers[0].DataIP, 11111, 64, time.Second)
	guests[1].On(pp,
		fakeremote.Reply{Stdout: fakeremote.ReadFile(t, "../sockperf/testdata/v3.7-lab-pp-udp-novalid.txt"), Sleep: 100 * time.Millisecond},
		fakeremote.Reply{Stdout: fakeremote.ReadFile(t, "../sockperf/testdata/v3.7-pp-udp-m64-t2.txt"), Sleep: 100 * time.Millisecond})
	cov := coverageCommand(s.run.Config)
	td := "../offload/testdata/coverage/"
	s.run.Hypervisors = map[string]remote.Runner{}
	for i, files := range [][]string{{"ovs-3.1-lab-zed-hv1.txt"}, {"ovs-3.1-tunnel-neigh-miss-before.txt", "ovs-3.1-tunnel-neigh-miss-after.txt"}} {
		hv := fakeremote.New("hypervisor "+fakeremote.HVNames[i], w)
		var rs []fakeremote.Reply
		for _, f := range files {
			rs = append(rs, fakeremote.Reply{Stdout: fakeremote.ReadFile(t, td+f)})
		}
		hv.On(cov, rs...)
		s.run.Hypervisors[fakeremote.HVNames[i]] = hv
	}
	lr, err := s.RunLatency(context.Background(), shape(results.LatencyIdleID))
	if err != nil {
		t.Fatal(err)
	}
	want := "the lost message: OVS counted drops during the window: " + fakeremote.HVNames[1] + " drop_action_of_pipeline 22"
	if len(lr.Warnings) != 2 || !strings.Contains(lr.Warnings[0], "28 of its 29 messages were answered") || lr.Warnings[1] != want {
		t.Errorf("warnings %q, want the loss then %q", lr.Warnings, want)
	}
	if len(lr.OVSDrops) != 2 || lr.OVSDrops[0].Drops != nil || lr.OVSDrops[1].Drops["drop_action_of_pipeline"] != 22 {
		t.Errorf("OVS drops %+v", lr.OVSDrops)
	}
	var clients []time.Time
	for _, e := range w.Log() {
		if e.Cmd == pp {
			clients = append(clients, e.At)
		}
	}
	if len(clients) != 2 {
		t.Fatalf("ping-pong ran %d times, want 2", len(clients))
	}
	reads := 0
	for _, e := range w.Log() {
		if e.Cmd != cov {
			continue
		}
		reads++
		if !e.At.Before(clients[0]) && e.At.Before(clients[1].Add(100*time.Millisecond)) {
			t.Errorf("%s read its drop counters at %s, while the ping-pongs ran (%s..%s)", e.Runner,
				e.At.Format("15:04:05.000"), clients[0].Format("15:04:05.000"), clients[1].Add(100*time.Millisecond).Format("15:04:05.000"))
		}
	}
	if reads != 4 {
		t.Errorf("%d readings, want 4 (two hypervisors, before and after)", reads)
	}
}
